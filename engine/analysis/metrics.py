"""Metrics: what a run's :class:`~engine.sim.simulator.Result` means, in numbers. Every formula is written here.

Per job (completed jobs only; unschedulable and failed jobs have none of these and are counted apart):

* ``run_s`` = total time the job held GPUs, over all its run segments (so it includes work lost to
  preemptions and restart overheads; it is the time on the hardware it got, not the reference duration).
* ``wait_s`` = ``end_s - submit_s - run_s + wakes x wake_s``: all time spent queued, including time back in the
  queue after a preemption, and the time spent holding GPUs while powered-down nodes woke (``Result.wakes``, each
  ``options.power_down.wake_s``; 0 when nodes never power down). Without preemption or power-down it equals
  ``first_start_s - submit_s``. Clamped at 0 against floating-point rounding.
* ``jct_s`` (job completion time) = ``end_s - submit_s``.
* ``slowdown`` = ``jct_s / run_s``.
* ``bounded_slowdown`` = ``max(1, jct_s / max(run_s, 10 s))``: the usual bounded slowdown (Feitelson), whose
  10 s floor stops very short jobs from dominating the mean.

Per run (see :data:`METRICS` for every key, its unit and whether lower or higher is better):

* Counts: ``jobs``, ``completed``, ``unschedulable`` (jobs that can never run on this cluster); jobs that ended
  failed (``Result.status`` ``FAILED``) are neither, and counted by ``failed_jobs`` (below).
* Wait and JCT: mean, p50, p95, p99 (percentiles by linear interpolation between closest ranks, as
  ``numpy.percentile``), max; ``mean_bounded_slowdown``. All NaN when no job completed.
* ``makespan_s`` = last ``end_s`` (of a job that completed or failed) - first ``submit_s`` (first submit over all
  jobs, i.e. the start of the workload); 0 when no job ended.
* ``utilization`` = busy GPU-seconds / (GPUs x ``makespan_s``), where busy GPU-seconds = sum over run
  segments of duration x GPUs x GPU fraction (a half-GPU job counts half). 0 when ``makespan_s`` is 0.
* Fairness: ``gini_user_wait`` and ``jain_user_wait`` are :func:`gini` and :func:`jain` of the per-user mean
  wait (one value per user with at least one completed job; NaN when there is none).
* Load imbalance: ``gini_gpu_busy`` = :func:`gini` of each GPU's busy seconds, over every GPU of the cluster
  (idle GPUs count as 0).
* ``comm_overhead_gpu_h`` = sum of ``Result.comm_overhead_gpu_s`` / 3600: GPU-hours spent because jobs were
  spread over several nodes or racks.
* ``fragmentation``: the share of free GPU capacity that was stranded on partly used GPUs, time-weighted:
  ``integral(stranded(t) dt) / integral((n_gpus - busy(t)) dt)`` over the recorded time series, where
  ``stranded`` is ``Result.series_stranded_gpus`` (free shares of GPUs that host fractional jobs) and
  ``busy`` is ``Result.series_busy_gpus`` (each value holds until the next ``series_t``). 0 when there was
  never free capacity. Whole-GPU workloads therefore always score 0.
* ``preemptions`` (total count) and ``lost_gpu_h`` = sum of ``Result.lost_gpu_s`` / 3600 (work rolled back
  to a checkpoint).
* Energy, cost and carbon, only when :func:`summarize` is given an energy model (the run's
  ``options.energy``): the keys of :data:`ENERGY_METRICS`, over the window from the first submit to the end of
  the makespan; formulas in :mod:`engine.analysis.energy`. Without a model a summary holds exactly the keys of
  :data:`METRICS`.
* Failures, only when the run modelled them (its ``options.failures``, or a checkpoint cost; read from the result
  itself): the keys of :data:`RELIABILITY_METRICS`, over the same window; formulas in
  :mod:`engine.analysis.reliability`. Without failures a summary holds exactly the keys it held before.
* Deadlines, only when some job has one (:attr:`~engine.sim.job.Job.deadline_s`): the keys of
  :data:`DEADLINE_METRICS`; formulas in :mod:`engine.analysis.deadlines`. Declined jobs (status ``DECLINED``,
  turned away by the admission stage) never ran: they are neither completed nor unschedulable.
* Elastic jobs, only when some job is elastic (:attr:`~engine.sim.job.Job.elastic`): the keys of
  :data:`ELASTIC_METRICS` (resizes and GPU-time efficiency); formulas in :mod:`engine.analysis.elastic`.

Conventions for degenerate inputs: the Gini coefficient of an all-zero vector is 0 and Jain's index of an
all-zero vector is 1 (everyone got the same, nothing); both are NaN for an empty vector.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Mapping

import numpy as np
import pandas as pd

from engine.analysis.deadlines import DeadlineSummary, has_deadlines, job_deadlines, summarize_deadlines
from engine.analysis.elastic import ElasticSummary, has_elastic, job_elastic, summarize_elastic
from engine.analysis.energy import EnergySummary, job_energy, summarize_energy
from engine.analysis.reliability import ReliabilitySummary, failures_modelled, job_reliability, summarize_reliability
from engine.sim.options import EnergyModel
from engine.sim.simulator import COMPLETED, FAILED, UNSCHEDULABLE, Result

#: Each status code of ``Result.status`` in words, indexed by the code (``COMPLETED``, ``UNSCHEDULABLE``, ``FAILED``,
#: ``DECLINED``).
STATUS_NAMES = ("completed", "unschedulable", "failed", "declined")

#: Floor of bounded slowdown, seconds.
BSLD_FLOOR_S = 10.0


@dataclass(frozen=True)
class Metric:
    """How to read one run-level metric.

    Attributes:
        label: short human name for tables.
        unit: ``"s"``, ``"GPU-h"``, ``"jobs"``, ``"count"``, ``"ratio"`` (a plain number, often 0..1),
            ``"kWh"``, ``"USD"``, ``"USD/h"`` or ``"kg"`` (kg of CO2).
        better: ``"lower"`` or ``"higher"``; ``None`` for counts that describe the input, not the scheduler.
        doc: the formula, one sentence.
    """

    label: str
    unit: str
    better: str | None
    doc: str


def _pct(p: int, of: str) -> str:
    return f"{p}th percentile of per-job {of} (linear interpolation)"


#: Every key of :class:`Summary`, in display order.
METRICS: dict[str, Metric] = {
    "jobs": Metric("Jobs", "jobs", None, "number of jobs in the workload"),
    "completed": Metric("Completed", "jobs", "higher", "jobs that ran to completion"),
    "unschedulable": Metric(
        "Never ran (cannot fit the cluster)",
        "jobs",
        None,
        "jobs that can never run on this cluster (too many GPUs or too much memory, or no allowed GPU type)",
    ),
    "mean_wait_s": Metric("Mean wait", "s", "lower", "mean of end - submit - run time over completed jobs"),
    "p50_wait_s": Metric("Median wait", "s", "lower", _pct(50, "wait")),
    "p95_wait_s": Metric("p95 wait", "s", "lower", _pct(95, "wait")),
    "p99_wait_s": Metric("p99 wait", "s", "lower", _pct(99, "wait")),
    "max_wait_s": Metric("Max wait", "s", "lower", "longest per-job wait"),
    "mean_jct_s": Metric("Mean JCT", "s", "lower", "mean of end - submit over completed jobs"),
    "p50_jct_s": Metric("Median JCT", "s", "lower", _pct(50, "JCT")),
    "p95_jct_s": Metric("p95 JCT", "s", "lower", _pct(95, "JCT")),
    "p99_jct_s": Metric("p99 JCT", "s", "lower", _pct(99, "JCT")),
    "max_jct_s": Metric("Max JCT", "s", "lower", "longest per-job JCT"),
    "mean_bounded_slowdown": Metric(
        "Mean bounded slowdown", "ratio", "lower", "mean of max(1, JCT / max(run time, 10 s)) over completed jobs"
    ),
    "makespan_s": Metric("Makespan", "s", "lower", "last end - first submit"),
    "utilization": Metric(
        "GPU utilisation", "ratio", "higher", "busy GPU-seconds (fractions count as fractions) / (GPUs x makespan)"
    ),
    "gini_user_wait": Metric(
        "Gini of user mean wait", "ratio", "lower", "Gini coefficient of per-user mean wait (0 = all users wait alike)"
    ),
    "jain_user_wait": Metric(
        "Jain of user mean wait", "ratio", "higher", "Jain's index of per-user mean wait (1 = all users wait alike)"
    ),
    "gini_gpu_busy": Metric(
        "Gini of GPU busy time",
        "ratio",
        "lower",
        "Gini coefficient of per-GPU busy seconds over all GPUs (load imbalance)",
    ),
    "comm_overhead_gpu_h": Metric(
        "Communication overhead", "GPU-h", "lower", "extra GPU-hours spent because jobs spanned several nodes or racks"
    ),
    "fragmentation": Metric(
        "Fragmentation",
        "ratio",
        "lower",
        "time-integral of free capacity stranded on partly used GPUs / time-integral of all free capacity",
    ),
    "preemptions": Metric("Preemptions", "count", "lower", "total number of preemptions"),
    "lost_gpu_h": Metric("Lost work", "GPU-h", "lower", "GPU-hours of work rolled back by preemptions"),
}

#: The keys a summary adds when it is given an energy model (:class:`~engine.analysis.energy.EnergySummary`'s
#: fields, in display order), after those of :data:`METRICS`.
ENERGY_METRICS: dict[str, Metric] = {
    "energy_kwh": Metric(
        "Energy",
        "kWh",
        "lower",
        "integral over the makespan of PUE x sum over GPUs of idle_w + (busy_w - idle_w) x share held",
    ),
    "idle_energy_kwh": Metric(
        "Idle energy", "kWh", "lower", "PUE x idle_w x GPU-seconds no job held, summed over GPUs"
    ),
    "cost_usd": Metric("Cost of GPUs held", "USD", "lower", "GPU-hours held by jobs x price per GPU-hour"),
    "cluster_cost_usd": Metric("Cost of the cluster", "USD", "lower", "every GPU x price per GPU-hour x makespan"),
    "co2_kg": Metric("Carbon", "kg", "lower", "integral of facility power x grid intensity over the makespan"),
    "cluster_price_per_h": Metric("Cluster price", "USD/h", "lower", "sum over GPUs of the price per GPU-hour"),
    "energy_per_job_kwh": Metric(
        "Energy per completed job", "kWh", "lower", "energy (idle capacity and lost work included) / completed jobs"
    ),
    "cost_per_job_usd": Metric(
        "Cost per completed job", "USD", "lower", "cost of GPUs held (lost work included) / completed jobs"
    ),
    "energy_per_useful_gpu_h_kwh": Metric(
        "Energy per useful GPU-hour", "kWh", "lower", "energy / GPU-hours held that did work the jobs kept"
    ),
    "cost_per_useful_gpu_h_usd": Metric(
        "Cost per useful GPU-hour", "USD", "lower", "cost of GPUs held / GPU-hours held that did work the jobs kept"
    ),
}

#: The keys a summary adds when the run modelled failures (:class:`~engine.analysis.reliability.ReliabilitySummary`'s
#: fields, in display order), after the others.
RELIABILITY_METRICS: dict[str, Metric] = {
    "node_failures": Metric(
        "Node failures", "count", None, "node failures during the run (the same for every scheduler on the same seed)"
    ),
    "interruptions": Metric(
        "Jobs stopped by failures", "count", "lower", "times a node failure stopped a job (a gang counts once)"
    ),
    "failed_jobs": Metric("Failed jobs", "jobs", "lower", "jobs whose run crashed with no retry left"),
    "failure_lost_gpu_h": Metric(
        "Work lost to failures", "GPU-h", "lower", "GPU-hours of work rolled back to a checkpoint by node failures"
    ),
    "crash_lost_gpu_h": Metric(
        "Work lost to crashes", "GPU-h", "lower", "GPU-hours of work rolled back by job crashes that were retried"
    ),
    "checkpoint_gpu_h": Metric("Checkpoint cost", "GPU-h", "lower", "GPU-hours of work spent writing checkpoints"),
    "restart_gpu_h": Metric("Restart cost", "GPU-h", "lower", "GPU-hours of restart overhead after every stop"),
    "failed_job_gpu_h": Metric(
        "GPU time of failed jobs", "GPU-h", "lower", "GPU-hours held by the jobs that ended failed"
    ),
    "ettr": Metric("ETTR", "ratio", "higher", "effective training time ratio: useful GPU time / GPU time held"),
    "availability": Metric("GPU availability", "ratio", None, "GPU-seconds on nodes that were up / (GPUs x makespan)"),
}

#: The keys a summary adds when some job has a deadline (:class:`~engine.analysis.deadlines.DeadlineSummary`'s
#: fields, in display order), after the others.
DEADLINE_METRICS: dict[str, Metric] = {
    "deadline_jobs": Metric("Jobs with a deadline", "jobs", None, "jobs of the workload that have a deadline"),
    "deadline_ratio": Metric(
        "Deadlines met",
        "ratio",
        "higher",
        "jobs completed by their deadline / jobs with a deadline (declined count as missed)",
    ),
    "deadline_missed": Metric(
        "Deadlines missed", "jobs", "lower", "jobs with a deadline that did not complete by it, declined ones included"
    ),
    "declined": Metric("Declined", "jobs", "lower", "jobs the admission stage turned away at their arrival"),
    "mean_tardiness_s": Metric(
        "Mean tardiness", "s", "lower", "mean of max(0, end - deadline) over completed jobs with a deadline"
    ),
    "p95_tardiness_s": Metric("p95 tardiness", "s", "lower", _pct(95, "tardiness")),
    "best_effort_mean_jct_s": Metric(
        "Best-effort mean JCT", "s", "lower", "mean of end - submit over completed jobs without a deadline"
    ),
}

#: The keys a summary adds when some job is elastic (:class:`~engine.analysis.elastic.ElasticSummary`'s fields).
ELASTIC_METRICS: dict[str, Metric] = {
    "elastic_jobs": Metric("Elastic jobs", "jobs", None, "jobs that may run on a range of GPU counts"),
    "rescales": Metric("Rescales", "count", None, "times a scheduler changed a running job's GPUs"),
    "elastic_gpu_efficiency": Metric(
        "Elastic GPU efficiency",
        "ratio",
        "higher",
        "useful GPU-seconds (duration x speed-up at the requested size) / GPU-seconds held, completed elastic jobs",
    ),
}

#: Every key a summary may hold, with its metadata: :data:`METRICS`, :data:`ENERGY_METRICS`,
#: :data:`RELIABILITY_METRICS`, :data:`DEADLINE_METRICS`, then :data:`ELASTIC_METRICS`.
ALL_METRICS: dict[str, Metric] = {
    **METRICS,
    **ENERGY_METRICS,
    **RELIABILITY_METRICS,
    **DEADLINE_METRICS,
    **ELASTIC_METRICS,
}
_PARTS = (
    (ENERGY_METRICS, "energy"),
    (RELIABILITY_METRICS, "reliability"),
    (DEADLINE_METRICS, "deadlines"),
    (ELASTIC_METRICS, "elastic"),
)


@dataclass(frozen=True)
class Summary:
    """Run-level metrics; one field per key of :data:`METRICS` (same names, same order), ``energy`` when the run
    was summarised with an energy model (its keys are those of :data:`ENERGY_METRICS`) and ``reliability`` when the
    run modelled failures (the keys of :data:`RELIABILITY_METRICS`), ``deadlines`` when some job has a deadline
    (the keys of :data:`DEADLINE_METRICS`), ``elastic`` when some job is elastic (:data:`ELASTIC_METRICS`)."""

    jobs: int
    completed: int
    unschedulable: int
    mean_wait_s: float
    p50_wait_s: float
    p95_wait_s: float
    p99_wait_s: float
    max_wait_s: float
    mean_jct_s: float
    p50_jct_s: float
    p95_jct_s: float
    p99_jct_s: float
    max_jct_s: float
    mean_bounded_slowdown: float
    makespan_s: float
    utilization: float
    gini_user_wait: float
    jain_user_wait: float
    gini_gpu_busy: float
    comm_overhead_gpu_h: float
    fragmentation: float
    preemptions: int
    lost_gpu_h: float
    energy: EnergySummary | None = None
    reliability: ReliabilitySummary | None = None
    deadlines: DeadlineSummary | None = None
    elastic: ElasticSummary | None = None

    def to_dict(self) -> dict[str, int | float | None]:
        """``{metric: value}`` ready for JSON: plain ``int``/``float``, NaN (undefined) written as ``None``; the
        keys of :data:`METRICS`, then those of :data:`ENERGY_METRICS` when there is an ``energy``, then those of
        :data:`RELIABILITY_METRICS` when there is a ``reliability``, then :data:`DEADLINE_METRICS` when there are
        ``deadlines``, then :data:`ELASTIC_METRICS` when there is an ``elastic``."""
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in {name for _, name in _PARTS}}
        for part in (self.energy, self.reliability, self.deadlines, self.elastic):
            if part is not None:
                values.update(part.to_dict())
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in values.items()}

    def value(self, key: str) -> float | int:
        """The value of metric ``key`` (of :data:`METRICS`; of :data:`ENERGY_METRICS`, :data:`RELIABILITY_METRICS`
        or :data:`DEADLINE_METRICS`: NaN without that part)."""
        for keys, name in _PARTS:
            if key in keys:
                part = getattr(self, name)
                return math.nan if part is None else getattr(part, key)
        return getattr(self, key)


# ---------------------------------------------------------------------------------------------- formulas
def gini(values) -> float:
    """Gini coefficient of non-negative ``values``: ``sum_i sum_j |x_i - x_j| / (2 n^2 mean(x))``.

    0 means all equal, ``(n - 1) / n`` means one holds everything. All zeros give 0 (by convention);
    an empty input gives NaN. Computed in O(n log n) as ``2 sum_i i x_(i) / (n sum x) - (n + 1) / n``
    over the sorted values ``x_(1) <= ... <= x_(n)``.
    """
    x = np.sort(np.asarray(values, dtype=float).ravel())
    n = x.size
    if n == 0:
        return math.nan
    if np.any(x < 0):
        raise ValueError("gini: values must be >= 0")
    total = x.sum()
    if total == 0:
        return 0.0
    ranks = np.arange(1, n + 1)
    return float(max(0.0, 2.0 * np.dot(ranks, x) / (n * total) - (n + 1) / n))


def jain(values) -> float:
    """Jain's fairness index ``(sum x)^2 / (n sum x^2)``, from ``1/n`` (one holds all) to 1 (all equal).

    All zeros give 1 (by convention: everyone got the same); an empty input gives NaN.
    """
    x = np.asarray(values, dtype=float).ravel()
    n = x.size
    if n == 0:
        return math.nan
    sq = float(np.dot(x, x))
    if sq == 0:
        return 1.0
    return float(x.sum() ** 2 / (n * sq))


def _stats(x: np.ndarray) -> tuple[float, float, float, float, float]:
    """(mean, p50, p95, p99, max) of ``x``; all NaN when empty."""
    if x.size == 0:
        return (math.nan,) * 5
    p50, p95, p99 = np.percentile(x, [50, 95, 99])
    return float(x.mean()), float(p50), float(p95), float(p99), float(x.max())


@dataclass(frozen=True)
class _PerJob:
    """Per-job arrays (NaN where a job did not complete) shared by :func:`summarize` and the frames."""

    done: np.ndarray  # bool
    submit_s: np.ndarray
    wait_s: np.ndarray
    jct_s: np.ndarray
    slowdown: np.ndarray
    bounded_slowdown: np.ndarray
    gpu_s: np.ndarray  # busy GPU-seconds of each job, all segments


def _per_job(result: Result) -> _PerJob:
    n = result.n_jobs
    done = result.status == COMPLETED
    submit = np.array([j.submit_s for j in result.jobs], dtype=float)
    end = result.end_s
    run = result.run_s
    nan = np.full(n, math.nan)
    jct = np.where(done, end - submit, nan)
    woken_s = result.wakes * result.options.power_down.wake_s  # held, but waiting for nodes to wake
    wait = np.where(done, np.maximum(jct - run + woken_s, 0.0), nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        slowdown = np.where(done, jct / run, nan)
        bsld = np.where(done, np.maximum(1.0, jct / np.maximum(run, BSLD_FLOOR_S)), nan)
    gpu_s = np.bincount(result.seg_job, weights=_segment_gpu_s(result), minlength=n)[:n]
    return _PerJob(done, submit, wait, jct, slowdown, bsld, gpu_s)


def _segment_gpu_s(result: Result) -> np.ndarray:
    """Busy GPU-seconds of each run segment: duration x GPUs x fraction."""
    counts = np.diff(result.seg_gpu_ptr)
    return (result.seg_end_s - result.seg_start_s) * counts * result.seg_fraction


def gpu_busy_s(result: Result) -> np.ndarray:
    """Busy seconds of each GPU (index = GPU id), fractions counted as fractions, over all run segments."""
    counts = np.diff(result.seg_gpu_ptr)
    per_entry = np.repeat((result.seg_end_s - result.seg_start_s) * result.seg_fraction, counts)
    return np.bincount(result.seg_gpu_ids, weights=per_entry, minlength=result.cluster.n_gpus)


def fragmentation(result: Result) -> float:
    """Time-weighted share of free GPU capacity stranded on partly used GPUs (see the module docstring)."""
    t = result.series_t
    if t.size < 2:
        return 0.0
    dt = np.diff(t)
    stranded = float(np.dot(result.series_stranded_gpus[:-1], dt))
    free = float(np.dot(result.cluster.n_gpus - result.series_busy_gpus[:-1], dt))
    return stranded / free if free > 0 else 0.0


def _user_mean_wait(result: Result, per: _PerJob) -> np.ndarray:
    """Mean wait of each user with at least one completed job (users in sorted order)."""
    users = np.array([j.user for j in result.jobs], dtype=object)[per.done]
    if users.size == 0:
        return np.empty(0)
    codes, index = np.unique(users, return_inverse=True)
    sums = np.bincount(index, weights=per.wait_s[per.done], minlength=codes.size)
    return sums / np.bincount(index, minlength=codes.size)


# ---------------------------------------------------------------------------------------------- public
def summarize(result: Result, energy: EnergyModel | None = None) -> Summary:
    """All run-level metrics of ``result`` (formulas in the module docstring), with energy, cost and carbon under
    ``energy`` (``ClusterSpecError`` names a GPU type without power or price figures)."""
    per = _per_job(result)
    done = per.done
    completed = int(done.sum())
    wait = per.wait_s[done]
    jct = per.jct_s[done]
    ended = (result.status == COMPLETED) | (result.status == FAILED)  # not unschedulable, not declined: it ran
    if ended.any():
        first_submit = float(per.submit_s.min())
        makespan = float(result.end_s[ended].max()) - first_submit
    else:
        first_submit, makespan = 0.0, 0.0
    busy = gpu_busy_s(result)
    capacity = result.cluster.n_gpus * makespan
    user_wait = _user_mean_wait(result, per)
    return Summary(
        jobs=result.n_jobs,
        completed=completed,
        unschedulable=int((result.status == UNSCHEDULABLE).sum()),
        **dict(zip(("mean_wait_s", "p50_wait_s", "p95_wait_s", "p99_wait_s", "max_wait_s"), _stats(wait))),
        **dict(zip(("mean_jct_s", "p50_jct_s", "p95_jct_s", "p99_jct_s", "max_jct_s"), _stats(jct))),
        mean_bounded_slowdown=float(per.bounded_slowdown[done].mean()) if completed else math.nan,
        makespan_s=makespan,
        utilization=float(busy.sum() / capacity) if capacity > 0 else 0.0,
        gini_user_wait=gini(user_wait),
        jain_user_wait=jain(user_wait),
        gini_gpu_busy=gini(busy),
        comm_overhead_gpu_h=float(result.comm_overhead_gpu_s.sum()) / 3600.0,
        fragmentation=fragmentation(result),
        preemptions=int(result.preemptions.sum()),
        lost_gpu_h=float(result.lost_gpu_s.sum()) / 3600.0,
        energy=None if energy is None else summarize_energy(result, energy, first_submit, first_submit + makespan),
        reliability=(
            summarize_reliability(result, per.gpu_s, first_submit, first_submit + makespan)
            if failures_modelled(result)
            else None
        ),
        deadlines=summarize_deadlines(result) if has_deadlines(result) else None,
        elastic=summarize_elastic(result, per.gpu_s) if has_elastic(result) else None,
    )


def job_frame(result: Result, energy: EnergyModel | None = None) -> pd.DataFrame:
    """One row per job, in ``job_id`` order.

    Columns: ``job_id, name, user, job_type, submit_s, start_s`` (first start), ``end_s, run_s, wait_s,
    jct_s, slowdown, bounded_slowdown, gpus, gpu_fraction, vram_gib, gpu_type`` (type of the GPUs of its last
    run segment, ``""`` if it never ran), ``status`` (``"completed"``, ``"unschedulable"`` or ``"failed"``),
    ``preemptions, gpu_s`` (busy GPU-seconds), ``comm_overhead_gpu_s, lost_gpu_s, estimate_s, duration_s``
    (reference duration), ``reason`` (why it is unschedulable, else ``""``). Time columns are NaN for
    unschedulable jobs, the per-job ones (``run_s``, ``wait_s``, ...) for failed ones too. With ``energy``, also
    ``energy_kwh, cost_usd, co2_kg, useful_gpu_s`` (:func:`engine.analysis.energy.job_energy`; 0 for jobs that never
    ran); when the
    run modelled failures, also the columns of :func:`engine.analysis.reliability.job_reliability`; when some job
    has a deadline, also ``deadline_s, deadline_met, tardiness_s`` (:func:`engine.analysis.deadlines.job_deadlines`).
    ``status`` may also be ``"declined"`` (the admission stage turned the job away; ``reason`` says why). When some
    job is elastic, also ``min_gpus, max_gpus, scaling, rescales, gpu_efficiency``
    (:func:`engine.analysis.elastic.job_elastic`).
    """
    return pd.DataFrame(job_columns(result, energy))


def job_columns(result: Result, energy: EnergyModel | None = None) -> dict[str, Any]:
    """:func:`job_frame`'s columns (name -> a NumPy array or a list, one value per job, in its order), without
    pandas: what the run store's per-job records are written from (a frame costs more than the run for small
    runs)."""
    per = _per_job(result)
    lay = result.cluster.layout
    jobs = result.jobs
    columns: dict[str, Any] = {
        "job_id": np.arange(result.n_jobs, dtype=np.int64),
        "name": [j.name for j in jobs],
        "user": [j.user for j in jobs],
        "job_type": [j.job_type for j in jobs],
        "submit_s": per.submit_s,
        "start_s": result.first_start_s,
        "end_s": result.end_s,
        "run_s": np.where(per.done, result.run_s, math.nan),
        "wait_s": per.wait_s,
        "jct_s": per.jct_s,
        "slowdown": per.slowdown,
        "bounded_slowdown": per.bounded_slowdown,
        "gpus": np.array([j.gpus for j in jobs], dtype=np.int64),
        "gpu_fraction": np.array([j.gpu_fraction for j in jobs], dtype=float),
        "vram_gib": np.array([j.vram_gib for j in jobs], dtype=float),
        "gpu_type": [lay.type_names[lay.gpu_type[g[0]]] if g else "" for g in result.gpu_ids],
        "status": np.array(STATUS_NAMES)[result.status],
        "preemptions": result.preemptions,
        "gpu_s": per.gpu_s,
        "comm_overhead_gpu_s": result.comm_overhead_gpu_s,
        "lost_gpu_s": result.lost_gpu_s,
        "estimate_s": np.array([j.estimate_s for j in jobs], dtype=float),
        "duration_s": np.array([j.duration_s for j in jobs], dtype=float),
        "reason": [
            result.unschedulable_reasons.get(i) or result.declined_reasons.get(i, "") for i in range(result.n_jobs)
        ],
    }
    if energy is not None:
        columns.update(job_energy(result, energy))
    if failures_modelled(result):
        columns.update(job_reliability(result))
    if has_deadlines(result):
        columns.update(job_deadlines(result))
    if has_elastic(result):
        columns["min_gpus"] = np.array([j.min_gpus for j in jobs], dtype=np.int64)
        columns["max_gpus"] = np.array([j.max_gpus for j in jobs], dtype=np.int64)
        columns["scaling"] = [j.scaling for j in jobs]
        columns.update(job_elastic(result, per.gpu_s))
    return columns


def user_frame(result: Result, energy: EnergyModel | None = None) -> pd.DataFrame:
    """One row per user, sorted by user.

    Columns: ``user, jobs, completed, unschedulable, mean_wait_s, p95_wait_s, max_wait_s, mean_jct_s,
    mean_bounded_slowdown`` (over the user's completed jobs; NaN if none), ``gpu_h`` (busy GPU-hours),
    ``gpu_share`` (the user's share of all busy GPU-seconds; 0 when nothing ran), ``preemptions``; with
    ``energy``, also ``energy_kwh, cost_usd, co2_kg``, the sums of the user's jobs (:func:`job_frame`: the share
    of the draw they held, no idle capacity), and ``energy_per_job_kwh, cost_per_job_usd`` (those sums / the user's
    completed jobs) and ``energy_per_useful_gpu_h_kwh, cost_per_useful_gpu_h_usd`` (those sums / the user's useful
    GPU-hours, the job frame's ``useful_gpu_s`` / 3600), NaN where the divisor is 0; when the run modelled failures,
    also ``failed`` (the user's jobs that ended failed).
    """
    jobs = job_frame(result, energy)
    jobs["done"] = jobs["status"] == "completed"
    jobs["never_ran"] = jobs["status"] == "unschedulable"
    jobs["failed"] = jobs["status"] == "failed"
    grouped = jobs.groupby("user", sort=True)
    frame = pd.DataFrame(
        {
            "jobs": grouped.size(),
            "completed": grouped["done"].sum().astype(np.int64),
            "mean_wait_s": grouped["wait_s"].mean(),
            "p95_wait_s": grouped["wait_s"].quantile(0.95),
            "max_wait_s": grouped["wait_s"].max(),
            "mean_jct_s": grouped["jct_s"].mean(),
            "mean_bounded_slowdown": grouped["bounded_slowdown"].mean(),
            "gpu_h": grouped["gpu_s"].sum() / 3600.0,
            "preemptions": grouped["preemptions"].sum().astype(np.int64),
        }
    )
    frame.insert(2, "unschedulable", grouped["never_ran"].sum().astype(np.int64))
    if failures_modelled(result):
        frame.insert(3, "failed", grouped["failed"].sum().astype(np.int64))
    total = frame["gpu_h"].sum()
    frame.insert(len(frame.columns) - 1, "gpu_share", frame["gpu_h"] / total if total > 0 else 0.0)
    if energy is not None:
        frame = frame.join(user_energy(jobs))
    return frame.reset_index()


#: :func:`user_energy`'s sums of the job frame's energy columns, then the per-unit columns it derives from them.
USER_ENERGY_COLUMNS = ("energy_kwh", "cost_usd", "co2_kg")
USER_PER_UNIT_COLUMNS = (
    "energy_per_job_kwh",
    "cost_per_job_usd",
    "energy_per_useful_gpu_h_kwh",
    "cost_per_useful_gpu_h_usd",
)


def user_energy(jobs: pd.DataFrame) -> pd.DataFrame:
    """Indexed by user (sorted), from a job frame with an energy model's columns (:func:`job_frame`): the sums of
    the user's jobs' ``energy_kwh, cost_usd, co2_kg``, then those sums per completed job and per useful GPU-hour
    (the ``useful_gpu_s`` sum / 3600), NaN where the divisor is 0."""
    grouped = jobs.assign(done=jobs["status"] == "completed").groupby("user", sort=True)
    frame = pd.DataFrame({column: grouped[column].sum() for column in USER_ENERGY_COLUMNS})
    completed = grouped["done"].sum().where(lambda n: n > 0)
    useful_gpu_h = (grouped["useful_gpu_s"].sum() / 3600.0).where(lambda h: h > 0)
    frame["energy_per_job_kwh"] = frame["energy_kwh"] / completed
    frame["cost_per_job_usd"] = frame["cost_usd"] / completed
    frame["energy_per_useful_gpu_h_kwh"] = frame["energy_kwh"] / useful_gpu_h
    frame["cost_per_useful_gpu_h_usd"] = frame["cost_usd"] / useful_gpu_h
    return frame


def compare(results: Mapping[str, Result | Summary]) -> pd.DataFrame:
    """Rows = metric keys (in :data:`METRICS` order, then :data:`ENERGY_METRICS`'s when any summary has an
    energy part, then :data:`RELIABILITY_METRICS`'s when any has a reliability part, then :data:`DEADLINE_METRICS`'s
    when any has a deadline part, then :data:`ELASTIC_METRICS`'s when any has an elastic part; NaN in the columns
    without one), columns = the names of ``results`` (in order).

    Values may be Results or already computed Summaries (so callers that print both need not summarise twice).
    """
    summaries = {name: r if isinstance(r, Summary) else summarize(r) for name, r in results.items()}
    keys = list(METRICS)
    for part_keys, name in _PARTS:
        if any(getattr(s, name) is not None for s in summaries.values()):
            keys += list(part_keys)
    columns = {name: [s.value(k) for k in keys] for name, s in summaries.items()}
    return pd.DataFrame(columns, index=pd.Index(keys, name="metric"), dtype=float)


def best_columns(table: pd.DataFrame, *, rel_tol: float = 1e-9) -> dict[str, tuple[str, ...]]:
    """For each metric row of a :func:`compare` table, the columns holding its best value.

    Best follows :attr:`Metric.better`; ties (within ``rel_tol``) are all best. A row gets no entry when its
    metric has no direction, when fewer than two columns have a value, or when all values are equal
    (nothing to choose between).
    """
    out: dict[str, tuple[str, ...]] = {}
    for key, row in table.iterrows():
        metric = ALL_METRICS.get(str(key))
        if metric is None or metric.better is None:
            continue
        vals = row.dropna()
        if len(vals) < 2:
            continue
        best = vals.min() if metric.better == "lower" else vals.max()
        is_best = [math.isclose(v, best, rel_tol=rel_tol, abs_tol=1e-12) for v in vals]
        if all(is_best):
            continue
        out[str(key)] = tuple(c for c, b in zip(vals.index, is_best) if b)
    return out


def metric_name(key: str) -> str:
    """A metric's full name with its direction: ``Mean wait ↓``, ``Completed ↑``, ``Never ran (...)``."""
    m = ALL_METRICS[key]
    arrow = {"lower": " ↓", "higher": " ↑"}.get(m.better or "", "")
    return m.label + arrow

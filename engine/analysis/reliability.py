"""What failures cost a run: node failures, stopped jobs, failed jobs and the GPU time they took, from a
:class:`~engine.sim.simulator.Result` (the simulation records them: :mod:`engine.sim.failures`). Every formula is
written here.

GPU-seconds of *work* (lost, restart, checkpoint) are reference seconds of work x GPUs x GPU fraction, the
convention of ``Result.lost_gpu_s``; GPU-seconds *held* are wall seconds x GPUs x fraction over run segments.

* ``node_failures`` = the number of node failures during the run (``Result.outage_node``'s length).
* ``interruptions`` = the number of times a node failure stopped a job (a gang stopped at once counts once).
* ``failed_jobs`` = jobs whose status is ``FAILED`` (their run crashed with no retry left).
* ``failure_lost_gpu_h`` = sum of ``Result.failure_lost_gpu_s`` / 3600: work rolled back to a checkpoint by node
  failures. (``lost_gpu_h`` of :data:`~engine.analysis.metrics.METRICS` is the same for preemptions.)
* ``crash_lost_gpu_h`` = sum of ``Result.crash_lost_gpu_s`` / 3600: work rolled back by crashes that were retried.
* ``checkpoint_gpu_h`` = sum of ``Result.checkpoint_gpu_s`` / 3600: work spent writing checkpoints.
* ``restart_gpu_h`` = sum of ``Result.restart_gpu_s`` / 3600: restart overheads after stops of every cause.
* ``failed_job_gpu_h`` = GPU-hours held by the jobs that ended failed, all their run segments.
* ``ettr`` (effective training time ratio, Meta's: productive time over time held) = ``sum_j useful_j / sum_j
  held_j`` over the jobs that ran, where ``held_j`` is job ``j``'s GPU-seconds held and ``useful_j`` = ``held_j x
  duration_j / performed_j`` for a completed job, 0 for a failed one; ``performed_j`` = the reference work it did,
  ``work_j`` (its duration plus its checkpoints' cost) + (its lost work of every cause + its restart overheads +
  its waits for powered-down nodes to wake, ``Result.wake_gpu_s``) / its GPUs. 1 when nothing was lost (and when nothing ran); a communication slowdown is not a loss here.
* ``availability`` = GPU-seconds on nodes that were up / (GPUs x the window), over the summary's window (the
  first submit to the end of the makespan); 1 without node failures.

Over time and by size: :func:`availability_series` (GPUs up after each node failure or repair) and
:func:`interruptions_by_size` (mean time between interruptions, by job size).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from engine.sim.simulator import FAILED, Result


@dataclass(frozen=True)
class ReliabilitySummary:
    """The run-level reliability metrics (formulas in the module docstring)."""

    node_failures: int
    interruptions: int
    failed_jobs: int
    failure_lost_gpu_h: float
    crash_lost_gpu_h: float
    checkpoint_gpu_h: float
    restart_gpu_h: float
    failed_job_gpu_h: float
    ettr: float
    availability: float

    def to_dict(self) -> dict[str, int | float]:
        return asdict(self)


def failures_modelled(result: Result) -> bool:
    """Whether the run modelled failures or checkpoint costs (then its summary holds the reliability metrics)."""
    return result.options.failures.active


def _demand(result: Result) -> np.ndarray:
    return np.array([j.gpus * j.gpu_fraction for j in result.jobs], dtype=float)


def useful_gpu_s(result: Result, held_gpu_s: np.ndarray) -> np.ndarray:
    """Per job, the GPU-seconds it held that did work it kept: ``useful_j`` of the module docstring's ``ettr``
    (``held_j x duration_j / performed_j`` for a completed job, 0 for a failed one); ``held_gpu_s`` the GPU-seconds
    each job held."""
    demand = _demand(result)
    duration = np.array([j.duration_s for j in result.jobs], dtype=float)
    work = np.array(result.options.work_s(duration.tolist()), dtype=float)
    wasted_gpu_s = (
        result.lost_gpu_s
        + result.failure_lost_gpu_s
        + result.crash_lost_gpu_s
        + result.restart_gpu_s
        + result.wake_gpu_s
    )
    performed = work + wasted_gpu_s / demand
    useful_share = np.where(result.status == FAILED, 0.0, duration / performed)
    return held_gpu_s * useful_share


def ettr(result: Result, held_gpu_s: np.ndarray) -> float:
    """Effective training time ratio of ``result`` (module docstring), ``held_gpu_s`` the GPU-seconds each job
    held."""
    total = float(held_gpu_s.sum())
    return float(useful_gpu_s(result, held_gpu_s).sum()) / total if total > 0 else 1.0


def up_gpu_s(result: Result, start_s: float, end_s: float) -> float:
    """GPU-seconds on nodes that were up from ``start_s`` to ``end_s``."""
    node_gpus = result.cluster.layout.node_gpus
    down_from = np.maximum(result.outage_start_s, start_s)
    down_to = np.minimum(np.nan_to_num(result.outage_end_s, nan=end_s), end_s)
    down = np.maximum(down_to - down_from, 0.0) * node_gpus[result.outage_node]
    return result.cluster.n_gpus * (end_s - start_s) - float(down.sum())


def summarize_reliability(result: Result, held_gpu_s: np.ndarray, start_s: float, end_s: float) -> ReliabilitySummary:
    """The reliability metrics of ``result`` (module docstring); ``held_gpu_s``: GPU-seconds each job held;
    ``[start_s, end_s]``: the window of ``availability``."""
    failed = result.status == FAILED
    window_gpu_s = result.cluster.n_gpus * (end_s - start_s)
    return ReliabilitySummary(
        node_failures=int(result.outage_node.size),
        interruptions=int(result.interruptions.sum()),
        failed_jobs=int(failed.sum()),
        failure_lost_gpu_h=float(result.failure_lost_gpu_s.sum()) / 3600.0,
        crash_lost_gpu_h=float(result.crash_lost_gpu_s.sum()) / 3600.0,
        checkpoint_gpu_h=float(result.checkpoint_gpu_s.sum()) / 3600.0,
        restart_gpu_h=float(result.restart_gpu_s.sum()) / 3600.0,
        failed_job_gpu_h=float(held_gpu_s[failed].sum()) / 3600.0,
        ettr=ettr(result, held_gpu_s),
        availability=up_gpu_s(result, start_s, end_s) / window_gpu_s if window_gpu_s > 0 else 1.0,
    )


def job_reliability(result: Result) -> dict[str, np.ndarray]:
    """Per job: ``interruptions, job_failures`` (crashes of its runs), ``failure_lost_gpu_s, crash_lost_gpu_s,
    restart_gpu_s, checkpoint_gpu_s`` (the columns of the result)."""
    return {
        name: getattr(result, name)
        for name in (
            "interruptions",
            "job_failures",
            "failure_lost_gpu_s",
            "crash_lost_gpu_s",
            "restart_gpu_s",
            "checkpoint_gpu_s",
        )
    }


def availability_series(result: Result) -> pd.DataFrame:
    """GPU availability over time: columns ``t_s`` (0, then each node failure or repair, in time order) and
    ``up_gpus`` (GPUs on nodes that are up right after it)."""
    node_gpus = result.cluster.layout.node_gpus[result.outage_node]
    repaired = ~np.isnan(result.outage_end_s)
    t = np.concatenate([[0.0], result.outage_start_s, result.outage_end_s[repaired]])
    change = np.concatenate([[0], -node_gpus, node_gpus[repaired]])
    order = np.argsort(t, kind="stable")
    frame = pd.DataFrame({"t_s": t[order], "up_gpus": result.cluster.n_gpus + np.cumsum(change[order])})
    return frame.groupby("t_s", sort=True, as_index=False).last()


def interruptions_by_size(result: Result) -> pd.DataFrame:
    """Mean time between interruptions by job size: one row per size class ``gpus`` (jobs of at most that many
    GPUs and more than half of it: 1, 2, 4, 8, ...), with ``jobs``, ``run_h`` (wall hours they ran, all
    segments), ``interruptions`` and ``mtti_h`` = ``run_h / interruptions`` (NaN without any)."""
    gpus = np.array([j.gpus for j in result.jobs], dtype=np.int64)
    ran = result.run_s > 0
    size = 2 ** np.ceil(np.log2(np.maximum(gpus, 1))).astype(np.int64)
    frame = pd.DataFrame(
        {"gpus": size[ran], "run_h": result.run_s[ran] / 3600.0, "interruptions": result.interruptions[ran]}
    )
    out = (
        frame.groupby("gpus", sort=True)
        .agg(jobs=("run_h", "size"), run_h=("run_h", "sum"), interruptions=("interruptions", "sum"))
        .reset_index()
    )
    out["mtti_h"] = [run_h / n if n else math.nan for run_h, n in zip(out["run_h"], out["interruptions"])]
    return out

"""What a run records, and the :class:`Result` it becomes.

:class:`Recorder` grows while the simulation runs: per job (first start, end, run time, preemptions, overheads,
last GPUs), one entry per run segment, and one row of the time series per change of state. Every column is a
list (appending to a typed list is cheaper than packing a row into a byte buffer, and than appending to an
array.array); :meth:`Recorder.result` turns them into the arrays of a :class:`Result` once the run is over.

Compiled, like the other hot modules (``engine/_native.py``); its idioms are explained once in ARCHITECTURE.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final

import numpy as np
from mypy_extensions import mypyc_attr

from engine.sim.cluster import Cluster
from engine.sim.failures import FailureCalendar
from engine.sim.job import Job
from engine.sim.options import RunOptions
from engine.sim.power import NodeSleep
from engine.sim.state import JOB_DECLINED, JOB_FAILED, JOB_UNSCHEDULABLE

#: Status codes in :attr:`Result.status`.
COMPLETED: Final = 0
UNSCHEDULABLE: Final = 1
FAILED: Final = 2
DECLINED: Final = 3


@mypyc_attr(native_class=False)  # compiled, a plain class still: pickled, compared, replaced like any dataclass
@dataclass(frozen=True, eq=False)
class Result:
    """Everything a run produced. Arrays are indexed by ``job_id`` unless said otherwise.

    Attributes:
        scheduler: the scheduler's name.
        cluster, jobs, seed: the inputs.
        status: ``COMPLETED`` (0), ``UNSCHEDULABLE`` (1), ``FAILED`` (2: its run crashed with no retry left; its
            ``end_s`` is when) or ``DECLINED`` (3: the admission stage turned it away; it never ran) per job.
        unschedulable_reasons: ``job_id -> why it can never run on this cluster``.
        first_start_s, end_s: first start and final end, seconds (NaN for unschedulable jobs).
        run_s: total time the job ran, all segments.
        preemptions: times each job was preempted.
        comm_overhead_gpu_s: extra GPU-seconds spent because the job was spread over nodes or racks.
        lost_gpu_s: GPU-seconds of work lost to preemptions (rolled back to a checkpoint).
        interruptions: times each job was stopped by a node failure.
        failure_lost_gpu_s: GPU-seconds of work lost to node failures (rolled back to a checkpoint).
        job_failures: times each job's run crashed by itself (retried or not).
        crash_lost_gpu_s: GPU-seconds of work lost to crashes that were retried (rolled back to a checkpoint).
        restart_gpu_s: GPU-seconds of restart overhead paid after stops of any cause.
        wake_gpu_s: GPU-seconds of overhead paid waiting for powered-down nodes to wake (:mod:`engine.sim.power`).
        wakes: times each job waited for powered-down nodes to wake (``options.power_down.wake_s`` each).
        checkpoint_gpu_s: GPU-seconds spent writing the checkpoints each job kept (``checkpoint_cost_s`` each).
            Lost and overhead GPU-seconds are reference work x GPUs x fraction, as ``lost_gpu_s``.
        gpu_ids: GPUs of each job's last run segment (``()`` when it never ran).
        seg_job, seg_start_s, seg_end_s: one entry per run segment (a job preempted twice has three).
        seg_gpu_ptr, seg_gpu_ids: the GPUs of segment ``i`` are ``seg_gpu_ids[seg_gpu_ptr[i]:seg_gpu_ptr[i+1]]``.
        seg_fraction: the GPU share each segment held on each of its GPUs.
        series_t: times at which the state changed; the following arrays hold the state right after each:
        series_queue, series_running: jobs waiting, jobs running.
        series_busy_gpus: GPUs in use (fractions count as fractions).
        series_stranded_gpus: free GPU capacity on partly used GPUs (fragmented capacity).
        outage_node, outage_start_s, outage_end_s: one entry per node failure, in the order they began: the node,
            when it failed, when it was back (NaN: still down when the run ended).
        sleep_node, sleep_start_s, sleep_end_s: one entry per time a node was powered down (``options.power_down``):
            the node and the interval (``inf``: idle at the end of the run, it stays down); empty when off.
        options: the run's options.
        decision_points: how many times the scheduler was consulted.
        declined_reasons: ``job_id -> why the admission stage declined it`` (:mod:`engine.sim.admission`).
        rescales: times each job's GPUs were changed by a ``Resize`` (:mod:`engine.sim.elastic`).
    """

    scheduler: str
    cluster: Cluster
    jobs: tuple[Job, ...]
    seed: int
    status: np.ndarray
    unschedulable_reasons: dict[int, str]
    first_start_s: np.ndarray
    end_s: np.ndarray
    run_s: np.ndarray
    preemptions: np.ndarray
    comm_overhead_gpu_s: np.ndarray
    lost_gpu_s: np.ndarray
    gpu_ids: tuple[tuple[int, ...], ...]
    seg_job: np.ndarray
    seg_start_s: np.ndarray
    seg_end_s: np.ndarray
    seg_gpu_ptr: np.ndarray
    seg_gpu_ids: np.ndarray
    seg_fraction: np.ndarray
    series_t: np.ndarray
    series_queue: np.ndarray
    series_running: np.ndarray
    series_busy_gpus: np.ndarray
    series_stranded_gpus: np.ndarray
    interruptions: np.ndarray
    failure_lost_gpu_s: np.ndarray
    job_failures: np.ndarray
    crash_lost_gpu_s: np.ndarray
    restart_gpu_s: np.ndarray
    checkpoint_gpu_s: np.ndarray
    outage_node: np.ndarray
    outage_start_s: np.ndarray
    outage_end_s: np.ndarray
    wake_gpu_s: np.ndarray
    wakes: np.ndarray
    sleep_node: np.ndarray
    sleep_start_s: np.ndarray
    sleep_end_s: np.ndarray
    options: RunOptions
    decision_points: int = 0
    extra: dict = field(default_factory=dict)
    declined_reasons: dict[int, str] = field(default_factory=dict)
    rescales: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def n_jobs(self) -> int:
        return len(self.jobs)

    def segment_gpus(self, i: int) -> np.ndarray:
        return self.seg_gpu_ids[self.seg_gpu_ptr[i] : self.seg_gpu_ptr[i + 1]]


class Recorder:
    """One run's record as it grows; its columns are named as the :class:`Result` fields they become. The
    simulation writes the per-job columns directly (``a[j] = a[j] + x``) and adds segments and rows through
    :meth:`segment` and :meth:`sample`."""

    def __init__(self, n_jobs: int) -> None:
        n = n_jobs
        self.first_start_s = [math.nan] * n
        self.end_s = [math.nan] * n
        self.run_s = [0.0] * n
        self.preemptions = [0] * n
        self.comm_overhead_gpu_s = [0.0] * n
        self.lost_gpu_s = [0.0] * n
        self.failure_lost_gpu_s = [0.0] * n
        self.crash_lost_gpu_s = [0.0] * n
        self.restart_gpu_s = [0.0] * n
        self.rescales = [0] * n
        self.gpu_ids: list[tuple[int, ...]] = [()] * n
        self.seg_job: list[int] = []
        self.seg_start_s: list[float] = []
        self.seg_end_s: list[float] = []
        self.seg_fraction: list[float] = []
        self.seg_gpu_ptr: list[int] = [0]
        self.seg_gpu_ids: list[int] = []
        self.series_t: list[float] = []
        self.series_queue: list[int] = []
        self.series_running: list[int] = []
        self.series_busy_gpus: list[float] = []
        self.series_stranded_gpus: list[float] = []
        self._last_t = math.nan  # time of the last row of the series (none yet)

    def segment(
        self, j: int, start_s: float, end_s: float, fraction: float, gpus: tuple[int, ...], comm_overhead_gpu_s: float
    ) -> None:
        """Job ``j`` ran from ``start_s`` to ``end_s`` on ``fraction`` of each of ``gpus``, and spent
        ``comm_overhead_gpu_s`` extra GPU-seconds on communication doing it."""
        self.run_s[j] = self.run_s[j] + (end_s - start_s)
        self.comm_overhead_gpu_s[j] = self.comm_overhead_gpu_s[j] + comm_overhead_gpu_s
        self.seg_job.append(j)
        self.seg_start_s.append(start_s)
        self.seg_end_s.append(end_s)
        self.seg_fraction.append(fraction)
        seg_gpus = self.seg_gpu_ids
        seg_gpus.extend(gpus)
        self.seg_gpu_ptr.append(len(seg_gpus))

    def sample(self, t: float, queued: int, running: int, busy_gpus: float, stranded_gpus: float) -> None:
        """The state at time ``t`` (a later sample at the same time replaces it: the state right after ``t``)."""
        if t == self._last_t:
            self.series_queue[-1] = queued
            self.series_running[-1] = running
            self.series_busy_gpus[-1] = busy_gpus
            self.series_stranded_gpus[-1] = stranded_gpus
            return
        self._last_t = t
        self.series_t.append(t)
        self.series_queue.append(queued)
        self.series_running.append(running)
        self.series_busy_gpus.append(busy_gpus)
        self.series_stranded_gpus.append(stranded_gpus)

    def result(
        self,
        scheduler: str,
        cluster: Cluster,
        jobs: tuple[Job, ...],
        seed: int,
        lifecycle: list[int],
        reasons: dict[int, str],
        decision_points: int,
        options: RunOptions,
        faults: FailureCalendar,
        work_s: list[float],
        work_left_s: list[float],
        power: NodeSleep | None = None,
    ) -> Result:
        """The :class:`Result` of the finished run (``lifecycle``: each job's final ``JOB_*`` state; ``reasons``: why
        each job set aside at its arrival was, unschedulable or declined; ``faults``: its
        failures; ``work_s``, ``work_left_s``: each job's work, checkpoints included, and what was left of it;
        ``power``: the nodes that powered down, ``None`` when none could)."""
        states = _ints(lifecycle)
        status = np.full(len(lifecycle), COMPLETED, dtype=np.int8)
        status[states == JOB_UNSCHEDULABLE] = UNSCHEDULABLE
        status[states == JOB_FAILED] = FAILED
        status[states == JOB_DECLINED] = DECLINED
        declined = {j: why for j, why in reasons.items() if lifecycle[j] == JOB_DECLINED}
        sleep_node, sleep_start_s, sleep_end_s = ([], [], []) if power is None else power.intervals()
        return Result(
            scheduler=scheduler,
            cluster=cluster,
            jobs=jobs,
            seed=seed,
            status=status,
            unschedulable_reasons={j: why for j, why in reasons.items() if j not in declined},
            first_start_s=_floats(self.first_start_s),
            end_s=_floats(self.end_s),
            run_s=_floats(self.run_s),
            preemptions=_ints(self.preemptions),
            comm_overhead_gpu_s=_floats(self.comm_overhead_gpu_s),
            lost_gpu_s=_floats(self.lost_gpu_s),
            gpu_ids=tuple(self.gpu_ids),
            seg_job=_ints(self.seg_job),
            seg_start_s=_floats(self.seg_start_s),
            seg_end_s=_floats(self.seg_end_s),
            seg_gpu_ptr=_ints(self.seg_gpu_ptr),
            seg_gpu_ids=_ints(self.seg_gpu_ids),
            seg_fraction=_floats(self.seg_fraction),
            series_t=_floats(self.series_t),
            series_queue=_ints(self.series_queue),
            series_running=_ints(self.series_running),
            series_busy_gpus=_floats(self.series_busy_gpus),
            series_stranded_gpus=_floats(self.series_stranded_gpus),
            interruptions=_ints(faults.interruptions),
            failure_lost_gpu_s=_floats(self.failure_lost_gpu_s),
            job_failures=_ints(faults.job_failures),
            crash_lost_gpu_s=_floats(self.crash_lost_gpu_s),
            restart_gpu_s=_floats(self.restart_gpu_s),
            checkpoint_gpu_s=_checkpoint_gpu_s(options, jobs, work_s, work_left_s, states),
            outage_node=_ints(faults.outage_node),
            outage_start_s=_floats(faults.outage_start_s),
            outage_end_s=_floats(faults.outage_end_s),
            wake_gpu_s=np.zeros(len(jobs)) if power is None else _floats(power.wake_gpu_s),
            wakes=np.zeros(len(jobs), dtype=np.int64) if power is None else _ints(power.wakes),
            sleep_node=_ints(sleep_node),
            sleep_start_s=_floats(sleep_start_s),
            sleep_end_s=_floats(sleep_end_s),
            options=options,
            decision_points=decision_points,
            declined_reasons=declined,
            rescales=_ints(self.rescales),
        )


def _checkpoint_gpu_s(
    options: RunOptions, jobs: tuple[Job, ...], work_s: list[float], work_left_s: list[float], states: np.ndarray
) -> np.ndarray:
    """GPU-seconds each job spent writing checkpoints: ``checkpoint_cost_s`` x the checkpoints in the work it had
    done when it ended (all of it when it completed), x its GPUs (0 for jobs that never ran)."""
    period, cost_s = options.checkpoint_period_s, options.failures.checkpoint_cost_s
    if period is None or not cost_s:
        return np.zeros(len(jobs))
    demand = np.array([job.gpus * job.gpu_fraction for job in jobs], dtype=float)
    written = np.floor((_floats(work_s) - _floats(work_left_s)) / period + 1e-9)
    return np.where(states == JOB_UNSCHEDULABLE, 0.0, written * cost_s * demand)


def _floats(values: list) -> np.ndarray:
    """``values`` as a float array (np.fromiter: several times faster than np.array on a long list)."""
    return np.fromiter(values, dtype=float, count=len(values))


def _ints(values: list) -> np.ndarray:
    return np.fromiter(values, dtype=np.int64, count=len(values))

"""The admission stage: at its arrival, before the queue, a job is admitted or declined (with its reason).

The run's ``options.admission.policy`` (:data:`~engine.sim.options.ADMISSION_POLICIES`) picks the rule:

* ``accept-all`` (the default): no stage at all; every job that fits the cluster enters the queue, and the run is
  the run without admission control, bit for bit.
* ``feasible``: a job with a deadline is declined when it could not meet it even if it started the moment it
  arrived on the fastest GPU type it may use, alone and on one node: when ``now + work_s / best_speed >
  deadline_s``, where ``work_s`` is its reference work (its duration plus what its checkpoints cost) and
  ``best_speed`` the largest speed of its job type over the cluster's GPU types it is allowed on. It is an
  optimistic test (queueing and communication only make a job later), so it declines only jobs that are sure to
  miss; jobs without a deadline are always admitted. An elastic job's best speed is at its best GPU count (up to
  its ``max_gpus`` and the cluster's size): its curve's largest speed-up over its requested size.

A declined job never runs: its status is ``DECLINED`` and :attr:`~engine.sim.record.Result.declined_reasons` holds
why. The simulation calls :meth:`Admission.decline` once per arriving job that fits the cluster.
"""

from __future__ import annotations

from typing import Sequence

from engine.sim.cluster import Cluster
from engine.sim.elastic import speedup_ratio
from engine.sim.job import Job
from engine.sim.options import RunOptions


def best_speed(cluster: Cluster, job: Job) -> float:
    """The largest speed of ``job``'s type over the cluster's GPU types it is allowed on (all of them when it
    names none the cluster has)."""
    names = cluster.layout.type_names
    allowed = [t for t in names if not job.allowed_types or t in job.allowed_types] or list(names)
    return max(cluster.speed(job.job_type, t) for t in allowed)


class BestSpeeds:
    """:func:`best_speed` on one cluster, remembered per (job type, allowed types): a workload has few such pairs."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._known: dict[tuple[str, frozenset[str]], float] = {}

    def __call__(self, job: Job) -> float:
        key = (job.job_type, job.allowed_types)
        speed = self._known.get(key)
        if speed is None:
            speed = self._known[key] = best_speed(self._cluster, job)
        return speed


class Admission:
    """The ``feasible`` policy for one run (module docstring)."""

    def __init__(self, cluster: Cluster, jobs: Sequence[Job]) -> None:
        self._cluster = cluster
        self._jobs = jobs
        # what best_speed depends on -> its value: few distinct keys (job types, curves, sizes) in a workload
        self._best: dict[tuple[str, frozenset[str], str, int, int, int], float] = {}

    def best_speed(self, job: Job) -> float:
        """The largest speed of ``job``'s type over the cluster's GPU types it is allowed on (times its best
        speed-up over its requested size, elastic)."""
        key = (job.job_type, job.allowed_types, job.scaling, job.gpus, job.min_gpus, job.max_gpus)
        speed = self._best.get(key)
        if speed is None:
            speed = best_speed(self._cluster, job)
            if job.elastic:
                most = min(job.max_gpus, self._cluster.layout.n_gpus)
                speed *= max(speedup_ratio(job, k) for k in range(job.min_gpus, max(most, job.min_gpus) + 1))
            self._best[key] = speed
        return speed

    def decline(self, j: int, now_s: float, work_s: float) -> str | None:
        """Why job ``j``, arriving at ``now_s`` with ``work_s`` of reference work, is declined; ``None``: admitted."""
        job = self._jobs[j]
        if not job.has_deadline:
            return None
        speed = self.best_speed(job)
        earliest_s = now_s + work_s / speed
        if earliest_s <= job.deadline_s:
            return None
        return (
            f"cannot meet its deadline at {job.deadline_s:g} s: {work_s:g} s of work at its best speed "
            f"{speed:g} ends at {earliest_s:g} s at the earliest"
        )


def make_admission(cluster: Cluster, jobs: Sequence[Job], options: RunOptions) -> Admission | None:
    """The run's admission stage, or ``None`` when it admits every job (``accept-all``)."""
    return Admission(cluster, jobs) if options.admission.active else None

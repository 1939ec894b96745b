"""One job's story in a run: when it arrived, what the cluster looked like then, why it waited or never ran.

The Kubernetes scheduler simulator answers "why is this pod pending?"; this answers the same for a job of a
:class:`~engine.sim.simulator.Result`, from the run's own records (segments, series, reasons), never by
re-running anything.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.errors import EngineError
from engine.sim.simulator import COMPLETED, FAILED, Result
from engine.units import human_seconds


@dataclass(frozen=True)
class JobStory:
    """What happened to one job in one run.

    Attributes:
        job_id, user, gpus: the job (its index in the run), its tenant and the GPUs it asks for.
        name: the job's id in its trace (:attr:`Job.name`), else its index: what the story calls it.
        submit_s: when it arrived.
        never_ran: why it can never run on this cluster ("" when it ran).
        start_s, wait_s, end_s: first start, total time queued, end (NaN when it never ran).
        gpu_type, nodes: the GPU type and the nodes of its last run segment ("" / () when it never ran).
        free_fit_gpus_at_submit: GPUs of the types it may use (allowed, with enough memory) that were free
            (on a node that was up, nothing running on them) when it arrived.
        fit_gpus: GPUs of those types in the cluster.
        queue_at_submit: jobs waiting right after it arrived (itself included).
        overtaken_by: jobs submitted after it that started before it (the scheduler's order, or backfilling).
        preemptions: times it was preempted.
        declined: why the admission stage turned it away at its arrival ("" when it was admitted).
        interruptions: times a node failure stopped it (:class:`~engine.sim.options.FailureModel`).
        crashes: times its run crashed by itself.
        failed: whether it ended failed (its last run crashed with no retry left).
        failure_lost_gpu_s: GPU-seconds of its work rolled back to a checkpoint by node failures and crashes.
    """

    job_id: int
    name: str
    user: str
    gpus: int
    submit_s: float
    never_ran: str
    start_s: float
    wait_s: float
    end_s: float
    gpu_type: str
    nodes: tuple[int, ...]
    free_fit_gpus_at_submit: int
    fit_gpus: int
    queue_at_submit: int
    overtaken_by: int
    preemptions: int
    declined: str = ""
    interruptions: int = 0
    crashes: int = 0
    failed: bool = False
    failure_lost_gpu_s: float = 0.0

    def sentence(self) -> str:
        """The story in plain words."""
        head = f"Job {self.name} ({self.user}, {self.gpus} GPU{'s' if self.gpus != 1 else ''})"
        if self.never_ran:
            return f"{head} never ran: it {self.never_ran}, so no scheduler can start it on this cluster."
        if self.declined:
            return f"{head} was declined when it arrived at {human_seconds(self.submit_s)}: it {self.declined}."
        arrived = (
            f"{head} arrived at {human_seconds(self.submit_s)}, when {self.free_fit_gpus_at_submit} of the "
            f"{self.fit_gpus} GPUs it may use were free and {self.queue_at_submit} job(s) were waiting."
        )
        where = f"on {self.gpu_type} (node{'s' if len(self.nodes) > 1 else ''} {', '.join(map(str, self.nodes))})"
        if self.wait_s <= 0:
            ran = f" It started at once {where}."
        elif self.free_fit_gpus_at_submit >= self.gpus:
            ran = (
                f" It waited {human_seconds(self.wait_s)} although enough GPUs were free when it arrived: the "
                f"scheduler started other jobs first or kept them for others; it then ran {where}."
            )
        else:
            ran = (
                f" It waited {human_seconds(self.wait_s)} for {self.gpus} GPUs of its types to be free at once, "
                f"then ran {where}."
            )
        tail = ""
        if self.overtaken_by:
            tail += f" {self.overtaken_by} job(s) submitted after it started before it."
        if self.preemptions:
            tail += f" It was preempted {self.preemptions} time(s), and waited again each time."
        return arrived + ran + tail + self._failures()

    def _failures(self) -> str:
        """The failures the job met, in words ("" when none)."""
        met = [
            f"{what} {n} time(s)"
            for what, n in (("a node failure stopped it", self.interruptions), ("its run crashed", self.crashes))
            if n
        ]
        if not met:
            return ""
        lost = (
            f", losing {self.failure_lost_gpu_s / 3600:.3g} GPU-h of work back to its checkpoints"
            if self.failure_lost_gpu_s > 0
            else ""
        )
        again = "; it waited again after each" if self.interruptions + self.crashes > int(self.failed) else ""
        end = " It ended failed: its last run crashed with no retry left." if self.failed else ""
        return f" Failures: {' and '.join(met)}{lost}{again}.{end}"


def job_story(result: Result, job_id: int) -> JobStory:
    """The :class:`JobStory` of job ``job_id`` in ``result`` (``EngineError`` for an id not in the run)."""
    if not (isinstance(job_id, (int, np.integer)) and 0 <= job_id < result.n_jobs):
        raise EngineError(f"job {job_id!r}: the run has jobs 0 to {result.n_jobs - 1}")
    j = int(job_id)
    job = result.jobs[j]
    lay = result.cluster.layout
    types_ok = np.array(
        [
            (not job.allowed_types or t in job.allowed_types) and lay.type_vram_gib[i] >= job.vram_gib
            for i, t in enumerate(lay.type_names)
        ]
    )
    fit = types_ok[lay.gpu_type]
    t = job.submit_s
    starts, ends = np.asarray(result.seg_start_s), np.asarray(result.seg_end_s)
    live = np.flatnonzero((starts <= t) & (ends > t) & (np.asarray(result.seg_job) != j))
    busy = np.zeros(lay.n_gpus, dtype=bool)
    ptr, ids = np.asarray(result.seg_gpu_ptr), np.asarray(result.seg_gpu_ids)
    for s in live.tolist():
        busy[ids[ptr[s] : ptr[s + 1]]] = True
    down = (result.outage_start_s <= t) & ~(result.outage_end_s <= t)  # a NaN end: never repaired
    busy |= np.isin(lay.gpu_node, result.outage_node[down])  # a node down is not free either
    k = int(np.searchsorted(result.series_t, t, side="right")) - 1
    queue = int(result.series_queue[k]) if k >= 0 else 0
    ran = result.status[j] in (COMPLETED, FAILED)  # either way it ran (not unschedulable, not declined)
    start = float(result.first_start_s[j])
    submits = np.array([x.submit_s for x in result.jobs])
    later = (submits > t) | ((submits == t) & (np.arange(result.n_jobs) > j))
    overtaken = int(np.sum(later & (np.asarray(result.first_start_s) < start))) if ran else 0
    gpus = result.gpu_ids[j]
    return JobStory(
        job_id=j,
        name=job.name or str(j),
        user=job.user,
        gpus=job.gpus,
        submit_s=t,
        never_ran=result.unschedulable_reasons.get(j, ""),
        start_s=start,
        wait_s=max(0.0, float(result.end_s[j] - t - result.run_s[j])) if ran else math.nan,
        end_s=float(result.end_s[j]),
        gpu_type=lay.type_names[lay.gpu_type[gpus[0]]] if gpus else "",
        nodes=tuple(sorted({int(lay.gpu_node[g]) for g in gpus})),
        free_fit_gpus_at_submit=int(np.sum(fit & ~busy)),
        fit_gpus=int(fit.sum()),
        queue_at_submit=queue,
        overtaken_by=overtaken,
        preemptions=int(result.preemptions[j]),
        declined=result.declined_reasons.get(j, ""),
        interruptions=int(result.interruptions[j]),
        crashes=int(result.job_failures[j]),
        failed=bool(result.status[j] == FAILED),
        failure_lost_gpu_s=float(result.failure_lost_gpu_s[j] + result.crash_lost_gpu_s[j]),
    )

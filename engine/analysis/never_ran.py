"""Jobs that never ran: how many, why, and one sentence that says so wherever results are shown.

A job whose shape no part of the cluster can hold (more GPUs of one type than the cluster has, more memory per
GPU than any allowed type, or no allowed type at all) is marked unschedulable at arrival and never runs. Wait,
JCT and utilisation are computed over the jobs that completed, so a cluster too small for its widest jobs
looks *better* than one that fits them all unless the never-ran jobs are stated next to the numbers. The
reasons come from the engine itself (:func:`engine.sim.simulator.unschedulable_reasons` before a run,
:attr:`Result.unschedulable_reasons` after one), so this module never disagrees with a run.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Mapping, Sequence

from engine.sim.cluster import Cluster
from engine.sim.job import Job
from engine.sim.simulator import Result, unschedulable_reasons


@dataclass(frozen=True)
class NeverRan:
    """The jobs of a workload that can never run on a cluster.

    Attributes:
        jobs: jobs in the workload.
        count: jobs that can never run.
        by_reason: ``(reason, jobs)`` pairs, most frequent first (reasons as the engine words them).
        widest_job: id of the never-ran job that asks for the most GPUs (-1 when none).
        widest_gpus: its GPU count (0 when none).
        widest_reason: why it cannot run ("" when none).
    """

    jobs: int
    count: int
    by_reason: tuple[tuple[str, int], ...]
    widest_job: int
    widest_gpus: int
    widest_reason: str

    @property
    def share(self) -> float:
        """``count / jobs`` (0 for an empty workload)."""
        return self.count / self.jobs if self.jobs else 0.0

    def sentence(self) -> str:
        """One plain sentence for people (empty when every job can run)."""
        if not self.count:
            return ""
        return (
            f"{self.count:,} of {self.jobs:,} jobs ({100 * self.share:.1f} %) can never run on this cluster: "
            f"the widest (job {self.widest_job}) {self.widest_reason}. Wait, JCT and utilisation count only "
            "the jobs that ran."
        )

    def to_dict(self) -> dict:
        """Plain JSON: counts, reasons and the sentence."""
        return {
            "jobs": self.jobs,
            "never_ran": self.count,
            "share": round(self.share, 6),
            "by_reason": [{"reason": r, "jobs": n} for r, n in self.by_reason],
            "widest_job": self.widest_job,
            "widest_gpus": self.widest_gpus,
            "widest_reason": self.widest_reason,
            "sentence": self.sentence(),
        }


def explain(jobs: Sequence[Job], reasons: Mapping[int, str]) -> NeverRan:
    """:class:`NeverRan` of ``jobs`` given ``job_id -> reason`` for those that never ran."""
    counts = Counter(reasons.values())
    widest = max(reasons, key=lambda j: (jobs[j].gpus, -j), default=-1)
    return NeverRan(
        jobs=len(jobs),
        count=len(reasons),
        by_reason=tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
        widest_job=widest,
        widest_gpus=jobs[widest].gpus if widest >= 0 else 0,
        widest_reason=reasons.get(widest, ""),
    )


def before_run(cluster: Cluster, jobs: Sequence[Job]) -> NeverRan:
    """The jobs that will never run on ``cluster``, known before running anything."""
    return explain(jobs, unschedulable_reasons(cluster, jobs))


def of_result(result: Result) -> NeverRan:
    """The jobs that never ran in ``result``."""
    return explain(result.jobs, result.unschedulable_reasons)

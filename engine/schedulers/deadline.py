"""Deadline-aware orderings: the job whose deadline is nearest, or whose slack is least, goes first.

* ``edf`` (earliest deadline first): waiting jobs by their absolute deadline (:attr:`~engine.sim.job.Job.deadline_s`).
* ``least-slack`` (least slack first): by ``deadline - now - remaining work at the job's best speed``, the time
  the job could still wait and meet its deadline if it ran on the fastest GPU type it may use. The remaining work
  is the user's estimate (``estimate_s``: a scheduler never reads true durations) and ``now`` is the same for
  every waiting job, so the order is by ``deadline_s - estimate_s / best_speed``, computed once per job; a job back
  in the queue after a failure keeps its rank (its whole estimate counts: the conservative side).

Jobs without a deadline come after every job with one; ties (and jobs without a deadline) go in arrival order.
Both walk the queue and start every job that fits (first-fit), skipping those that do not: Liu and Layland
(JACM 1973) for EDF; least slack (least laxity) first as in Mok's thesis (MIT 1983). Neither declines jobs:
pair them with the admission stage (``--admission feasible``, :mod:`engine.sim.admission`).
"""

from __future__ import annotations

from engine.schedulers.ordering import ORDERS, StaticKeyOrder
from engine.schedulers.registry import SchedulerSpec, list_scheduler, register
from engine.sim.admission import BestSpeeds
from engine.sim.job import Job
from engine.sim.state import ClusterState


def edf_key(job: Job) -> float:
    """The job's absolute deadline (``inf`` without one: after every job with one)."""
    return job.deadline_s


class LeastSlackOrder(StaticKeyOrder):
    """Waiting jobs by ``deadline_s - estimate_s / best speed`` (module docstring), ties in arrival order."""

    def reset(self, state: ClusterState) -> None:
        speed = BestSpeeds(state.cluster)

        def key(job: Job) -> float:
            return job.deadline_s - job.estimate_s / speed(job)

        self.key = key
        super().reset(state)


ORDERS["edf"] = lambda: StaticKeyOrder(edf_key)
ORDERS["least-slack"] = LeastSlackOrder

register(
    SchedulerSpec(
        "edf",
        list_scheduler("edf", "edf", "first-fit"),
        "Earliest deadline first: waiting jobs are tried in order of their deadline, jobs without one last, and "
        "every job that fits starts. Urgent jobs go first; with admission control it meets many more deadlines.",
    )
)
register(
    SchedulerSpec(
        "least-slack",
        list_scheduler("least-slack", "least-slack", "first-fit"),
        "Least slack first: waiting jobs are tried by how long they could still wait and meet their deadline "
        "(deadline minus now minus their estimated run time on their fastest GPUs), jobs without a deadline last.",
    )
)

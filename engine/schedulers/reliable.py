"""Failure-aware placement: long gangs go to the nodes that have failed the least (issue 34).

When nodes fail (:class:`~engine.sim.options.FailureModel`), a job loses its work since its last checkpoint each
time a node under it fails, and a gang of ``k`` nodes is stopped by the failure of any of them. Some nodes fail
far more often than others (the "lemons" of Meta's and AIReSim's reports), and a node's failures so far
(``state.occupancy.node_failures``) are the scheduler's only evidence of which. ``most-reliable`` places a long
multi-GPU gang (at least :data:`LONG_GANG_GPUS` whole GPUs and an estimate of at least :data:`LONG_GANG_S`) on
the single node that has failed the least among those that fit it, best-fit among equals; every other job, and a
gang no single node can take, is placed best-fit (:func:`~engine.schedulers.placement.best_fit`). Without any
failure so far it places exactly as best-fit does. It never makes a job wait that best-fit would start.

``reliable-first`` = arrival order (skipping jobs that do not fit) + ``most-reliable``.
"""

from __future__ import annotations

from engine.schedulers.placement import PLACEMENTS, best_fit
from engine.schedulers.registry import SchedulerSpec, list_scheduler, register
from engine.sim.job import Job
from engine.sim.occupancy import bits
from engine.sim.state import ClusterState

#: A gang is "long" from this estimated run time: one hour, long enough that a node failure under it is likely
#: to cost work under the usual checkpoint intervals (a shorter job rarely meets one).
LONG_GANG_S = 3600.0
#: The fewest whole GPUs of a gang the rule steers (a 1-GPU job loses little and fits anywhere).
LONG_GANG_GPUS = 2


def most_reliable(state: ClusterState, job: Job) -> tuple[int, ...] | None:
    """The placement rule ``most-reliable`` (see the module docstring)."""
    k = job.gpus
    if k < LONG_GANG_GPUS or job.gpu_fraction < 1.0 or not job.estimate_s >= LONG_GANG_S or state.free_gpus < k:
        return best_fit(state, job)
    occ = state.occupancy
    failures = occ.node_failures
    elig = state.shape_node_bits[state.job_shape[job.job_id]]
    levels = sorted({failures[n] for n in bits(elig)})
    for level in levels[:-1]:  # the last level is every eligible node: best-fit's answer
        allowed = 0
        for n in bits(elig):
            if failures[n] <= level:
                allowed |= 1 << n
        node = occ.tightest_node(k, allowed)
        if node >= 0:
            return tuple(occ.idle_of_node(node, k))
    return best_fit(state, job)


PLACEMENTS["most-reliable"] = lambda: most_reliable

register(
    SchedulerSpec(
        "reliable-first",
        list_scheduler("reliable-first", "fifo", "most-reliable"),
        "Starts jobs in arrival order (skipping those that do not fit); a long multi-GPU gang goes to the node that "
        "has failed the least so far, so that node failures stop it less often. Other jobs are placed best-fit; "
        "without failures it is fifo with best-fit placement.",
    )
)

"""The eviction policy of the ``"evict"`` rule: which running jobs a waiting job may preempt to start on a GPU type
now, and what that costs them. :func:`engine.rl.encoding.snapshot` offers an evicting start exactly where
:func:`find_victims` finds victims; :func:`engine.rl.encoding.decode` preempts them, then places the job with
:data:`EVICT_PLACEMENT`.

Make room, then start: for a whole-GPU job that does not fit its GPU type now, preempt the running whole-GPU jobs
of that type, latest estimated end first (ties: higher job id first), until the type has ``gpus`` idle GPUs. Only
jobs that would, by their estimates, still run longer than the job itself would there may be preempted (shortest
remaining time first: a victim can never evict the job that evicted it), and, with ``max_evictions`` set, only
jobs preempted fewer times. Victims return to the queue and lose what the run's preemption model says (by default
nothing: they checkpoint when preempted). Jobs that started at the current time are never victims, so the
decisions at one time always run out. An eviction is offered exactly when the job does not fit the type now and
would after evicting every job that may be evicted.

With scope ``"node"`` a job that one node of the type could hold makes room on *one* node instead, so it never
starts spread over nodes (a spread job is slowed by communication): on each eligible node of the type, the node's
victims are taken latest estimated end first, under the same rules, until the node has ``gpus`` idle GPUs, and the
node whose victims have the least estimated work left wins (ties: lower node id). A victim spread over several
nodes counts only its GPUs on that node. Bigger jobs evict as with scope ``"type"``.

A victim frees the GPUs it holds, and its work left is counted on them: an elastic job that a resizing scheduler
(optimus, elasticflow) ran on more or fewer GPUs than it asked for holds other than ``job.gpus`` when a learned
selector hands the next decision to an evicting policy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

import numpy as np

from engine.sim.cluster import Layout
from engine.sim.state import ClusterState, RunningJob

#: The placement rule an evicting start places the job with, once its victims are gone.
EVICT_PLACEMENT = "best-fit"
#: Where an eviction makes room for a job that one node could hold: anywhere on its GPU type, or on one node.
EVICT_SCOPES = ("type", "node")

#: ``(window slot, GPU type slot) ->`` the job ids an eviction there preempts, in order (only pairs where offered).
Victims = dict[tuple[int, int], tuple[int, ...]]
#: ``(window slot, GPU type slot) ->`` an amount, for the pairs of :data:`Victims`.
BySlotType = dict[tuple[int, int], float]


def find_victims(
    state: ClusterState,
    window: list[int],
    fits: list[np.ndarray],
    n_types: int,
    speeds_of: Callable[[str], np.ndarray],
    scope: str,
    max_evictions: int | None,
) -> tuple[Victims, BySlotType]:
    """Per (window slot, GPU type slot) where an eviction is offered (module docstring): the job ids it preempts,
    in order, and their estimated GPU-seconds left.

    ``fits[slot][t]``: the slot's job can start on type ``t`` without evicting (then nothing is offered there);
    ``speeds_of(job_type)``: a job's speed on each GPU type slot (how long it would run there, by its estimate).
    """
    victims: Victims = {}
    work: BySlotType = {}
    lay, jobs, now = state.layout, state.jobs, state.now_s
    idle_t = None  # computed at the first (job, type) pair that needs it: most decisions evict nowhere
    by_type: dict[int, list[RunningJob]] = {}
    by_node: dict[int, list[tuple[RunningJob, int]]] | None = None
    node_sets: dict[tuple[int, int], tuple[list[int], int]] = {}  # (shape, type) -> its eligible nodes, most GPUs
    for slot, j in enumerate(window):
        job = jobs[j]
        if job.fractional:
            continue
        elig = state.eligible_types(job)
        speeds = speeds_of(job.job_type)
        for t in range(n_types):
            if fits[slot][t] or not elig[t]:
                continue
            if idle_t is None:
                idle_t = np.bincount(lay.node_type, weights=state.node_free, minlength=n_types)
                by_type = evictable(state, max_evictions)
            own_s = job.estimate_s / speeds[t]  # how long the job would run there, by its estimate
            if scope == "node":
                key = (state.job_shape[j], t)
                if key not in node_sets:
                    of_t = np.flatnonzero(state.eligible_nodes(job) & (lay.node_type == t))
                    node_sets[key] = (of_t.tolist(), int(lay.node_gpus[of_t].max(initial=0)))
                nodes, most = node_sets[key]
                if job.gpus <= most:
                    if by_node is None:
                        by_node = _victims_by_node(lay, by_type)
                    found = _node_victims(state, job.gpus, own_s, nodes, by_node)
                    if found is not None:
                        work[slot, t], victims[slot, t] = found
                    continue
            need = job.gpus - int(idle_t[t])
            taken, freed, left_gpu_s = _take(((r, len(r.gpu_ids)) for r in by_type.get(t, ())), need, own_s, now)
            if freed >= need:
                victims[slot, t] = taken
                work[slot, t] = left_gpu_s
    return victims, work


def evictable(state: ClusterState, max_evictions: int | None) -> dict[int, list[RunningJob]]:
    """Per GPU type slot, the running jobs that may be victims: whole-GPU jobs that started before now (and, with
    ``max_evictions``, were preempted fewer times), latest estimated end first (ties: higher job id first)."""
    now = state.now_s
    by_type: dict[int, list[RunningJob]] = {}
    for r in state.running.values():
        if (
            r.start_s < now
            and not r.job.fractional
            and (max_evictions is None or state.preemptions(r.job.job_id) < max_evictions)
        ):
            by_type.setdefault(r.gpu_type, []).append(r)
    for rs in by_type.values():
        rs.sort(key=lambda r: (-r.est_end_s, -r.job.job_id))
    return by_type


def eviction_cost_gpu_s(state: ClusterState, victims: Victims) -> BySlotType:
    """Per (slot, type) of ``victims``: the GPU-seconds of work evicting them costs (work since their last checkpoint
    plus the restart overhead, as the run's preemption model says; 0 under free preemption)."""
    running = state.running
    return {k: sum(state.preemption_cost_s(v) * len(running[v].gpu_ids) for v in vs) for k, vs in victims.items()}


def _take(
    candidates: Iterable[tuple[RunningJob, int]], need: int, own_s: float, now: float
) -> tuple[tuple[int, ...], int, float]:
    """Victims from ``candidates`` (a running job, the GPUs its eviction frees), in order, until ``need`` GPUs are
    freed, stopping at the first that would not run longer than ``own_s``: (victims, GPUs freed, their estimated
    GPU-seconds left)."""
    taken, freed, left_gpu_s = [], 0, 0.0
    for r, k in candidates:
        if freed >= need or r.est_end_s - now <= own_s:
            break
        taken.append(r.job.job_id)
        freed += k
        left_gpu_s += len(r.gpu_ids) * max(r.est_end_s - now, 0.0)
    return tuple(taken), freed, left_gpu_s


def _victims_by_node(lay: Layout, by_type: dict[int, list[RunningJob]]) -> dict[int, list[tuple[RunningJob, int]]]:
    """The evictable running jobs of each node, latest estimated end first, with their GPU count there."""
    out: dict[int, list[tuple[RunningJob, int]]] = {}
    node = lay.gpu_node.tolist()
    for rs in by_type.values():
        for r in rs:  # already latest estimated end first
            if r.n_nodes == 1:  # most jobs: all its GPUs on one node
                out.setdefault(node[r.gpu_ids[0]], []).append((r, len(r.gpu_ids)))
                continue
            for n, k in Counter(node[g] for g in r.gpu_ids).items():
                out.setdefault(n, []).append((r, k))
    return out


def _node_victims(
    state: ClusterState, gpus: int, own_s: float, nodes: list[int], by_node: dict[int, list[tuple[RunningJob, int]]]
) -> tuple[float, tuple[int, ...]] | None:
    """The node-scoped eviction (module docstring): (victims' estimated GPU-seconds left, victims), or ``None``."""
    best: tuple[float, tuple[int, ...]] | None = None
    node_free = state.node_free
    for n in nodes:
        need = gpus - int(node_free[n])
        taken, freed, left_gpu_s = _take(by_node.get(n, ()), need, own_s, state.now_s)
        if freed >= need and (best is None or left_gpu_s < best[0]):
            best = (left_gpu_s, taken)
    return best

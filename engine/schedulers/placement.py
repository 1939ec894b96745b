"""Placement rules: given a job that should start now, pick its GPUs (or ``None`` if it cannot start).

A placement rule is a callable ``place(state, job) -> tuple[int, ...] | None``. It never changes state;
the engine applies the resulting ``Start``. Every rule returns GPUs of one type, all able to take the job
(idle GPUs for whole-GPU jobs; enough free share and memory for fractional ones).

Whole-GPU jobs are placed on one node when some eligible node has enough idle GPUs; otherwise they are
spread over the nodes of one GPU type (slower for communication-sensitive jobs, see ``engine.cluster``).
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from ..job import Job
from ..state import ClusterState

Placement = Callable[[ClusterState, Job], Optional[tuple[int, ...]]]


def _node_gpus(state: ClusterState, node: int, k: int) -> tuple[int, ...]:
    """The first ``k`` idle GPUs of ``node``."""
    lay = state.layout
    first = int(lay.node_first_gpu[node])
    idle = np.flatnonzero(state.gpu_tenants[first:first + int(lay.node_gpus[node])] == 0)
    return tuple(int(g) + first for g in idle[:k])


def _spread(state: ClusterState, job: Job, node_order: np.ndarray) -> tuple[int, ...] | None:
    """Take idle GPUs node by node in ``node_order``, from the first GPU type that has enough of them."""
    lay = state.layout
    k = job.gpus
    free = state.node_free
    types = lay.node_type[node_order]
    # Types in the order they first appear in node_order, so "first" means what node_order says.
    seen: list[int] = []
    for t in types.tolist():
        if t not in seen:
            seen.append(t)
    for t in seen:
        nodes = node_order[types == t]
        if int(free[nodes].sum()) < k:
            continue
        out: list[int] = []
        for n in nodes.tolist():
            if free[n]:
                out.extend(_node_gpus(state, n, k - len(out)))
                if len(out) == k:
                    return tuple(out)
    return None


def _whole(state: ClusterState, job: Job, pick_node, spread_order) -> tuple[int, ...] | None:
    k = job.gpus
    if state.free_gpus < k:
        return None
    elig = state.eligible_nodes(job)
    cand = np.flatnonzero(elig & (state.node_free >= k))
    if cand.size:
        return _node_gpus(state, int(pick_node(state, cand)), k)
    if k == 1:
        return None
    nodes = np.flatnonzero(elig & (state.node_free > 0))
    if nodes.size == 0:
        return None
    return _spread(state, job, spread_order(state, nodes))


def _fractional(state: ClusterState, job: Job, pick_gpu) -> tuple[int, ...] | None:
    cand = np.flatnonzero(state.can_host(job))
    if cand.size == 0:
        return None
    return (int(pick_gpu(state, cand)),)


# ----------------------------------------------------------------------- first-fit
def first_fit(state: ClusterState, job: Job) -> tuple[int, ...] | None:
    """Lowest-numbered node (or GPU, for fractional jobs) that fits."""
    if job.gpu_fraction < 1.0:
        return _fractional(state, job, lambda s, c: c[0])
    return _whole(state, job, lambda s, c: c[0], lambda s, nodes: nodes)


# ----------------------------------------------------------------------- best-fit
def best_fit(state: ClusterState, job: Job) -> tuple[int, ...] | None:
    """The fitting node with the fewest idle GPUs (fractional: the fullest GPU that fits), to keep
    large holes for large jobs."""
    if job.gpu_fraction < 1.0:
        return _fractional(state, job, lambda s, c: c[np.argmin(s.gpu_free[c])])
    return _whole(state, job, lambda s, c: c[np.argmin(s.node_free[c])],
                  lambda s, nodes: nodes[np.argsort(-s.node_free[nodes], kind="stable")])


# ----------------------------------------------------------------------- least-loaded
def least_loaded(state: ClusterState, job: Job) -> tuple[int, ...] | None:
    """The GPUs with the most free memory, wherever they are. On heterogeneous clusters this sends small
    jobs to the big-memory GPUs and spreads fractional jobs over idle GPUs: a known failure, kept on purpose."""
    if job.gpu_fraction < 1.0:
        return _fractional(state, job, lambda s, c: c[np.argmax(s.gpu_free_vram_gib[c])])
    if state.free_gpus < job.gpus:
        return None
    cand = np.flatnonzero(state.can_host(job))
    if cand.size < job.gpus:
        return None
    lay = state.layout
    # Per type, the k idle GPUs with most free memory; choose the type whose GPUs have the most memory.
    types = lay.gpu_type[cand]
    best: tuple[int, ...] | None = None
    best_mem = -1.0
    for t in np.unique(types).tolist():
        c = cand[types == t]
        if c.size < job.gpus:
            continue
        mem = float(lay.type_vram_gib[t])
        if mem > best_mem:
            order = np.argsort(-state.gpu_free_vram_gib[c], kind="stable")
            best, best_mem = tuple(int(g) for g in c[order[:job.gpus]]), mem
    return best


# ----------------------------------------------------------------------- random
class RandomPlacement:
    """A uniformly random fitting node (or GPU), from a generator seeded by the run's seed."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)

    def reset(self, state: ClusterState) -> None:
        self.rng = np.random.default_rng(state.seed)

    def __call__(self, state: ClusterState, job: Job) -> tuple[int, ...] | None:
        rng = self.rng
        if job.gpu_fraction < 1.0:
            return _fractional(state, job, lambda s, c: c[rng.integers(c.size)])
        return _whole(state, job, lambda s, c: c[rng.integers(c.size)], lambda s, nodes: rng.permutation(nodes))


#: Placement rules by name; a factory per name so stateful rules get a fresh instance per scheduler.
PLACEMENTS: dict[str, Callable[[], Placement]] = {
    "first-fit": lambda: first_fit,
    "best-fit": lambda: best_fit,
    "least-loaded": lambda: least_loaded,
    "random": RandomPlacement,
}

"""Placement rules: given a job that should start now, pick its GPUs (or ``None`` if it cannot start).

A placement rule is a callable ``place(state, job) -> tuple[int, ...] | None``. It never changes state;
the engine applies the resulting ``Start``. Every rule returns GPUs of one type, all able to take the job
(idle GPUs for whole-GPU jobs; enough free share and memory for fractional ones).

Whole-GPU jobs are placed on one node when some eligible node has enough idle GPUs; otherwise they are
spread over the nodes of one GPU type (slower for communication-sensitive jobs, see ``engine.sim.cluster``).

``first-fit`` and ``best-fit`` run at every decision point of most schedulers, so they answer from the
engine's bitmask indexes (:mod:`engine.sim.occupancy`) in time independent of the cluster size for jobs that
fit on one node; the other rules scan numpy arrays. Each fast rule gives exactly the GPUs the plain scan
over ``state.node_free`` / ``state.can_host`` described in its docstring would.
"""

from __future__ import annotations

import math
from typing import Callable, Final

import numpy as np
from mypy_extensions import mypyc_attr

from engine.sim.job import Job
from engine.sim.occupancy import Occupancy, bits, lowest_bit
from engine.sim.state import FRACTION_EPS, ClusterState

Placement = Callable[[ClusterState, Job], tuple[int, ...] | None]


def _node_gpus(state: ClusterState, node: int, k: int) -> tuple[int, ...]:
    """The first ``k`` idle GPUs of ``node``."""
    return tuple(state.occupancy.idle_of_node(int(node), k))


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


# ----------------------------------------------------------------------- indexed (first-fit, best-fit)
def _indexed_whole(state: ClusterState, job: Job, tightest: bool) -> tuple[int, ...] | None:
    """``_whole`` for first-fit (``tightest=False``) and best-fit, answered from the occupancy indexes."""
    k = job.gpus
    if state.free_gpus < k:
        return None
    occ = state.occupancy
    elig = state.shape_node_bits[state.job_shape[job.job_id]]
    node = occ.tightest_node(k, elig) if tightest else occ.first_node(k, elig)
    if k == 1:  # the node's lowest idle GPU (idle_of_node, without the list)
        if node < 0:
            return None
        m = occ.node_idle[node]
        return (occ.node_first[node] + (m & -m).bit_length() - 1,)
    if node >= 0:
        return tuple(occ.idle_of_node(node, k))
    return _indexed_spread(occ, k, elig, tightest)


def _indexed_spread(occ: Occupancy, k: int, elig: int, most_free_first: bool) -> tuple[int, ...] | None:
    """``_spread`` over the eligible nodes with idle GPUs, in id order or (``most_free_first``) by idle GPUs,
    most first, ties by id.

    The GPU type taken is the first, in that node order, that has ``k`` idle GPUs (types before it have
    fewer, and all nodes of an eligible type are eligible), so one pass over the nodes in order finds it at
    its first node and then takes idle GPUs from its nodes until it has ``k``.
    """
    type_idle = occ.type_idle
    if not any(type_idle[t] >= k for t, nodes in enumerate(occ.type_nodes) if nodes & elig):
        return None  # no eligible GPU type has k idle GPUs
    node_type, nodes_with = occ.node_type, occ.nodes_with
    if most_free_first:  # nodes with exactly c idle GPUs, c from most to 1, each group in id order
        groups = [(nodes_with[c] ^ nodes_with[c + 1]) & elig for c in range(occ.max_node_gpus, 0, -1)]
    else:
        groups = [nodes_with[1] & elig]
    t = -1
    out: list[int] = []
    for group in groups:
        for n in bits(group):
            if t < 0:
                if type_idle[node_type[n]] < k:
                    continue
                t = node_type[n]
            elif node_type[n] != t:
                continue
            out.extend(occ.idle_of_node(n, k - len(out)))
            if len(out) == k:
                return tuple(out)
    return None  # not reached: type t has k idle GPUs on its nodes


def fits_shared(occ: Occupancy, g: int, job: Job) -> bool:
    """Whether fractional ``job`` fits beside the tenants of shared GPU ``g`` (as ``can_host`` says)."""
    need = job.vram_gib if job.vram_gib > 0 else job.gpu_fraction * occ.gpu_vram[g]
    return occ.free[g] >= job.gpu_fraction - FRACTION_EPS and occ.free_vram[g] >= need - FRACTION_EPS


def _indexed_share(state: ClusterState, job: Job, fullest: bool) -> tuple[int, ...] | None:
    """``_fractional`` for first-fit (lowest GPU that fits) and best-fit (``fullest``: least free share,
    lowest id on ties), answered from the occupancy indexes.

    The GPUs that can take a fractional job are its eligible idle GPUs (an idle GPU of an eligible type
    always has the share and memory) and the eligible shared GPUs with room; GPUs of whole-GPU jobs have
    no free share.
    """
    if job.gpu_fraction <= FRACTION_EPS:  # a share so small it "fits" even on full GPUs: scan everything
        pick = (lambda s, c: c[np.argmin(s.gpu_free[c])]) if fullest else (lambda s, c: c[0])
        return _fractional(state, job, pick)
    occ = state.occupancy
    elig = state.shape_node_bits[state.job_shape[job.job_id]]
    gpu_node = occ.gpu_node
    nodes = occ.nodes_with[1] & elig
    if nodes:
        node = lowest_bit(nodes)
        idle = occ.node_first[node] + lowest_bit(occ.node_idle[node])
    else:
        idle = len(gpu_node)  # none
    # fits_shared, inlined: these loops run over every shared GPU in a congested cluster.
    free, free_vram, gpu_vram = occ.free, occ.free_vram, occ.gpu_vram
    share = job.gpu_fraction - FRACTION_EPS
    frac, vram = job.gpu_fraction, job.vram_gib
    if not fullest:  # the lowest shared GPU that fits, if it comes before the lowest idle one
        for g in occ.shared:
            if g >= idle:
                break
            if (
                free[g] >= share
                and elig >> gpu_node[g] & 1
                and free_vram[g] >= (vram if vram > 0 else frac * gpu_vram[g]) - FRACTION_EPS
            ):
                return (g,)
        return (idle,) if nodes else None
    # The least free share wins, the lowest id on ties (like argmin); an idle GPU has all of it free.
    best_free, best = (1.0, idle) if nodes else (math.inf, -1)
    for g in occ.shared:
        f = free[g]
        if (
            f >= share
            and (f < best_free or (f == best_free and g < best))
            and elig >> gpu_node[g] & 1
            and free_vram[g] >= (vram if vram > 0 else frac * gpu_vram[g]) - FRACTION_EPS
        ):
            best_free, best = f, g
    return None if best < 0 else (best,)


# ----------------------------------------------------------------------- first-fit
def first_fit(state: ClusterState, job: Job) -> tuple[int, ...] | None:
    """Lowest-numbered node (or GPU, for fractional jobs) that fits; when no single node fits a multi-GPU
    job, idle GPUs node by node in id order, from the first GPU type that has enough."""
    if job.gpu_fraction < 1.0:
        return _indexed_share(state, job, fullest=False)
    return _indexed_whole(state, job, tightest=False)


# ----------------------------------------------------------------------- best-fit
def best_fit(state: ClusterState, job: Job) -> tuple[int, ...] | None:
    """The fitting node with the fewest idle GPUs (fractional: the fullest GPU that fits), to keep
    large holes for large jobs; when no single node fits, idle GPUs from the nodes with most idle GPUs."""
    if job.gpu_fraction < 1.0:
        return _indexed_share(state, job, fullest=True)
    return _indexed_whole(state, job, tightest=True)


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
            best, best_mem = tuple(int(g) for g in c[order[: job.gpus]]), mem
    return best


# ----------------------------------------------------------------------- random
@mypyc_attr(allow_interpreted_subclasses=True)  # a public base: subclassable compiled too (ARCHITECTURE.md)
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


#: Rules that are pure functions of the state and whose "does not fit" holds while resources only shrink:
#: a scheduler may remember their failures until a job stops (``state.stops`` changes), and past that with
#: :class:`FitMemory`. Each places a job whenever some GPUs can take it (``can_host``), and a whole-GPU job
#: whenever one eligible GPU type has enough idle GPUs.
FAILURES_PERSIST: Final = frozenset({first_fit, best_fit, least_loaded})


def reset_placement(placement: Placement, state: ClusterState) -> None:
    """Reset a placement rule that keeps per-run state (``random``'s generator, ``fgd``'s workload profile); the
    plain functions keep none."""
    reset = getattr(placement, "reset", None)
    if reset is not None:
        reset(state)


class FitMemory:
    """Job shapes that a rule in ``FAILURES_PERSIST`` could not place, remembered across decision points.

    While no job stops, resources only shrink, so such a shape stays unplaceable. Once jobs have stopped, a
    whole-GPU shape fits again exactly when an eligible GPU type has enough idle GPUs, and a fractional one
    when an eligible GPU is idle or a GPU released since has room for it (the other shared GPUs only lost
    room), which :meth:`recall` tests per remembered shape instead of placing it again.

    Use per decision point: ``unfit = memory.recall(state)``; add each shape whose placement fails with
    :meth:`fail`; empty ``unfit`` when the scheduler itself frees GPUs (preemption); ``memory.keep(state,
    unfit)`` at the end.
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._unfit: set[int] = set()
        self._at_stops = -1  # state.stops when _unfit was kept
        self._released_at = 0  # length of state.occupancy.released then
        # Per shape that failed (indexed by shape id): a job of it, its GPUs, fraction and type group.
        self._job: list[Job | None] = []
        self._gpus: list[int] = []
        self._fraction: list[float] = []
        self._group: list[int] = []
        self._groups: list[tuple[int, ...]] = []  # type group -> its eligible GPU types (each distinct set once)
        self._group_of: dict[tuple[int, ...], int] = {}

    def fail(self, state: ClusterState, unfit: set[int], sid: int, job: Job) -> None:
        """Record that shape ``sid`` (of ``job``) cannot be placed now."""
        unfit.add(sid)
        if sid >= len(self._job):
            grow = sid + 1 - len(self._job)
            self._job.extend([None] * grow)
            self._gpus.extend([0] * grow)
            self._fraction.extend([0.0] * grow)
            self._group.extend([-1] * grow)
        if self._job[sid] is None:
            types = tuple(np.flatnonzero(state.eligible_types(job)).tolist())
            group = self._group_of.get(types)
            if group is None:
                group = self._group_of[types] = len(self._groups)
                self._groups.append(types)
            self._job[sid], self._gpus[sid], self._fraction[sid], self._group[sid] = (
                job,
                job.gpus,
                job.gpu_fraction,
                group,
            )

    def keep(self, state: ClusterState, unfit: set[int]) -> None:
        self._unfit, self._at_stops = unfit, state.stops
        self._released_at = len(state.occupancy.released)

    def recall(self, state: ClusterState) -> set[int]:
        """The remembered shapes that still wait and cannot be placed now."""
        shapes, unfit = state.queue_shape_counts, self._unfit
        if not unfit:  # (the usual case while the queue does not block: no copy of an empty set)
            return set()
        out = set(unfit)  # (copied in C; those that stopped waiting or fit now are taken out below)
        if state.stops == self._at_stops:
            for sid in unfit:
                if sid not in shapes:
                    out.discard(sid)
            return out
        occ = state.occupancy
        type_idle, idle_gpus, groups = occ.type_idle, occ.idle_gpus, self._groups
        most_idle = [-1] * len(groups)  # per type group: most idle GPUs of one of its types (-1: not yet known)
        fresh: list[int] | None = None  # shared GPUs released since the failures were recorded (built on first need)
        for sid in unfit:
            if sid not in shapes:
                out.discard(sid)
                continue
            k, group = self._gpus[sid], self._group[sid]
            if idle_gpus >= k:  # (else no type has k idle GPUs)
                idle = most_idle[group]
                if idle < 0:
                    idle = 0
                    for t in groups[group]:
                        if type_idle[t] > idle:
                            idle = type_idle[t]
                    most_idle[group] = idle
                if idle >= k:
                    out.discard(sid)
                    continue
            frac = self._fraction[sid]
            if frac < 1.0:
                if frac <= FRACTION_EPS:
                    out.discard(sid)  # a share so small it "fits" even on full GPUs
                    continue
                if fresh is None:
                    tenants = occ.tenants
                    fresh = [g for g in set(occ.released[self._released_at :]) if tenants[g]]
                job = self._job[sid]
                assert job is not None
                if _fits_one(occ, fresh, groups[group], occ.gpu_type, job):
                    out.discard(sid)
        return out


def _fits_one(occ: Occupancy, gpus: list[int], types: tuple[int, ...], gpu_type: list[int], job: Job) -> bool:
    """Whether fractional ``job`` fits on one of the shared ``gpus`` of one of ``types``."""
    for g in gpus:
        if gpu_type[g] in types and fits_shared(occ, g, job):
            return True
    return False


#: Placement rules by name; a factory per name so stateful rules get a fresh instance per scheduler.
PLACEMENTS: dict[str, Callable[[], Placement]] = {
    "first-fit": lambda: first_fit,
    "best-fit": lambda: best_fit,
    "least-loaded": lambda: least_loaded,
    "random": RandomPlacement,
}

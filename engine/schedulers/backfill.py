"""EASY backfilling (Lifka 1995; the scheduler of the IBM SP2 at Argonne and, in spirit, of Slurm today).

Jobs start in arrival order (FIFO) until the first one that does not fit, the *head*. The head gets a
reservation: the earliest time, by the users' run-time estimates, at which enough GPUs it may use will be
free (the *shadow time*; jobs that have run past their estimate are taken to end now). Later jobs may jump
ahead (*backfill*) if they fit now and either

* end, by their estimate at the speed they would run at, no later than the shadow time, or
* use only GPUs the head will not need at the shadow time (the *extra* GPUs).

So backfilling never delays the head, as long as estimates are not exceeded. Only the head holds a
reservation (that is what makes it EASY, as opposed to conservative backfilling).

The shadow time is computed once per decision point, and the extra GPUs are counted down as jobs are
backfilled. Every waiting job is a candidate (no depth limit such as Slurm's ``bf_max_job_test``), yet an
overloaded queue costs about the same per event however long it grows (see :class:`EasyBackfill`).
"""

from __future__ import annotations

import heapq
import math
import sys
from bisect import bisect_right
from typing import Final, Generator, Iterator

import numpy as np
from mypy_extensions import mypyc_attr

from engine.schedulers.backfill_index import MinTree, ReleaseBook, Reservation, reserve
from engine.schedulers.ordering import StaticKeyOrder, arrival_ranks
from engine.schedulers.placement import FAILURES_PERSIST, FitMemory, first_fit
from engine.schedulers.registry import SchedulerSpec, register
from engine.sim.job import Job
from engine.sim.state import FRACTION_EPS, ClusterState, Decision, Start

#: Costs (see ``EasyBackfill._cost``) that do not count extra GPUs.
_FREE: Final = -1
_NEVER: Final = -2


@mypyc_attr(allow_interpreted_subclasses=True)  # a public base: subclassable compiled too (ARCHITECTURE.md)
class EasyBackfill:
    """FIFO with EASY backfilling on the users' estimates; placement by ``first-fit``.

    The whole queue is considered, at a cost per decision point that does not grow with it: waiting jobs are
    also kept per shape (same GPUs, fraction, memory and types, hence the same placement), and backfilling
    takes, among all shapes, the next job in arrival order that may start: for a shape that fits nowhere,
    none; for one whose next job would delay the head, the next one short enough to end before the shadow
    time (a segment-tree query over the shape's estimates).

    Per decision point the cost is a few steps per shape, not per waiting job: each shape's first waiting job
    is kept (``_front``), and shapes that fit nowhere are remembered across decision points and placed again
    only when the GPUs freed since could fit them (:class:`~engine.schedulers.placement.FitMemory`).

    All that is kept for backfilling only (the per-shape lists, the release book, the placements) is brought up
    to date when a backfill phase needs it, not at every arrival and start: while the queue does not block,
    EASY costs about what FIFO costs.
    """

    def __init__(self, name: str = "easy-backfill") -> None:
        self.name = name
        self.order = StaticKeyOrder()  # arrival order
        # Placement is first-fit, called by name (compiled, a direct call): what _sync_placements keeps relies
        # on how first-fit chooses.
        # Jobs are known by their rank in arrival order (submit time, then id) below: heap entries and
        # comparisons are then plain ints.
        self._rank: list[int] = []  # job -> rank
        self._job_of: list[int] = []  # rank -> job
        # Per shape (lists indexed by shape id, several times cheaper to read than dicts):
        self._ranks: list[list[int]] = []  # ranks of its jobs, in arrival order
        self._trees: list[MinTree] = []  # estimates of those jobs (inf once started)
        self._pos: list[int] = []  # rank -> the position of its waiting job in its shape's lists, or -1
        self._front: list[int] = []  # a position at or before its first waiting job
        # ranks of the jobs that arrived since its lists were last used (_flush), in arrival order: a job that starts
        # before then never enters them
        self._arrived: list[list[int]] = []
        self._releases = ReleaseBook([], 0)
        # For the test that rules a shape out of a backfill phase before placing it (_beyond_shadow): per GPU type,
        # the highest speed any job of the workload has on it; per shape, its only eligible GPU type when it is a
        # whole-GPU shape with one (-1: the test does not apply; -2: not computed yet).
        self._top_speed: list[float] = []
        self._sole_type: list[int] = []
        self._remember = first_fit in FAILURES_PERSIST
        self._fits = FitMemory()  # shapes that fit nowhere, across decision points
        self._reset_placements()

    def reset(self, state: ClusterState) -> None:
        self.order.reset(state)
        self._rank, self._job_of = arrival_ranks(state)
        n_shapes = len(state.shape_node_bits)
        self._ranks = [[] for _ in range(n_shapes)]
        self._trees = [MinTree() for _ in range(n_shapes)]
        self._front = [0] * n_shapes
        self._arrived = [[] for _ in range(n_shapes)]
        self._pos = [-1] * len(state.jobs)
        self._releases = ReleaseBook.of(state)
        job_types = {job.job_type for job in state.jobs}
        self._top_speed = [
            max([state.cluster.speed(jt, name) for jt in job_types], default=0.0) for name in state.layout.type_names
        ]
        self._sole_type = [-2] * len(state.shape_node_bits)
        self._fits.reset()
        self._reset_placements()

    def _reset_placements(self) -> None:
        # Each shape's first-fit GPUs, and the speed of each job type on them, kept while they stay first-fit's
        # answer (see _sync_placements): shape -> (GPUs, the highest GPU whose release may move them, speeds).
        self._placed: dict[int, tuple[tuple[int, ...], int, dict[str, float]]] = {}
        self._gpu_shapes: dict[int, set[int]] = {}  # GPU -> shapes placed on it (some moved since)
        self._taken_at = self._released_at = 0  # how much of the occupancy's logs has been read

    def _sync_placements(self, state: ClusterState) -> None:
        """Drop the kept placements that GPUs released since the previous decision point may have moved.

        First-fit takes, for a whole-GPU shape, the lowest node with enough idle GPUs (its lowest idle ones) or
        else idle GPUs node by node in id order; for a fractional one, the lowest GPU with room. So its answer
        stays the same while GPUs other than its own are taken (:meth:`_took`) and while only GPUs with higher
        ids than its own are released, except for GPUs spread over nodes, which any release may move."""
        occ = state.occupancy
        placed = self._placed
        if len(occ.taken) != self._taken_at:  # GPUs were taken by other decisions than ours: start afresh
            placed.clear()
            self._gpu_shapes.clear()
        elif placed and len(occ.released) != self._released_at:
            low = min(occ.released[self._released_at :])
            for sid in [sid for sid, at in placed.items() if at[1] >= low]:
                del placed[sid]
        self._taken_at, self._released_at = len(occ.taken), len(occ.released)

    def _placement(self, state: ClusterState, sid: int, job: Job) -> tuple | None:
        """``(GPUs, the highest GPU whose release may move them, speeds by job type)`` for shape ``sid`` (of
        ``job``), or None if it fits nowhere now."""
        at = self._placed.get(sid)
        if at is None:
            gpus = first_fit(state, job)
            if gpus is None:
                return None
            low = top = gpus[0]
            for g in gpus:  # (min and max, without two generic calls)
                if g < low:
                    low = g
                elif g > top:
                    top = g
            node = state.occupancy.gpu_node
            # (a node's GPU ids are contiguous; GPUs spread over nodes move with any release)
            at = self._placed[sid] = (gpus, top if node[low] == node[top] else len(node), {})
            gpu_shapes = self._gpu_shapes
            for g in gpus:
                shapes = gpu_shapes.get(g)
                if shapes is None:
                    gpu_shapes[g] = {sid}
                else:
                    shapes.add(sid)
        return at

    def _started(self, state: ClusterState, j: int, gpus: tuple[int, ...]) -> None:
        r, pos = self._rank[j], self._pos
        p = pos[r]
        if p >= 0:  # (else it arrived since its shape's lists were last used: it never enters them)
            self._trees[state.job_shape[j]].set(p, math.inf)
            pos[r] = -1
        self._releases.started(j)
        gpu_shapes = self._gpu_shapes
        if gpu_shapes:
            placed = self._placed
            for g in gpus:  # placements on the GPUs just taken are void
                shapes = gpu_shapes.pop(g, None)
                if shapes:
                    for sid in shapes:
                        placed.pop(sid, None)
        self._taken_at = len(state.occupancy.taken)

    def _flush(self, state: ClusterState, sid: int) -> None:
        """Enter the jobs of shape ``sid`` that arrived since its lists were last used and still wait (each once).
        A job that re-entered the queue (a node failure or a crash stopped it) is older than the shape's latest:
        the lists, which must stay in arrival order, are then rebuilt (:meth:`_rebuild`)."""
        arrived = self._arrived[sid]
        if arrived:
            ranks, tree, pos, job_of, jobs = self._ranks[sid], self._trees[sid], self._pos, self._job_of, state.jobs
            late = False
            for r in arrived:
                j = job_of[r]
                if pos[r] < 0 and state.is_waiting(j):
                    if ranks and r < ranks[len(ranks) - 1]:
                        late = True
                    ranks.append(r)
                    pos[r] = tree.append(jobs[j].estimate_s)
            arrived.clear()
            if late:
                self._rebuild(state, sid)

    def _rebuild(self, state: ClusterState, sid: int) -> None:
        """Shape ``sid``'s lists anew from its waiting jobs, in arrival order (the started ones dropped)."""
        pos, job_of, jobs = self._pos, self._job_of, state.jobs
        waiting = sorted({r for r in self._ranks[sid] if pos[r] >= 0})
        tree = MinTree()
        for r in waiting:
            pos[r] = tree.append(jobs[job_of[r]].estimate_s)
        self._ranks[sid], self._trees[sid], self._front[sid] = waiting, tree, 0

    def _next(self, sid: int, lo: int, limit: float) -> int:
        """Rank of the first job of shape ``sid`` at position ``>= lo`` with estimate ``<= limit``, or -1."""
        p = self._trees[sid].first_at_most(lo, limit)
        return -1 if p < 0 else self._ranks[sid][p]

    def decide(self, state: ClusterState) -> Iterator[Decision]:
        # Shapes that fit nowhere stay so while resources only shrink; FitMemory re-tests them after stops.
        failed = self._fits.recall(state) if self._remember else set()
        try:
            yield from self._decide(state, failed)
        finally:
            if self._remember:
                self._fits.keep(state, failed)

    def _decide(self, state: ClusterState, failed: set[int]) -> Iterator[Decision]:
        self._sync_placements(state)
        arrived, rank, job_shape = self._arrived, self._rank, state.job_shape
        for j in state.entered:
            arrived[job_shape[j]].append(rank[j])
        head = yield from self._fifo_phase(state, failed)
        if head is not None and state.free_capacity > FRACTION_EPS:
            yield from self._backfill_phase(state, failed, head)

    def _fifo_phase(self, state: ClusterState, failed: set[int]) -> Generator[Decision, None, Job | None]:
        """Start jobs in arrival order until one does not fit: returns that job, the head (``None`` if every
        waiting job started or the cluster is full)."""
        jobs, job_shape = state.jobs, state.job_shape
        full = state.free_capacity <= FRACTION_EPS  # changes only when a job starts
        placed = self._placed
        for j in self.order.candidates(state):  # (the ordering reads state.entered on its first step)
            if full:
                return None
            sid = job_shape[j]
            if sid in failed:
                gpus = None
            else:  # a placement kept for backfilling, if any (a new one is not kept: starting the job voids it)
                at = placed.get(sid)
                gpus = first_fit(state, jobs[j]) if at is None else at[0]
            if gpus is None:
                head = jobs[j]
                self._fits.fail(state, failed, sid, head)
                return head
            yield Start(j, gpus)
            self._started(state, j, gpus)
            full = state.free_capacity <= FRACTION_EPS
        return None

    def _backfill_phase(self, state: ClusterState, failed: set[int], head: Job) -> Iterator[Decision]:
        """Start every later job, in arrival order over all shapes, that may start without delaying ``head``."""
        jobs, job_shape = state.jobs, state.job_shape
        # heap: ranks of jobs, at most one per shape valid at a time: its entry in ``nxt``.
        res: Reservation | None = None  # computed once some later job fits
        # Per shape (lists indexed by shape id: cheaper to read and write than dicts): the rank of its job in the
        # heap that is next to try (-1: none).
        nxt = [-1] * len(state.shape_node_bits)
        cursor = self._rank[head.job_id]
        heap: list[int] = []
        for sid in state.queue_shape_counts:
            if sid not in failed:
                r = nxt[sid] = self._after(state, sid, cursor)
                if r >= 0:
                    heap.append(r)
        heapq.heapify(heap)
        heappop, heappush = heapq.heappop, heapq.heappush
        # Same shape, same state -> same GPUs and speeds (_placement). What a job ending after the shadow time
        # costs the reservation depends on those GPUs only (_cost): kept with them for this decision point.
        costs: list[tuple[tuple[int, ...], int] | None] = [None] * len(nxt)  # shape -> (its GPUs, their cost)
        limited: set[int] = set()  # shapes whose next job was searched for with a limit (see below)
        now = state.now_s
        trees, max_float, job_of, pos = self._trees, sys.float_info.max, self._job_of, self._pos
        while heap:
            r = heappop(heap)
            j = job_of[r]
            sid = job_shape[j]
            if nxt[sid] != r:
                continue  # superseded
            job = jobs[j]
            if res is not None and job.gpus > res.extra and self._beyond_shadow(state, sid, job, res):
                nxt[sid] = -1  # for the rest of this phase: extra only shrinks, the shadow time stays
                continue
            at = self._placement(state, sid, job)
            if at is None:
                self._fits.fail(state, failed, sid, job)
                nxt[sid] = -1
                continue
            gpus, _, rates = at
            if res is None:
                res = reserve(state, head, self._releases)
            c = costs[sid]
            if c is None or c[0] is not gpus:
                c = costs[sid] = (gpus, self._cost(state, res, gpus))
            cost = c[1]
            rate = rates.get(job.job_type)
            if rate is None:
                rate = rates[job.job_type] = state.placement_rate(job, gpus)
            end_s = now + job.estimate_s / rate
            # Whether starting it keeps the reservation (using up extra GPUs when it must).
            if end_s > res.shadow_s and cost != _FREE:
                if cost == _NEVER or cost > res.extra:
                    # Same shape, same state -> same GPUs and speed: only shorter jobs of this shape can pass.
                    limited.add(sid)
                    limit = (res.shadow_s - now) * rate
                    if trees[sid].t[1] > min(limit, max_float):
                        nxt[sid] = -1  # (_next's answer when no job of the shape is short enough, the usual one)
                        continue
                    r = nxt[sid] = self._next(sid, pos[r] + 1, limit)
                    if r >= 0:
                        heappush(heap, r)
                    continue
                res.extra -= cost
            res.backfill(gpus, end_s)
            yield Start(j, gpus)
            self._started(state, j, gpus)
            if state.free_capacity <= FRACTION_EPS:
                return
            # The state changed: limits are void. Carry on after this job in arrival order: shapes searched
            # with a limit (and this job's) restart from it; the others' next jobs in the heap come after it.
            cursor = r
            limited.add(sid)
            for s_ in limited:
                r = nxt[s_] = self._after(state, s_, cursor)
                if r >= 0:
                    heappush(heap, r)
            limited.clear()

    def _after(self, state: ClusterState, sid: int, cursor: int) -> int:
        """Rank of the first waiting job of shape ``sid`` after rank ``cursor``, or -1."""
        # The shape's oldest waiting job first (amortised O(1): the front only moves forward, past jobs that
        # have started).
        self._flush(state, sid)
        ranks, pos, front = self._ranks[sid], self._pos, self._front[sid]
        n, p = len(ranks), front
        while p < n and pos[ranks[p]] < 0:
            p += 1
        if p != front:
            self._front[sid] = p
        if p < n and ranks[p] > cursor:  # the usual case: the shape's oldest job comes later
            return ranks[p]
        return self._next(sid, bisect_right(ranks, cursor), math.inf)

    def _beyond_shadow(self, state: ClusterState, sid: int, job: Job, res: Reservation) -> bool:
        """Whether no job of shape ``sid`` (of ``job``, which needs more GPUs than the head's extra ones) can be
        backfilled under ``res``, decided without placing it: true when the shape is whole-GPU with the head's
        GPU type as its only one (so any placement is on idle GPUs the head counts on: it costs all its GPUs,
        too many) and even its shortest waiting job, at the highest speed a job has on that type, would end
        after the shadow time. Placement rates never exceed that speed (communication and co-location only
        slow jobs down), and float division and addition are monotonic, so the test agrees exactly with the
        one the backfill loop makes per job."""
        t = self._sole_type[sid]
        if t == -2:
            types = np.flatnonzero(state.eligible_types(job)).tolist()
            t = self._sole_type[sid] = types[0] if len(types) == 1 and job.gpu_fraction >= 1.0 else -1
        if t != res.gpu_type or res.gpu >= 0:
            return False
        top = self._top_speed[t]
        return top > 0.0 and state.now_s + self._trees[sid].t[1] / top > res.shadow_s

    @staticmethod
    def _cost(state: ClusterState, res: Reservation, gpus: tuple[int, ...]) -> int:
        """What a job on ``gpus`` that ends after the shadow time costs the reservation: ``_FREE``, ``_NEVER``
        (it would delay the head), or how many of the head's extra GPUs it uses up."""
        if res.gpu >= 0:  # fractional head: it waits for one GPU only
            return _NEVER if res.gpu in gpus else _FREE
        occ = state.occupancy
        if occ.gpu_type[gpus[0]] != res.gpu_type:
            return _FREE
        # GPUs the head counts on: idle ones, and busy ones released by the shadow time.
        tenants, shadow_s = occ.tenants, res.shadow_s
        return sum(1 for g in gpus if tenants[g] == 0 or res.release_s(g) <= shadow_s)


register(
    SchedulerSpec(
        "easy-backfill",
        EasyBackfill,
        "First in, first out, but when the oldest job must wait it gets a reservation at the earliest time enough "
        "GPUs free up (by the users' run-time estimates), and later jobs may jump ahead if they do not delay it. "
        "This is EASY backfilling, the standard on HPC clusters: short jobs fill the holes a big job leaves.",
    )
)

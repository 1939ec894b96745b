"""easy-backfill's indexes: what makes its policy (:mod:`engine.schedulers.backfill`) cost about the same per
decision point however long the queue grows.

* :class:`ReleaseBook`: when each busy GPU becomes idle by its jobs' estimates, per GPU type in sorted order;
* :func:`reserve` and :class:`Reservation`: the head's shadow time and extra GPUs, looked up in the book;
* :class:`MinTree`: one shape's waiting jobs' estimates as a min segment tree ("the next job short enough").
"""

from __future__ import annotations

import math
import sys
from bisect import bisect_left, bisect_right, insort

import numpy as np

from engine.sim.job import Job
from engine.sim.state import FRACTION_EPS, ClusterState


class ReleaseBook:
    """When each busy GPU becomes idle by the estimates of the jobs on it, kept as jobs start and leave, and
    the busy GPUs' times of each GPU type in sorted order: the head's shadow time is then a lookup (see
    :func:`reserve`), not a pass over every GPU.

    A whole-GPU job's estimated end never changes while it runs; a fractional job's changes only when the
    tenancy of its GPU changes, that is when the scheduler starts a job there or a job leaves it (which
    ``state.occupancy.released`` records). So only those GPUs are recomputed. Assumes that this scheduler
    makes every start (it tells the book of each one: :meth:`started`).

    Starts are only noted as they happen and entered at the next :meth:`refresh` (when a reservation is
    computed): a run whose queue rarely blocks pays next to nothing for the book.
    """

    def __init__(self, gpu_type: list[int], n_types: int) -> None:
        self.gpu_type = gpu_type
        self.end_s = [0.0] * len(gpu_type)  # busy GPUs: estimated end of their job(s), possibly past (overdue)
        self.listed = [False] * len(gpu_type)  # whether end_s[g] is in by_type (exactly the busy GPUs, once fresh)
        self.by_type: list[list[float]] = [[] for _ in range(n_types)]  # per GPU type: its listed end_s, sorted
        self.on_gpu: dict[int, list[int]] = {}  # GPU -> fractional jobs started on it (some may have ended)
        self.stale: set[int] = set()  # GPUs whose fractional jobs changed: end_s to recompute
        self.read_at = 0  # how much of state.occupancy.released has been read
        self.types: dict[int, list[int]] = {}  # job shape -> its eligible GPU types
        self.starts: list[int] = []  # jobs started since the last refresh, in order

    @classmethod
    def of(cls, state: ClusterState) -> ReleaseBook:
        """A book of the jobs running now."""
        book = cls(state.occupancy.gpu_type, len(state.layout.type_names))
        book.read_at = len(state.occupancy.released)
        book.starts.extend(state.running)
        book.refresh(state)
        return book

    def _list(self, g: int, end_s: float) -> None:
        self._unlist(g)
        self.end_s[g] = end_s
        insort(self.by_type[self.gpu_type[g]], end_s)
        self.listed[g] = True

    def _list_whole(self, gpus: tuple[int, ...], end_s: float) -> None:
        """``_list`` for every GPU of a whole-GPU job (all of one type, one end): its copies of ``end_s`` go into
        the sorted list in one insertion."""
        end, listed = self.end_s, self.listed
        for g in gpus:
            self._unlist(g)
            end[g] = end_s
            listed[g] = True
        ends = self.by_type[self.gpu_type[gpus[0]]]
        i = bisect_right(ends, end_s)
        ends[i:i] = [end_s] * len(gpus)

    def _unlist(self, g: int) -> None:
        if self.listed[g]:
            ends = self.by_type[self.gpu_type[g]]
            del ends[bisect_left(ends, self.end_s[g])]
            self.listed[g] = False

    def _read_log(self, state: ClusterState) -> None:
        """GPUs that jobs left since the last call: no longer listed; those with fractional jobs are stale."""
        released = state.occupancy.released
        if len(released) > self.read_at:
            on_gpu = self.on_gpu
            for g in released[self.read_at :]:
                self._unlist(g)
                if g in on_gpu:
                    self.stale.add(g)
            self.read_at = len(released)

    def started(self, j: int) -> None:
        """Job ``j`` has just started (entered at the next :meth:`refresh`)."""
        self.starts.append(j)

    def refresh(self, state: ClusterState) -> None:
        """Bring the book up to date: jobs that left, jobs that started, and the shared GPUs whose tenants
        changed."""
        self._read_log(state)  # first: GPUs that jobs started since have taken may be in it, listed for others
        running, on_gpu = state.running, self.on_gpu
        for j in self.starts:
            r = running.get(j)
            if r is None:
                continue  # it has ended since: it left its GPUs as the log says
            if r.job.gpu_fraction >= 1.0:
                self._list_whole(r.gpu_ids, r.est_end_s)
            else:
                g = r.gpu_ids[0]
                self.on_gpu.setdefault(g, []).append(j)
                self.stale.add(g)
        self.starts.clear()
        for g in self.stale:
            jobs = on_gpu.get(g)
            if jobs is None:
                continue
            # Its tenants still there, each once (a job stopped by a node failure may run elsewhere since, or
            # here again).
            jobs = [j for j in dict.fromkeys(jobs) if j in running and running[j].gpu_ids[0] == g]
            if jobs:  # the last of its tenants to end
                on_gpu[g] = jobs
                self._list(g, max([running[j].est_end_s for j in jobs]))
            else:  # (every tenant that left was in the log, hence unlisted; a whole-GPU job may run there now)
                del on_gpu[g]
        self.stale.clear()


class Reservation:
    """The head's reservation.

    For a whole-GPU head: ``gpu_type`` is the GPU type it waits for and ``extra`` how many GPUs of that type
    are free at ``shadow_s`` beyond what it needs. For a fractional head: ``gpu`` is the one GPU it waits
    for. :meth:`release_s` says when a GPU becomes idle by the estimates.
    """

    __slots__ = ("shadow_s", "gpu_type", "extra", "gpu", "now_s", "_end_s", "_tenants", "_later")

    def __init__(
        self,
        shadow_s: float,
        state: ClusterState,
        book: ReleaseBook,
        *,
        gpu_type: int = -1,
        extra: int = 0,
        gpu: int = -1,
    ) -> None:
        self.shadow_s = shadow_s
        self.gpu_type = gpu_type
        self.extra = extra
        self.gpu = gpu
        self.now_s = state.now_s
        self._end_s = book.end_s
        self._tenants = state.occupancy.tenants
        self._later: dict[int, float] = {}  # GPUs of jobs backfilled since: their release time

    def release_s(self, g: int) -> float:
        """When GPU ``g`` becomes idle by the estimates: 0 if idle, now if its jobs are overdue; jobs
        backfilled under this reservation count once :meth:`backfill` was told of them."""
        later = self._later.get(g)
        if later is not None:
            return later
        return max(self._end_s[g], self.now_s) if self._tenants[g] else 0.0

    def backfill(self, gpus: tuple[int, ...], end_s: float) -> None:
        """A job is about to start on ``gpus`` and, by its estimate, end at ``end_s`` (call before it starts)."""
        for g in gpus:
            self._later[g] = max(self.release_s(g), end_s)


def reserve(state: ClusterState, head: Job, book: ReleaseBook | None = None) -> Reservation:
    """The earliest reservation for ``head`` (a waiting job that does not fit now) that the estimates of the
    running jobs allow; ``book`` is the scheduler's :class:`ReleaseBook`, if it keeps one. While failed nodes
    leave no GPU type enough GPUs for a whole-GPU head, it is reserved nothing (shadow time infinite): it waits for
    a repair, and any job may start meanwhile."""
    if book is None:
        book = ReleaseBook.of(state)
    else:
        book.refresh(state)
    now = state.now_s
    occ = state.occupancy
    if head.gpu_fraction >= 1.0:
        best: tuple[float, int, int] | None = None  # (shadow, -extra, type)
        k = head.gpus
        sid = state.job_shape[head.job_id]
        types = book.types.get(sid)
        if types is None:
            types = book.types[sid] = np.flatnonzero(state.eligible_types(head)).tolist()
        for t in types:
            # The shadow time is the k-th smallest release time of the type's GPUs (idle ones release at 0,
            # busy ones at max(end, now) >= 0): the head did not fit, so k > idle (first-fit takes any k idle
            # GPUs of a type) and it is the (k - idle)-th smallest busy one. The GPUs released by then include
            # the idle ones.
            ends, idle = book.by_type[t], occ.type_idle[t]
            if idle + len(ends) < k:
                continue  # this type has too few GPUs in all
            shadow = 0.0 if k <= idle else max(ends[k - idle - 1], now)
            extra = idle + (bisect_right(ends, shadow) if shadow >= now else 0) - k
            cand = (shadow, -extra, t)
            if best is None or cand < best:
                best = cand
        if best is None:  # every type lacks GPUs until failed nodes are repaired: no time to reserve yet
            return Reservation(math.inf, state, book)
        return Reservation(best[0], state, book, gpu_type=best[2], extra=-best[1])
    # Fractional head: the eligible GPU on which enough share and memory frees up first (lowest id on ties).
    elig = np.asarray(state.eligible_gpus(head))
    vram = occ.gpu_vram
    running = state.running
    release = np.where(np.asarray(state.gpu_tenants) > 0, np.maximum(np.array(book.end_s), now), 0.0)
    ready = np.where(elig, release, math.inf)  # GPUs without fractional jobs: usable once idle
    for g, shared in book.on_gpu.items():
        if not elig[g]:
            continue
        tenants = []
        for j in shared:
            r = running[j]
            job = r.job
            mem = job.vram_gib if job.vram_gib > 0 else job.gpu_fraction * vram[g]
            tenants.append((max(r.est_end_s, now), job.gpu_fraction, mem))
        need_mem = head.vram_gib if head.vram_gib > 0 else head.gpu_fraction * vram[g]
        share, mem = occ.free[g], occ.free_vram[g]
        fits_at = math.inf
        for end, f, m in sorted(tenants):
            share, mem = share + f, mem + m
            if share >= head.gpu_fraction - FRACTION_EPS and mem >= need_mem - FRACTION_EPS:
                fits_at = end
                break
        ready[g] = fits_at
    best_g = int(np.argmin(ready))
    best_t = float(ready[best_g])
    if best_t == math.inf:
        best_g = -1
    return Reservation(max(best_t, now), state, book, gpu=best_g)


class MinTree:
    """Estimates of one shape's jobs in arrival order (``inf`` once a job has started), as a min segment tree:
    "the first job from position ``lo`` on whose estimate is at most ``limit``" costs O(log n). ``t[1]`` is
    the minimum of them all."""

    __slots__ = ("size", "n", "t")

    def __init__(self) -> None:
        self.size, self.n = 1, 0
        self.t = [math.inf, math.inf]

    def append(self, value: float) -> int:
        if self.n == self.size:  # full: double the leaves and rebuild (amortised O(1) per append)
            leaves = self.t[self.size :] + [math.inf] * self.size
            self.size *= 2
            self.t = [math.inf] * self.size + leaves
            for i in range(self.size - 1, 0, -1):
                self.t[i] = min(self.t[2 * i], self.t[2 * i + 1])
        self.n += 1
        self.set(self.n - 1, value)
        return self.n - 1

    def set(self, i: int, value: float) -> None:
        t = self.t
        i += self.size
        t[i] = value
        i >>= 1
        while i:
            a, b = t[2 * i], t[2 * i + 1]
            m = a if a <= b else b
            if t[i] == m:
                break  # this node's minimum, hence every one above it, is unchanged
            t[i] = m
            i >>= 1

    def first_at_most(self, lo: int, limit: float) -> int:
        """Smallest position ``>= lo`` whose value is ``<= limit``, or -1; ``inf`` (started) never matches."""
        if lo >= self.n:
            return -1
        limit = min(limit, sys.float_info.max)
        t, size = self.t, self.size
        if t[1] > limit:  # the minimum of all (the usual answer under a long queue: none is short enough)
            return -1
        i = lo + size
        while t[i] > limit:
            while i & 1:  # a right child: everything to its left is before lo, go up
                i >>= 1
            if i == 0:
                return -1
            i += 1  # the next subtree to the right
        while i < size:
            i = 2 * i if t[2 * i] <= limit else 2 * i + 1
        return i - size

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
backfilled. Like Slurm's ``bf_max_job_test``, at most ``depth`` jobs behind the head are examined per
decision point, so an overloaded queue costs the same per event however long it grows.
"""

from __future__ import annotations

import heapq
import math
from typing import Iterator

import numpy as np

from ..job import Job
from ..state import FRACTION_EPS, ClusterState, Decision, Start
from .ordering import StaticKeyOrder, fifo_key
from .placement import first_fit
from .registry import SchedulerSpec, register


class _Reservation:
    """The head's reservation.

    For a whole-GPU head: ``gpu_type`` is the GPU type it waits for and ``extra`` how many GPUs of that type
    are free at ``shadow_s`` beyond what it needs. For a fractional head: ``gpu`` is the one GPU it waits
    for. ``release_s[g]`` is when GPU ``g`` becomes idle by the estimates (0 for idle GPUs).
    """

    __slots__ = ("shadow_s", "gpu_type", "extra", "gpu", "release_s")

    def __init__(self, shadow_s: float, release_s: np.ndarray, *, gpu_type: int = -1, extra: int = 0,
                 gpu: int = -1) -> None:
        self.shadow_s = shadow_s
        self.release_s = release_s
        self.gpu_type = gpu_type
        self.extra = extra
        self.gpu = gpu


def _release_times(state: ClusterState) -> np.ndarray:
    """When each GPU becomes idle if running jobs end by their estimates (overdue jobs: now; idle GPUs: 0)."""
    now = state.now_s
    release = np.zeros(state.n_gpus)
    running = state.running.values()
    if running:
        ids = np.fromiter((g for r in running for g in r.gpu_ids), dtype=np.int64)
        ends = np.fromiter((r.est_end_s for r in running for _ in r.gpu_ids), dtype=float)
        np.maximum.at(release, ids, np.maximum(ends, now))
    return release


def reserve(state: ClusterState, head: Job) -> _Reservation:
    """The earliest reservation for ``head`` (a waiting job that does not fit now) that the estimates of the
    running jobs allow."""
    release = _release_times(state)
    lay = state.layout
    idle = np.asarray(state.gpu_tenants) == 0
    if head.gpu_fraction >= 1.0:
        best: tuple[float, int, int] | None = None  # (shadow, -extra, type)
        k = head.gpus
        for t in np.flatnonzero(state.eligible_types(head)).tolist():
            of_type = lay.gpu_type == t
            n_idle = int((idle & of_type).sum())
            busy = release[of_type & ~idle]
            need = k - n_idle  # >= 1: the head did not fit, and first-fit takes any k idle GPUs of a type
            if busy.size < need:
                continue  # this type has too few GPUs in all
            shadow = float(np.partition(busy, need - 1)[need - 1])
            extra = n_idle + int((busy <= shadow).sum()) - k
            cand = (shadow, -extra, t)
            if best is None or cand < best:
                best = cand
        assert best is not None, "an unschedulable job reached the queue"
        return _Reservation(best[0], release, gpu_type=best[2], extra=-best[1])
    # Fractional head: the eligible GPU on which enough share and memory frees up first.
    elig = np.asarray(state.eligible_gpus(head))
    vram = lay.type_vram_gib[lay.gpu_type]
    need_mem = np.full(state.n_gpus, head.vram_gib) if head.vram_gib > 0 else head.gpu_fraction * vram
    tenants: dict[int, list[tuple[float, float, float]]] = {}
    now = state.now_s
    for r in state.running.values():
        job = r.job
        if job.gpu_fraction < 1.0 and elig[r.gpu_ids[0]]:
            g = r.gpu_ids[0]
            mem = job.vram_gib if job.vram_gib > 0 else job.gpu_fraction * vram[g]
            tenants.setdefault(g, []).append((max(r.est_end_s, now), job.gpu_fraction, mem))
    best_g, best_t = -1, math.inf
    free, free_mem = np.asarray(state.gpu_free), np.asarray(state.gpu_free_vram_gib)
    for g in np.flatnonzero(elig).tolist():
        if g not in tenants:  # busy with a whole-GPU job (or idle): usable once it is idle
            t = float(release[g])
        else:
            share, mem = free[g], free_mem[g]
            t = math.inf
            for end, f, m in sorted(tenants[g]):
                share, mem = share + f, mem + m
                if share >= head.gpu_fraction - FRACTION_EPS and mem >= need_mem[g] - FRACTION_EPS:
                    t = end
                    break
        if t < best_t:
            best_g, best_t = g, t
    return _Reservation(max(best_t, now), release, gpu=best_g)


class EasyBackfill:
    """FIFO with EASY backfilling on the users' estimates; placement by ``first-fit``.

    Args:
        name: the name results carry.
        depth: most jobs behind the head examined per decision point (``None``: the whole queue).
    """

    def __init__(self, name: str = "easy-backfill", depth: int | None = 500) -> None:
        if depth is not None and depth < 1:
            raise ValueError("depth must be >= 1 or None")
        self.name = name
        self.depth = depth
        self.order = StaticKeyOrder(fifo_key)
        self.place = first_fit
        self._estimates: dict[int, list[tuple[float, int]]] = {}  # shape -> heap of waiting (estimate, job)

    def reset(self, state: ClusterState) -> None:
        self.order.reset(state)
        self._estimates = {}

    def _shortest_estimate(self, state: ClusterState, sid: int) -> float:
        """The smallest estimate among waiting jobs of shape ``sid``."""
        heap, queue = self._estimates[sid], state.queue
        while heap and heap[0][1] not in queue:
            heapq.heappop(heap)
        return heap[0][0] if heap else math.inf

    def decide(self, state: ClusterState) -> Iterator[Decision]:
        jobs, job_shape, shapes, place = state.jobs, state.job_shape, state.queue_shape_counts, self.place
        for j in state.entered:
            heapq.heappush(self._estimates.setdefault(job_shape[j], []), (jobs[j].estimate_s, j))
        head: Job | None = None  # the first job that did not fit
        res: _Reservation | None = None  # its reservation, computed once a later job could start
        failed: set[int] = set()  # shapes that fit nowhere now: resources only shrink during one decision
        limit_s: dict[int, float] = {}  # shape -> longest estimate that still ends before the shadow time
        bound: set[int] = set()  # shapes whose every waiting job is longer than that
        left = math.inf if self.depth is None else self.depth
        full = state.free_capacity <= 1e-9  # changes only when a job starts
        for j in self.order.candidates(state):  # (the ordering reads state.entered on the first step)
            if full:
                return
            job = jobs[j]
            if head is None:  # FIFO phase: start jobs in order until one does not fit
                gpus = place(state, job)
                if gpus is not None:
                    yield Start(j, gpus)
                    full = state.free_capacity <= 1e-9
                    continue
                head = job
                failed.add(job_shape[j])
                if len(failed) >= len(shapes):
                    return
                continue
            left -= 1
            if left < 0:
                return
            sid = job_shape[j]
            if sid in failed or job.estimate_s > limit_s.get(sid, math.inf):
                continue
            gpus = place(state, job)
            if gpus is None:
                failed.add(sid)
                if len(failed) + len(bound) >= len(shapes):
                    return
                continue
            if res is None:
                res = reserve(state, head)
            rate = state.placement_rate(job, gpus)
            end_s = state.now_s + job.estimate_s / rate
            if not self._allowed(state, res, job, gpus, end_s):
                # Same shape, same state -> same GPUs and speed: only shorter jobs of this shape can pass.
                limit_s[sid] = (res.shadow_s - state.now_s) * rate
                if self._shortest_estimate(state, sid) > limit_s[sid]:
                    bound.add(sid)
                    if len(failed) + len(bound) >= len(shapes):
                        return  # no waiting job can start now without delaying the head
                continue
            yield Start(j, gpus)
            full = state.free_capacity <= 1e-9
            limit_s.clear()
            bound.clear()
            release = res.release_s
            for g in gpus:
                release[g] = max(release[g], end_s)

    @staticmethod
    def _allowed(state: ClusterState, res: _Reservation, job: Job, gpus: tuple[int, ...], end_s: float) -> bool:
        """Whether starting ``job`` on ``gpus`` (ending at ``end_s`` by its estimate) keeps the reservation;
        uses up extra GPUs when it must."""
        if end_s <= res.shadow_s:
            return True
        if res.gpu >= 0:  # fractional head: it waits for one GPU only
            return res.gpu not in gpus
        lay = state.layout
        if int(lay.gpu_type[gpus[0]]) != res.gpu_type:
            return True
        # GPUs the head counts on: idle ones, and busy ones released by the shadow time.
        idle = state.gpu_tenants
        cost = sum(1 for g in gpus if idle[g] == 0 or res.release_s[g] <= res.shadow_s)
        if cost > res.extra:
            return False
        res.extra -= cost
        return True


register(SchedulerSpec(
    "easy-backfill", EasyBackfill,
    "First in, first out, but when the oldest job must wait it gets a reservation at the earliest time enough "
    "GPUs free up (by the users' run-time estimates), and later jobs may jump ahead if they do not delay it. "
    "This is EASY backfilling, the standard on HPC clusters: short jobs fill the holes a big job leaves."))

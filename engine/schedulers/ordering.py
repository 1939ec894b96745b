"""Queue orderings: which waiting job to try next.

An ordering yields waiting job ids, best first, via ``candidates(state)``. It may keep its own sorted
structure across decision points (fed by ``state.entered``) so that a long queue is not re-sorted at every
event; jobs that started in the meantime are skipped lazily.
"""

from __future__ import annotations

import heapq
from bisect import insort
from typing import Any, Callable, Container, Iterator, Protocol

from ..job import Job
from ..state import ClusterState


class Order(Protocol):
    def reset(self, state: ClusterState) -> None: ...

    def catch_up(self, state: ClusterState) -> None: ...

    def candidates(self, state: ClusterState, skip: Container[int] | None = None) -> Iterator[int]: ...


class StaticKeyOrder:
    """Waiting jobs sorted by a key computed once, when the job enters the queue (smallest first).

    Ties are broken by ``job_id``, so the order is total and runs are deterministic.

    ``candidates(state)`` walks one sorted list of the waiting jobs. ``candidates(state, skip)`` leaves out
    jobs whose shape (``state.job_shape``) is in the live set ``skip``, which the caller may grow during the
    walk (shapes that did not fit): it merges per-shape heaps of the waiting jobs, taking only shapes that
    have waiting jobs and are not skipped, and drops a shape as soon as it is skipped. A long queue whose
    shapes are mostly skipped then costs about the number of jobs yielded plus the number of waiting shapes,
    not the length of the queue. Each structure is built on its first use (from the jobs waiting then, whose
    keys it computes, so a key must depend on the job alone, as every registered one does) and kept up to
    date from ``state.entered``; entries of jobs that started are dropped lazily.
    """

    def __init__(self, key: Callable[[ClusterState, Job], Any]) -> None:
        self.key = key
        self._gen: list[int] = []  # per job: generation of its valid entry (it re-enters after a preemption)
        self._items: list[tuple[Any, int, int]] | None = None  # (key, job, generation), sorted from _head on
        # Entries before _head are stale (their jobs started). They are dropped by moving this index, and cut off
        # only once they are half the list: deleting a list's front moves all the rest, and a long blocked queue
        # would pay that at every decision point.
        self._head = 0
        self._heaps: dict[int, list[tuple[Any, int, int]]] | None = None  # shape -> heap of the same entries
        self._heap_entries = 0

    def reset(self, state: ClusterState) -> None:
        self._gen = [0] * len(state.jobs)
        self._items = self._heaps = None
        self._head = 0
        self._heap_entries = 0

    def catch_up(self, state: ClusterState) -> None:
        """Take in the jobs that entered the queue since the previous decision point. Call it once per
        decision point in which ``candidates`` is not called (``candidates`` calls it itself)."""
        gen, jobs, key, shape = self._gen, state.jobs, self.key, state.job_shape
        items, heaps = self._items, self._heaps
        for j in state.entered:
            g = gen[j] + 1
            gen[j] = g
            if items is None and heaps is None:
                continue
            e = (key(state, jobs[j]), j, g)
            if items is not None:
                if len(items) > self._head and e < items[-1]:
                    insort(items, e, self._head)
                else:  # the usual case for arrivals in first-come orders: one comparison, no search
                    items.append(e)
            if heaps is not None:
                h = heaps.get(shape[j])
                if h is None:
                    heaps[shape[j]] = [e]
                else:
                    heapq.heappush(h, e)
                self._heap_entries += 1

    def _entries(self, state: ClusterState) -> list[tuple[Any, int, int]]:
        """The valid entries of the waiting jobs, unsorted."""
        gen, jobs, key = self._gen, state.jobs, self.key
        return [(key(state, jobs[j]), j, gen[j]) for j in state.queue]

    def candidates(self, state: ClusterState, skip: Container[int] | None = None) -> Iterator[int]:
        self.catch_up(state)
        return self._walk(state) if skip is None else self._merge(state, skip)

    def _walk(self, state: ClusterState) -> Iterator[int]:
        items, gen, queue, head = self._items, self._gen, state.queue, self._head
        if items is None:
            self._items = items = sorted(self._entries(state))
            head = 0
        # Entries of jobs that started are dropped lazily: all of them once they outnumber the waiting jobs
        # (amortised O(1) per job), else those in front, which every walk would step over again.
        elif len(items) - head > 2 * len(queue) + 8:
            self._items = items = [e for e in items[head:] if state.is_waiting(e[1]) and gen[e[1]] == e[2]]
            head = 0
        else:
            n = len(items)
            while head < n:
                e = items[head]
                j = e[1]
                if e[2] == gen[j] and state.is_waiting(j):
                    break
                head += 1
            if head * 2 > n:
                del items[:head]
                head = 0
        self._head = head
        for i in range(head, len(items)):
            _, j, g = items[i]
            if g == gen[j] and state.is_waiting(j):
                yield j

    def _merge(self, state: ClusterState, skip: Container[int]) -> Iterator[int]:
        """The waiting jobs whose shape is not in ``skip``, in order: a merge of the per-shape heaps."""
        heaps, gen, queue = self._heaps, self._gen, state.queue
        if heaps is None or self._heap_entries > 2 * len(queue) + 8:  # build, or drop every stale entry
            heaps = {}
            shape = state.job_shape
            for e in self._entries(state):
                h = heaps.get(shape[e[1]])
                if h is None:
                    heaps[shape[e[1]]] = [e]
                else:
                    h.append(e)
            for h in heaps.values():
                heapq.heapify(h)
            self._heaps = heaps
            self._heap_entries = len(queue)
        heappop = heapq.heappop
        heads = []
        for sid in state.queue_shape_counts:
            if sid in skip:
                continue
            h = heaps[sid]
            while not (h[0][2] == gen[h[0][1]] and state.is_waiting(h[0][1])):  # a waiting shape has a valid entry
                heappop(h)
                self._heap_entries -= 1
            e = h[0]
            heads.append((e[0], e[1], sid))  # (key, job, shape): flat, so comparing two compares keys, then ids
        if not heads:
            return
        heapq.heapify(heads)
        taken = []  # entries of yielded jobs that still wait: put back at the end
        try:
            while heads:
                head = heads[0]
                sid = head[2]
                if sid in skip:
                    heappop(heads)
                    continue
                yield head[1]
                if sid in skip:
                    heappop(heads)
                    continue
                h = heaps[sid]
                e = heappop(h)  # the head's entry: only this walk pops, and only from the top
                self._heap_entries -= 1
                if state.is_waiting(e[1]):
                    taken.append(e)
                while h and not (h[0][2] == gen[h[0][1]] and state.is_waiting(h[0][1])):
                    heappop(h)
                    self._heap_entries -= 1
                if h:
                    e = h[0]
                    heapq.heapreplace(heads, (e[0], e[1], sid))
                else:
                    heappop(heads)
        finally:
            shape = state.job_shape
            for e in taken:
                heapq.heappush(heaps[shape[e[1]]], e)
                self._heap_entries += 1


def arrival_ranks(state: ClusterState) -> tuple[list[int], list[int]]:
    """``(rank, job_of)``: each job's rank in arrival order (submit time, then job id) and the job of each rank.
    Schedulers that keep jobs in arrival order keep their ranks: plain ints, cheap to compare."""
    job_of = list(state.arrival_order)
    rank = [0] * len(job_of)
    for r, j in enumerate(job_of):
        rank[j] = r
    return rank, job_of


def fifo_key(state: ClusterState, job: Job) -> float:
    return job.submit_s  # ties by job id, as in every ordering


def sjf_key(state: ClusterState, job: Job) -> tuple[float, float]:
    return (job.estimate_s * job.gpus * job.gpu_fraction, job.submit_s)


def sjf_oracle_key(state: ClusterState, job: Job) -> tuple[float, float]:
    return (job.duration_s * job.gpus * job.gpu_fraction, job.submit_s)


def priority_key(state: ClusterState, job: Job) -> tuple[float, float]:
    return (-job.priority, job.submit_s)


#: Orderings by name (a factory each, since orderings keep per-run state).
ORDERS: dict[str, Callable[[], Order]] = {
    "fifo": lambda: StaticKeyOrder(fifo_key),
    "sjf": lambda: StaticKeyOrder(sjf_key),
    "sjf-oracle": lambda: StaticKeyOrder(sjf_oracle_key),
    "priority": lambda: StaticKeyOrder(priority_key),
}

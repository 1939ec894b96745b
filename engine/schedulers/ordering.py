"""Queue orderings: which waiting job to try next.

An ordering yields waiting job ids, best first, via ``candidates(state)``. It may keep its own sorted
structure across decision points (fed by ``state.entered``) so that a long queue is not re-sorted at every
event; jobs that started in the meantime are skipped lazily.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right, insort
from typing import Any, Callable, Container, Iterator, Protocol

from ..job import Job
from ..state import ClusterState


class Order(Protocol):
    def reset(self, state: ClusterState) -> None: ...

    def candidates(self, state: ClusterState) -> Iterator[int]: ...


#: After stepping over this many jobs of skipped shapes in one walk, a walk continues shape by shape.
_SKIP_RUN = 32


class StaticKeyOrder:
    """Waiting jobs sorted by a key computed once, when the job enters the queue (smallest first).

    Ties are broken by ``job_id``, so the order is total and runs are deterministic.

    ``candidates(state, skip)`` leaves out jobs whose shape (``state.job_shape``) is in the live set ``skip``,
    which the caller may grow during the walk (shapes that did not fit). In a long queue most jobs then
    belong to skipped shapes; once a walk has stepped over many of them it continues with a merge of
    per-shape sorted lists, which jumps over whole skipped shapes, so a walk costs about the number of
    jobs it yields plus the number of shapes instead of the length of the queue.
    """

    def __init__(self, key: Callable[[ClusterState, Job], Any]) -> None:
        self.key = key
        self._items: list[tuple[Any, int, int]] = []  # (key, job, generation), sorted
        self._gen: list[int] = []  # per job: generation of its valid entry (it re-enters after a preemption)
        self._by_shape: dict[int, list[tuple[Any, int, int]]] | None = None  # built on the first long walk

    def reset(self, state: ClusterState) -> None:
        self._items = []
        self._gen = [0] * len(state.jobs)
        self._by_shape = None

    def _catch_up(self, state: ClusterState) -> list[tuple[Any, int, int]]:
        """Insert the jobs that entered the queue; drop entries of started jobs (lazily). Returns the list."""
        items, gen, queue, jobs, key = self._items, self._gen, state.queue, state.jobs, self.key
        by_shape = self._by_shape
        for j in state.entered:
            g = gen[j] + 1
            gen[j] = g
            e = (key(state, jobs[j]), j, g)
            insort(items, e)
            if by_shape is not None:
                insort(by_shape.setdefault(state.job_shape[j], []), e)
        # Entries of jobs that started are dropped lazily: all of them once they outnumber the waiting jobs
        # (amortised O(1) per job), else those in front, which every walk would step over again.
        if len(items) > 2 * len(queue) + 8:
            self._items = items = [e for e in items if e[1] in queue and gen[e[1]] == e[2]]
            if by_shape is not None:
                self._by_shape = self._group(state, items)
        else:
            stale = 0
            for _, j, g in items:
                if g == gen[j] and j in queue:
                    break
                stale += 1
            if stale:
                del items[:stale]
        return items

    @staticmethod
    def _group(state: ClusterState, items) -> dict[int, list[tuple[Any, int, int]]]:
        by_shape: dict[int, list[tuple[Any, int, int]]] = {}
        shape = state.job_shape
        for e in items:
            by_shape.setdefault(shape[e[1]], []).append(e)
        return by_shape

    def candidates(self, state: ClusterState, skip: Container[int] = ()) -> Iterator[int]:
        items = self._catch_up(state)
        gen, queue, shape = self._gen, state.queue, state.job_shape
        stepped = 0  # entries stepped over: of skipped shapes, or of jobs that started
        for e in items:
            _, j, g = e
            if g != gen[j] or j not in queue or shape[j] in skip:
                stepped += 1
                if stepped > _SKIP_RUN and skip:
                    yield from self._merge(state, skip, e)
                    return
                continue
            yield j

    def _merge(self, state: ClusterState, skip: Container[int], after: tuple) -> Iterator[int]:
        """The waiting jobs after entry ``after`` whose shape is not skipped, in order: a merge of the
        per-shape lists that drops a shape as soon as it is skipped."""
        if self._by_shape is None:
            self._by_shape = self._group(state, self._items)
        gen, queue = self._gen, state.queue

        def first_valid(lst, i):
            """Index of the first valid entry from ``i`` on; entries of started jobs before it are deleted."""
            k = i
            while k < len(lst):
                _, j, g = lst[k]
                if g == gen[j] and j in queue:
                    break
                k += 1
            if k > i:
                del lst[i:k]
            return i

        heads = []
        for sid, lst in self._by_shape.items():
            if sid not in skip:
                i = first_valid(lst, bisect_right(lst, after))
                if i < len(lst):
                    heads.append((lst[i], sid, i))
        heapq.heapify(heads)
        while heads:
            e, sid, i = heads[0]
            if sid in skip:
                heapq.heappop(heads)
                continue
            yield e[1]
            if sid in skip:
                heapq.heappop(heads)
                continue
            lst = self._by_shape[sid]
            i = first_valid(lst, i + 1)
            if i < len(lst):
                heapq.heapreplace(heads, (lst[i], sid, i))
            else:
                heapq.heappop(heads)


def fifo_key(state: ClusterState, job: Job) -> tuple[float, int]:
    return (job.submit_s, job.job_id)


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

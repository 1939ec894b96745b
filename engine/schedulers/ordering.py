"""Queue orderings: which waiting job to try next.

An ordering yields waiting job ids, best first, via ``candidates(state)``. It may keep its own sorted
structure across decision points (fed by ``state.entered``) so that a long queue is not re-sorted at every
event; jobs that started in the meantime are skipped lazily.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any, Callable, Iterator, Protocol

from mypy_extensions import mypyc_attr

from engine.sim.job import Job
from engine.sim.state import ClusterState


class Order(Protocol):
    def reset(self, state: ClusterState) -> None: ...

    def catch_up(self, state: ClusterState) -> None: ...

    def candidates(self, state: ClusterState, skip: set[int] | None = None) -> Iterator[int]: ...


@mypyc_attr(allow_interpreted_subclasses=True)  # a public base: subclassable compiled too (ARCHITECTURE.md)
class StaticKeyOrder:
    """Waiting jobs sorted by a number computed from the job alone (``key(job)``, smallest first), ties in
    arrival order (submit time, then job id); without a key, arrival order itself. The order is total and
    runs are deterministic.

    Each job's rank in that order is computed once per run, at ``reset`` (a stable sort of the arrival order
    by the key), and the structures below hold ranks: plain ints, cheap to compare and to store.

    ``candidates(state)`` walks one sorted list of the waiting jobs. ``candidates(state, skip)`` leaves out
    jobs whose shape (``state.job_shape``) is in the live set ``skip``, which the caller may grow during the
    walk (shapes that did not fit): it merges per-shape sorted lists of the waiting jobs, taking only shapes
    that have waiting jobs and are not skipped, and drops a shape as soon as it is skipped. A long queue whose
    shapes are mostly skipped then costs about the number of jobs yielded plus the number of waiting shapes,
    not the length of the queue. Each structure is built on its first use and kept up to date from
    ``state.entered``; entries of jobs that started are dropped lazily (a job that returns to the queue before
    its entry was dropped finds it still in place: its rank did not change).
    """

    def __init__(self, key: Callable[[Job], float] | None = None) -> None:
        self.key = key
        self._rank: list[int] = []  # job -> rank
        self._job_of: list[int] = []  # rank -> job
        # Ranks of the waiting jobs, sorted, from _head on; some may be of jobs that no longer wait. Entries before
        # _head were dropped by moving this index, and are cut off only once they are half the list: deleting a
        # list's front moves all the rest, and a long blocked queue would pay that at every decision point.
        self._items: list[int] | None = None
        self._head = 0
        self._lists: list[list[int]] | None = None  # shape -> the same for its jobs, from _heads[shape] on
        self._heads: list[int] = []
        self._listed = 0  # entries in _lists from their heads on

    def reset(self, state: ClusterState) -> None:
        if self.key is None:
            self._rank, self._job_of = arrival_ranks(state)
        else:
            key = self.key
            keys: list[Any] = [key(job) for job in state.jobs]  # numbers (priorities are ints: kept exact)
            self._job_of = job_of = sorted(state.arrival_order, key=keys.__getitem__)  # stable: ties by arrival
            self._rank = rank = [0] * len(job_of)
            for r, j in enumerate(job_of):
                rank[j] = r
        self._items = self._lists = None
        self._head = self._listed = 0
        self._heads = []

    def catch_up(self, state: ClusterState) -> None:
        """Take in the jobs that entered the queue since the previous decision point. Call it once per
        decision point in which ``candidates`` is not called (``candidates`` calls it itself)."""
        items, lists = self._items, self._lists
        if items is None and lists is None:
            return
        rank, shape, heads = self._rank, state.job_shape, self._heads
        for j in state.entered:
            r = rank[j]
            if items is not None:
                _insert(items, self._head, r)
            if lists is not None:
                sid = shape[j]
                if _insert(lists[sid], heads[sid], r):
                    self._listed += 1

    def candidates(self, state: ClusterState, skip: set[int] | None = None) -> Iterator[int]:
        self.catch_up(state)
        return self._walk(state) if skip is None else self._merge(state, skip)

    def _walk(self, state: ClusterState) -> Iterator[int]:
        items, head, job_of, queue = self._items, self._head, self._job_of, state.queue
        if items is None:
            rank = self._rank
            self._items = items = sorted([rank[j] for j in queue])
            head = 0
        # Entries of jobs that started are dropped lazily: all of them once they outnumber the waiting jobs
        # (amortised O(1) per job), else those in front, which every walk would step over again.
        elif len(items) - head > 2 * len(queue) + 8:
            self._items = items = [r for r in items[head:] if state.is_waiting(job_of[r])]
            head = 0
        else:
            n = len(items)
            while head < n and not state.is_waiting(job_of[items[head]]):
                head += 1
            head = cut_front(items, head)
        self._head = head
        for i in range(head, len(items)):
            j = job_of[items[i]]
            if state.is_waiting(j):
                yield j

    def _merge(self, state: ClusterState, skip: set[int]) -> Iterator[int]:
        """The waiting jobs whose shape is not in ``skip``, in order: a merge of the per-shape lists."""
        lists, heads, job_of, queue = self._lists, self._heads, self._job_of, state.queue
        if lists is None or self._listed > 2 * len(queue) + 8:  # build, or drop every entry of a job that started
            rank, shape = self._rank, state.job_shape
            lists = [[] for _ in range(len(state.shape_node_bits))]
            for j in queue:
                lists[shape[j]].append(rank[j])
            for ranks in lists:
                ranks.sort()
            self._lists, self._heads, self._listed = lists, [0] * len(lists), len(queue)
            heads = self._heads
        # Each waiting shape that is not skipped, with the position of its first waiting job; its list's front,
        # up to there, is dropped for good.
        shapes: list[int] = []
        at: list[int] = []
        for sid in state.queue_shape_counts:
            if sid in skip:
                continue
            ranks = lists[sid]
            i = heads[sid]
            while not state.is_waiting(job_of[ranks[i]]):  # a waiting shape has an entry of a waiting job
                i += 1
            self._listed -= i - heads[sid]
            i = cut_front(ranks, i)
            heads[sid] = i
            shapes.append(sid)
            at.append(i)
        while shapes:
            # The shape whose next job comes first: few shapes wait, so a scan costs less than a heap.
            k = 0
            best = lists[shapes[0]][at[0]]
            for m in range(1, len(shapes)):
                r = lists[shapes[m]][at[m]]
                if r < best:
                    k, best = m, r
            sid = shapes[k]
            if sid not in skip:
                yield job_of[best]
                if sid not in skip:  # move on to the shape's next waiting job, if any
                    ranks = lists[sid]
                    i, n = at[k] + 1, len(ranks)
                    while i < n and not state.is_waiting(job_of[ranks[i]]):
                        i += 1
                    if i < n:
                        at[k] = i
                        continue
            last = len(shapes) - 1  # drop the shape: the last one takes its place
            shapes[k], at[k] = shapes[last], at[last]
            shapes.pop()
            at.pop()


def cut_front(ranks: list[int], head: int) -> int:
    """The sorted list ``ranks`` is read from ``head`` on; entries before it are dead. Deleting a list's front moves
    all the rest, so the dead front is cut off only once it is half the list (amortised O(1) per entry); returns
    the new head."""
    if head * 2 > len(ranks):
        del ranks[:head]
        return 0
    return head


def _insert(ranks: list[int], lo: int, r: int) -> bool:
    """Put rank ``r`` into the sorted ``ranks[lo:]`` unless it is there already; whether it was put."""
    if len(ranks) == lo or r > ranks[-1]:  # the usual case for arrivals in first-come orders: no search
        ranks.append(r)
        return True
    i = bisect_left(ranks, r, lo)
    if ranks[i] == r:  # the job's entry from before it last started, not dropped yet: still in place
        return False
    ranks.insert(i, r)
    return True


def arrival_ranks(state: ClusterState) -> tuple[list[int], list[int]]:
    """``(rank, job_of)``: each job's rank in arrival order (submit time, then job id) and the job of each rank.
    Schedulers that keep jobs in arrival order keep their ranks: plain ints, cheap to compare."""
    job_of = list(state.arrival_order)
    rank = [0] * len(job_of)
    for r, j in enumerate(job_of):
        rank[j] = r
    return rank, job_of


def sjf_key(job: Job) -> float:
    return job.estimate_s * job.gpus * job.gpu_fraction  # ties by arrival, as in every ordering


def sjf_oracle_key(job: Job) -> float:
    return job.duration_s * job.gpus * job.gpu_fraction


def priority_key(job: Job) -> int:
    return -job.priority


#: Orderings by name (a factory each, since orderings keep per-run state).
ORDERS: dict[str, Callable[[], Order]] = {
    "fifo": lambda: StaticKeyOrder(),
    "sjf": lambda: StaticKeyOrder(sjf_key),
    "sjf-oracle": lambda: StaticKeyOrder(sjf_oracle_key),
    "priority": lambda: StaticKeyOrder(priority_key),
}

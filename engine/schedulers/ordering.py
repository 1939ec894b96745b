"""Queue orderings: which waiting job to try next.

An ordering yields waiting job ids, best first, via ``candidates(state)``. It may keep its own sorted
structure across decision points (fed by ``state.entered``) so that a long queue is not re-sorted at every
event; jobs that started in the meantime are skipped lazily.
"""

from __future__ import annotations

from bisect import insort
from typing import Any, Callable, Iterator, Protocol

from ..job import Job
from ..state import ClusterState


class Order(Protocol):
    def reset(self, state: ClusterState) -> None: ...

    def candidates(self, state: ClusterState) -> Iterator[int]: ...


class StaticKeyOrder:
    """Waiting jobs sorted by a key computed once, when the job enters the queue (smallest first).

    Ties are broken by ``job_id``, so the order is total and runs are deterministic.
    """

    def __init__(self, key: Callable[[ClusterState, Job], Any]) -> None:
        self.key = key
        self._items: list[tuple[Any, int, int]] = []  # (key, job, generation), sorted
        self._gen: list[int] = []  # per job: generation of its valid entry (it re-enters after a preemption)

    def reset(self, state: ClusterState) -> None:
        self._items = []
        self._gen = [0] * len(state.jobs)

    def candidates(self, state: ClusterState) -> Iterator[int]:
        items, gen, queue, jobs, key = self._items, self._gen, state.queue, state.jobs, self.key
        for j in state.entered:
            g = gen[j] + 1
            gen[j] = g
            insort(items, (key(state, jobs[j]), j, g))
        # Entries of jobs that started are dropped lazily: all of them once they outnumber the waiting jobs
        # (amortised O(1) per job), else those in front, which every walk would step over again.
        if len(items) > 2 * len(queue) + 8:
            self._items = items = [e for e in items if e[1] in queue and gen[e[1]] == e[2]]
        else:
            stale = 0
            for _, j, g in items:
                if g == gen[j] and j in queue:
                    break
                stale += 1
            if stale:
                del items[:stale]
        for _, j, g in items:
            if g == gen[j] and j in queue:
                yield j


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

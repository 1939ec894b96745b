"""tiresias's indexes: what keeps its policy (:mod:`engine.schedulers.tiresias`) from scanning every job at every
decision point.

* :class:`WaitingLists`: per queue, per job shape, the waiting jobs in arrival order; an entry goes stale when its
  job starts or moves to another queue, and is dropped when it reaches the front;
* :class:`RunningLists`: per queue, its running jobs in arrival order and the GPUs they hold, and per GPU the jobs
  on it: victims come out in preemption order without sorting, and jobs that ended are found through the GPUs
  they left;
* :class:`Timers`: when queued jobs are due for promotion and running jobs cross into the next queue (two agendas,
  whose stale entries are dropped when met), and the next wake-up they call for.

Jobs are kept by their rank in arrival order (submit time, then id): plain ints, cheap to compare. Compiled, like
the policy (``engine/_native.py``).
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Iterator

from engine.schedulers.ordering import cut_front
from engine.sim.agenda import Agenda
from engine.sim.state import ClusterState


class _Ranks:
    """Ranks in increasing order, from ``head`` on: the front is dropped by moving ``head`` (see
    :func:`~engine.schedulers.ordering.cut_front`)."""

    def __init__(self, rank: int) -> None:
        self.ranks = [rank]
        self.head = 0

    def insert(self, rank: int) -> None:
        ranks = self.ranks
        if self.head == len(ranks) or rank > ranks[-1]:  # (arrivals: no search)
            ranks.append(rank)
        else:
            insort(ranks, rank, self.head)

    def pop_front(self) -> None:
        self.head = cut_front(self.ranks, self.head + 1)


class WaitingLists:
    """Per queue, per job shape: the ranks of the waiting jobs, in order.

    Attributes:
        where: per job, the queue of its valid entry.
        listed: per job, whether it has a valid entry (it waits, as far as the policy knows).
    """

    def __init__(self, n_queues: int, job_of: list[int]) -> None:
        self._by_queue: list[dict[int, _Ranks]] = [{} for _ in range(n_queues)]
        self._job_of = job_of
        # Per job (lists indexed by job id: several times cheaper to read and write than dicts):
        self.where = [-1] * len(job_of)
        self.listed = [False] * len(job_of)

    def add(self, j: int, rank: int, q: int, sid: int) -> None:
        """List job ``j`` (arrival rank ``rank``, shape ``sid``) in queue ``q``; an entry it had elsewhere goes stale."""
        waiting = self._by_queue[q]
        entries = waiting.get(sid)
        if entries is None:
            waiting[sid] = _Ranks(rank)
        else:
            entries.insert(rank)
        self.where[j] = q
        self.listed[j] = True

    def heads(self, state: ClusterState, q: int, failed: list[int]) -> list[int]:
        """Ranks, in no order: the oldest waiting job of each shape in queue ``q`` that has not failed at queue
        ``q`` or above (``failed``: per shape, the queue at which it failed; the number of queues if it has not)."""
        heads: list[int] = []
        by_shape = self._by_queue[q]
        where, job_of = self.where, self._job_of
        emptied = []
        for sid, entries in by_shape.items():  # front, inlined: this runs for every shape, every decision
            if failed[sid] <= q:
                continue
            ranks = entries.ranks
            while entries.head < len(ranks):
                r = ranks[entries.head]
                j = job_of[r]
                if where[j] == q and state.is_waiting(j):
                    heads.append(r)
                    break
                entries.pop_front()
            else:
                emptied.append(sid)
        for sid in emptied:
            del by_shape[sid]
        return heads

    def front(self, state: ClusterState, q: int, sid: int) -> int:
        """The rank of the oldest waiting job of queue ``q`` and shape ``sid``, or -1; stale entries in front are
        dropped (and the list once empty)."""
        by_shape = self._by_queue[q]
        entries, where, job_of = by_shape[sid], self.where, self._job_of
        while entries.head < len(entries.ranks):
            r = entries.ranks[entries.head]
            j = job_of[r]
            if where[j] == q and state.is_waiting(j):
                return r
            entries.pop_front()
        del by_shape[sid]
        return -1

    def pop_front(self, q: int, sid: int) -> None:
        """Drop the front of queue ``q``'s list of shape ``sid`` (its job has started)."""
        self._by_queue[q][sid].pop_front()


class RunningLists:
    """Per queue, the ranks of its running jobs, sorted (victims are taken latest submitted first without sorting
    at every preemption) and the GPUs they hold; per GPU, the jobs started on it that were running when last
    looked. Jobs that ended are dropped when next looked at (:meth:`forget`).

    Attributes:
        by_queue: per queue, the ranks of its running jobs, ascending.
        queue_gpus: per queue, the GPUs its running jobs hold.
        gpu_jobs: per GPU, its jobs (empty until the first start).
        run_queue: per job, its queue while it runs (as far as the policy knows), else -1.
        run_id: per job, the number of its current run while it runs (runs count from 1), else 0.
        started_s: per job, when its current run started.
    """

    def __init__(self, n_queues: int, rank: list[int], job_of: list[int]) -> None:
        n_jobs = len(rank)
        self._rank = rank
        self._job_of = job_of
        self.by_queue: list[list[int]] = [[] for _ in range(n_queues)]
        self.queue_gpus = [0] * n_queues
        self.gpu_jobs: list[list[int]] = []
        self.run_queue = [-1] * n_jobs
        self.run_id = [0] * n_jobs
        self.started_s = [0.0] * n_jobs
        self._gpus: list[tuple[int, ...]] = [()] * n_jobs  # per job, its GPUs while it runs
        self._runs = 0

    def start(self, state: ClusterState, j: int, q: int) -> int:
        """Job ``j`` has started now, in queue ``q``: returns the number of its run."""
        self._runs += 1
        run = self._runs
        self.run_id[j] = run
        self.started_s[j] = state.now_s
        insort(self.by_queue[q], self._rank[j])
        self.run_queue[j] = q
        self.queue_gpus[q] = self.queue_gpus[q] + state.jobs[j].gpus
        if not self.gpu_jobs:
            self.gpu_jobs = [[] for _ in range(state.n_gpus)]
        gpus = state.running[j].gpu_ids
        self._gpus[j] = gpus
        for g in gpus:
            self.gpu_jobs[g].append(j)
        return run

    def stop(self, state: ClusterState, j: int) -> None:
        """Job ``j`` no longer runs (ended or preempted)."""
        q = self.run_queue[j]
        self.run_queue[j] = -1
        self._drop(q, j)
        self.queue_gpus[q] = self.queue_gpus[q] - state.jobs[j].gpus
        self.run_id[j] = 0
        gpu_jobs = self.gpu_jobs
        for g in self._gpus[j]:
            gpu_jobs[g].remove(j)
        self._gpus[j] = ()

    def forget(self, state: ClusterState, j: int) -> None:
        """Job ``j`` has ended: forget it, unless it is forgotten already."""
        if self.run_queue[j] >= 0:
            self.stop(state, j)

    def forget_ended(self, state: ClusterState, released: list[int], start: int) -> None:
        """Forget the jobs that ended among those on the GPUs ``released[start:]`` (GPUs jobs have left)."""
        if not self.gpu_jobs:
            return
        running, gpu_jobs = state.running, self.gpu_jobs
        for g in released[start:]:
            for k in [k for k in gpu_jobs[g] if k not in running]:
                self.forget(state, k)

    def move_down(self, j: int, gpus: int) -> int:
        """Running job ``j``, on ``gpus`` GPUs, moves to the next queue; returns that queue."""
        q = self.run_queue[j] + 1
        self._drop(q - 1, j)
        insort(self.by_queue[q], self._rank[j])
        self.run_queue[j] = q
        self.queue_gpus[q - 1] = self.queue_gpus[q - 1] - gpus
        self.queue_gpus[q] = self.queue_gpus[q] + gpus
        return q

    def _drop(self, q: int, j: int) -> None:
        """Remove job ``j`` from queue ``q``'s running list (O(log n) search; no-op if it is not there)."""
        entries, r = self.by_queue[q], self._rank[j]
        i = bisect_left(entries, r)
        if i < len(entries) and entries[i] == r:
            del entries[i]

    def is_running(self, state: ClusterState, j: int) -> bool:
        """Whether job ``j`` still runs; forgets it if it has ended since we last looked."""
        if j in state.running:
            return True
        self.forget(state, j)
        return False

    def lowest_queue(self, state: ClusterState) -> int:
        """Index of the lowest-priority queue that has a running job (-1 if none runs)."""
        for q in range(len(self.by_queue) - 1, -1, -1):
            entries = self.by_queue[q]
            while entries:
                if self.is_running(state, self._job_of[entries[0]]):
                    return q
        return -1

    def below(self, state: ClusterState, q: int, ended: list[int]) -> Iterator[int]:
        """Running jobs of queues below ``q``, lowest priority first (lowest queue, then latest submitted);
        jobs that have ended are skipped and added to ``ended``."""
        running, job_of = state.running, self._job_of
        for lower in range(len(self.by_queue) - 1, q, -1):
            entries = self.by_queue[lower]
            for i in range(len(entries) - 1, -1, -1):
                k = job_of[entries[i]]
                if k in running:
                    yield k
                else:
                    ended.append(k)


class Timers:
    """When queued jobs are due for promotion and running jobs cross a threshold into the next queue.

    Attributes:
        version: per job, how many times it was queued (a promotion is for one of them).
        promotions: entries ``version * n_jobs + job``, for that queuing of the job.
        crossings: entries ``run * n_jobs + job``, for that run of the job (``run_id`` of :class:`RunningLists`).
    """

    def __init__(self, run_id: list[int]) -> None:
        self.version = [0] * len(run_id)
        self.promotions = Agenda()
        self.crossings = Agenda()
        self._run_id = run_id

    def queued(self, j: int) -> int:
        """Job ``j`` is queued once more: returns the version of this queuing."""
        v = self.version[j] + 1
        self.version[j] = v
        return v

    def promote_at(self, t: float, j: int, version: int) -> None:
        """Job ``j``, queued for the ``version``-th time, is due for promotion at ``t`` if it still waits then."""
        self.promotions.push(t, version * len(self.version) + j)

    def cross_at(self, t: float, j: int, run: int) -> None:
        """Run ``run`` of job ``j`` crosses into the next queue at ``t`` if it still goes on then."""
        self.crossings.push(t, run * len(self.version) + j)

    def next_wake(self, state: ClusterState) -> float:
        """The earliest time at which a running job crosses a threshold or a queued job is due for promotion
        (``inf`` if none lies ahead); stale entries met on the way are dropped."""
        crossings, promotions = self.crossings, self.promotions
        while crossings.earliest() < math.inf and not self._any_live(state, crossings, True):
            crossings.pop()
        while promotions.earliest() < math.inf and not self._any_live(state, promotions, False):
            promotions.pop()
        t = min(crossings.earliest(), promotions.earliest())
        return t if t > state.now_s else math.inf

    def _any_live(self, state: ClusterState, agenda: Agenda, crossing: bool) -> bool:
        """Whether an entry due at ``agenda``'s earliest time is still live: the run of a crossing still goes on, the
        queuing of a promotion still waits."""
        for e in agenda.peek():
            if self.live(state, e, crossing):
                return True
        return False

    def live(self, state: ClusterState, entry: int, crossing: bool) -> bool:
        """Whether agenda entry ``entry`` (of the crossings, else of the promotions) still holds."""
        n = len(self.version)
        j = entry % n
        if crossing:
            return self._run_id[j] == entry // n and j in state.running
        return self.version[j] == entry // n and state.is_waiting(j)

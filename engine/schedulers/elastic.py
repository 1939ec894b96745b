"""Elastic schedulers: ``optimus`` and ``elasticflow`` size elastic jobs and hand spare GPUs out by marginal gain.

Both work the same way at each decision point, and differ in order and size (:class:`ElasticGreedy`):

1. **Start.** Waiting jobs in order get their *base* size: rigid (and fractional) jobs their requested GPUs (placed
   best-fit); elastic jobs a count of whole GPUs of one type, reserved from the idle GPUs of that type (placement
   spans nodes where it must; the cluster's communication factor applies). A job that does not fit is skipped; for
   the first one (elasticflow: the first that can still meet its deadline), running elastic jobs grown past their
   base size give up GPUs of a type the job may use (a ``Resize``, never below their base), the largest surplus
   first and no more than the job needs.
2. **Spare GPUs.** While idle GPUs are left, the next one goes to the elastic job (just started or running, not
   shrunk now) whose remaining time it cuts the most: ``W x (1 / r(k) - 1 / r(k + 1))``, ``W`` its remaining
   reference work (its estimate, less what its estimated end says is done) and ``r(k)`` its curve's speed-up on
   ``k`` GPUs over its requested size. A running job grows only if that pays: what it saves over its remaining work
   beats twice the rescale cost (it stalls that long on its new GPUs), and its faster progress makes up for the
   stall within :data:`PAYBACK_S` (grown GPUs are soon taken back by jobs that arrive).
3. **Wake-up.** While a running elastic job could grow (a grow to its maximum would pay) and nobody waits, the
   scheduler asks to be woken at the next estimated end of a running job (GPUs a completion frees go out even
   then). Running jobs are offered spare GPUs at most every :data:`REALLOCATE_S` (Pollux's interval); a hand-out
   due sooner waits for it (a wake-up), unless no running job could grow (then there is nothing to hand out, and
   a run of rigid jobs gets no wake-ups at all).

``optimus`` (Optimus, EuroSys'18, as Pollux's simulator re-implements it: ``optimus.py``; REFERENCES.md): queue
order, base size ``min_gpus``. ``elasticflow`` (ElasticFlow, ASPLOS'23, ``scheduler.py``): earliest deadline first
among jobs that can still meet theirs, base size the fewest GPUs that meet the deadline at the fastest allowed GPU
type, started now; then jobs without a deadline or that cannot meet it, in queue order at ``min_gpus``. It declines
nothing itself: pair it with ``--admission feasible`` for ElasticFlow's admission control.

A scheduler that starts jobs itself (a learned one that picks order and GPU type: ``elastic_start`` in
:mod:`engine.rl.encoding`) borrows optimus's sizing around its own starts: :meth:`ElasticGreedy.make_room` (step 1's
shrink) before them, :meth:`ElasticGreedy.hand_out` (steps 2 and 3) after them.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from typing import AbstractSet, Iterator, KeysView, Sequence

from engine.schedulers.placement import best_fit
from engine.schedulers.registry import SchedulerSpec, register
from engine.sim.admission import BestSpeeds
from engine.sim.elastic import speedup_ratio
from engine.sim.job import Job
from engine.sim.occupancy import bits
from engine.sim.state import ClusterState, Decision, Resize, Start, Wake

#: Running jobs are offered spare GPUs at most this often, seconds: Pollux's simulator reschedules every 60 s
#: (petuum/adaptdl, osdi21-artifact; REFERENCES.md, "Elastic jobs"). Jobs starting now are sized at once.
REALLOCATE_S = 60.0
#: A running job grows only if its speed-up makes up for the rescale stall within this many seconds. Estimate: in
#: benchmarks/elastic_speed.py (100,000 jobs at load 0.8, 30 % elastic), a grown job that was shrunk again gave its
#: GPUs back a median 191 s after it grew; without this rule 12,178 of 16,711 shrinks undid a grow and elasticflow met
#: 51.8 % of deadlines, with it 57.5 %.
PAYBACK_S = 2 * REALLOCATE_S


class ElasticGreedy:
    """The two schedulers of the module docstring: ``deadlines`` selects ElasticFlow's order and base size."""

    def __init__(self, name: str, *, deadlines: bool) -> None:
        self.name = name
        self.deadlines = deadlines
        self._base: dict[int, int] = {}  # job -> the size it started at (what a shrink returns it to)
        self._below_max = False
        self._seen_stops = -1  # state.stops at the end of the last decision point
        self._grown_s = -math.inf  # when running jobs were last offered spare GPUs
        self._deferred = False  # a hand-out is due at _grown_s + REALLOCATE_S
        self._surplus: dict[int, int] = {}  # job sized above its base -> GPUs above it (some may have ended since)
        self._growable: set[int] = set()  # elastic jobs a grow to their maximum would pay back (see _sized)
        self._speed: BestSpeeds  # the run's cluster's best speeds, set by reset
        # Estimated ends, for _next_end_s: a heap of (est_end_s, job) of the whole-GPU jobs started or resized here
        # (stale once the job stops or is resized again), and the fractional jobs started here (some may have ended).
        self._ends: list[tuple[float, int]] = []
        self._shared: set[int] = set()
        self._shrunk: set[int] = set()  # jobs make_room shrank at this decision point (hand_out does not grow them)

    def reset(self, state: ClusterState) -> None:
        self._base, self._speed, self._seen_stops, self._grown_s = {}, BestSpeeds(state.cluster), -1, -math.inf
        self._surplus, self._growable, self._ends, self._shared, self._shrunk = {}, set(), [], set(), set()

    # ------------------------------------------------------------------ the decision point
    def decide(self, state: ClusterState) -> Iterator[Decision]:
        pool = list(state.occupancy.type_idle)  # idle whole GPUs of each type
        planned: dict[int, list[int]] = {}  # elastic job -> [GPU type, size] to start at
        shrunk: set[int] = set()
        order, pressing = self._order(state)
        for j in order:
            job = state.jobs[j]
            if job.elastic:
                base = self._base_size(state, job)
                fit = self._fit(state, job, base, pool)
                if fit is None and not shrunk and j in pressing:
                    yield from self._shrink(state, job, base, pool, shrunk)  # applied before the next line runs
                    fit = self._fit(state, job, base, pool)
                if fit is not None:
                    pool[fit] -= base
                    planned[j] = [fit, base]
                    self._base[j] = base
                continue
            gpus = _rigid(state, job, pool)
            if gpus is None and not shrunk and not job.fractional and j in pressing:
                yield from self._shrink(state, job, job.gpus, pool, shrunk)
                gpus = _rigid(state, job, pool)
            if gpus is not None:
                yield Start(j, gpus)
                self._track(state, j)
        grown = self._grow(state, planned, shrunk, pool)
        for j, (t, k) in planned.items():
            gpus = _take(state, k, t, ())
            if gpus is not None:
                yield Start(j, gpus)
                self._sized(state, j, k)
        for j, k in grown.items():
            held = state.running[j].gpu_ids
            gpus = _take(state, k, state.running[j].gpu_type, held)
            if gpus is not None:
                yield Resize(j, gpus)
                self._sized(state, j, k)
        if not self._deferred:  # (every decision above is applied by now)
            self._seen_stops = state.stops
        wake = self._wake_s(state, planned)
        if wake is not None:
            yield Wake(wake)

    # ------------------------------------------------------------------ around another policy's starts
    def make_room(self, state: ClusterState) -> Iterator[Decision]:
        """Step 1's shrink, for the first waiting whole-GPU job in queue order that would not fit at its base size
        once those before it took theirs (the caller starts jobs itself, in any order): running elastic jobs grown
        past their base give up GPUs of a type it may use."""
        self._shrunk = set()
        if not self._surplus:  # nothing grown: nothing to take back (a run without elastic jobs stops here)
            return
        jobs, pool = state.jobs, list(state.occupancy.type_idle)
        for j in state.queue:
            job = jobs[j]
            if job.fractional:
                continue
            base = self._base_size(state, job)
            t = self._fit(state, job, base, pool)
            if t is None:
                yield from self._shrink(state, job, base, pool, self._shrunk)
                return
            pool[t] -= base

    def hand_out(self, state: ClusterState, started: Sequence[int]) -> Iterator[Decision]:
        """Steps 2 and 3 after another policy's starts: the elastic jobs among ``started`` (started at this
        decision point) take their size as their base and are offered spare GPUs at once, the other running ones
        as :meth:`decide` offers them; then the wake-up."""
        fresh = set()
        for j in started:
            if j not in state.running:
                continue
            if state.jobs[j].elastic:
                fresh.add(j)
                self._base[j] = len(state.running[j].gpu_ids)
                self._sized(state, j, self._base[j])
            else:
                self._track(state, j)  # its end may free GPUs to hand out (_wake_s)
        pool = list(state.occupancy.type_idle)
        for j, k in self._grow(state, {}, self._shrunk, pool, fresh).items():
            gpus = _take(state, k, state.running[j].gpu_type, state.running[j].gpu_ids)
            if gpus is not None:
                yield Resize(j, gpus)
                self._sized(state, j, k)
        if not self._deferred:
            self._seen_stops = state.stops
        wake = self._wake_s(state, {})
        if wake is not None:
            yield Wake(wake)

    # ------------------------------------------------------------------ order and size
    def _order(self, state: ClusterState) -> tuple[list[int], set[int] | KeysView[int]]:
        """Waiting jobs in the order they get GPUs, and those for which grown jobs shrink (all for optimus; for
        elasticflow those that can still meet their deadline)."""
        queue = list(state.queue)
        if not self.deadlines:
            return queue, state.queue
        jobs = state.jobs
        urgent = [j for j in queue if jobs[j].has_deadline and self._meets(state, jobs[j], jobs[j].max_gpus)]
        urgent.sort(key=lambda j: jobs[j].deadline_s)  # stable: ties in queue order
        chosen = set(urgent)
        return urgent + [j for j in queue if j not in chosen], chosen

    def _base_size(self, state: ClusterState, job: Job) -> int:
        """GPUs the job starts on: its request when rigid; else ``min_gpus`` (optimus) or the fewest that meet its
        deadline (elasticflow; ``min_gpus`` for a job without one or that cannot meet it)."""
        if not job.elastic:
            return job.gpus
        if self.deadlines and job.has_deadline:
            for k in range(job.min_gpus, job.max_gpus + 1):
                if self._meets(state, job, k):
                    return k
        return job.min_gpus

    def _meets(self, state: ClusterState, job: Job, k: int) -> bool:
        """Whether ``job``, started now on ``k`` GPUs of its fastest allowed type, ends by its deadline (by its
        estimate)."""
        rate = self._speed(job) * (speedup_ratio(job, k) if job.elastic else 1.0)
        return state.now_s + job.estimate_s / rate <= job.deadline_s

    # ------------------------------------------------------------------ GPUs
    @staticmethod
    def _fit(state: ClusterState, job: Job, k: int, pool: list[int]) -> int | None:
        """The GPU type elastic ``job`` would start on with ``k`` idle GPUs left in ``pool`` (the fastest such
        type), or None."""
        best, speed = None, 0.0
        for t, ok in enumerate(state.eligible_types(job).tolist()):
            if ok and pool[t] >= k:
                s = state.cluster.speed(job.job_type, state.layout.type_names[t])
                if s > speed:
                    best, speed = t, s
        return best

    def _shrink(self, state: ClusterState, job: Job, k: int, pool: list[int], shrunk: set[int]) -> Iterator[Decision]:
        """Shrink running elastic jobs grown past their base (down to it at most), on types ``job`` may use, until
        ``k`` GPUs of one type are idle: the largest surplus first, so that the fewest jobs pay a rescale."""
        types = state.eligible_types(job).tolist()
        running, surplus = state.running, self._surplus
        for j in [j for j in surplus if j not in running]:
            del surplus[j]
        for j in sorted(surplus, key=lambda j: (-surplus[j], j)):
            if any(ok and idle >= k for ok, idle in zip(types, pool)):
                return
            r = running[j]
            held, t = len(r.gpu_ids), r.gpu_type
            if not types[t]:
                continue
            give = min(surplus[j], k - pool[t])  # no more than the job needs
            keep = _keep(state, r.gpu_ids, held - give)
            pool[t] += give
            shrunk.add(j)
            yield Resize(j, keep)
            self._sized(state, j, held - give)

    def _sized(self, state: ClusterState, j: int, k: int) -> None:
        """Note that elastic job ``j`` now runs on ``k`` GPUs: it may be shrunk (:meth:`_shrink`) while above its
        base size, and is offered spare GPUs (:meth:`_offer_running`) only while a grow to its maximum could make
        up for the rescale stall (if that one does not, no smaller one does)."""
        self._track(state, j)
        job = state.jobs[j]
        if k > self._base[j]:
            self._surplus[j] = k - self._base[j]
        else:
            self._surplus.pop(j, None)
        if k < job.max_gpus and _pays_back(job, k, job.max_gpus, state.rescale_s):
            self._growable.add(j)
        else:
            self._growable.discard(j)

    def _track(self, state: ClusterState, j: int) -> None:
        """Note the estimated end of job ``j``, just started or resized (:meth:`_next_end_s`)."""
        r = state.running[j]
        if r.job.fractional:
            self._shared.add(j)
        else:
            heapq.heappush(self._ends, (r.est_end_s, j))

    def _next_end_s(self, state: ClusterState) -> float | None:
        """The next estimated end of a running job after now (None if none). A whole-GPU job's estimated end stays
        put while it runs, so the heap's first entry that is still its job's and after now is the soonest of theirs
        (entries before it never will be again); fractional jobs are re-timed as their co-tenants come and go, so
        they are read."""
        now, running, ends = state.now_s, state.running, self._ends
        while ends:
            end_s, j = ends[0]
            r = running.get(j)
            if end_s > now and r is not None and r.est_end_s == end_s:
                break
            heapq.heappop(ends)
        self._shared.intersection_update(running)
        soonest = [e for j in self._shared if (e := running[j].est_end_s) > now]
        if ends:
            soonest.append(ends[0][0])
        return min(soonest, default=None)

    def _offer_running(
        self,
        state: ClusterState,
        pool: list[int],
        shrunk: set[int],
        sizes: dict[int, int],
        kinds: dict[int, int],
        work: dict[int, float],
        among: AbstractSet[int] | None = None,
    ) -> None:
        """Add the running elastic jobs (``among`` them, if given) that could take an idle GPU of their type to the
        hand-out (their size, GPU type and work left); note whether any could gain from more GPUs and forget the
        jobs that ended."""
        idle = any(pool)
        if among is None:  # some running elastic job could gain from more GPUs (then _wake_s asks for a wake-up)
            self._below_max = False
        running, ended = state.running, []
        for j in self._growable if among is None else self._growable & among:
            r = running.get(j)
            if r is None:
                ended.append(j)
                continue
            k = len(r.gpu_ids)
            if _pays(r.job, k, r.job.max_gpus, w := _work_left(state, j), state.rescale_s):
                self._below_max = True
                if idle and pool[r.gpu_type] > 0 and j not in shrunk:
                    sizes[j], kinds[j], work[j] = k, r.gpu_type, w
        self._growable.difference_update(ended)

    def _grow(
        self,
        state: ClusterState,
        planned: dict[int, list[int]],
        shrunk: set[int],
        pool: list[int],
        fresh: AbstractSet[int] = frozenset(),
    ) -> dict[int, int]:
        """Hand idle GPUs out by marginal gain (module docstring); ``planned`` sizes grow in place, and running
        jobs of ``fresh`` (started now by another policy) are offered GPUs as jobs starting now are; returns the
        new size of each running job worth a resize."""
        # Running jobs are offered GPUs when some were freed since the last offer (else nothing is new), at most
        # every REALLOCATE_S (an offer due sooner is deferred, if some job could take it: _wake_s asks for it); jobs
        # starting now always are.
        freed = state.stops != self._seen_stops
        offer = freed and state.now_s >= self._grown_s + REALLOCATE_S
        self._deferred = freed and not offer and bool(self._growable)
        if not (planned or offer or fresh):
            return {}
        sizes: dict[int, int] = {j: k for j, (_, k) in planned.items()}
        kinds: dict[int, int] = {j: t for j, (t, _) in planned.items()}
        work = {j: state.jobs[j].estimate_s for j in planned}
        if offer:
            self._grown_s = state.now_s
            self._offer_running(state, pool, shrunk, sizes, kinds, work)
        elif fresh:
            self._offer_running(state, pool, shrunk, sizes, kinds, work, fresh)
        heap = [(-_gain(state.jobs[j], k, work[j]), j) for j, k in sizes.items() if k < state.jobs[j].max_gpus]
        heapq.heapify(heap)
        left = sum(pool)
        while heap and left > 0:
            neg, j = heapq.heappop(heap)
            if -neg <= 0.0:
                break
            if pool[kinds[j]] <= 0:
                continue
            pool[kinds[j]] -= 1
            left -= 1
            sizes[j] += 1
            if j in planned:
                planned[j][1] = sizes[j]
            if sizes[j] < state.jobs[j].max_gpus:
                heapq.heappush(heap, (-_gain(state.jobs[j], sizes[j], work[j]), j))
        out = {}
        for j, k in sizes.items():
            now_on = state.running.get(j)
            if now_on is None or k == len(now_on.gpu_ids):
                continue
            if _pays(now_on.job, len(now_on.gpu_ids), k, work[j], state.rescale_s):
                out[j] = k
        return out

    def _wake_s(self, state: ClusterState, planned: dict[int, list[int]]) -> float | None:
        """When to be woken: at the next hand-out when one was deferred; else at the next estimated end of a running
        job while an elastic job runs below its maximum and nobody waits (else None: a job that waits makes the
        next completion a decision point anyway)."""
        if self._deferred:
            return self._grown_s + REALLOCATE_S
        if state.queue or not (self._below_max or any(k < state.jobs[j].max_gpus for j, (_, k) in planned.items())):
            return None
        return self._next_end_s(state)


def _rigid(state: ClusterState, job: Job, pool: list[int]) -> tuple[int, ...] | None:
    """Best-fit GPUs for rigid ``job`` that leave the idle GPUs ``pool`` reserves for elastic starts (taken from it),
    or None."""
    gpus = best_fit(state, job)
    if gpus is None:
        return None
    occ = state.occupancy
    t = occ.gpu_type[gpus[0]]
    need = len(gpus) if not job.fractional else int(occ.tenants[gpus[0]] == 0)
    if pool[t] < need:
        return None
    pool[t] -= need
    return gpus


def _gain(job: Job, k: int, work_s: float) -> float:
    """Seconds of remaining time one more GPU saves ``job`` on ``k`` GPUs with ``work_s`` of reference work left."""
    return work_s * (1.0 / speedup_ratio(job, k) - 1.0 / speedup_ratio(job, k + 1))


def _pays(job: Job, held: int, k: int, work_s: float, rescale_s: float) -> bool:
    """Whether growing running ``job`` from ``held`` to ``k`` GPUs pays (module docstring, step 2)."""
    saved = work_s * (1.0 / speedup_ratio(job, held) - 1.0 / speedup_ratio(job, k))
    return saved > 2.0 * rescale_s and _pays_back(job, held, k, rescale_s)


def _pays_back(job: Job, held: int, k: int, rescale_s: float) -> bool:
    """Whether ``job``, grown from ``held`` to ``k`` GPUs, makes up for its rescale stall within PAYBACK_S."""
    slow, fast = speedup_ratio(job, held), speedup_ratio(job, k)
    return (fast - slow) * PAYBACK_S > rescale_s * fast


def _work_left(state: ClusterState, j: int) -> float:
    """Running job ``j``'s estimated reference work left at its requested size."""
    r = state.running[j]
    return max(r.est_end_s - state.now_s, 0.0) * speedup_ratio(r.job, len(r.gpu_ids))


def _take(state: ClusterState, k: int, t: int, held: tuple[int, ...]) -> tuple[int, ...] | None:
    """``k`` GPUs of type ``t``, more than ``held``: those of ``held``, then idle ones node by node, the nodes of
    ``held`` first, each group by idle GPUs, most first (fewest nodes), ties by id; None if there are not enough.
    Answered from the occupancy indexes, as :func:`engine.schedulers.placement._indexed_spread` does."""
    occ = state.occupancy
    if occ.type_idle[t] < k - len(held):
        return None
    mine = 0  # the nodes of held (all of type t)
    for g in held:
        mine |= 1 << occ.gpu_node[g]
    typed, nodes_with = occ.type_nodes[t], occ.nodes_with
    out = list(held)
    for among in (mine, typed & ~mine) if held else (typed,):
        for c in range(occ.max_node_gpus, 0, -1):  # the nodes with exactly c idle GPUs
            for n in bits((nodes_with[c] ^ nodes_with[c + 1]) & among):
                out.extend(occ.idle_of_node(n, k - len(out)))
                if len(out) == k:
                    return tuple(out)
    return None  # not reached: type t has enough idle GPUs on its nodes


def _keep(state: ClusterState, held: tuple[int, ...], k: int) -> tuple[int, ...]:
    """``k`` of ``held``: those on the nodes holding most of them."""
    node = state.occupancy.gpu_node
    counts = Counter(node[g] for g in held)
    return tuple(sorted(sorted(held, key=lambda g: (-counts[node[g]], g))[:k]))


register(
    SchedulerSpec(
        "optimus",
        lambda: ElasticGreedy("optimus", deadlines=False),
        "Optimus-style greedy for elastic jobs: jobs start in arrival order on their fewest GPUs, then each spare "
        "GPU goes to the elastic job whose remaining time it cuts the most (rigid jobs run as requested).",
        resizes=True,
    )
)
register(
    SchedulerSpec(
        "elasticflow",
        lambda: ElasticGreedy("elasticflow", deadlines=True),
        "ElasticFlow-like: jobs that can still meet their deadline start first, earliest deadline first, on the "
        "fewest GPUs that meet it; spare GPUs go where they cut remaining time the most. Pair it with "
        "admission control (feasible) to decline what cannot be met.",
        resizes=True,
    )
)

"""Tiresias: discretised two-dimensional least-attained-service (Gu et al., NSDI'19).

Run times of deep-learning jobs are unknown in advance, so Tiresias prioritises by what it can see: the
service a job has already received, in GPU-seconds (GPUs x time run: the "two dimensions"). Jobs that have
received little service are likely short and go first. Service is discretised into a few queues by
thresholds (default: below 1 GPU-hour, below 10 GPU-hours, the rest); inside a queue jobs run in arrival
order, which avoids the constant switching of pure least-attained-service.

* **Preemptive.** A waiting job in a higher queue preempts running jobs of lower queues (lowest priority
  first) when that lets it start; jobs in the same queue never preempt each other.
* **Demotion.** A running job moves down a queue when its service crosses a threshold; the scheduler asks
  to be woken (``Wake``) at that moment, since the crossing may let a waiting job preempt it.
* **Decision points** are the model's events: arrivals, ends, crossings and promotions. At a wake-up whose
  reason has gone (the job whose crossing it was asked for has ended) nothing is decided: jobs this
  scheduler preempted wait for the next event, as they would had the wake-up not been asked for.
* **Starvation guard.** A preempted job that has waited longer than ``promote_knob`` times the total time
  it has run is promoted to the top queue and its service count starts again from zero. Measuring against
  the total (not only the last run) makes each new promotion of the same job wait longer, so under overload
  the cycle "promoted, demoted, preempted, promoted" cannot repeat without bound.

Only a queued job's key changes through promotion: queued jobs receive no service, so a static key per
queued job (queue, submit time, id) keeps the waiting list sorted. The lists and timers that make each decision
point cheap live in :mod:`engine.schedulers.tiresias_index`; this module is the policy.
"""

from __future__ import annotations

import math
from typing import Callable, Final, Iterator

import numpy as np
from mypy_extensions import mypyc_attr

from engine.schedulers.ordering import arrival_ranks
from engine.schedulers.placement import FAILURES_PERSIST, PLACEMENTS, FitMemory, Placement, first_fit, reset_placement
from engine.schedulers.registry import SchedulerSpec, register
from engine.schedulers.tiresias_index import RunningLists, Timers, WaitingLists
from engine.sim.job import Job
from engine.sim.state import FRACTION_EPS, ClusterState, Decision, Preempt, Start, Wake


def _pop_min(ranks: list[int]) -> int:
    """Remove and return the smallest of ``ranks`` (distinct; one per waiting shape, so few: a scan costs less than
    a heap's calls)."""
    k, best = 0, ranks[0]
    for i in range(1, len(ranks)):
        r = ranks[i]
        if r < best:
            k, best = i, r
    ranks[k] = ranks[-1]
    ranks.pop()
    return best


def _fail_at(failed: list[int], shapes: set[int], q: int, n_queues: int) -> int:
    """Mark those of ``shapes`` that have not failed yet (``failed[sid] == n_queues``) as failed at queue ``q``;
    returns how many were marked."""
    marked = 0
    for sid in shapes:
        if failed[sid] == n_queues:
            failed[sid] = q
            marked += 1
    return marked


#: Default queue thresholds in GPU-seconds: 1 GPU-hour and 10 GPU-hours (three queues).
DEFAULT_THRESHOLDS_GPU_S: Final = (3600.0, 36000.0)


@mypyc_attr(allow_interpreted_subclasses=True)  # a public base: subclassable compiled too (ARCHITECTURE.md)
class Tiresias:
    """Discretised 2D-LAS with preemption and a starvation guard.

    Args:
        name: the name results carry.
        thresholds_gpu_s: increasing service thresholds (GPU-seconds) between consecutive queues.
        promote_knob: a preempted job waiting longer than this many times its total run time goes to the top queue
            (``math.inf`` disables promotion).
        placement: name of the placement rule in ``PLACEMENTS``.
    """

    def __init__(
        self,
        name: str = "tiresias",
        thresholds_gpu_s=DEFAULT_THRESHOLDS_GPU_S,
        promote_knob: float = 8.0,
        placement: str = "first-fit",
    ) -> None:
        thresholds = tuple(float(t) for t in thresholds_gpu_s)
        if (
            not thresholds
            or any(not (t > 0 and math.isfinite(t)) for t in thresholds)
            or any(b <= a for a, b in zip(thresholds, thresholds[1:]))
        ):
            raise ValueError(f"thresholds_gpu_s must be finite, positive and increasing, got {thresholds_gpu_s!r}")
        if not promote_knob > 0:
            raise ValueError("promote_knob must be > 0")
        self.name = name
        self.thresholds = thresholds
        self.promote_knob = promote_knob
        self.place: Placement = PLACEMENTS[placement]()
        # Shapes the rule could not place, remembered across decision points (see _pass).
        self._remember = self.place in FAILURES_PERSIST
        self._fits = FitMemory()
        self._reset_memory([], [])

    def _reset_memory(self, rank: list[int], job_of: list[int]) -> None:
        n_queues = len(self.thresholds) + 1
        self._rank = rank  # job -> rank in arrival order
        self._job_of = job_of  # rank -> job
        self._waiting = WaitingLists(n_queues, job_of)
        self._running = RunningLists(n_queues, rank, job_of)
        self._timers = Timers(self._running.run_id)
        # Per job (lists indexed by job id: several times cheaper to read and write than dicts):
        self._base = [0.0] * len(rank)  # service forgotten at its last promotion
        self._run_s = [0.0] * len(rank)  # total time run so far
        self._types: dict[int, list[int]] = {}  # job shape -> its eligible GPU types
        self._wake_s = math.inf  # the last wake-up asked for (pending while it lies ahead)
        self._released_at = 0  # how much of state.occupancy.released has been read
        self._released_decided = 0  # how much of it there was when the last decision ended

    def reset(self, state: ClusterState) -> None:
        reset_placement(self.place, state)
        self._reset_memory(*arrival_ranks(state))
        self._released_at = len(state.occupancy.released)
        self._released_decided = self._released_at
        self._fits.reset()

    # ----------------------------------------------------------------- bookkeeping
    def queue_of(self, service_gpu_s: float) -> int:
        """Queue index (0 = highest priority) for this much attained service."""
        q = 0  # bisect_right(self.thresholds, service_gpu_s), written out: a handful of thresholds at most
        for t in self.thresholds:
            if service_gpu_s < t:
                break
            q += 1
        return q

    def _service(self, state: ClusterState, j: int) -> float:
        return state.attained_gpu_s(j) - self._base[j]

    def _enqueue(self, state: ClusterState, j: int, queue: int | None = None) -> None:
        v = self._timers.queued(j)
        q = self.queue_of(self._service(state, j)) if queue is None else queue
        self._waiting.add(j, self._rank[j], q, state.job_shape[j])
        ran_s = self._run_s[j]
        if ran_s > 0 and q > 0 and math.isfinite(self.promote_knob):
            self._timers.promote_at(state.now_s + self.promote_knob * ran_s, j, v)

    def _started(self, state: ClusterState, j: int) -> None:
        self._waiting.listed[j] = False
        service = self._service(state, j)
        q = self.queue_of(service)
        run = self._running.start(state, j, q)
        self._push_crossing(state.now_s, state.jobs[j], service, q, run)

    def _push_crossing(self, now: float, job: Job, service: float, q: int, run: int) -> None:
        """Note when run ``run`` of ``job``, in queue ``q`` with ``service`` GPU-seconds at ``now``, crosses into
        queue ``q + 1`` (if there is one)."""
        if q < len(self.thresholds):
            self._timers.cross_at(now + (self.thresholds[q] - service) / job.gpu_demand, job.job_id, run)

    def _catch_up(self, state: ClusterState) -> bool:
        """Forget the jobs that ended; apply arrivals, promotions and demotions due by now. Returns whether any
        of those events happened since the last decision."""
        # Jobs that ended are found through the GPUs they left, so that the per-queue and per-GPU lists hold
        # running jobs only and stay short however long the run.
        released = state.occupancy.released
        due = len(released) > self._released_decided  # a job ended (this scheduler's preemptions are not counted)
        if len(released) > self._released_at:
            self._running.forget_ended(state, released, self._released_at)
        self._released_at = len(released)
        now = state.now_s
        listed = self._waiting.listed
        for j in state.entered:
            if not listed[j]:  # jobs this scheduler preempted are already listed
                self._enqueue(state, j)
                due = True
        timers, running = self._timers, self._running
        n = len(timers.version)
        promotions = timers.promotions
        while promotions.earliest() <= now:
            for e in promotions.pop():
                j = e % n
                if timers.version[j] == e // n and state.is_waiting(j):
                    self._base[j] = state.attained_gpu_s(j)
                    self._enqueue(state, j, queue=0)
                    due = True
        crossings = timers.crossings
        while crossings.earliest() <= now:
            t = crossings.earliest()
            for e in crossings.pop():
                j = e % n
                if running.run_id[j] == e // n and running.is_running(state, j):
                    self._cross(state, j, t)
                    due = True
        return due

    def _cross(self, state: ClusterState, j: int, t: float) -> None:
        """Running job ``j`` crosses into the next queue at time ``t``."""
        job = state.jobs[j]
        q = self._running.move_down(j, job.gpus)
        self._push_crossing(t, job, self.thresholds[q - 1], q, self._running.run_id[j])

    # ----------------------------------------------------------------- decisions
    def decide(self, state: ClusterState) -> Iterator[Decision]:
        if self._catch_up(state):
            preempted: list[int] = []
            unfit = self._fits.recall(state) if self._remember else set()
            try:
                yield from self._pass(state, preempted, unfit)
            finally:
                if self._remember:
                    self._fits.keep(state, unfit)
            for j in preempted:
                self._enqueue(state, j)
            self._released_decided = len(state.occupancy.released)
        if state.queue:
            wake = self._timers.next_wake(state)
            if wake < math.inf and wake != self._wake_s:  # (a wake-up asked for before is still pending)
                self._wake_s = wake
                yield Wake(wake)

    def _pass(self, state: ClusterState, preempted: list[int], unfit: set[int]) -> Iterator[Decision]:
        """Queues in priority order; within a queue, waiting jobs in arrival order (merged over shapes, so that
        shapes that cannot start are skipped at no cost).

        ``unfit`` holds shapes the placement rule cannot place now (:class:`FitMemory`; empty when the rule's
        failures do not persist): they are not placed again, and from a queue on which no running job has
        lower priority (so none can be preempted) they are not even looked at. Preempting frees GPUs, after
        which only the shapes that the freed GPUs cannot fit either stay in ``unfit``."""
        jobs, place, fits, job_of, job_shape = state.jobs, self.place, self._fits, self._job_of, state.job_shape
        waiting, running = self._waiting, self._running
        # Per shape, the highest-priority queue at which it could not start, even by preempting (n_queues: none);
        # n_failed shapes have one.
        n_queues = len(self.thresholds) + 1
        failed = [n_queues] * len(state.shape_node_bits)
        n_failed = 0
        copied = False  # whether unfit is in failed (it stays so until a preemption changes both)
        shapes = state.queue_shape_counts
        lowest = running.lowest_queue(state)
        no_room = state.free_capacity <= FRACTION_EPS  # changes only when jobs start or are preempted
        for q in range(n_queues):
            if lowest <= q and not copied:  # lowest only grows until a preemption, which empties unfit
                n_failed += _fail_at(failed, unfit, q, n_queues)
                copied = True
            heads = waiting.heads(state, q, failed)
            while heads:
                if n_failed >= len(shapes) or (no_room and lowest <= q):
                    # Every kind of waiting job failed at this queue or above (so fails below it too), or
                    # nothing is free and no running job has lower priority than what is left.
                    return
                j = job_of[_pop_min(heads)]
                sid = job_shape[j]
                job = jobs[j]
                if no_room or sid in unfit:
                    gpus = None
                else:
                    gpus = first_fit(state, job) if place is first_fit else place(state, job)  # (a native call)
                    if gpus is None and self._remember:
                        fits.fail(state, unfit, sid, job)
                if gpus is None and lowest > q:
                    victims = self._victims(state, job, q)
                    if victims:
                        yield from self._preempt(state, victims, preempted, unfit)
                        copied = False
                        gpus = place(state, job)
                        lowest = running.lowest_queue(state)
                        no_room = state.free_capacity <= FRACTION_EPS
                        if n_failed:  # GPUs were freed: shapes that failed may fit now
                            failed = [n_queues] * len(failed)
                            n_failed = 0
                            heads = [h for h in waiting.heads(state, q, failed) if job_shape[job_of[h]] != sid]
                if gpus is None:
                    if failed[sid] == n_queues:
                        n_failed += 1
                    failed[sid] = q
                    continue
                yield Start(j, gpus)
                self._started(state, j)
                lowest = max(lowest, q)
                no_room = state.free_capacity <= FRACTION_EPS
                waiting.pop_front(q, sid)  # j was the front of its list
                r = waiting.front(state, q, sid)
                if r >= 0:
                    heads.append(r)

    def _preempt(
        self, state: ClusterState, victims: list[int], preempted: list[int], unfit: set[int]
    ) -> Iterator[Decision]:
        """Preempt ``victims`` (they join ``preempted``, to be queued again after the pass) and keep in ``unfit``
        only the shapes that the freed GPUs cannot fit either."""
        if self._remember:
            self._fits.keep(state, unfit)
        for k in victims:
            yield Preempt(k)
            self._run_s[k] = self._run_s[k] + state.now_s - self._running.started_s[k]
            self._running.stop(state, k)
            preempted.append(k)
        if self._remember:
            still = self._fits.recall(state)
            unfit.clear()
            unfit.update(still)

    def _victims(self, state: ClusterState, job: Job, q: int) -> list[int]:
        """Running jobs of queues below ``q`` to preempt so that ``job`` can start: taken lowest priority first
        (lowest queue, then latest submitted) until it fits, on the GPU type (whole-GPU jobs) or the GPU
        (fractional jobs) where that takes the fewest; empty if preempting cannot make room."""
        # Quick reject: idle GPUs plus every GPU of lower queues (jobs that ended since count too: an upper bound).
        if state.free_gpus + sum(self._running.queue_gpus[q + 1 :]) < job.gpus:
            return []
        ended: list[int] = []  # jobs of lower queues found to have ended: forgotten after the search
        try:
            if job.gpu_fraction >= 1.0:
                sid = state.job_shape[job.job_id]
                types = self._types.get(sid)
                if types is None:
                    types = self._types[sid] = np.flatnonzero(state.eligible_types(job)).tolist()
                return self._whole_victims(state, job, types, lambda: self._running.below(state, q, ended))
            return self._fraction_victims(state, job, q, ended)
        finally:
            for k in ended:
                self._running.forget(state, k)

    @staticmethod
    def _whole_victims(
        state: ClusterState, job: Job, types: list[int], victims: Callable[[], Iterator[int]]
    ) -> list[int]:
        """Victims for a whole-GPU job: per eligible type (``types``), ``victims()`` of that type in order until
        enough GPUs would be idle; the type that needs the fewest."""
        occ = state.occupancy
        tenants, type_idle = occ.tenants, occ.type_idle
        running = state.running
        best: list[int] | None = None
        for t in types:
            have = type_idle[t]
            gone: dict[int, int] = {}  # GPU -> tenants preempted so far
            chosen: list[int] = []
            for k in victims():
                r = running[k]
                if r.gpu_type != t:
                    continue
                chosen.append(k)
                for g in r.gpu_ids:
                    gone[g] = gone.get(g, 0) + 1
                    if gone[g] == tenants[g]:
                        have += 1
                if have >= job.gpus:
                    break
            if have >= job.gpus:
                # Keep only victims whose GPUs all end up idle (a shared GPU frees when all tenants go).
                chosen = [k for k in chosen if all(gone[g] == tenants[g] for g in running[k].gpu_ids)]
                if best is None or len(chosen) < len(best):
                    best = chosen
        return best or []

    def _fraction_victims(self, state: ClusterState, job: Job, q: int, ended: list[int]) -> list[int]:
        """Victims for a fractional job: per eligible GPU (in id order), its jobs of queues below ``q`` in
        preemption order until the job fits; the GPU that needs the fewest (lowest id on ties). Jobs found to
        have ended are added to ``ended``."""
        running, run_queue, jobs = state.running, self._running.run_queue, state.jobs
        elig = state.eligible_gpus(job).tolist()
        occ = state.occupancy
        free, free_mem, vram = occ.free, occ.free_vram, occ.gpu_vram
        best: list[int] | None = None
        for g, on_gpu in enumerate(self._running.gpu_jobs):
            if not (on_gpu and elig[g]):
                continue
            if best is not None and len(best) == 1:
                break  # no GPU can take fewer victims
            ks = []
            for k in on_gpu:
                if k not in running:
                    ended.append(k)
                elif run_queue[k] > q:
                    ks.append(k)
            if not ks:
                continue
            # Preemption order: lowest queue first, then latest submitted (as RunningLists.below gives them).
            ks.sort(key=lambda k: (run_queue[k], jobs[k].submit_s, k), reverse=True)
            need_mem = job.vram_gib if job.vram_gib > 0 else job.gpu_fraction * vram[g]
            share, mem = free[g], free_mem[g]
            chosen: list[int] = []
            for k in ks:
                if best is not None and len(chosen) + 1 >= len(best):
                    break  # this GPU would need at least as many victims as the best so far
                kj = jobs[k]
                chosen.append(k)
                if kj.gpu_fraction >= 1.0:
                    share, mem = 1.0, vram[g]
                else:
                    share += kj.gpu_fraction
                    mem += kj.vram_gib if kj.vram_gib > 0 else kj.gpu_fraction * vram[g]
                if share >= job.gpu_fraction - FRACTION_EPS and mem >= need_mem - FRACTION_EPS:
                    if best is None or len(chosen) < len(best):
                        best = list(chosen)
                    break
        return best or []


register(
    SchedulerSpec(
        "tiresias",
        Tiresias,
        "Least attained service, Tiresias style: jobs that have used few GPU-seconds so far go first, in a few "
        "queues (under 1 GPU-hour, under 10, the rest), first come first served within a queue. A newcomer "
        "preempts jobs that have already had much service, so short jobs finish fast without knowing run times.",
        preemptive=True,
    )
)

"""The discrete-event simulator: the only place where simulated time moves.

``Simulation`` owns all mutable state. Time advances only in :meth:`Simulation.advance`, which takes events
in a total order: by time, then completions before arrivals, completions in the order they were scheduled
(so simultaneous events are always handled the same way, and runs are bit-for-bit repeatable). Pending
completions and wake-ups wait in a calendar (an :class:`~engine.sim.agenda.Agenda`): a heap of the distinct times at
which something is due, and per time what is due then, in the order it was scheduled (a wake-up only makes its time a decision
point, so its place in that list does not matter); arrivals come from the workload sorted by submit time.
A *decision point* is an event time after which at least one job waits, or a wake-up time a scheduler
asked for; there the scheduler is asked for decisions, which :meth:`Simulation.apply` validates and applies
one at a time. Three helpers keep this module to the loop: :mod:`engine.sim.checks` says whether a decision is valid
(and why not), :mod:`engine.sim.record` records the run and makes its :class:`Result`, :mod:`engine.sim.failures`
draws when nodes break and are repaired and where jobs crash (node events come between the others, from their own
calendar, and only while something is left to do); the run's options (:mod:`engine.sim.options`) say what a
preemption costs and what fails.

Stops: a job stops short of its end when a scheduler preempts it, when a node it runs on fails, and when its own
run crashes with retries left; all three take the same path (:meth:`Simulation._interrupt`): the job keeps its work
up to its last checkpoint, pays the restart overhead and returns to the queue. Out of retries, a crashed job ends
failed; so does a job its trace records as failed (``Job.failed``), at the end of its recorded run. A job's work
is its ``duration_s`` plus what its checkpoints cost (``RunOptions.work_s``).

``simulate(cluster, jobs, scheduler)`` is that loop and nothing more; the Gymnasium environment drives the
same ``Simulation`` one decision at a time.

Work and speed: a job carries ``duration_s`` seconds of *reference work*. While it runs it does ``rate``
units of work per second, where ``rate`` is the product of the GPU-type speed, the communication factor of
its placement and, for shared GPUs, the co-location factor (see :mod:`engine.sim.cluster`). Co-location rates
change when tenants come and go; the simulator then re-times the affected completions.
"""

from __future__ import annotations

import math
from bisect import insort
from typing import Any, Callable, Final, Iterable, Sequence

import numpy as np
from mypy_extensions import mypyc_attr

from engine.errors import InvalidDecision
from engine.sim.admission import make_admission
from engine.sim.agenda import Agenda
from engine.sim.checks import DecisionChecks, ProgressGuard, finite_end_s
from engine.sim.cluster import Cluster
from engine.sim.elastic import resize, speedup_ratio
from engine.sim.failures import FailureCalendar
from engine.sim.job import Job
from engine.sim.occupancy import Occupancy
from engine.sim.options import PreemptionModel, RunOptions
from engine.sim.power import NodeSleep
from engine.sim.record import COMPLETED, DECLINED, FAILED, UNSCHEDULABLE, Recorder, Result
from engine.sim.state import (
    JOB_DECLINED,
    JOB_DONE,
    JOB_FAILED,
    JOB_PENDING,
    JOB_QUEUED,
    JOB_RUNNING,
    JOB_UNSCHEDULABLE,
    ClusterState,
    Decision,
    Preempt,
    Resize,
    RunningJob,
    Scheduler,
    ShapeTable,
    Start,
)

__all__ = [
    "COMPLETED",
    "DECLINED",
    "FAILED",
    "UNSCHEDULABLE",
    "Result",
    "Simulation",
    "simulate",
    "unschedulable_reasons",
]

# This module is compiled; its idioms (Final names, typed lists, a[i] = a[i] + x) are explained once in
# ARCHITECTURE.md, "The idioms of the hot modules".

# A calendar entry: ``version * n_jobs + job`` for the completion of ``job`` (stale once the job's version has
# moved on: it was re-timed or preempted), or _WAKE.
_WAKE: Final = -1
# Work done that is a whole number of checkpoint intervals but a hair below it after float division.
_ROUNDING_EPS: Final = 1e-9
# What happened at a time (bit flags, see Simulation.advance and Simulation._take_due).
_COMPLETED: Final = 1
_WOKE: Final = 2
_ARRIVED: Final = 4


def unschedulable_reasons(cluster: Cluster, jobs: Sequence[Job]) -> dict[int, str]:
    """``job index -> why it can never run on cluster``, for the jobs that never can (what a run's
    :attr:`Result.unschedulable_reasons` will hold, known before any run)."""
    shapes = ShapeTable(jobs, cluster.layout)
    out: dict[int, str] = {}
    for i, sid in enumerate(shapes.job_shape):
        reason = shapes.reason[sid]
        if reason is not None:
            out[i] = reason
    return out


@mypyc_attr(allow_interpreted_subclasses=True)  # a public base: subclassable compiled too (ARCHITECTURE.md)
class Simulation:
    """A resumable simulation: ``reset()``, then ``apply(decisions)`` / ``advance()`` until ``done``.

    Args:
        cluster: the cluster to simulate.
        jobs: the workload; ``jobs[i].job_id`` must be ``i``. Order of submission is by ``(submit_s, job_id)``.
        options: the run's options (:class:`~engine.sim.options.RunOptions`; default: preempted jobs lose nothing).
        seed: handed to schedulers through ``ClusterState.seed``; the simulator itself draws nothing but the
            failures of ``options.failures`` (from this seed alone: :mod:`engine.sim.failures`).
        scheduler_name: used in error messages and in the result.
        on_progress: called as ``on_progress(finished_jobs, total_jobs)`` about every 1 % of jobs.
    """

    def __init__(
        self,
        cluster: Cluster,
        jobs: Sequence[Job],
        *,
        options: RunOptions | None = None,
        seed: int = 0,
        scheduler_name: str = "",
        on_progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self.cluster = cluster
        self.jobs = tuple(jobs)
        for i, job in enumerate(self.jobs):
            if job.job_id != i:
                raise ValueError(f"jobs[{i}] has job_id {job.job_id}; job ids must be 0..n-1 in order")
        self.options = options or RunOptions()
        self.seed = int(seed)
        self.scheduler_name = scheduler_name
        self._on_progress = on_progress
        lay = cluster.layout
        self._lay = lay
        self._gpu_node: list[int] = lay.gpu_node.tolist()
        self._gpu_type: list[int] = lay.gpu_type.tolist()
        self._node_rack: list[int] = lay.node_rack.tolist()
        self._speeds: dict[str, list[float]] = {}  # job type -> speed on each GPU type
        self._comm_factors: dict[tuple[str, int, int], float] = {}  # (job type, nodes, racks) -> factor
        self._colocation = cluster.colocation_slowdown
        self._shapes = shapes = ShapeTable(self.jobs, lay)
        self._job_shape = shapes.job_shape  # the table's lists the hot paths below read
        self._shape_reason = shapes.reason
        submit = [job.submit_s for job in self.jobs]
        self._arrival_order = sorted(range(len(submit)), key=submit.__getitem__)  # stable: ties by job id
        self._arrival_s = [submit[j] for j in self._arrival_order]
        self._work_s = self.options.work_s([job.duration_s for job in self.jobs])  # checkpoints' cost included
        self._admission = make_admission(cluster, self.jobs, self.options)  # None: every job is admitted
        self._period = self.options.checkpoint_period_s
        self._reset_state()

    def _reset_state(self) -> None:
        n = len(self.jobs)
        self.now_s = 0.0
        self.done = False
        self._calendar = Agenda()  # completions and wake-ups (entries: see _WAKE)
        self._next_arrival = 0
        self._queue: dict[int, None] = {}
        self._queue_shapes: dict[int, int] = {}
        self._running: dict[int, RunningJob] = {}
        self._user_gpus: dict[str, float] = {}
        self._occ = Occupancy(self._lay)
        self._busy = 0.0
        self._shared: dict[int, list[int]] = {}  # gpu -> fractional jobs on it, ascending
        self._state = [JOB_PENDING] * n
        self._work_left = list(self._work_s)
        self._last_update = [0.0] * n
        self._comm = [1.0] * n  # communication factor of the current segment
        self._attained = [0.0] * n
        self._version = [0] * n
        self._rec = rec = Recorder(n)
        self._reasons: dict[int, str] = {}
        self._finished = 0
        self._progress_every = max(1, n // 100)
        self._decision_points = 0
        self._guard = ProgressGuard(self.scheduler_name, n)
        self._faults = FailureCalendar(self.options.failures, self._lay, self.seed, self._work_s)
        self._fail_left = self._faults.fail_left_s  # where each job's run crashes (0: it does not)
        self._checks = DecisionChecks(self.jobs, self._state, self._occ, self._shapes, self._lay, self._running)
        self._power = NodeSleep.of(self.options.power_down, self._lay, self.jobs)  # None: nodes never power down
        self.state = ClusterState(
            self,
            self._shapes,
            arrival_order=self._arrival_order,
            queue=self._queue,
            running=self._running,
            occupancy=self._occ,
            queue_shapes=self._queue_shapes,
            user_gpus=self._user_gpus,
            preemptions=rec.preemptions,
        )

    @property
    def preemption(self) -> PreemptionModel:
        """What a preempted job loses (``options.preemption``; schedulers read it through the state)."""
        return self.options.preemption

    def reset(self) -> ClusterState:
        """Start over and run to the first decision point; returns the live view."""
        self._reset_state()
        self.advance()
        return self.state

    # ------------------------------------------------------------------ queries
    def is_waiting(self, j: int) -> bool:
        return self._state[j] == JOB_QUEUED

    def attained_gpu_s(self, j: int) -> float:
        a = self._attained[j]
        r = self._running.get(j)
        if r is not None:
            a += len(r.gpu_ids) * self.jobs[j].gpu_fraction * (self.now_s - r.start_s)
        return a

    def _type_speeds(self, job_type: str) -> list[float]:
        """Speed of ``job_type`` on each GPU type of the cluster (cached per job type)."""
        speeds = self._speeds.get(job_type)
        if speeds is None:
            speeds = self._speeds[job_type] = [self.cluster.speed(job_type, name) for name in self._lay.type_names]
        return speeds

    def _comm_factor(self, job_type: str, n_nodes: int, n_racks: int) -> float:
        """``cluster.comm_factor``, cached: schedulers ask for placement rates at every decision point."""
        key = (job_type, n_nodes, n_racks)
        factor = self._comm_factors.get(key)
        if factor is None:
            factor = self._comm_factors[key] = self.cluster.comm_factor(job_type, n_nodes, n_racks)
        return factor

    def placement_rate(self, job: Job, gpus: tuple[int, ...]) -> float:
        """Work rate of ``job`` on ``gpus`` if started now (GPU speed x communication x co-location)."""
        n_nodes, n_racks = self._spread_of(gpus)
        rate = self._rate(job, gpus, n_nodes, n_racks, True)[0]
        return rate * speedup_ratio(job, len(gpus)) if job.min_gpus < job.max_gpus else rate

    def _spread_of(self, gpus: tuple[int, ...]) -> tuple[int, int]:
        """(nodes, racks) that ``gpus`` span."""
        gpu_node = self._gpu_node
        node = gpu_node[gpus[0]]
        for g in gpus:  # (most jobs run on one node: tell that without building a set)
            if gpu_node[g] != node:
                break
        else:
            return 1, 1
        nodes = {gpu_node[g] for g in gpus}
        node_rack = self._node_rack
        return len(nodes), len({node_rack[n] for n in nodes})

    def _rate(self, job: Job, gpus: tuple[int, ...], n_nodes: int, n_racks: int, joining: bool) -> tuple[float, float]:
        """(rate, communication factor) on ``gpus`` spanning ``n_nodes`` nodes in ``n_racks`` racks;
        ``joining`` counts the job as a new tenant of its GPU."""
        speed = (self._speeds.get(job.job_type) or self._type_speeds(job.job_type))[self._gpu_type[gpus[0]]]
        comm = 1.0 if n_nodes == 1 else self._comm_factor(job.job_type, n_nodes, n_racks)
        rate = speed * comm
        if job.gpu_fraction < 1.0:
            k = self._occ.tenants[gpus[0]] + (1 if joining else 0)
            if k > 1:
                rate /= 1.0 + self._colocation * (k - 1)
        return rate, comm

    def can_host(self, job: Job) -> np.ndarray:
        return self._checks.can_host(job)

    def check(self, d: object) -> str | None:
        """Why decision ``d`` (a :data:`Decision`, or whatever a scheduler handed in) is invalid now, or None."""
        return self._checks.problem(d, self.now_s)

    # ------------------------------------------------------------------ decisions
    def step(self, decisions: Iterable[Decision]) -> bool:
        """Apply ``decisions``, then advance to the next decision point. Returns False when the run is over."""
        self.apply(decisions)
        return self.advance()

    def apply(self, decisions: Iterable[Decision]) -> None:
        """Validate and apply decisions one by one at the current time (``InvalidDecision`` on the first bad one)."""
        self._decision_points += 1
        started = False
        told = len(self.state.entered)  # the scheduler reads these; jobs it preempts now are appended after
        given: Iterable[Any] = self._guard.decisions(decisions)  # as in check(): anything until it is validated
        for d in given:
            kind = type(d)
            raw: Any = d
            if kind is Start:
                start: Start = raw
                j, gpus = start.job_id, start.gpu_ids
                if not self._checks.valid_start(j, gpus):
                    reason = self._checks.start_problem(j, gpus)
                    if reason is not None:
                        raise InvalidDecision(f"scheduler {self.scheduler_name!r}: {reason}")
                    j, gpus = int(j), tuple(int(g) for g in gpus)
                self._start(j, gpus)
                started = True
            else:
                reason = self.check(d)
                if reason is not None:
                    raise InvalidDecision(f"scheduler {self.scheduler_name!r}: {reason}")
                if kind is Preempt:
                    self._preempt(int(raw.job_id))
                elif kind is Resize:
                    resize(self, int(raw.job_id), tuple(int(g) for g in raw.gpu_ids))
                else:
                    self._calendar.push(float(raw.at_s), _WAKE)
        self.state.entered = self.state.entered[told:]  # preempted jobs re-entered: the next call hears of them
        if self._guard.idle(
            bool(self._queue) and not self._running and not started and self._next_arrival >= len(self.jobs)
        ):
            self._raise_stall()
        self._record()

    def _start(self, j: int, gpus: tuple[int, ...]) -> None:
        job, now = self.jobs[j], self.now_s
        frac = job.gpu_fraction
        occ = self._occ
        gpu_type = self._gpu_type[gpus[0]]
        if frac >= 1.0:
            occ.take_whole(gpus)
            # _rate without co-location, inlined: this runs once per job.
            speed = (self._speeds.get(job.job_type) or self._type_speeds(job.job_type))[gpu_type]
            if len(gpus) == 1:
                n_nodes = n_racks = 1
                comm = 1.0
            else:
                n_nodes, n_racks = self._spread_of(gpus)
                comm = 1.0 if n_nodes == 1 else self._comm_factor(job.job_type, n_nodes, n_racks)
            rate = speed * comm
            if job.min_gpus < job.max_gpus:  # elastic: its curve's speed-up over its requested size
                rate *= speedup_ratio(job, len(gpus))
        else:
            g = gpus[0]
            n_nodes = n_racks = 1
            rate, comm = self._rate(job, gpus, 1, 1, joining=True)
            occ.take_share(g, frac, occ.share_vram_gib(g, frac, job.vram_gib))
            self._retime_tenants(g)
            shared = self._shared.get(g)
            if shared is None:
                self._shared[g] = [j]
            else:
                insort(shared, j)
        del self._queue[j]
        queue_shapes = self._queue_shapes
        sid = self._job_shape[j]
        c = queue_shapes[sid] - 1
        if c:
            queue_shapes[sid] = c
        else:
            del queue_shapes[sid]
        demand = len(gpus) * frac  # (an elastic job may hold other than its requested count)
        self._busy += demand
        user_gpus = self._user_gpus
        user_gpus[job.user] = user_gpus.get(job.user, 0.0) + demand
        self._state[j] = JOB_RUNNING
        rec = self._rec
        first_start = rec.first_start_s
        if first_start[j] != first_start[j]:  # NaN: first run
            first_start[j] = now
        self._comm[j] = comm
        self._last_update[j] = now
        if self._power is not None:  # waking powered-down nodes: the job pays the delay as a restart overhead
            self._work_left[j] = self._work_left[j] + self._power.woken(j, gpus, now, rate)
        work_left = self._work_left[j]
        est_left = job.estimate_s - (job.duration_s - work_left)
        if est_left < 0.0:  # max(est_left, 0.0), in float arithmetic when compiled
            est_left = 0.0
        self._running[j] = RunningJob(job, gpus, now, rate, now + est_left / rate, n_nodes, n_racks, gpu_type)
        rec.gpu_ids[j] = gpus
        version = self._version
        v = version[j] + 1
        version[j] = v
        self._calendar.push(finite_end_s(now + (work_left - self._fail_left[j]) / rate, j), v * len(version) + j)
        view = self.state  # its free-capacity counters are plain attributes, cheap to read
        view.free_gpus = occ.idle_gpus
        view.free_capacity = occ.up_gpus - self._busy

    def _retime_tenants(self, g: int) -> None:
        """Recompute rates and completion times of the fractional jobs on GPU ``g`` (its tenancy changed)."""
        jobs_on = self._shared.get(g)
        if not jobs_on:
            return
        now = self.now_s
        # _rate (one GPU, not joining), inlined: this runs for every tenant at every start or stop
        # of a fractional job. The co-location divisor is the same for every tenant of the GPU.
        n = self._occ.tenants[g]
        divisor = 1.0 + self._colocation * (n - 1) if n > 1 else 0.0
        gpu_type, speeds = self._gpu_type[g], self._speeds
        running, work_left, last_update, version, jobs = (
            self._running,
            self._work_left,
            self._last_update,
            self._version,
            self.jobs,
        )
        for k in jobs_on:
            r = running[k]
            left = work_left[k] - (now - last_update[k]) * r.rate
            work_left[k] = left
            last_update[k] = now
            job = jobs[k]
            rate = (speeds.get(job.job_type) or self._type_speeds(job.job_type))[gpu_type] * 1.0
            if divisor:
                rate /= divisor
            if rate != r.rate:
                r.rate = rate
                est_left = job.estimate_s - (job.duration_s - left)
                r.est_end_s = now + (0.0 if est_left < 0.0 else est_left) / rate
                v = version[k] + 1
                version[k] = v
                # A tenant due to end now (its co-tenant ended first at the same time) may come out a rounding
                # error short: it ends now, never before, or time would run backwards.
                end_s = finite_end_s(now + (left - self._fail_left[k]) / rate, k)
                self._calendar.push(end_s if end_s > now else now, v * len(version) + k)

    def _stop(self, j: int) -> RunningJob:
        """Release job ``j``'s GPUs and close its run segment (shared by completion and preemption)."""
        r = self._running.pop(j)
        job, now = self.jobs[j], self.now_s
        gpus = r.gpu_ids
        frac = job.gpu_fraction
        occ = self._occ
        self._work_left[j] = self._work_left[j] - (now - self._last_update[j]) * r.rate
        self._last_update[j] = now
        if self._power is not None:
            self._power.released(gpus, now)
        if frac >= 1.0:
            occ.release_whole(gpus)
        else:
            g = gpus[0]
            shared = self._shared[g]
            shared.remove(j)
            occ.release_share(g, frac, occ.share_vram_gib(g, frac, job.vram_gib))
            if shared:
                self._retime_tenants(g)
            else:
                del self._shared[g]
        demand = len(gpus) * frac
        busy = self._busy - demand
        self._busy = busy
        self._user_gpus[job.user] = self._user_gpus[job.user] - demand
        start_s = r.start_s
        elapsed = now - start_s
        self._attained[j] = self._attained[j] + demand * elapsed
        self._rec.segment(j, start_s, now, frac, gpus, demand * elapsed * (1.0 - self._comm[j]))
        view = self.state
        view.free_gpus = occ.idle_gpus
        view.free_capacity = occ.up_gpus - busy
        view.stops += 1
        return r

    def _preempt(self, j: int) -> None:
        self._stop(j)
        self._interrupt(j, self._rec.lost_gpu_s)
        self._rec.preemptions[j] = self._rec.preemptions[j] + 1

    def _interrupt(self, j: int, lost_gpu_s: list[float]) -> None:
        """Job ``j``, just stopped short of its end, keeps its work up to its last checkpoint (the GPU-seconds of
        the rest add to ``lost_gpu_s[j]``: the column of the stop's cause), pays the restart overhead and
        returns to the queue."""
        job = self.jobs[j]
        done = self._work_s[j] - self._work_left[j]
        kept = self._kept_work_s(done)
        lost_gpu_s[j] = lost_gpu_s[j] + (done - kept) * job.gpus * job.gpu_fraction
        restart_s = self.preemption.restart_overhead_s
        self._work_left[j] = self._work_s[j] - kept + restart_s
        self._rec.restart_gpu_s[j] = self._rec.restart_gpu_s[j] + restart_s * job.gpus * job.gpu_fraction
        self._version[j] = self._version[j] + 1
        self._enqueue(j)

    def _kept_work_s(self, done: float) -> float:
        """Of ``done`` reference seconds of work, what a stop keeps: all, or up to the last checkpoint."""
        period = self._period
        return done if period is None else math.floor(done / period + _ROUNDING_EPS) * period

    def preemption_cost_s(self, j: int) -> float:
        """Reference seconds of work that preempting running job ``j`` now would cost it: the work since its
        last checkpoint plus the restart overhead (both 0 under free preemption); what :meth:`_preempt` adds."""
        r = self._running.get(j)
        if r is None:
            raise ValueError(f"job {j} is not running ({self._checks.describe(j)})")
        done = self._work_s[j] - (self._work_left[j] - (self.now_s - self._last_update[j]) * r.rate)
        return done - self._kept_work_s(done) + self.preemption.restart_overhead_s

    def _enqueue(self, j: int) -> None:
        self._state[j] = JOB_QUEUED
        self._queue[j] = None
        sid = self._job_shape[j]
        self._queue_shapes[sid] = self._queue_shapes.get(sid, 0) + 1
        self.state.entered.append(j)

    # ------------------------------------------------------------------ time
    def advance(self) -> bool:
        """Process events until the next decision point (returns True) or the end of the run (False).

        Raises :class:`StallError` when jobs wait but no event is left that could ever let them start.
        """
        calendar, arrival_s, n, faults = self._calendar, self._arrival_s, len(self.jobs), self._faults
        while True:
            t_arr = arrival_s[self._next_arrival] if self._next_arrival < n else math.inf
            now = self._next_s(t_arr)
            if now == math.inf:
                return self._finish()
            self.now_s = now
            happened = 0
            # Completions scheduled at this time while these are handled (re-timed co-tenants due now) land in
            # the calendar afresh for the same time, taken next: the order they were scheduled in.
            while calendar.earliest() == now:
                for entry in calendar.pop():
                    happened |= self._take_due(entry, now)
            if faults.next_s == now:
                happened |= self._take_faults(now)
            if t_arr == now:
                self._arrive(now)
                happened |= _ARRIVED
            if not happened:  # only superseded calendar entries
                continue
            if self._queue or happened & _WOKE:  # a scheduler that asked to be woken is asked even with no queue
                self.state.now_s = now
                self._guard.point(happened == _WOKE, now)
                return True
            self._record()

    def _next_s(self, t_arr: float) -> float:
        """When the next event is due: the next arrival (``t_arr``), calendar entry or node failure or repair;
        failures and repairs only while something is left to do (they alone never keep a finished run going)."""
        t_evt = self._calendar.earliest()
        now = t_arr if t_arr < t_evt else t_evt
        t_fault = self._faults.next_s
        return t_fault if t_fault < now and (now < math.inf or self._queue) else now

    def _take_faults(self, now: float) -> int:
        """Take the node failures and repairs due now: every job with a GPU on a failed node stops (its whole gang,
        through :meth:`_interrupt`) and the node's GPUs are held until it is repaired. Returns _COMPLETED (the
        cluster changed)."""
        occ, faults, view = self._occ, self._faults, self.state
        for node in faults.pop(now):
            if not faults.down[node]:
                occ.bring_up(node, now)
                view.stops += 1  # resources grew: a placement that failed may succeed now
                continue
            for j in faults.interrupted(node, self._running):
                self._stop(j)
                self._interrupt(j, self._rec.failure_lost_gpu_s)
            occ.take_down(node)
        view.free_gpus = occ.idle_gpus
        view.free_capacity = occ.up_gpus - self._busy
        return _COMPLETED

    def _take_due(self, entry: int, now: float) -> int:
        """Handle calendar entry ``entry``, due now: _COMPLETED if its job is done (or its run crashed), _WOKE for a
        wake-up, 0 for an entry superseded by a re-timing or a preemption."""
        if entry == _WAKE:
            return _WOKE
        n = len(self.jobs)
        j = entry % n
        if entry // n != self._version[j] or self._state[j] != JOB_RUNNING:
            return 0
        self._stop(j)
        if self._fail_left[j] > 0.0:  # the run crashed where the failure calendar drew
            return self._crash(j, now)
        self._work_left[j] = 0.0  # the job is done (failed, when its trace says so: it ran its recorded time)
        self._end(j, now, JOB_FAILED if self.jobs[j].failed else JOB_DONE)
        return _COMPLETED

    def _crash(self, j: int, now: float) -> int:
        """Job ``j``'s run, just stopped, crashed by itself: it retries through :meth:`_interrupt` (its next run
        may crash too, where the calendar drew) or, out of retries, ends failed. Returns _COMPLETED."""
        if self._faults.crashed(j):
            self._interrupt(j, self._rec.crash_lost_gpu_s)
            self._faults.retry(j, self._work_left[j])
        else:
            self._end(j, now, JOB_FAILED)
        return _COMPLETED

    def _end(self, j: int, now: float, lifecycle: int) -> None:
        """Job ``j`` ends now, done or failed (``lifecycle``)."""
        self._state[j] = lifecycle
        self._rec.end_s[j] = now
        self._finished += 1
        if self._on_progress is not None and self._finished % self._progress_every == 0:
            self._on_progress(self._finished, len(self.jobs))

    def _arrive(self, now: float) -> None:
        """Submit the jobs that arrive at ``now``: to the queue, or aside when they can never run or the admission
        stage declines them."""
        order, arrival_s, n, nxt = self._arrival_order, self._arrival_s, len(self.jobs), self._next_arrival
        while nxt < n and arrival_s[nxt] == now:
            j = order[nxt]
            nxt += 1
            reason = self._shape_reason[self._job_shape[j]]
            if reason is None and self._admission is not None:  # the admission stage, before the queue
                reason = self._admission.decline(j, now, self._work_left[j])
            if reason is None:
                self._enqueue(j)
            else:  # (a job that fits the cluster and is set aside was declined)
                self._state[j] = JOB_UNSCHEDULABLE if self._shape_reason[self._job_shape[j]] else JOB_DECLINED
                self._reasons[j] = reason
                self._finished += 1
        self._next_arrival = nxt

    def _finish(self) -> bool:
        """End the run (no event is left): False, or :class:`StallError` when jobs still wait."""
        if self._queue:
            self._raise_stall()
        self.done = True
        self.state.now_s = self.now_s
        return False

    def _raise_stall(self) -> None:
        raise self._checks.stall(self.scheduler_name, self.now_s, list(self._queue))

    def _record(self) -> None:
        busy = self._busy
        self._rec.sample(
            self.now_s, len(self._queue), len(self._running), busy, self._occ.up_gpus - busy - self._occ.idle_gpus
        )

    # ------------------------------------------------------------------ result
    def result(self) -> Result:
        """The run's outcome; call once ``done`` is True."""
        if not self.done:
            raise RuntimeError("the simulation has not finished")
        return self._rec.result(
            self.scheduler_name,
            self.cluster,
            self.jobs,
            self.seed,
            self._state,
            self._reasons,
            self._decision_points,
            self.options,
            self._faults,
            self._work_s,
            self._work_left,
            self._power,
        )


def simulate(
    cluster: Cluster,
    jobs: Sequence[Job],
    scheduler: Scheduler,
    *,
    seed: int = 0,
    options: RunOptions | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> Result:
    """Run ``scheduler`` on ``jobs`` over ``cluster`` with ``options`` (default :class:`RunOptions`) to the end
    and return the :class:`Result`."""
    sim = Simulation(
        cluster,
        jobs,
        options=options,
        seed=seed,
        scheduler_name=getattr(scheduler, "name", type(scheduler).__name__),
        on_progress=on_progress,
    )
    state = sim.reset()
    scheduler.reset(state)
    apply, advance, decide = sim.apply, sim.advance, scheduler.decide  # sim.step, minus a call per step
    while not sim.done:
        apply(decide(state))
        advance()
    return sim.result()

"""The discrete-event simulator: the only place where simulated time moves.

``Simulation`` owns all mutable state. Time advances only in :meth:`Simulation.advance`, which takes events
in a total order: by time, then completions before arrivals, completions in the order they were scheduled
(so simultaneous events are always handled the same way, and runs are bit-for-bit repeatable). Pending
completions and wake-ups wait in a calendar (an :class:`~engine.sim.agenda.Agenda`): a heap of the distinct times at
which something is due, and per time what is due then, in the order it was scheduled (a wake-up only makes its time a decision
point, so its place in that list does not matter); arrivals come from the workload sorted by submit time.
A *decision point* is an event time after which at least one job waits, or a wake-up time a scheduler
asked for; there the scheduler is asked for decisions, which :meth:`Simulation.apply` validates and applies
one at a time.

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
from dataclasses import dataclass, field
from typing import Any, Callable, Final, Iterable, Sequence

import numpy as np
from mypy_extensions import mypyc_attr

from engine.errors import InvalidDecision, StallError
from engine.sim.agenda import Agenda
from engine.sim.cluster import Cluster
from engine.sim.job import Job
from engine.sim.occupancy import Occupancy
from engine.sim.options import PreemptionModel, RunOptions
from engine.sim.state import (
    FRACTION_EPS,
    ClusterState,
    Decision,
    Preempt,
    RunningJob,
    Scheduler,
    ShapeTable,
    Start,
    Wake,
)

# This module is compiled; its idioms (Final names, typed lists, a[i] = a[i] + x) are explained once in
# ARCHITECTURE.md, "The idioms of the hot modules".

# Job lifecycle states (internal).
_PENDING: Final = 0
_QUEUED: Final = 1
_RUNNING: Final = 2
_DONE: Final = 3
_UNSCHEDULABLE: Final = 4
# A calendar entry: ``version * n_jobs + job`` for the completion of ``job`` (stale once the job's version has
# moved on: it was re-timed or preempted), or _WAKE.
_WAKE: Final = -1
# Consecutive decision points at which nothing runs, nothing starts and no job will ever arrive again:
# only wake-ups keep such a run going, so after this many the run is declared stalled.
_MAX_IDLE_WAKES: Final = 1000
# Work done that is a whole number of checkpoint intervals but a hair below it after float division.
_ROUNDING_EPS: Final = 1e-9
# What the calendar entries taken at a time were (bit flags, see Simulation._take_due).
_COMPLETED: Final = 1
_WOKE: Final = 2


#: Status codes in :attr:`Result.status`.
COMPLETED: Final = 0
UNSCHEDULABLE: Final = 1


@mypyc_attr(native_class=False)
@dataclass(frozen=True, eq=False)
class Result:
    """Everything a run produced. Arrays are indexed by ``job_id`` unless said otherwise.

    Attributes:
        scheduler: the scheduler's name.
        cluster, jobs, seed: the inputs.
        status: ``COMPLETED`` (0) or ``UNSCHEDULABLE`` (1) per job.
        unschedulable_reasons: ``job_id -> why it can never run on this cluster``.
        first_start_s, end_s: first start and final end, seconds (NaN for unschedulable jobs).
        run_s: total time the job ran, all segments.
        preemptions: times each job was preempted.
        comm_overhead_gpu_s: extra GPU-seconds spent because the job was spread over nodes or racks.
        lost_gpu_s: GPU-seconds of work lost to preemptions (rolled back to a checkpoint).
        gpu_ids: GPUs of each job's last run segment (``()`` when it never ran).
        seg_job, seg_start_s, seg_end_s: one entry per run segment (a job preempted twice has three).
        seg_gpu_ptr, seg_gpu_ids: the GPUs of segment ``i`` are ``seg_gpu_ids[seg_gpu_ptr[i]:seg_gpu_ptr[i+1]]``.
        seg_fraction: the GPU share each segment held on each of its GPUs.
        series_t: times at which the state changed; the following arrays hold the state right after each:
        series_queue, series_running: jobs waiting, jobs running.
        series_busy_gpus: GPUs in use (fractions count as fractions).
        series_stranded_gpus: free GPU capacity on partly used GPUs (fragmented capacity).
        decision_points: how many times the scheduler was consulted.
    """

    scheduler: str
    cluster: Cluster
    jobs: tuple[Job, ...]
    seed: int
    status: np.ndarray
    unschedulable_reasons: dict[int, str]
    first_start_s: np.ndarray
    end_s: np.ndarray
    run_s: np.ndarray
    preemptions: np.ndarray
    comm_overhead_gpu_s: np.ndarray
    lost_gpu_s: np.ndarray
    gpu_ids: tuple[tuple[int, ...], ...]
    seg_job: np.ndarray
    seg_start_s: np.ndarray
    seg_end_s: np.ndarray
    seg_gpu_ptr: np.ndarray
    seg_gpu_ids: np.ndarray
    seg_fraction: np.ndarray
    series_t: np.ndarray
    series_queue: np.ndarray
    series_running: np.ndarray
    series_busy_gpus: np.ndarray
    series_stranded_gpus: np.ndarray
    decision_points: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def n_jobs(self) -> int:
        return len(self.jobs)

    def segment_gpus(self, i: int) -> np.ndarray:
        return self.seg_gpu_ids[self.seg_gpu_ptr[i]:self.seg_gpu_ptr[i + 1]]


def _never_runs(job: Job, type_names: tuple[str, ...], allowed: np.ndarray, types: np.ndarray,
                type_total: np.ndarray) -> str | None:
    """Why ``job`` can never run (``allowed``/``types``: per GPU type, allowed / allowed with enough memory;
    ``type_total``: GPUs per type), or ``None`` when some allowed type has enough GPUs and memory."""
    if not allowed.any():
        return f"no GPU of an allowed type ({', '.join(sorted(job.allowed_types))}) in the cluster"
    if not types.any():
        return f"needs {job.vram_gib:g} GiB per GPU; no allowed GPU type has that much memory"
    counts = np.where(types, type_total, -1)
    most = int(np.argmax(counts))
    if job.gpus > int(counts[most]):
        return (f"needs {job.gpus} GPUs of one type; the most any allowed type has is "
                f"{int(counts[most])} ({type_names[most]})")
    return None


def unschedulable_reasons(cluster: Cluster, jobs: Sequence[Job]) -> dict[int, str]:
    """``job index -> why it can never run on cluster``, for the jobs that never can (what a run's
    :attr:`Result.unschedulable_reasons` will hold, known before any run)."""
    lay = cluster.layout
    type_total = np.bincount(lay.gpu_type, minlength=len(lay.type_names))
    by_shape: dict[tuple, str | None] = {}
    out: dict[int, str] = {}
    for i, job in enumerate(jobs):
        key = (job.gpus, job.gpu_fraction, job.vram_gib, job.allowed_types)
        if key not in by_shape:
            allowed = np.array([not job.allowed_types or t in job.allowed_types for t in lay.type_names])
            by_shape[key] = _never_runs(job, lay.type_names, allowed, allowed & (lay.type_vram_gib >= job.vram_gib),
                                        type_total)
        reason = by_shape[key]
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
        seed: handed to schedulers through ``ClusterState.seed``; the simulator itself draws no randomness.
        scheduler_name: used in error messages and in the result.
        on_progress: called as ``on_progress(finished_jobs, total_jobs)`` about every 1 % of jobs.
    """

    def __init__(self, cluster: Cluster, jobs: Sequence[Job], *, options: RunOptions | None = None,
                 seed: int = 0, scheduler_name: str = "",
                 on_progress: Callable[[int, int], None] | None = None) -> None:
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
        self._type_vram: list[float] = lay.type_vram_gib.tolist()
        self._n_gpus: int = lay.n_gpus
        self._speeds: dict[str, list[float]] = {}  # job type -> speed on each GPU type
        self._comm_factors: dict[tuple[str, int, int], float] = {}  # (job type, nodes, racks) -> factor
        self._colocation = cluster.colocation_slowdown
        self._build_shapes()
        submit = [job.submit_s for job in self.jobs]
        self._arrival_order = sorted(range(len(submit)), key=submit.__getitem__)  # stable: ties by job id
        self._arrival_s = [submit[j] for j in self._arrival_order]
        self._reset_state()

    # ------------------------------------------------------------------ setup
    def _build_shapes(self) -> None:
        """Group jobs by resource shape and precompute where each shape may run."""
        lay = self._lay
        type_total = np.bincount(lay.gpu_type, minlength=len(lay.type_names))
        shape_ids: dict[tuple, int] = {}
        self._shapes = shapes = ShapeTable()
        # The table's lists, under the names the hot paths below use.
        self._job_shape = shapes.job_shape
        self._shape_types = shapes.types
        self._shape_nodes = shapes.nodes
        self._shape_gpus = shapes.gpus
        self._shape_reason = shapes.reason
        self._shape_node_bits = shapes.node_bits
        self._shape_type_ok = shapes.type_ok
        for job in self.jobs:
            key = (job.gpus, job.gpu_fraction, job.vram_gib, job.allowed_types)
            sid = shape_ids.get(key)
            if sid is None:
                sid = len(shape_ids)
                shape_ids[key] = sid
                allowed = np.array([not job.allowed_types or t in job.allowed_types for t in lay.type_names])
                mem_ok = lay.type_vram_gib >= job.vram_gib
                types = allowed & mem_ok
                self._shape_types.append(_ro(types))
                self._shape_nodes.append(_ro(types[lay.node_type]))
                self._shape_gpus.append(_ro(types[lay.gpu_type]))
                self._shape_type_ok.append(types.tolist())
                self._shape_node_bits.append(sum(1 << int(n) for n in np.flatnonzero(types[lay.node_type])))
                self._shape_reason.append(_never_runs(job, lay.type_names, allowed, types, type_total))
            self._job_shape.append(sid)

    def _reset_state(self) -> None:
        n, lay = len(self.jobs), self._lay
        self.now_s = 0.0
        self.done = False
        self._calendar = Agenda()  # completions and wake-ups (entries: see _WAKE)
        self._next_arrival = 0
        self._queue: dict[int, None] = {}
        self._queue_shapes: dict[int, int] = {}
        self._running: dict[int, RunningJob] = {}
        self._user_gpus: dict[str, float] = {}
        self._occ = Occupancy(lay)
        self._busy = 0.0
        self._shared: dict[int, list[int]] = {}  # gpu -> fractional jobs on it, ascending
        self._state = [_PENDING] * n
        self._work_left = [j.duration_s for j in self.jobs]
        self._last_update = [0.0] * n
        self._comm = [1.0] * n  # communication factor of the current segment
        self._attained = [0.0] * n
        self._version = [0] * n
        self._first_start = [math.nan] * n
        self._end = [math.nan] * n
        self._run = [0.0] * n
        self._preemptions = [0] * n
        self._comm_gpu_s = [0.0] * n
        self._lost_gpu_s = [0.0] * n
        self._last_gpus: list[tuple[int, ...]] = [()] * n
        self._reasons: dict[int, str] = {}
        self._finished = 0
        self._progress_every = max(1, n // 100)
        # Run segments and the time series, a list per column (appending to a typed list is cheaper than packing
        # a row into a byte buffer, and than appending to an array.array).
        self._seg_job: list[int] = []
        self._seg_start: list[float] = []
        self._seg_end: list[float] = []
        self._seg_fraction: list[float] = []
        self._seg_ptr: list[int] = [0]
        self._seg_gpus: list[int] = []
        self._series_t: list[float] = []
        self._series_queue: list[int] = []
        self._series_running: list[int] = []
        self._series_busy: list[float] = []
        self._series_stranded: list[float] = []
        self._last_t = math.nan  # time of the last row of the series (none yet)
        self._decision_points = 0
        self._idle_wakes = 0
        self.state = ClusterState(self, self._shapes, arrival_order=self._arrival_order, queue=self._queue,
                                  running=self._running, occupancy=self._occ, queue_shapes=self._queue_shapes,
                                  user_gpus=self._user_gpus, preemptions=self._preemptions)

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
        return self._state[j] == _QUEUED

    def attained_gpu_s(self, j: int) -> float:
        a = self._attained[j]
        r = self._running.get(j)
        if r is not None:
            a += self.jobs[j].gpus * self.jobs[j].gpu_fraction * (self.now_s - r.start_s)
        return a

    def _type_speeds(self, job_type: str) -> list[float]:
        """Speed of ``job_type`` on each GPU type of the cluster (cached per job type)."""
        speeds = self._speeds.get(job_type)
        if speeds is None:
            speeds = self._speeds[job_type] = [self.cluster.speed(job_type, name)
                                               for name in self._lay.type_names]
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
        return self._rate(job, gpus, n_nodes, n_racks, True)[0]

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

    def _rate(self, job: Job, gpus: tuple[int, ...], n_nodes: int, n_racks: int,
              joining: bool) -> tuple[float, float]:
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

    def _memory(self, job: Job, g: int) -> float:
        """GiB a fractional job holds on GPU ``g`` (its request, or its share of the GPU's memory)."""
        return job.vram_gib if job.vram_gib > 0 else job.gpu_fraction * self._type_vram[self._gpu_type[g]]

    def can_host(self, job: Job) -> np.ndarray:
        elig = self._shape_gpus[self._job_shape[job.job_id]]
        occ = self._occ
        occ.sync()
        if job.gpu_fraction >= 1.0:
            return elig & (occ.np_tenants == 0)
        need_vram = job.vram_gib if job.vram_gib > 0 else job.gpu_fraction * self._lay.type_vram_gib[self._lay.gpu_type]
        return elig & (occ.np_free >= job.gpu_fraction - FRACTION_EPS) & (occ.np_free_vram >= need_vram - FRACTION_EPS)

    def check(self, d: object) -> str | None:
        """Why decision ``d`` (a :data:`Decision`, or whatever a scheduler handed in) is invalid now, or None."""
        # The fields are read as Any: a scheduler may put anything in them (numpy integers, lists), and this
        # method's job is to say what is wrong, even where the code runs compiled (see engine/_native.py).
        raw: Any = d
        if isinstance(d, Start):
            return self._check_start(raw.job_id, raw.gpu_ids)
        if isinstance(d, Preempt):
            j = raw.job_id
            if not (isinstance(j, (int, np.integer)) and 0 <= j < len(self.jobs)):
                return f"job {j!r} does not exist"
            if self._state[j] != _RUNNING:
                return f"job {j} cannot be preempted: it is not running ({self._describe(int(j))})"
            return None
        if isinstance(d, Wake):
            at_s = raw.at_s
            if not (isinstance(at_s, (int, float)) and at_s > self.now_s and math.isfinite(at_s)):
                return f"wake-up time {at_s!r} must be a finite time after now ({self.now_s:g} s)"
            return None
        return f"unknown decision {d!r}; expected Start, Preempt or Wake"

    def _describe(self, j: int) -> str:
        return ("not yet submitted", "waiting", "running", "finished", "unschedulable")[self._state[j]]

    def _valid_start(self, j, gpus) -> bool:
        """A quick test that accepts only starts :meth:`_check_start` accepts (it may refuse more: the
        caller then asks :meth:`_check_start`, which has the final word and the message)."""
        if type(j) is not int or not 0 <= j < len(self.jobs) or self._state[j] != _QUEUED:
            return False
        job = self.jobs[j]
        if type(gpus) is not tuple or len(gpus) != job.gpus:
            return False
        gpu_type, n_gpus, occ = self._gpu_type, self._n_gpus, self._occ
        g = gpus[0]
        if type(g) is not int or not 0 <= g < n_gpus or not self._shape_type_ok[self._job_shape[j]][gpu_type[g]]:
            return False
        if job.gpu_fraction < 1.0:
            return (occ.free[g] >= job.gpu_fraction - FRACTION_EPS
                    and occ.free_vram[g] >= self._memory(job, g) - FRACTION_EPS)
        if len(gpus) == 1:
            return not occ.tenants[g]
        t, tenants = gpu_type[g], occ.tenants
        for g in gpus:
            if type(g) is not int or not 0 <= g < n_gpus or tenants[g] or gpu_type[g] != t:
                return False
        return len(set(gpus)) == len(gpus)

    def _check_start(self, j: Any, gpus: Any) -> str | None:
        if not (isinstance(j, (int, np.integer)) and 0 <= j < len(self.jobs)):
            return f"job {j!r} does not exist"
        if self._state[j] != _QUEUED:
            return f"job {j} cannot start: it is not waiting ({self._describe(int(j))})"
        job = self.jobs[j]
        if len(gpus) != job.gpus:
            return f"job {j} asks for {job.gpus} GPU(s) but was given {len(gpus)}"
        n = self._n_gpus
        for g in gpus:
            if not (isinstance(g, (int, np.integer)) and 0 <= g < n):
                return f"job {j}: GPU id {g!r} does not exist (cluster has GPUs 0..{n - 1})"
        if len(set(gpus)) != len(gpus):
            return f"job {j}: GPU ids {tuple(gpus)} repeat a GPU"
        t = self._gpu_type[gpus[0]]
        names = self._lay.type_names
        for g in gpus:
            if self._gpu_type[g] != t:
                return f"job {j}: GPUs mix types {names[t]} and {names[self._gpu_type[g]]}; a job runs on one type"
        if job.allowed_types and names[t] not in job.allowed_types:
            return f"job {j}: GPU type {names[t]} is not among its allowed types {sorted(job.allowed_types)}"
        if job.vram_gib > self._type_vram[t] + FRACTION_EPS:
            return f"job {j}: needs {job.vram_gib:g} GiB per GPU but {names[t]} has {self._type_vram[t]:g} GiB"
        occ = self._occ
        if job.gpu_fraction >= 1.0:
            for g in gpus:
                if occ.tenants[g] != 0:
                    return f"job {j}: GPU {g} is not free (whole-GPU jobs never share)"
        else:
            g = gpus[0]
            if occ.free[g] < job.gpu_fraction - FRACTION_EPS:
                return (f"job {j}: GPU {g} has {occ.free[g]:.3g} of a GPU free, "
                        f"job needs {job.gpu_fraction:g}")
            mem = self._memory(job, g)
            if occ.free_vram[g] < mem - FRACTION_EPS:
                return f"job {j}: GPU {g} has {occ.free_vram[g]:.3g} GiB free, job needs {mem:g} GiB"
        return None

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
        given: Iterable[Any] = decisions  # as in check(): anything may come in until it is validated
        for d in given:
            kind = type(d)
            raw: Any = d
            if kind is Start:
                start: Start = raw
                j, gpus = start.job_id, start.gpu_ids
                if not self._valid_start(j, gpus):
                    reason = self._check_start(j, gpus)
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
                else:
                    self._calendar.push(float(raw.at_s), _WAKE)
        self.state.entered = self.state.entered[told:]  # preempted jobs re-entered: the next call hears of them
        if self._queue and not self._running and not started and self._next_arrival >= len(self.jobs):
            self._idle_wakes += 1
            if self._idle_wakes > _MAX_IDLE_WAKES:
                self._raise_stall()
        else:
            self._idle_wakes = 0
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
        else:
            g = gpus[0]
            n_nodes = n_racks = 1
            rate, comm = self._rate(job, gpus, 1, 1, joining=True)
            occ.take_share(g, frac, self._memory(job, g))
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
        demand = job.gpus * frac
        self._busy += demand
        user_gpus = self._user_gpus
        user_gpus[job.user] = user_gpus.get(job.user, 0.0) + demand
        self._state[j] = _RUNNING
        first_start = self._first_start
        if first_start[j] != first_start[j]:  # NaN: first run
            first_start[j] = now
        self._comm[j] = comm
        self._last_update[j] = now
        work_left = self._work_left[j]
        est_left = job.estimate_s - (job.duration_s - work_left)
        if est_left < 0.0:  # max(est_left, 0.0), in float arithmetic when compiled
            est_left = 0.0
        self._running[j] = RunningJob(job, gpus, now, rate, now + est_left / rate, n_nodes, n_racks, gpu_type)
        self._last_gpus[j] = gpus
        version = self._version
        v = version[j] + 1
        version[j] = v
        self._calendar.push(now + work_left / rate, v * len(version) + j)
        view = self.state  # its free-capacity counters are plain attributes, cheap to read
        view.free_gpus = occ.idle_gpus
        view.free_capacity = self._n_gpus - self._busy

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
        running, work_left, last_update, version, jobs = self._running, self._work_left, self._last_update, \
            self._version, self.jobs
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
                end_s = now + left / rate
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
        if frac >= 1.0:
            occ.release_whole(gpus)
        else:
            g = gpus[0]
            shared = self._shared[g]
            shared.remove(j)
            occ.release_share(g, frac, self._memory(job, g))
            if shared:
                self._retime_tenants(g)
            else:
                del self._shared[g]
        demand = job.gpus * frac
        busy = self._busy - demand
        self._busy = busy
        self._user_gpus[job.user] = self._user_gpus[job.user] - demand
        start_s = r.start_s
        elapsed = now - start_s
        self._run[j] = self._run[j] + elapsed
        self._attained[j] = self._attained[j] + demand * elapsed
        self._comm_gpu_s[j] = self._comm_gpu_s[j] + demand * elapsed * (1.0 - self._comm[j])
        self._seg_job.append(j)
        self._seg_start.append(start_s)
        self._seg_end.append(now)
        self._seg_fraction.append(frac)
        seg_gpus = self._seg_gpus
        seg_gpus.extend(gpus)
        self._seg_ptr.append(len(seg_gpus))
        view = self.state
        view.free_gpus = occ.idle_gpus
        view.free_capacity = self._n_gpus - busy
        view.stops += 1
        return r

    def _preempt(self, j: int) -> None:
        job = self.jobs[j]
        self._stop(j)
        done = job.duration_s - self._work_left[j]
        kept = self._kept_work_s(done)
        self._lost_gpu_s[j] = self._lost_gpu_s[j] + (done - kept) * job.gpus * job.gpu_fraction
        self._work_left[j] = job.duration_s - kept + self.preemption.restart_overhead_s
        self._preemptions[j] = self._preemptions[j] + 1
        self._version[j] = self._version[j] + 1
        self._enqueue(j)

    def _kept_work_s(self, done: float) -> float:
        """Of ``done`` reference seconds of work, what a preemption keeps: all, or up to the last checkpoint."""
        interval = self.preemption.checkpoint_interval_s
        return done if interval is None else math.floor(done / interval + _ROUNDING_EPS) * interval

    def preemption_cost_s(self, j: int) -> float:
        """Reference seconds of work that preempting running job ``j`` now would cost it: the work since its
        last checkpoint plus the restart overhead (both 0 under free preemption); what :meth:`_preempt` adds."""
        r = self._running.get(j)
        if r is None:
            raise ValueError(f"job {j} is not running ({self._describe(j)})")
        done = self.jobs[j].duration_s - (self._work_left[j] - (self.now_s - self._last_update[j]) * r.rate)
        return done - self._kept_work_s(done) + self.preemption.restart_overhead_s

    def _enqueue(self, j: int) -> None:
        self._state[j] = _QUEUED
        self._queue[j] = None
        sid = self._job_shape[j]
        self._queue_shapes[sid] = self._queue_shapes.get(sid, 0) + 1
        self.state.entered.append(j)

    # ------------------------------------------------------------------ time
    def advance(self) -> bool:
        """Process events until the next decision point (returns True) or the end of the run (False).

        Raises :class:`StallError` when jobs wait but no event is left that could ever let them start.
        """
        calendar = self._calendar
        state = self._state
        n = len(self.jobs)
        order, arrival_s = self._arrival_order, self._arrival_s
        shape_reason, job_shape = self._shape_reason, self._job_shape
        nxt = self._next_arrival
        inf = math.inf
        queue, queue_shapes, entered = self._queue, self._queue_shapes, self.state.entered
        while True:
            t_arr = arrival_s[nxt] if nxt < n else inf
            t_evt = calendar.earliest()
            now = t_arr if t_arr < t_evt else t_evt
            if now == inf:
                self._next_arrival = nxt
                if self._queue:
                    self._raise_stall()
                self.done = True
                self.state.now_s = self.now_s
                return False
            self.now_s = now
            took = 0
            # Completions scheduled at this time while these are handled (re-timed co-tenants due now) land in
            # the calendar afresh for the same time, taken next: the order they were scheduled in.
            while calendar.earliest() == now:
                for entry in calendar.pop():
                    took |= self._take_due(entry, now)
            changed = took != 0
            woke = (took & _WOKE) != 0
            while nxt < n and arrival_s[nxt] == now:
                j = order[nxt]
                nxt += 1
                sid = job_shape[j]
                reason = shape_reason[sid]
                if reason is None:  # _enqueue, inlined
                    state[j] = _QUEUED
                    queue[j] = None
                    queue_shapes[sid] = queue_shapes.get(sid, 0) + 1
                    entered.append(j)
                else:
                    state[j] = _UNSCHEDULABLE
                    self._reasons[j] = reason
                    self._finished += 1
                changed = True
            if not changed:
                continue
            if self._queue or woke:  # a scheduler that asked to be woken is asked even with an empty queue
                self._next_arrival = nxt
                self.state.now_s = now
                return True
            self._record()

    def _take_due(self, entry: int, now: float) -> int:
        """Handle calendar entry ``entry``, due now: _COMPLETED if its job is done, _WOKE for a wake-up, 0 for an
        entry superseded by a re-timing or a preemption."""
        if entry == _WAKE:
            return _WOKE
        n = len(self.jobs)
        j = entry % n
        if entry // n != self._version[j] or self._state[j] != _RUNNING:
            return 0
        self._stop(j)  # the job is done:
        self._work_left[j] = 0.0
        self._state[j] = _DONE
        self._end[j] = now
        self._finished += 1
        if self._on_progress is not None and self._finished % self._progress_every == 0:
            self._on_progress(self._finished, n)
        return _COMPLETED

    def _raise_stall(self) -> None:
        waiting = list(self._queue)
        j = waiting[0]
        job = self.jobs[j]
        raise StallError(
            f"scheduler {self.scheduler_name!r} stalled at t={self.now_s:g} s: {len(waiting)} job(s) wait, "
            f"nothing runs, nothing starts and no event is pending (first waiting: job {j}, "
            f"{job.gpus} GPU(s) x {job.gpu_fraction:g}, {job.vram_gib:g} GiB)")

    def _record(self) -> None:
        t = self.now_s
        busy = self._busy
        stranded = self._n_gpus - busy - self._occ.idle_gpus
        if t == self._last_t:  # the state changed again at the same time: keep the latest
            self._series_queue[-1] = len(self._queue)
            self._series_running[-1] = len(self._running)
            self._series_busy[-1] = busy
            self._series_stranded[-1] = stranded
            return
        self._last_t = t
        self._series_t.append(t)
        self._series_queue.append(len(self._queue))
        self._series_running.append(len(self._running))
        self._series_busy.append(busy)
        self._series_stranded.append(stranded)

    # ------------------------------------------------------------------ result
    def result(self) -> Result:
        """The run's outcome; call once ``done`` is True."""
        if not self.done:
            raise RuntimeError("the simulation has not finished")
        status = (_ints(self._state) == _UNSCHEDULABLE).astype(np.int8)  # UNSCHEDULABLE (1) or COMPLETED (0)
        return Result(
            scheduler=self.scheduler_name,
            cluster=self.cluster,
            jobs=self.jobs,
            seed=self.seed,
            status=status,
            unschedulable_reasons=dict(self._reasons),
            first_start_s=_floats(self._first_start),
            end_s=_floats(self._end),
            run_s=_floats(self._run),
            preemptions=_ints(self._preemptions),
            comm_overhead_gpu_s=_floats(self._comm_gpu_s),
            lost_gpu_s=_floats(self._lost_gpu_s),
            gpu_ids=tuple(self._last_gpus),
            seg_job=_ints(self._seg_job),
            seg_start_s=_floats(self._seg_start),
            seg_end_s=_floats(self._seg_end),
            seg_gpu_ptr=_ints(self._seg_ptr),
            seg_gpu_ids=_ints(self._seg_gpus),
            seg_fraction=_floats(self._seg_fraction),
            series_t=_floats(self._series_t),
            series_queue=_ints(self._series_queue),
            series_running=_ints(self._series_running),
            series_busy_gpus=_floats(self._series_busy),
            series_stranded_gpus=_floats(self._series_stranded),
            decision_points=self._decision_points,
        )


def _floats(values: list) -> np.ndarray:
    """``values`` as a float array (np.fromiter: several times faster than np.array on a long list)."""
    return np.fromiter(values, dtype=float, count=len(values))


def _ints(values: list) -> np.ndarray:
    return np.fromiter(values, dtype=np.int64, count=len(values))


def _ro(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def simulate(cluster: Cluster, jobs: Sequence[Job], scheduler: Scheduler, *, seed: int = 0,
             options: RunOptions | None = None,
             on_progress: Callable[[int, int], None] | None = None) -> Result:
    """Run ``scheduler`` on ``jobs`` over ``cluster`` with ``options`` (default :class:`RunOptions`) to the end
    and return the :class:`Result`."""
    sim = Simulation(cluster, jobs, options=options, seed=seed,
                     scheduler_name=getattr(scheduler, "name", type(scheduler).__name__), on_progress=on_progress)
    state = sim.reset()
    scheduler.reset(state)
    apply, advance, decide = sim.apply, sim.advance, scheduler.decide  # sim.step, minus a call per step
    while not sim.done:
        apply(decide(state))
        advance()
    return sim.result()

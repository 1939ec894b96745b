"""What a scheduler sees and what it may say.

A scheduler is any object with ``reset(state)`` and ``decide(state)`` (:class:`Scheduler`). At each decision
point the simulator calls ``decide`` with a :class:`ClusterState`, a live, read-only view of the engine's
own state, and applies the decisions it yields **one by one, in order**: a scheduler written as a
generator sees the effect of each decision (free GPUs, queue) before it produces the next one.

Decisions:

* :class:`Start` ``(job_id, gpu_ids)``: run a waiting job on exactly these GPUs;
* :class:`Preempt` ``(job_id)``: stop a running job and put it back in the queue;
* :class:`Wake` ``(at_s)``: call me again at this time even if no job arrives or ends by then;
* :class:`Resize` ``(job_id, gpu_ids)``: run an elastic running job on these GPUs from now on (it pays the run's
  rescale cost, :mod:`engine.sim.elastic`).

The view's arrays and containers belong to the engine: read them, never write them (numpy arrays are
handed out read-only). Schedulers see each job's ``estimate_s``; reading ``duration_s`` is reserved for
schedulers whose name says ``oracle``.

This module is compiled with the engine's hot modules (``engine/_native.py``): the engine makes a
:class:`RunningJob` per start and a scheduler a :class:`Start` per job it starts, and both read the view's
attributes at every decision point. The decisions' fields take any value (``Any``): the engine validates every
decision before it acts on it and names what is wrong (``Simulation.check``), so a numpy integer or a list of GPU
ids gets the engine's answer rather than a type error from the record itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Iterable, Mapping, Protocol, Sequence

import numpy as np

from engine.sim.cluster import Cluster, Layout
from engine.sim.job import Job
from engine.sim.occupancy import Occupancy

if TYPE_CHECKING:  # pragma: no cover
    from engine.sim.options import CarbonSeries, PreemptionModel
    from engine.sim.simulator import Simulation

#: Tolerance for sums of GPU fractions (0.1 + 0.2 must fit in 0.3).
FRACTION_EPS: Final = 1e-9


# ------------------------------------------------------------------ what a scheduler may say
_PUT: Final = object.__setattr__  # sets a field of a frozen record (ARCHITECTURE.md, "Frozen records")


@dataclass(frozen=True, init=False, slots=True)
class Start:
    """Start waiting job ``job_id`` (an int) on ``gpu_ids`` (a tuple of ints, ``len == job.gpus``, all of one GPU
    type; an elastic job may take any count from its ``min_gpus`` to its ``max_gpus``)."""

    job_id: Any
    gpu_ids: Any

    def __init__(self, job_id: Any, gpu_ids: Any) -> None:
        _PUT(self, "job_id", job_id)
        _PUT(self, "gpu_ids", gpu_ids)

    def __reduce__(self) -> tuple:  # pickled by value (a compiled class has no instance dict to restore)
        return (Start, (self.job_id, self.gpu_ids))


@dataclass(frozen=True, init=False, slots=True)
class Preempt:
    """Stop running job ``job_id``; it returns to the queue and loses work per the preemption model."""

    job_id: Any

    def __init__(self, job_id: Any) -> None:
        _PUT(self, "job_id", job_id)

    def __reduce__(self) -> tuple:
        return (Preempt, (self.job_id,))


@dataclass(frozen=True, init=False, slots=True)
class Wake:
    """Ask for a decision point at ``at_s`` (seconds), even if nothing else happens by then."""

    at_s: Any

    def __init__(self, at_s: Any) -> None:
        _PUT(self, "at_s", at_s)

    def __reduce__(self) -> tuple:
        return (Wake, (self.at_s,))


@dataclass(frozen=True, init=False, slots=True)
class Resize:
    """Run elastic running job ``job_id`` on ``gpu_ids`` from now on: ``min_gpus <= len(gpu_ids) <= max_gpus``, one
    GPU type; GPUs it holds may stay in the set, the others must be idle. It pays ``options.elastic.rescale_s``."""

    job_id: Any
    gpu_ids: Any

    def __init__(self, job_id: Any, gpu_ids: Any) -> None:
        _PUT(self, "job_id", job_id)
        _PUT(self, "gpu_ids", gpu_ids)

    def __reduce__(self) -> tuple:
        return (Resize, (self.job_id, self.gpu_ids))


Decision = Start | Preempt | Wake | Resize


# ------------------------------------------------------------------ what a scheduler sees
class RunningJob:
    """A running job as a scheduler sees it (engine-owned; read-only)."""

    __slots__ = ("job", "gpu_ids", "start_s", "rate", "est_end_s", "n_nodes", "n_racks", "gpu_type")

    def __init__(
        self,
        job: Job,
        gpu_ids: tuple[int, ...],
        start_s: float,
        rate: float,
        est_end_s: float,
        n_nodes: int,
        n_racks: int,
        gpu_type: int,
    ) -> None:
        self.job = job
        self.gpu_ids = gpu_ids
        self.start_s = start_s  # start of the current run segment
        self.rate = rate  # reference-work seconds per second, all speed effects included
        self.est_end_s = est_end_s  # when the job ends if its estimate is right
        self.n_nodes = n_nodes
        self.n_racks = n_racks
        self.gpu_type = gpu_type  # type index into layout.type_names


#: Where a job is in a run: the engine's per-job lifecycle (read by its checks and its record).
JOB_PENDING: Final = 0
JOB_QUEUED: Final = 1
JOB_RUNNING: Final = 2
JOB_DONE: Final = 3
JOB_UNSCHEDULABLE: Final = 4
JOB_FAILED: Final = 5  # its run crashed and it had no retry left (engine.sim.failures)
JOB_DECLINED: Final = 6  # the admission stage turned it away at its arrival (engine.sim.admission)
LIFECYCLE_NAMES: Final = ("not yet submitted", "waiting", "running", "finished", "unschedulable", "failed", "declined")


class ShapeTable:
    """The workload's jobs grouped by *shape*: equal GPU count, fraction, memory and allowed types, hence equal
    placements. Built once per run by the simulation; read-only to everyone else.

    Attributes:
        job_shape: the shape of each job (a small integer).
        types, nodes, gpus: per shape, boolean masks of the GPU types, nodes and GPUs it may use.
        node_bits: per shape, its eligible nodes as a bitmask (bit ``n`` is node ``n``).
        type_ok: per shape, per GPU type: eligible?
        reason: per shape, why no job of it can ever run on the cluster (``None`` if one can).
    """

    __slots__ = ("job_shape", "types", "nodes", "gpus", "node_bits", "type_ok", "reason")

    def __init__(self, jobs: Sequence[Job], lay: Layout) -> None:
        self.job_shape: list[int] = []
        self.types: list[np.ndarray] = []
        self.nodes: list[np.ndarray] = []
        self.gpus: list[np.ndarray] = []
        self.node_bits: list[int] = []
        self.type_ok: list[list[bool]] = []
        self.reason: list[str | None] = []
        type_total = np.bincount(lay.gpu_type, minlength=len(lay.type_names))
        shape_ids: dict[tuple, int] = {}
        for job in jobs:
            key = (job.gpus, job.gpu_fraction, job.vram_gib, job.allowed_types)
            sid = shape_ids.get(key)
            if sid is None:
                sid = len(shape_ids)
                shape_ids[key] = sid
                allowed = np.array([not job.allowed_types or t in job.allowed_types for t in lay.type_names])
                mem_ok = lay.type_vram_gib >= job.vram_gib
                types = allowed & mem_ok
                self.types.append(_readonly(types))
                self.nodes.append(_readonly(types[lay.node_type]))
                self.gpus.append(_readonly(types[lay.gpu_type]))
                self.type_ok.append(types.tolist())
                self.node_bits.append(sum(1 << int(n) for n in np.flatnonzero(types[lay.node_type])))
                self.reason.append(_never_runs(job, lay.type_names, allowed, types, type_total))
            self.job_shape.append(sid)


def _never_runs(
    job: Job, type_names: tuple[str, ...], allowed: np.ndarray, types: np.ndarray, type_total: np.ndarray
) -> str | None:
    """Why ``job`` can never run (``allowed``/``types``: per GPU type, allowed / allowed with enough memory;
    ``type_total``: GPUs per type), or ``None`` when some allowed type has enough GPUs and memory."""
    if not allowed.any():
        return f"no GPU of an allowed type ({', '.join(sorted(job.allowed_types))}) in the cluster"
    if not types.any():
        return f"needs {job.vram_gib:g} GiB per GPU; no allowed GPU type has that much memory"
    counts = np.where(types, type_total, -1)
    most = int(np.argmax(counts))
    if job.gpus > int(counts[most]):
        return (
            f"needs {job.gpus} GPUs of one type; the most any allowed type has is "
            f"{int(counts[most])} ({type_names[most]})"
        )
    return None


class ClusterState:
    """Read-only view of the simulation at the current decision point.

    Attributes:
        now_s: current simulated time, seconds.
        cluster, layout: the static cluster and its flat arrays (see :class:`engine.sim.cluster.Layout`).
        jobs: every job of the workload, indexed by ``job_id``.
        arrival_order: every job id in the order of arrival (submit time, then job id).
        queue: waiting job ids in the order they entered the queue (arrival, or return after preemption);
            supports ``in``, ``len`` and iteration. Do not iterate it while yielding decisions.
        entered: job ids that entered the queue since the previous ``decide`` call started, in order:
            arrivals, and jobs preempted by that call's own decisions.
        running: ``job_id -> RunningJob`` for every running job (a dict; do not change it).
        gpu_free: free share of each GPU (1.0 = idle, 0.0 = full).
        gpu_free_vram_gib: free memory of each GPU, GiB.
        gpu_tenants: number of jobs on each GPU.
        node_free: number of idle GPUs on each node.
            These four are read-only numpy arrays, current whenever they are read through this view: read them
            here at each decision point rather than keep them from an earlier one (the engine brings them up to
            date when they are read, not at every start and stop).
        n_gpus: number of GPUs in the cluster (down ones included).
        free_gpus: number of idle GPUs in the cluster.
        free_capacity: free GPU capacity: idle GPUs plus the free shares of partly used ones.
        occupancy: the engine's own bookkeeping with fast lookup indexes (:class:`engine.sim.occupancy.Occupancy`),
            for placement rules that need to be fast. Under a failure model a node that is down holds its GPUs
            (none is free) until it is repaired; ``occupancy.node_down`` says which nodes are,
            ``occupancy.node_failures`` how often each has failed so far and ``occupancy.node_up_since_s`` when
            each was last repaired.
        job_shape: a small integer per job; jobs with equal shape ask for the same resources (GPU count,
            fraction, memory, allowed types), so a placement that fails for one fails for all of them.
        queue_shape_counts: ``shape -> number of waiting jobs`` with that shape (a dict; do not change it).
        user_gpus: ``user -> GPUs in use`` (fractions count as fractions).
        stops: how many times a running job has stopped (ended, was preempted or stopped by a node failure) or a
            node came back from repair. Resources grow only when it changes, so a placement that failed cannot
            succeed before it does.
        seed: the run's seed; randomised schedulers derive their generator from it.
        preemption: the run's preemption model (what a preempted job loses; a known policy of the cluster, like
            its checkpoint interval, never a job's true duration).
        carbon_g_per_kwh: the grid's carbon intensity of the run's energy model (gCO2/kWh: a constant or an
            hourly :class:`~engine.sim.options.CarbonSeries`), a forecast carbon-aware schedulers may plan with.
        shape_node_bits: per job shape, its eligible nodes as a bitmask (bit ``n`` is node ``n``).
        rescale_s: seconds an elastic job stalls each time a ``Resize`` changes its GPUs (the run's
            ``options.elastic.rescale_s``).
    """

    def __init__(
        self,
        sim: Simulation,
        shapes: ShapeTable,
        *,
        arrival_order: Sequence[int],
        queue: dict[int, None],
        running: dict[int, RunningJob],
        occupancy: Occupancy,
        queue_shapes: dict[int, int],
        user_gpus: Mapping[str, float],
        preemptions: Sequence[int],
        only_type: int = -1,
    ) -> None:
        # The simulation hands over the containers it shares with the view (it alone changes them) and answers
        # the queries below; the view never reads the simulation's own fields.
        self._sim = sim
        self._shapes = shapes
        self._preemptions = preemptions
        self._only_type = only_type  # >= 0: a view through this GPU type only (see of_type)
        self.cluster: Cluster = sim.cluster
        self.layout: Layout = sim.cluster.layout
        self.jobs: Sequence[Job] = sim.jobs
        self.arrival_order: Sequence[int] = arrival_order
        self.seed: int = sim.seed
        self.preemption: PreemptionModel = sim.preemption
        self.carbon_g_per_kwh: float | CarbonSeries = sim.options.energy.carbon_g_per_kwh
        self.rescale_s: float = sim.options.elastic.rescale_s
        self.now_s: float = 0.0
        self._queue = queue
        self.queue = queue.keys()
        self.entered: list[int] = []
        self.running: dict[int, RunningJob] = running
        self.occupancy: Occupancy = occupancy
        self._gpu_free = _readonly(occupancy.np_free)
        self._gpu_free_vram_gib = _readonly(occupancy.np_free_vram)
        self._gpu_tenants = _readonly(occupancy.np_tenants)
        self._node_free = _readonly(occupancy.np_node_free)
        # Kept current by the engine whenever a job starts or stops (plain attributes: read at every step).
        self.free_gpus: int = occupancy.idle_gpus
        self.free_capacity: float = float(occupancy.idle_gpus)  # made before any start: no GPU is partly used
        self.stops: int = 0
        self.n_gpus: int = self.layout.n_gpus
        self.job_shape: list[int] = shapes.job_shape
        self.shape_node_bits: Sequence[int] = shapes.node_bits
        if only_type >= 0:
            type_nodes = occupancy.type_nodes[only_type]
            self.shape_node_bits = [bits & type_nodes for bits in shapes.node_bits]
        self.queue_shape_counts: dict[int, int] = queue_shapes  # (a dict: compiled readers look up fast)
        self.user_gpus: Mapping[str, float] = user_gpus

    @property
    def gpu_free(self) -> np.ndarray:
        self.occupancy.sync()
        return self._gpu_free

    @property
    def gpu_free_vram_gib(self) -> np.ndarray:
        self.occupancy.sync()
        return self._gpu_free_vram_gib

    @property
    def gpu_tenants(self) -> np.ndarray:
        self.occupancy.sync()
        return self._gpu_tenants

    @property
    def node_free(self) -> np.ndarray:
        self.occupancy.sync()
        return self._node_free

    def is_waiting(self, job_id: int) -> bool:
        """Whether the job waits in the queue (``job_id in queue``, several times cheaper to ask from compiled
        code: a list lookup instead of a dict lookup of a boxed int)."""
        return self._sim.is_waiting(job_id)

    def attained_gpu_s(self, job_id: int) -> float:
        """GPU-seconds of service the job has received so far (GPUs x run time, fractions included)."""
        return self._sim.attained_gpu_s(job_id)

    def preemption_cost_s(self, job_id: int) -> float:
        """Reference seconds of work that preempting the running job now would cost it under the run's
        preemption model: the work since its last checkpoint plus the restart overhead (0 when preemption is
        free). It depends only on the work done so far, never on how much is left."""
        return self._sim.preemption_cost_s(job_id)

    def preemptions(self, job_id: int) -> int:
        """How many times the job has been preempted so far."""
        return self._preemptions[job_id]

    def eligible_types(self, job: Job) -> np.ndarray:
        """Boolean mask over ``layout.type_names``: types the job is allowed on and whose memory fits it."""
        types = self._shapes.types[self.job_shape[job.job_id]]
        if self._only_type < 0:
            return types
        out = np.zeros(len(types), dtype=bool)
        out[self._only_type] = types[self._only_type]
        return out

    def eligible_nodes(self, job: Job) -> np.ndarray:
        """Boolean mask over nodes of an eligible GPU type for ``job``."""
        nodes = self._shapes.nodes[self.job_shape[job.job_id]]
        return nodes if self._only_type < 0 else nodes & (self.layout.node_type == self._only_type)

    def eligible_gpus(self, job: Job) -> np.ndarray:
        """Boolean mask over GPUs of an eligible GPU type for ``job``."""
        gpus = self._shapes.gpus[self.job_shape[job.job_id]]
        return gpus if self._only_type < 0 else gpus & (self.layout.gpu_type == self._only_type)

    def can_host(self, job: Job) -> np.ndarray:
        """Boolean mask over GPUs that could take ``job`` (or one of its GPUs) right now."""
        hosts = self._sim.can_host(job)
        return hosts if self._only_type < 0 else hosts & (self.layout.gpu_type == self._only_type)

    def of_type(self, t: int) -> ClusterState:
        """This view as of now, seen through GPU type ``t``: every way to learn which nodes or GPUs a job may use
        (the ``eligible_*`` masks, ``can_host``, ``shape_node_bits``) is narrowed to that type, so a placement
        rule handed it only finds GPUs of type ``t``. Everything else is this view's; use it at once (its
        counters do not follow later decisions)."""
        view = ClusterState(
            self._sim,
            self._shapes,
            arrival_order=self.arrival_order,
            queue=self._queue,
            running=self.running,
            occupancy=self.occupancy,
            queue_shapes=self.queue_shape_counts,
            user_gpus=self.user_gpus,
            preemptions=self._preemptions,
            only_type=t,
        )
        view.now_s, view.entered, view.stops = self.now_s, self.entered, self.stops
        view.free_gpus, view.free_capacity = self.free_gpus, self.free_capacity
        return view

    def placement_rate(self, job: Job, gpu_ids: Sequence[int]) -> float:
        """Speed (reference-work seconds per second) ``job`` would have on ``gpu_ids`` if started now."""
        return self._sim.placement_rate(job, tuple(gpu_ids))

    def validate(self, decision: object) -> str | None:
        """Why ``decision`` would be refused now, or ``None`` if it is valid."""
        return self._sim.check(decision)


def _readonly(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


# ------------------------------------------------------------------ the protocol
class Scheduler(Protocol):
    """The one plug-in protocol for heuristics and learned schedulers alike."""

    name: str

    def reset(self, state: ClusterState) -> None:
        """Called once before a run, with the initial state (clear any per-run memory here)."""

    def decide(self, state: ClusterState) -> Iterable[Decision]:
        """Return (or yield) the decisions to apply now; an empty iterable means "nothing now"."""

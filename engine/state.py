"""What a scheduler sees and what it may say.

A scheduler is any object with ``reset(state)`` and ``decide(state)`` (:class:`Scheduler`). At each decision
point the simulator calls ``decide`` with a :class:`ClusterState`, a live, read-only view of the engine's
own state, and applies the decisions it yields **one by one, in order**: a scheduler written as a
generator sees the effect of each decision (free GPUs, queue) before it produces the next one.

Decisions:

* :class:`Start` ``(job_id, gpu_ids)``: run a waiting job on exactly these GPUs;
* :class:`Preempt` ``(job_id)``: stop a running job and put it back in the queue;
* :class:`Wake` ``(at_s)``: call me again at this time even if no job arrives or ends by then.

The view's arrays and containers belong to the engine: read them, never write them (numpy arrays are
handed out read-only). Schedulers see each job's ``estimate_s``; reading ``duration_s`` is reserved for
schedulers whose name says ``oracle``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Mapping, Protocol, Sequence, Union, runtime_checkable

import numpy as np

from .cluster import Cluster, Layout
from .job import Job
from .occupancy import Occupancy
from .running import RunningJob  # (a module of its own so that it is compiled: engine/_native.py)

if TYPE_CHECKING:  # pragma: no cover
    from .simulator import Simulation

#: Tolerance for sums of GPU fractions (0.1 + 0.2 must fit in 0.3).
FRACTION_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class Start:
    """Start waiting job ``job_id`` on ``gpu_ids`` (``len == job.gpus``, all of one GPU type)."""

    job_id: int
    gpu_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Preempt:
    """Stop running job ``job_id``; it returns to the queue and loses work per the preemption model."""

    job_id: int


@dataclass(frozen=True, slots=True)
class Wake:
    """Ask for a decision point at ``at_s`` (seconds), even if nothing else happens by then."""

    at_s: float


Decision = Union[Start, Preempt, Wake]


@runtime_checkable
class Scheduler(Protocol):
    """The one plug-in protocol for heuristics and learned schedulers alike."""

    name: str

    def reset(self, state: "ClusterState") -> None:
        """Called once before a run, with the initial state (clear any per-run memory here)."""

    def decide(self, state: "ClusterState") -> Iterable[Decision]:
        """Return (or yield) the decisions to apply now; an empty iterable means "nothing now"."""


class ClusterState:
    """Read-only view of the simulation at the current decision point.

    Attributes:
        now_s: current simulated time, seconds.
        cluster, layout: the static cluster and its flat arrays (see :class:`engine.cluster.Layout`).
        jobs: every job of the workload, indexed by ``job_id``.
        queue: waiting job ids in the order they entered the queue (arrival, or return after preemption);
            supports ``in``, ``len`` and iteration. Do not iterate it while yielding decisions.
        entered: job ids that entered the queue since the previous ``decide`` call started, in order:
            arrivals, and jobs preempted by that call's own decisions.
        running: ``job_id -> RunningJob`` for every running job.
        gpu_free: free share of each GPU (1.0 = idle, 0.0 = full).
        gpu_free_vram_gib: free memory of each GPU, GiB.
        gpu_tenants: number of jobs on each GPU.
        node_free: number of idle GPUs on each node.
        n_gpus: number of GPUs in the cluster.
        free_gpus: number of idle GPUs in the cluster.
        free_capacity: free GPU capacity: idle GPUs plus the free shares of partly used ones.
        occupancy: the engine's own bookkeeping with fast lookup indexes (:class:`engine.occupancy.Occupancy`),
            for placement rules that need to be fast.
        job_shape: a small integer per job; jobs with equal shape ask for the same resources (GPU count,
            fraction, memory, allowed types), so a placement that fails for one fails for all of them.
        queue_shape_counts: ``shape -> number of waiting jobs`` with that shape.
        user_gpus: ``user -> GPUs in use`` (fractions count as fractions).
        stops: how many times a running job has stopped (ended or was preempted). Resources grow only when it
            changes, so a placement that failed cannot succeed before it does.
        seed: the run's seed; randomised schedulers derive their generator from it.
        shape_node_bits: per job shape, its eligible nodes as a bitmask (bit ``n`` is node ``n``).
    """

    def __init__(self, sim: "Simulation") -> None:
        self._sim = sim
        self.cluster: Cluster = sim.cluster
        self.layout: Layout = sim.cluster.layout
        self.jobs: Sequence[Job] = sim.jobs
        self.seed: int = sim.seed
        self.now_s: float = 0.0
        self.queue = sim._queue.keys()
        self.entered: list[int] = []
        self.running: Mapping[int, RunningJob] = sim._running
        occ = sim._occ
        self.occupancy: Occupancy = occ
        self.gpu_free = _readonly(occ.np_free)
        self.gpu_free_vram_gib = _readonly(occ.np_free_vram)
        self.gpu_tenants = _readonly(occ.np_tenants)
        self.node_free = _readonly(occ.np_node_free)
        # Kept current by the engine whenever a job starts or stops (plain attributes: read at every step).
        self.free_gpus: int = occ.idle_gpus
        self.free_capacity: float = self.layout.n_gpus - sim._busy
        self.stops: int = 0
        self.n_gpus: int = self.layout.n_gpus
        self.job_shape = sim._job_shape
        self.shape_node_bits: Sequence[int] = sim._shape_node_bits
        self.queue_shape_counts: Mapping[int, int] = sim._queue_shapes
        self.user_gpus: Mapping[str, float] = sim._user_gpus

    def attained_gpu_s(self, job_id: int) -> float:
        """GPU-seconds of service the job has received so far (GPUs x run time, fractions included)."""
        return self._sim.attained_gpu_s(job_id)

    def preemptions(self, job_id: int) -> int:
        return self._sim._preemptions[job_id]

    def eligible_types(self, job: Job) -> np.ndarray:
        """Boolean mask over ``layout.type_names``: types the job is allowed on and whose memory fits it."""
        return self._sim._shape_types[self.job_shape[job.job_id]]

    def eligible_nodes(self, job: Job) -> np.ndarray:
        """Boolean mask over nodes of an eligible GPU type for ``job``."""
        return self._sim._shape_nodes[self.job_shape[job.job_id]]

    def eligible_gpus(self, job: Job) -> np.ndarray:
        """Boolean mask over GPUs of an eligible GPU type for ``job``."""
        return self._sim._shape_gpus[self.job_shape[job.job_id]]

    def can_host(self, job: Job) -> np.ndarray:
        """Boolean mask over GPUs that could take ``job`` (or one of its GPUs) right now."""
        return self._sim.can_host(job)

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

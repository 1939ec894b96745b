"""The view of the simulation that schedulers read; re-exported by :mod:`engine.sim.state`.

It has a module of its own so that it is compiled with the engine's hot modules (``engine/_native.py``) while
:mod:`engine.sim.state` is not: schedulers read its attributes at every decision point, and the engine updates
its counters at every start and stop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from engine.sim.cluster import Cluster, Layout
from engine.sim.job import Job
from engine.sim.occupancy import Occupancy
from engine.sim.running import RunningJob

if TYPE_CHECKING:  # pragma: no cover
    from engine.sim.simulator import Simulation


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
        n_gpus: number of GPUs in the cluster.
        free_gpus: number of idle GPUs in the cluster.
        free_capacity: free GPU capacity: idle GPUs plus the free shares of partly used ones.
        occupancy: the engine's own bookkeeping with fast lookup indexes (:class:`engine.sim.occupancy.Occupancy`),
            for placement rules that need to be fast.
        job_shape: a small integer per job; jobs with equal shape ask for the same resources (GPU count,
            fraction, memory, allowed types), so a placement that fails for one fails for all of them.
        queue_shape_counts: ``shape -> number of waiting jobs`` with that shape (a dict; do not change it).
        user_gpus: ``user -> GPUs in use`` (fractions count as fractions).
        stops: how many times a running job has stopped (ended or was preempted). Resources grow only when it
            changes, so a placement that failed cannot succeed before it does.
        seed: the run's seed; randomised schedulers derive their generator from it.
        shape_node_bits: per job shape, its eligible nodes as a bitmask (bit ``n`` is node ``n``).
    """

    def __init__(self, sim: Simulation, only_type: int = -1) -> None:
        self._sim = sim
        self._only_type = only_type  # >= 0: a view through this GPU type only (see of_type)
        self.cluster: Cluster = sim.cluster
        self.layout: Layout = sim.cluster.layout
        self.jobs: Sequence[Job] = sim.jobs
        self.arrival_order: Sequence[int] = sim._arrival_order
        self.seed: int = sim.seed
        self.now_s: float = 0.0
        self.queue = sim._queue.keys()
        self.entered: list[int] = []
        self.running: dict[int, RunningJob] = sim._running
        occ = sim._occ
        self.occupancy: Occupancy = occ
        self._gpu_free = _readonly(occ.np_free)
        self._gpu_free_vram_gib = _readonly(occ.np_free_vram)
        self._gpu_tenants = _readonly(occ.np_tenants)
        self._node_free = _readonly(occ.np_node_free)
        # Kept current by the engine whenever a job starts or stops (plain attributes: read at every step).
        self.free_gpus: int = occ.idle_gpus
        self.free_capacity: float = self.layout.n_gpus - sim._busy
        self.stops: int = 0
        self.n_gpus: int = self.layout.n_gpus
        self.job_shape = sim._job_shape
        self.shape_node_bits: Sequence[int] = sim._shape_node_bits
        if only_type >= 0:
            type_nodes = sim._occ.type_nodes[only_type]
            self.shape_node_bits = [bits & type_nodes for bits in sim._shape_node_bits]
        self.queue_shape_counts: dict[int, int] = sim._queue_shapes  # (a dict: compiled readers look up fast)
        self.user_gpus: Mapping[str, float] = sim._user_gpus

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

    def preemptions(self, job_id: int) -> int:
        return self._sim._preemptions[job_id]

    def eligible_types(self, job: Job) -> np.ndarray:
        """Boolean mask over ``layout.type_names``: types the job is allowed on and whose memory fits it."""
        types = self._sim._shape_types[self.job_shape[job.job_id]]
        if self._only_type < 0:
            return types
        out = np.zeros(len(types), dtype=bool)
        out[self._only_type] = types[self._only_type]
        return out

    def eligible_nodes(self, job: Job) -> np.ndarray:
        """Boolean mask over nodes of an eligible GPU type for ``job``."""
        nodes = self._sim._shape_nodes[self.job_shape[job.job_id]]
        return nodes if self._only_type < 0 else nodes & (self.layout.node_type == self._only_type)

    def eligible_gpus(self, job: Job) -> np.ndarray:
        """Boolean mask over GPUs of an eligible GPU type for ``job``."""
        gpus = self._sim._shape_gpus[self.job_shape[job.job_id]]
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
        view = ClusterState(self._sim, only_type=t)
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

"""Fragmentation gradient descent (FGD) placement, after Weng et al., "Beware of Fragmentation:
Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent" (USENIX ATC'23).

Fragmentation is measured against the workload, not in the abstract. For a task shape ``m`` (GPU count or
fraction, memory, allowed GPU types) the free GPU capacity of a node is *fragmented for m* when ``m`` cannot
use it: all of the node's free capacity if ``m`` cannot fit on the node at all (too few usable GPUs, or a
GPU type ``m`` may not use), otherwise the free share of each GPU that is too small for ``m`` (a partly used
GPU for whole-GPU shapes; a GPU with less free share or memory than ``m`` needs for fractional ones).
A node's fragmentation is the expectation over the workload's shape distribution,
``F(n) = sum_m p_m * frag_m(n)``. FGD places each job where ``F`` grows least (or falls most): the
steepest descent of fragmentation.

The shape distribution is estimated online from the jobs submitted so far (never from future jobs), keeping
the ``max_shapes`` most frequent shapes and renormalising their frequencies. Jobs are placed on one node;
a multi-GPU job that fits on no single node falls back to best-fit spreading so that it can still run.
"""

from __future__ import annotations

import numpy as np
from mypy_extensions import mypyc_attr

from engine.schedulers.placement import PLACEMENTS, _node_gpus, best_fit
from engine.schedulers.registry import SchedulerSpec, list_scheduler, register
from engine.sim.job import Job
from engine.sim.state import FRACTION_EPS, ClusterState


@mypyc_attr(allow_interpreted_subclasses=True)  # a public base: subclassable compiled too (ARCHITECTURE.md)
class FgdPlacement:
    """Place each job where the expected fragmentation of the cluster increases least.

    Args:
        max_shapes: how many of the most frequent task shapes seen so far make up the workload estimate.
    """

    def __init__(self, max_shapes: int = 16) -> None:
        if max_shapes < 1:
            raise ValueError("max_shapes must be >= 1")
        self.max_shapes = max_shapes
        self._arrival: list[int] = []
        self._seen = 0
        self._counts: dict[int, int] = {}
        self._rows: dict[int, tuple[float, int, bool, np.ndarray, np.ndarray]] = {}
        self._table: tuple | None = None
        self._top_ids: tuple[int, ...] = ()
        self._top_rows: tuple = ()

    def reset(self, state: ClusterState) -> None:
        self._arrival = list(state.arrival_order)  # submit time, then job id
        self._seen = 0
        self._counts = {}
        self._rows = {}
        self._table = None
        self._top_ids, self._top_rows = (), ()

    # ----------------------------------------------------------------- workload estimate
    def _observe(self, state: ClusterState) -> None:
        """Count the shapes of every job submitted up to now (arrival order; nothing from the future)."""
        arrival, jobs, now = self._arrival, state.jobs, state.now_s
        if not arrival and jobs:  # used without reset(): start counting now
            self.reset(state)
            arrival = self._arrival
        i = self._seen
        while i < len(arrival) and jobs[arrival[i]].submit_s <= now:
            j = arrival[i]
            sid = state.job_shape[j]
            if sid not in self._rows:
                self._rows[sid] = self._shape_row(state, jobs[j])
            self._counts[sid] = self._counts.get(sid, 0) + 1
            i += 1
        if i != self._seen:
            self._seen = i
            self._table = None

    @staticmethod
    def _shape_row(state: ClusterState, job: Job) -> tuple[float, int, bool, np.ndarray, np.ndarray]:
        """(share needed per GPU, GPU count, whole-GPU?, eligible-GPU mask, memory needed per GPU)."""
        lay = state.layout
        elig = np.asarray(state.eligible_gpus(job), dtype=bool)
        if job.vram_gib > 0:
            need = np.full(lay.n_gpus, job.vram_gib)
        else:
            need = job.gpu_fraction * lay.type_vram_gib[lay.gpu_type]
        return (job.gpu_fraction, job.gpus, job.gpu_fraction >= 1.0, elig, need)

    def _shapes(self, state: ClusterState) -> tuple:
        """Stacked arrays of the ``max_shapes`` most frequent shapes: p, D, k, whole, elig (per GPU),
        need, elig_node (per node)."""
        if self._table is None:
            top = sorted(self._counts.items(), key=lambda kv: (-kv[1], kv[0]))[: self.max_shapes]
            ids = tuple(sid for sid, _ in top)
            if ids != self._top_ids:  # the set of shapes changed: restack their rows (rare)
                rows = [self._rows[sid] for sid in ids]
                elig = np.stack([r[3] for r in rows])
                self._top_ids = ids
                self._top_rows = (
                    np.array([r[0] for r in rows]),
                    np.array([r[1] for r in rows]),
                    np.array([r[2] for r in rows]),
                    elig,
                    np.stack([r[4] for r in rows]),
                    elig[:, state.layout.node_first_gpu],  # a node has one GPU type
                )
            counts = np.array([c for _, c in top], dtype=float)
            self._table = (counts / counts.sum(), *self._top_rows)
        return self._table

    # ----------------------------------------------------------------- placement
    def __call__(self, state: ClusterState, job: Job) -> tuple[int, ...] | None:
        self._observe(state)
        k = job.gpus
        whole_job = job.gpu_fraction >= 1.0
        # Candidates first (cheap): most calls find none, and a single candidate needs no gradient.
        if whole_job:
            if state.free_gpus < k:
                return None
            node_free = np.asarray(state.node_free)
            cand = np.flatnonzero(np.asarray(state.eligible_nodes(job)) & (node_free >= k))
            if cand.size == 0:
                return best_fit(state, job) if k > 1 else None
            if cand.size == 1:
                return _node_gpus(state, int(cand[0]), k)
        else:
            cand = np.flatnonzero(state.can_host(job))
            # Idle GPUs of one node are interchangeable: keep the first (lowest id, the tie-break anyway).
            idle = np.asarray(state.gpu_tenants)[cand] == 0
            if idle.sum() > 1:
                _, first = np.unique(state.layout.gpu_node[cand[idle]], return_index=True)
                cand = np.sort(np.concatenate([cand[~idle], cand[idle][first]]))
            if cand.size <= 1:
                return (int(cand[0]),) if cand.size else None
        p, share, count, whole, elig, need, elig_node = self._shapes(state)
        lay = state.layout
        free = np.asarray(state.gpu_free)
        vram = np.asarray(state.gpu_free_vram_gib)
        tenants = np.asarray(state.gpu_tenants)

        def usable(g: np.ndarray) -> np.ndarray:
            """usable[m, i]: shape m could use (its share of) GPU ``g[i]`` right now."""
            fits_share = (free[g] >= share[:, None] - FRACTION_EPS) & (vram[g] >= need[:, g] - FRACTION_EPS)
            return elig[:, g] & np.where(whole[:, None], tenants[g] == 0, fits_share)

        # Per (shape, node): usable GPUs, free share on unusable GPUs, and all free share. An idle GPU is usable
        # by exactly the shapes allowed on its type, a full one adds nothing, so only shared GPUs with room
        # left need a look of their own.
        idle_n = np.asarray(state.node_free, dtype=float)
        cnt = elig_node * idle_n
        part = ~elig_node * idle_n
        tot = idle_n.copy()
        shared = np.flatnonzero((tenants > 0) & (free > FRACTION_EPS))
        if shared.size:
            u = usable(shared)
            nodes = lay.gpu_node[shared]
            np.add.at(cnt.T, nodes, u.T)
            np.add.at(part.T, nodes, np.where(u, 0.0, free[shared]).T)
            np.add.at(tot, nodes, free[shared])
        before = np.where(cnt >= count[:, None], part, tot)
        if whole_job:
            return self._place_whole(state, job, cand, p, count, elig_node, cnt, part, tot, before)
        return self._place_fraction(
            state, job, cand, p, share, count, whole, elig, need, usable(cand), cnt, part, tot, before
        )

    @staticmethod
    def _place_whole(state, job, cand, p, count, elig_node, cnt, part, tot, before) -> tuple[int, ...]:
        k = job.gpus
        node_free = np.asarray(state.node_free)
        # Taking k idle GPUs of node n: they were usable by shape m iff m may use n's GPU type.
        e = elig_node[:, cand]
        cnt_after = cnt[:, cand] - k * e
        part_after = part[:, cand] - k * ~e
        tot_after = tot[cand] - k
        after = np.where(cnt_after >= count[:, None], part_after, tot_after)
        delta = p @ (after - before[:, cand])
        # Steepest descent; ties go to the fullest node, then the lowest index.
        best = cand[np.lexsort((cand, node_free[cand], np.round(delta, 12)))[0]]
        return _node_gpus(state, int(best), k)

    @staticmethod
    def _place_fraction(
        state, job, cand, p, share, count, whole, elig, need, u_before, cnt, part, tot, before
    ) -> tuple[int, ...]:
        lay = state.layout
        d = job.gpu_fraction
        f = np.asarray(state.gpu_free)[cand]
        v = np.asarray(state.gpu_free_vram_gib)[cand]
        mem = job.vram_gib if job.vram_gib > 0 else d * lay.type_vram_gib[lay.gpu_type[cand]]
        nodes = lay.gpu_node[cand]
        # After placing, the GPU has a tenant (no whole-GPU shape can use it) and less free share and memory.
        u_after = (
            elig[:, cand]
            & ~whole[:, None]
            & (f - d >= share[:, None] - FRACTION_EPS)
            & (v - mem >= need[:, cand] - FRACTION_EPS)
        )
        cnt_after = cnt[:, nodes] - u_before + u_after
        part_after = part[:, nodes] - np.where(u_before, 0.0, f) + np.where(u_after, 0.0, f - d)
        tot_after = tot[nodes] - d
        after = np.where(cnt_after >= count[:, None], part_after, tot_after)
        delta = p @ (after - before[:, nodes])
        best = cand[np.lexsort((cand, f, np.round(delta, 12)))[0]]
        return (int(best),)


PLACEMENTS["fgd"] = FgdPlacement

register(
    SchedulerSpec(
        "fgd",
        list_scheduler("fgd", "fifo", "fgd"),
        "Starts jobs in arrival order (skipping those that do not fit) and puts each where it least increases "
        "fragmentation: free GPU capacity that the typical jobs of this workload could not use. "
        "Small GPU shares are packed so that whole GPUs stay free for the jobs that need them (Alibaba, ATC'23).",
    )
)

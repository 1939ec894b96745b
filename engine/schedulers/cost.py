"""Cost-aware placement, Gavel-style: each job runs on the GPU type where its work is cheapest per dollar.

A job of type ``j`` does ``speed(j, t)`` reference-work seconds per second on GPU type ``t`` (the cluster's speed
model, :meth:`~engine.sim.cluster.Cluster.speed`) and pays ``price_per_h[t]`` per GPU-hour, so a unit of its work
costs ``price_per_h[t] / speed(j, t)`` per GPU. ``cheapest-work`` tries the job's GPU types from the cheapest
per unit of work to the dearest and places it on the first that has room, as best-fit does there (the fullest
node that fits, keeping whole nodes for large jobs). It never leaves a job waiting while some type could run it
(work-conserving): a job waits for the cheap type only when no type has room.

Prices are each GPU type's own ``price_per_h`` (the catalog's, or a cluster JSON's ``gpu_types``): a scheduler
sees the cluster, not the energy model's price list. A type without a price is tried after the priced ones;
ties keep the cluster's type order. Gavel (Narayanan et al., OSDI 2020) maximises throughput per dollar over
whole allocations; this is its greedy counterpart for one job at a time.
"""

from __future__ import annotations

import math

from engine.schedulers.placement import PLACEMENTS, best_fit
from engine.schedulers.registry import SchedulerSpec, list_scheduler, register
from engine.sim.cluster import Cluster
from engine.sim.job import Job
from engine.sim.state import ClusterState


def cost_per_work(cluster: Cluster, job_type: str, gpu_type: str) -> float:
    """USD per GPU-hour of reference work for ``job_type`` on ``gpu_type``: its price over its speed (infinite
    without a price or a speed)."""
    price = cluster.catalog[gpu_type].price_per_h
    speed = cluster.speed(job_type, gpu_type)
    return price / speed if price is not None and speed > 0 else math.inf


class CheapestWork:
    """The placement rule ``cheapest-work`` (see the module docstring)."""

    def __init__(self) -> None:
        self._order: dict[str, list[int]] = {}  # job type -> type indexes, cheapest work first

    def reset(self, state: ClusterState) -> None:
        self._order = {}

    def __call__(self, state: ClusterState, job: Job) -> tuple[int, ...] | None:
        order = self._order.get(job.job_type)
        if order is None:
            names = state.layout.type_names
            order = self._order[job.job_type] = sorted(
                range(len(names)), key=lambda t: cost_per_work(state.cluster, job.job_type, names[t])
            )
        eligible = state.eligible_types(job)  # a view narrowed to one type (of_type) allows that type only
        for t in order:
            if not eligible[t]:
                continue
            gpus = best_fit(state.of_type(t), job)
            if gpus is not None:
                return gpus
        return None


PLACEMENTS["cheapest-work"] = CheapestWork

register(
    SchedulerSpec(
        "cost-aware",
        list_scheduler("cost-aware", "fifo", "cheapest-work"),
        "Starts jobs in arrival order (skipping those that do not fit) on the GPU type where their work costs the "
        "least: price per GPU-hour divided by the speed that job gets there. Slow cheap GPUs can win for jobs that "
        "gain little from fast ones, and a job still takes a dearer type rather than wait when the cheap one is full.",
    )
)

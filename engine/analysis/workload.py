"""Seeded synthetic workloads for training and evaluating learned schedulers.

Workloads are scenario workloads (:class:`engine.analysis.scenario.WorkloadSpec`, drawn by the project's
generator); this module fixes which seeds training may use, and gives tests and benchmarks a short way to one.
"""

from __future__ import annotations

from typing import Any, Mapping

from engine.analysis.scenario import WorkloadSpec
from engine.sim.cluster import Cluster
from engine.sim.job import Job

#: Training episodes draw workload seeds from ``[TRAIN_SEED_MIN, 2**31 - 1)``; evaluations use seeds below it,
#: so an evaluation seed is never one an agent was trained on.
TRAIN_SEED_MIN = 2**20


def make_jobs(
    cluster: Cluster, n_jobs: int, load: float, seed: int, workload: Mapping[str, Any] | None = None
) -> tuple[Job, ...]:
    """A seeded synthetic workload for ``cluster`` (same arguments -> the same jobs, bit for bit).

    ``workload`` holds extra keyword arguments of :func:`~engine.traces.generator.generate` (``mix``,
    ``users``, ``arrival``, ``estimate_error``, ...).
    """
    return WorkloadSpec.from_generator_args(n_jobs, load, seed, **dict(workload or {})).build_jobs(cluster)

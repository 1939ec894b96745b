"""Seeded synthetic workloads for training and evaluating learned schedulers.

Workloads come from the project's generator, :func:`engine.traces.generator.generate`; this module only fixes
which seeds training may use.
"""

from __future__ import annotations

from typing import Any, Mapping

from engine.sim.cluster import Cluster
from engine.sim.job import Job
from engine.traces.generator import generate

#: Training episodes draw workload seeds from ``[TRAIN_SEED_MIN, 2**31 - 1)``; evaluations use seeds below it,
#: so an evaluation seed is never one an agent was trained on.
TRAIN_SEED_MIN = 2**20


def make_jobs(cluster: Cluster, n_jobs: int, load: float, seed: int,
              workload: Mapping[str, Any] | None = None) -> tuple[Job, ...]:
    """A seeded synthetic workload for ``cluster`` (same arguments -> the same jobs, bit for bit).

    ``workload`` holds extra keyword arguments of :func:`~engine.traces.generator.generate` (``mix``,
    ``users``, ``arrival``, ``estimate_error``, ...).
    """
    return generate(cluster, n_jobs, load, seed, **dict(workload or {}))

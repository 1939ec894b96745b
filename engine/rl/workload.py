"""Seeded synthetic workloads for training and evaluating learned schedulers.

:func:`make_jobs` uses the project's generator (:func:`engine.traces.generator.generate`) when it is present
and otherwise :func:`small_generator`, a compact stand-in with the same signature.
"""

from __future__ import annotations

import math

import numpy as np

from ..cluster import Cluster
from ..job import Job

_GPU_CHOICES = (1, 2, 4, 8)
_GPU_WEIGHTS = (0.55, 0.15, 0.15, 0.15)
_TYPES = ("training", "inference", "batch")
_TYPE_WEIGHTS = (0.7, 0.15, 0.15)


def small_generator(cluster: Cluster, n_jobs: int, load: float = 0.8, seed: int = 0, *,
                    users: int = 6) -> tuple[Job, ...]:
    """``n_jobs`` jobs with Poisson arrivals whose offered load is ``load`` x the cluster's GPU capacity.

    GPU counts 1/2/4/8 (capped at the largest node), log-normal durations (median 30 min), estimates within
    a factor of 2 of the truth, Zipf-like users; a quarter of inference jobs use half a GPU.
    """
    rng = np.random.default_rng(seed)
    max_node = max(g.gpus_per_node for g in cluster.groups)
    gpus = np.minimum(rng.choice(_GPU_CHOICES, size=n_jobs, p=_GPU_WEIGHTS), max_node)
    duration = np.clip(rng.lognormal(math.log(1800.0), 1.2, size=n_jobs), 60.0, 2 * 86400.0)
    estimate = duration * np.exp(rng.uniform(-0.7, 0.7, size=n_jobs))
    kinds = rng.choice(len(_TYPES), size=n_jobs, p=_TYPE_WEIGHTS)
    half = (kinds == 1) & (rng.random(n_jobs) < 0.25)
    user_p = 1.0 / np.arange(1, users + 1)
    user = rng.choice(users, size=n_jobs, p=user_p / user_p.sum())
    demand = np.where(half, 0.5, gpus) * duration
    rate = load * cluster.n_gpus / float(demand.mean())  # arrivals per second
    submit = np.cumsum(rng.exponential(1.0 / rate, size=n_jobs))
    submit -= submit[0]
    return tuple(
        Job(job_id=i, submit_s=float(submit[i]), duration_s=float(duration[i]),
            gpus=1 if half[i] else int(gpus[i]), gpu_fraction=0.5 if half[i] else 1.0,
            user=f"user{user[i]}", job_type=_TYPES[kinds[i]], estimate_s=float(estimate[i]))
        for i in range(n_jobs)
    )


def make_jobs(cluster: Cluster, n_jobs: int, load: float, seed: int) -> tuple[Job, ...]:
    """A seeded synthetic workload for ``cluster`` (same arguments -> the same jobs, bit for bit)."""
    return small_generator(cluster, n_jobs, load, seed)

"""The job record: what a user submitted, in seconds and GiB.

A `Job` is immutable. ``duration_s`` is the true run time at reference speed (a ``generic`` GPU, speed 1,
all GPUs on one node); the simulator stretches or shrinks it by GPU type, placement and co-location.
Schedulers must not read ``duration_s`` (they see ``estimate_s``) unless they declare themselves oracles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

#: Job types the built-in speed and communication tables know. Any other string is allowed and is
#: treated like ``"batch"`` by those tables.
JOB_TYPES = ("training", "inference", "batch", "interactive")

_TYPE_SETS: dict[frozenset[str], frozenset[str]] = {}  # each distinct allowed_types value, once


@dataclass(frozen=True, slots=True)
class Job:
    """One job of a workload.

    Attributes:
        job_id: index of the job in its workload, ``0..n-1`` in submit order.
        submit_s: submit time, seconds from the start of the trace (first arrival at 0 after loading).
        duration_s: true run time in seconds at reference speed (speed-1 GPUs, consolidated).
        gpus: number of GPUs; 1 for a fractional job.
        gpu_fraction: share of one GPU, in (0, 1]; below 1 only when ``gpus == 1``. Fractional jobs may
            share a GPU with other fractional jobs; whole-GPU jobs never share.
        vram_gib: GPU memory needed on each GPU, GiB; 0 means "fits any GPU".
        user: the tenant the job belongs to (fairness metrics group by it).
        job_type: ``training``, ``inference``, ``batch``, ``interactive`` or any other label.
        priority: larger is more important; only some schedulers use it.
        allowed_types: GPU type names the job may run on; empty means any type.
        estimate_s: the user's requested or estimated run time in seconds (what schedulers see).
        name: the job's id in the original trace, for reports.
    """

    job_id: int
    submit_s: float
    duration_s: float
    gpus: int = 1
    gpu_fraction: float = 1.0
    vram_gib: float = 0.0
    user: str = "user0"
    job_type: str = "batch"
    priority: int = 0
    allowed_types: frozenset[str] = field(default_factory=frozenset)
    estimate_s: float = math.nan
    name: str = ""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.submit_s) and self.submit_s >= 0):
            raise ValueError(f"job {self.job_id}: submit_s must be a finite number >= 0, got {self.submit_s}")
        if not (math.isfinite(self.duration_s) and self.duration_s > 0):
            raise ValueError(f"job {self.job_id}: duration_s must be a finite number > 0, got {self.duration_s}")
        if not (isinstance(self.gpus, int) and self.gpus >= 1):
            raise ValueError(f"job {self.job_id}: gpus must be an integer >= 1, got {self.gpus!r}")
        if not (0 < self.gpu_fraction <= 1):
            raise ValueError(f"job {self.job_id}: gpu_fraction must be in (0, 1], got {self.gpu_fraction}")
        if self.gpu_fraction < 1 and self.gpus != 1:
            raise ValueError(f"job {self.job_id}: a fractional job (gpu_fraction < 1) must ask for 1 GPU")
        if not (math.isfinite(self.vram_gib) and self.vram_gib >= 0):
            raise ValueError(f"job {self.job_id}: vram_gib must be a finite number >= 0, got {self.vram_gib}")
        if math.isnan(self.estimate_s):
            object.__setattr__(self, "estimate_s", self.duration_s)
        elif not (math.isfinite(self.estimate_s) and self.estimate_s > 0):
            raise ValueError(f"job {self.job_id}: estimate_s must be a finite number > 0, got {self.estimate_s}")
        types = self.allowed_types if isinstance(self.allowed_types, frozenset) else frozenset(self.allowed_types)
        # One shared object per distinct set of types: the engine groups jobs by shape (a tuple holding this set)
        # at every run, and a shared set is hashed once and compared by identity (and 100,000 jobs do not hold
        # 100,000 empty sets).
        object.__setattr__(self, "allowed_types", _TYPE_SETS.setdefault(types, types))

    @property
    def gpu_demand(self) -> float:
        """GPUs this job occupies: ``gpus * gpu_fraction``."""
        return self.gpus * self.gpu_fraction

    @property
    def fractional(self) -> bool:
        return self.gpu_fraction < 1.0

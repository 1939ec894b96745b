"""Deadlines for a workload, by the laws the literature draws them with (a registry of named laws).

A law gives each job a slack factor; its deadline is ``submit_s + factor x duration_s`` (the true duration at
reference speed, as the sources use the job's measured run time). A ``best_effort`` share of the jobs, drawn
independently, gets no deadline (``inf``).

===============  ================================================  ===============================================
law              slack factor                                      source
===============  ================================================  ===============================================
``none``         no job has a deadline                             (the default: rigid workloads as before)
``elasticflow``  uniform in [0.5, 1.5]                             ElasticFlow (ASPLOS'23),
                                                                   ``trace_generator/generate_trace.py``
``gavel``        1.2, 2 or 10, a third each                        Gavel (OSDI'20), ``scheduler/utils.py``
===============  ================================================  ===============================================

ElasticFlow's factors below 1 are deadlines a job cannot meet at its requested size on reference GPUs: that
source meant them for elastic jobs that can grow; admission control declines them on a rigid workload.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from engine.sim.job import Job


@dataclass(frozen=True)
class DeadlineLaw:
    """A named way to draw slack factors: ``draw(rng, n)`` gives ``n`` factors (> 0)."""

    name: str
    description: str
    source: str
    draw: Callable[[np.random.Generator, int], np.ndarray]


def _elasticflow(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.uniform(0.5, 1.5, size=n)


def _gavel(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.choice(np.array([1.2, 2.0, 10.0]), size=n)


#: Law name -> law; ``none`` is the absence of a law (no entry).
DEADLINE_LAWS: dict[str, DeadlineLaw] = {
    law.name: law
    for law in (
        DeadlineLaw(
            "elasticflow",
            "arrival + U(0.5, 1.5) x duration",
            "ElasticFlow trace_generator/generate_trace.py",
            _elasticflow,
        ),
        DeadlineLaw("gavel", "arrival + {1.2, 2, 10} x duration, a third each", "Gavel scheduler/utils.py", _gavel),
    )
}
NO_DEADLINES = "none"


def check_law(law: str, best_effort: float) -> None:
    """Raise ``ValueError`` naming the option for an unknown law or a best-effort share outside [0, 1]."""
    if law != NO_DEADLINES and law not in DEADLINE_LAWS:
        raise ValueError(f"deadlines {law!r}: expected one of {', '.join([NO_DEADLINES, *DEADLINE_LAWS])}")
    if not (isinstance(best_effort, (int, float)) and 0 <= best_effort <= 1):
        raise ValueError(f"best_effort must be a share in [0, 1], got {best_effort!r}")


def draw_deadlines(
    law: str, submit_s: np.ndarray, duration_s: np.ndarray, best_effort: float, rng: np.random.Generator
) -> np.ndarray:
    """Absolute deadlines (``inf``: none) for jobs with these submit times and durations.

    ``none`` draws nothing from ``rng`` (a workload without deadlines is the same as before the law existed);
    otherwise the factors are drawn first, then the best-effort share, so one seed gives one workload.
    """
    check_law(law, best_effort)
    n = len(submit_s)
    if law == NO_DEADLINES:
        return np.full(n, math.inf)
    factor = DEADLINE_LAWS[law].draw(rng, n)
    best = rng.random(n) < best_effort
    # after the submit time even where a tiny job's slack rounds away at a late submit time
    return np.where(best, math.inf, np.maximum(submit_s + factor * duration_s, np.nextafter(submit_s, math.inf)))


def with_deadlines(jobs: tuple[Job, ...], law: str, *, best_effort: float = 0.0, seed: int = 0) -> tuple[Job, ...]:
    """``jobs`` with deadlines drawn by ``law`` (seeded; any earlier deadline replaced, ``none`` clears them)."""
    submit = np.array([j.submit_s for j in jobs], dtype=np.float64)
    duration = np.array([j.duration_s for j in jobs], dtype=np.float64)
    deadlines = draw_deadlines(law, submit, duration, best_effort, np.random.default_rng(seed))
    return tuple(replace(j, deadline_s=d) for j, d in zip(jobs, deadlines.tolist()))

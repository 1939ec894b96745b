"""How a run met its jobs' deadlines (:attr:`~engine.sim.job.Job.deadline_s`), from a
:class:`~engine.sim.simulator.Result`. Every formula is written here; a summary holds these metrics only when some
job of the run has a deadline.

A job *meets* its deadline when its status is ``COMPLETED`` and ``end_s <= deadline_s``. Over the jobs with a
deadline (``deadline_jobs``):

* ``deadline_ratio`` (ElasticFlow's deadline satisfactory ratio) = met / ``deadline_jobs``: a job the admission
  stage declined (:mod:`engine.sim.admission`), one that can never run and one that ended failed all count as
  missed.
* ``deadline_missed`` = ``deadline_jobs`` - met (the SLO violations of Gavel), declined jobs included.
* ``declined`` = jobs whose status is ``DECLINED``, counted apart as well.
* tardiness of a completed job with a deadline = ``max(0, end_s - deadline_s)``; ``mean_tardiness_s`` and
  ``p95_tardiness_s`` (linear interpolation, as ``numpy.percentile``) are over those jobs, NaN when none completed
  (declined jobs have no end, so no tardiness: they are in the ratio and the counts).
* ``best_effort_mean_jct_s`` = mean of ``end_s - submit_s`` over the completed jobs without a deadline (NaN when
  there is none).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from engine.sim.simulator import COMPLETED, DECLINED, Result


@dataclass(frozen=True)
class DeadlineSummary:
    """The run-level deadline metrics (formulas in the module docstring)."""

    deadline_jobs: int
    deadline_ratio: float
    deadline_missed: int
    declined: int
    mean_tardiness_s: float
    p95_tardiness_s: float
    best_effort_mean_jct_s: float

    def to_dict(self) -> dict[str, int | float]:
        return asdict(self)


def _deadlines(result: Result) -> np.ndarray:
    return np.array([j.deadline_s for j in result.jobs], dtype=float)


def has_deadlines(result: Result) -> bool:
    """Whether some job of the run has a deadline (then its summary holds the deadline metrics)."""
    return any(j.has_deadline for j in result.jobs)


def deadline_met(result: Result) -> np.ndarray:
    """Per job: it completed by its deadline (False for a job without one)."""
    deadline = _deadlines(result)
    with np.errstate(invalid="ignore"):  # NaN ends (never ran) compare False
        return (result.status == COMPLETED) & np.isfinite(deadline) & (result.end_s <= deadline)


def summarize_deadlines(result: Result) -> DeadlineSummary:
    """The deadline metrics of ``result`` (module docstring); call when :func:`has_deadlines`."""
    deadline = _deadlines(result)
    timed = np.isfinite(deadline)
    done = result.status == COMPLETED
    n_timed = int(timed.sum())
    met = int(deadline_met(result).sum())
    tardy = np.maximum(result.end_s[timed & done] - deadline[timed & done], 0.0)
    submit = np.array([j.submit_s for j in result.jobs], dtype=float)
    best_effort_jct = (result.end_s - submit)[~timed & done]
    return DeadlineSummary(
        deadline_jobs=n_timed,
        deadline_ratio=met / n_timed if n_timed else math.nan,
        deadline_missed=n_timed - met,
        declined=int((result.status == DECLINED).sum()),
        mean_tardiness_s=float(tardy.mean()) if len(tardy) else math.nan,
        p95_tardiness_s=float(np.percentile(tardy, 95)) if len(tardy) else math.nan,
        best_effort_mean_jct_s=float(best_effort_jct.mean()) if len(best_effort_jct) else math.nan,
    )


def job_deadlines(result: Result) -> dict[str, np.ndarray]:
    """Per job: ``deadline_s`` (NaN: none), ``deadline_met`` and ``tardiness_s`` (NaN unless it completed with a
    deadline)."""
    deadline = _deadlines(result)
    timed_done = np.isfinite(deadline) & (result.status == COMPLETED)
    tardiness = np.full(len(deadline), math.nan)
    tardiness[timed_done] = np.maximum(result.end_s[timed_done] - deadline[timed_done], 0.0)
    return {
        "deadline_s": np.where(np.isfinite(deadline), deadline, math.nan),
        "deadline_met": deadline_met(result),
        "tardiness_s": tardiness,
    }

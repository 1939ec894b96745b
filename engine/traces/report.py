"""What a loaded trace contains and what the loader left out: :class:`TraceReport`."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from engine.sim.job import Job
from engine.traces.load import load_ratio


@dataclass(frozen=True)
class TraceReport:
    """Summary of one trace load.

    Attributes:
        rows: data rows read from the file (header and comment lines excluded).
        jobs: jobs kept.
        dropped: reason -> rows dropped for it (see :data:`engine.traces.base.DROP_REASONS`).
        trimmed: valid jobs removed on request by ``first`` or ``window``.
        span_s: seconds from the first to the last submit of the kept jobs.
        gpu_hours: total GPU-hours the kept jobs ask for at reference speed (``duration x gpus x fraction``).
        users: distinct users among the kept jobs.
        gpu_histogram: GPUs per job -> jobs; fractional jobs are counted under ``"<1"``.
        examples: messages of the first few malformed rows skipped with ``skip_bad``.
        unit_warning: a sentence when the times look read in the wrong unit (see
            :mod:`engine.traces.plausibility`), else empty.
        failed: kept jobs the trace recorded as failed (:attr:`~engine.sim.job.Job.failed`).
    """

    rows: int
    jobs: int
    dropped: dict[str, int]
    span_s: float
    gpu_hours: float
    users: int
    trimmed: int = 0
    gpu_histogram: dict[str, int] = field(default_factory=dict)
    examples: tuple[str, ...] = ()
    unit_warning: str = ""
    failed: int = 0

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())

    def offered_load(self, cluster_gpus: int) -> float:
        """GPU-seconds asked for over GPU-seconds available while jobs arrive: ``gpu_s / (gpus x span_s)``.

        This is the generator's "load" (arrival rate x mean GPU-seconds per job / cluster GPUs), measured
        (:func:`engine.traces.load.load_ratio`): ``inf`` when all jobs arrive at once (span 0) and there is any
        work; 0 for an empty trace.
        """
        return load_ratio(self.gpu_hours * 3600.0, cluster_gpus, self.span_s)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with at least ``rows, jobs, dropped, span_s, gpu_hours, users``."""
        return {
            "rows": self.rows,
            "jobs": self.jobs,
            "dropped": dict(self.dropped),
            "trimmed": self.trimmed,
            "span_s": self.span_s,
            "gpu_hours": self.gpu_hours,
            "users": self.users,
            "gpu_histogram": dict(self.gpu_histogram),
            "examples": list(self.examples),
            "unit_warning": self.unit_warning,
            "failed": self.failed,
        }


def gpu_histogram(jobs: Sequence[Job]) -> dict[str, int]:
    """GPUs per job -> number of jobs, ordered by GPU count; fractional jobs under ``"<1"``."""
    counts = Counter(j.gpus if j.gpu_fraction >= 1 else "<1" for j in jobs)
    out = {"<1": counts.pop("<1")} if "<1" in counts else {}
    out.update((str(k), counts[k]) for k in sorted(counts))
    return out


def make_report(
    jobs: Sequence[Job],
    *,
    rows: int,
    dropped: dict[str, int],
    trimmed: int = 0,
    examples: Sequence[str] = (),
    unit_warning: str = "",
) -> TraceReport:
    """Build the report of ``jobs`` (already renumbered and shifted) read from ``rows`` data rows."""
    span = (jobs[-1].submit_s - jobs[0].submit_s) if jobs else 0.0
    gpu_s = np.array([j.duration_s * j.gpus * j.gpu_fraction for j in jobs], dtype=np.float64)
    return TraceReport(
        rows=rows,
        jobs=len(jobs),
        dropped={k: dropped[k] for k in sorted(dropped) if dropped[k]},
        span_s=float(span),
        gpu_hours=float(gpu_s.sum()) / 3600.0,
        users=len({j.user for j in jobs}),
        trimmed=trimmed,
        gpu_histogram=gpu_histogram(jobs),
        examples=tuple(examples),
        unit_warning=unit_warning,
        failed=sum(j.failed for j in jobs),
    )

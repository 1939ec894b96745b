"""Several workload seeds of one scenario: the mean of every metric and its 95 % confidence interval.

What ``python -m engine evaluate`` does for named scenarios (:mod:`engine.analysis.evaluate`, whose
:func:`~engine.analysis.evaluate.mean_ci` this reuses), for the scenario a page holds: seed ``k`` is the
scenario with workload seed ``workload.seed + k`` (the same jobs for every scheduler), so the spread says how
much of a difference between schedulers is the luck of one workload.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping, Sequence

import pandas as pd

from engine.analysis.evaluate import mean_ci
from engine.analysis.metrics import ALL_METRICS, Summary, metric_name
from engine.analysis.scenario import Scenario, ScenarioError
from engine.units import human_value

#: Most workload seeds a page may ask for (each one is a run of every scheduler).
MAX_SEEDS = 20


def seed_variants(sc: Scenario, n: int) -> list[Scenario]:
    """``sc`` with workload seeds ``seed, seed + 1, ..., seed + n - 1`` (the first is ``sc`` itself).

    ``ScenarioError`` for a trace (one file is one workload) or ``n`` outside ``1..MAX_SEEDS``."""
    if not (isinstance(n, int) and 1 <= n <= MAX_SEEDS):
        raise ScenarioError(f"workload seeds must be between 1 and {MAX_SEEDS}, got {n!r}")
    if sc.workload.source == "trace" and n > 1:
        raise ScenarioError("a trace is a single workload: several seeds need a generated or preset workload")
    return [replace(sc, workload=sc.workload.with_seed(sc.workload.seed + k)) for k in range(n)]


def ci_frame(summaries: Mapping[str, Sequence[Summary]], keys: Sequence[str]) -> pd.DataFrame:
    """``metric`` (full name) then one column per scheduler: ``mean ± half-width`` of the 95 % CI over the
    seeds, each in its metric's human unit (``–`` where undefined)."""
    rows = []
    for key in keys:
        unit = ALL_METRICS[key].unit
        row = {"metric": metric_name(key)}
        for name, runs in summaries.items():
            mean, half = mean_ci([float(s.value(key)) for s in runs])
            row[name] = human_value(mean, unit) + ("" if half != half else f" ± {human_value(half, unit)}")
        rows.append(row)
    return pd.DataFrame(rows, columns=["metric", *summaries])

"""Tables for people: metric values in human units, chosen per value, under their full names (no streamlit)."""

from __future__ import annotations

import math

import pandas as pd

from engine.analysis.metrics import METRICS

#: Units a duration is shown in, largest first: (suffix, seconds); a value takes the largest unit it spans twice.
TIME_UNITS = (("d", 86_400.0), ("h", 3_600.0), ("min", 60.0))
YEAR_S = 365.25 * 86_400.0


def human_seconds(s: float) -> str:
    """A duration for people, its unit chosen by its size: ``42 s``, ``3.5 min``, ``2.1 h``, ``178 d`` (years
    past two); NaN -> ``–``."""
    if s != s:
        return "–"
    if abs(s) >= 2 * YEAR_S:  # only a wrong time unit or a very long trace gets here
        return f"{s / YEAR_S:,.3g} years" if abs(s) < 1000 * YEAR_S else f"{s / YEAR_S:,.0f} years"
    for unit, div in TIME_UNITS:
        if abs(s) >= 2 * div:
            return f"{s / div:.3g} {unit}"
    return f"{s:.3g} s"


def human_value(value: float, unit: str) -> str:
    """A metric value in its unit: durations by :func:`human_seconds`, counts as integers, others to 3 digits."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if unit == "s":
        return human_seconds(value)
    if unit in ("jobs", "count"):
        return f"{int(value):,}"
    if unit == "GPU-h":
        return f"{value:,.0f} GPU-h" if abs(value) >= 1000 else f"{value:.3g} GPU-h"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def metric_name(key: str) -> str:
    """A metric's full name with its direction: ``Mean wait ↓``, ``Completed ↑``, ``Never ran (...)``."""
    m = METRICS[key]
    arrow = {"lower": " ↓", "higher": " ↑"}.get(m.better or "", "")
    return m.label + arrow


def metrics_table(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Rows ``keys`` of a :func:`engine.analysis.metrics.compare` table as text: a ``metric`` column of full names,
    then one column per scheduler with each value in its own human unit."""
    rows = [{"metric": metric_name(k), **{c: human_value(table.loc[k, c], METRICS[k].unit) for c in table.columns}}
            for k in keys]
    return pd.DataFrame(rows, columns=["metric", *table.columns])

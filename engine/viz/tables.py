"""Tables for people: metric values in human units, chosen per value, under their full names (no streamlit)."""

from __future__ import annotations

import pandas as pd

from engine.analysis.metrics import ALL_METRICS, metric_name
from engine.units import human_value


def metrics_table(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Rows ``keys`` of a :func:`engine.analysis.metrics.compare` table as text: a ``metric`` column of full names,
    then one column per scheduler with each value in its own human unit."""
    rows = [{"metric": metric_name(k), **{c: human_value(table.loc[k, c], ALL_METRICS[k].unit) for c in table.columns}}
            for k in keys]
    return pd.DataFrame(rows, columns=["metric", *table.columns])

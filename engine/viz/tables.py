"""Tables for people: metric values in human units, chosen per value, under their full names (no streamlit)."""

from __future__ import annotations

import pandas as pd

from engine.analysis.metrics import METRICS, metric_name
from engine.units import human_value
from engine.viz.explore import cluster_label


def metrics_table(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Rows ``keys`` of a :func:`engine.analysis.metrics.compare` table as text: a ``metric`` column of full names,
    then one column per scheduler with each value in its own human unit."""
    rows = [{"metric": metric_name(k), **{c: human_value(table.loc[k, c], METRICS[k].unit) for c in table.columns}}
            for k in keys]
    return pd.DataFrame(rows, columns=["metric", *table.columns])


def sweep_table(frame: pd.DataFrame, load_label: str = "load") -> pd.DataFrame:
    """A sweep's rows (:func:`engine.analysis.sweep.run_sweep`) as text: each cluster by its short label, each
    metric under its full name in its own human unit, ``–`` where there is no value."""
    out = pd.DataFrame({"cluster": [cluster_label(str(c)) for c in frame["cluster"]], load_label: frame["load"],
                        "seed": frame["seed"], "scheduler": frame["scheduler"]})
    for key in (k for k in METRICS if k in frame.columns):
        out[metric_name(key)] = [human_value(v, METRICS[key].unit) for v in frame[key]]
    return out


def plan_table(answer: pd.DataFrame) -> pd.DataFrame:
    """A capacity plan's answer (:func:`engine.analysis.plan.plan`) as text: one row per scheduler with the fewest
    nodes, their GPUs and the metric there and at one node fewer in its unit, ``–`` where there is none."""
    rows = []
    for r in answer.itertuples():
        unit = METRICS[r.metric].unit
        rows.append({"scheduler": r.scheduler, "fewest nodes": "not met" if pd.isna(r.nodes) else f"{r.nodes:,}",
                     "GPUs": "–" if pd.isna(r.gpus) else f"{r.gpus:,}", "metric": METRICS[r.metric].label,
                     "value there": human_value(r.value_at_nodes, unit),
                     "with one node fewer": human_value(r.value_at_nodes_minus_1, unit),
                     "problem": r.error or "–"})
    return pd.DataFrame(rows, columns=["scheduler", "fewest nodes", "GPUs", "metric", "value there",
                                       "with one node fewer", "problem"])

"""Tables for people: metric values in human units, chosen per value, under their full names (no streamlit)."""

from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

from engine.analysis.metrics import ALL_METRICS, USER_ENERGY_COLUMNS, USER_PER_UNIT_COLUMNS, metric_name, user_energy
from engine.analysis.sweep import CELL_COLUMNS, axis_columns
from engine.sim.job import Job
from engine.units import human_seconds, human_value
from engine.viz.explore import cluster_label

#: Metrics a table never crowns on their own, though :data:`~engine.analysis.metrics.METRICS` gives them a direction: higher utilisation
#: also comes from jobs running longer on slower GPUs, so it is "better" only next to waits and JCTs.
NOT_CROWNED = frozenset({"utilization"})


def _name(key: str) -> str:
    return ALL_METRICS[key].label if key in NOT_CROWNED else metric_name(key)


def metrics_table(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Rows ``keys`` of a :func:`engine.analysis.metrics.compare` table as text: a ``metric`` column of full names
    (with the better direction's arrow, none for :data:`NOT_CROWNED`), then one column per scheduler with each value
    in its own human unit."""
    rows = [
        {"metric": _name(k), **{c: human_value(table.loc[k, c], ALL_METRICS[k].unit) for c in table.columns}}
        for k in keys
    ]
    return pd.DataFrame(rows, columns=["metric", *table.columns])


def best_shown(table: pd.DataFrame, keys: list[str]) -> dict[str, tuple[str, ...]]:
    """For each metric of ``keys`` in a :func:`engine.analysis.metrics.compare` table, the columns whose value, as
    :func:`metrics_table` shows it, equals the best one's: values that look the same are tied. No entry for a
    metric without a direction or in :data:`NOT_CROWNED`, with fewer than two values, or when all look the same."""
    out: dict[str, tuple[str, ...]] = {}
    for key in keys:
        metric = ALL_METRICS[key]
        values = table.loc[key].dropna()
        if metric.better is None or key in NOT_CROWNED or len(values) < 2:
            continue
        shown = {c: human_value(v, metric.unit) for c, v in values.items()}
        best = shown[values.idxmin() if metric.better == "lower" else values.idxmax()]
        tied = tuple(c for c, text in shown.items() if text == best)
        if len(tied) < len(shown):
            out[key] = tied
    return out


def user_energy_table(job_frames: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per user, then per scheduler: the jobs, the sums of their energy, cost and carbon, and those sums per
    completed job and per useful GPU-hour (``–`` where the user has none), from job frames with an energy model's
    columns (by scheduler), in human units under the metrics' names."""
    rows = []
    for name, frame in job_frames.items():
        jobs = frame.groupby("user", sort=True).size()
        for user, r in user_energy(frame).iterrows():
            rows.append(
                {
                    "user": user,
                    "scheduler": name,
                    "jobs": int(jobs[user]),
                    **{ALL_METRICS[k].label: human_value(v, ALL_METRICS[k].unit) for k, v in r.items()},
                }
            )
    keys = (*USER_ENERGY_COLUMNS, *USER_PER_UNIT_COLUMNS)
    columns = ["user", "scheduler", "jobs", *(ALL_METRICS[k].label for k in keys)]
    return pd.DataFrame(rows, columns=columns).sort_values(["user"], kind="stable", ignore_index=True)


def sweep_table(frame: pd.DataFrame, load_label: str = "load") -> pd.DataFrame:
    """A sweep's rows (:func:`engine.analysis.sweep.run_sweep`) as text: each cluster by its short label, each
    metric under its full name in its own human unit, ``–`` where there is no value."""
    out = pd.DataFrame(
        {
            "cluster": [cluster_label(str(c)) for c in frame["cluster"]],
            load_label: frame["load"],
            "seed": frame["seed"],
            "scheduler": frame["scheduler"],
            **{c: frame[c] for c in axis_columns(frame)},  # a run option the grid varies, by its path
        }
    )
    for key in (k for k in ALL_METRICS if k in frame.columns):
        out[metric_name(key)] = [human_value(v, ALL_METRICS[key].unit) for v in frame[key]]
    return out


def failures_table(failures: Sequence[Mapping], load_label: str = "load") -> pd.DataFrame:
    """A sweep's failed cells (``frame.attrs["failures"]``: parameters and ``error``) as text, clusters by their
    short label."""
    out = pd.DataFrame(list(failures), columns=[*CELL_COLUMNS, "error"]).rename(columns={"load": load_label})
    out["cluster"] = [cluster_label(str(c)) for c in out["cluster"]]
    return out.astype(object).fillna("–").rename(columns={"error": "what went wrong"})


def plan_table(answer: pd.DataFrame) -> pd.DataFrame:
    """A capacity plan's answer (:func:`engine.analysis.plan.plan`) as text: one row per scheduler with the fewest
    nodes, their GPUs and the metric there and at one node fewer in its unit, ``–`` where there is none."""
    rows = []
    for r in answer.itertuples():
        unit = ALL_METRICS[r.metric].unit
        rows.append(
            {
                "scheduler": r.scheduler,
                "fewest nodes": "not met" if pd.isna(r.nodes) else f"{r.nodes:,}",
                "GPUs": "–" if pd.isna(r.gpus) else f"{r.gpus:,}",
                "metric": ALL_METRICS[r.metric].label,
                "value there": human_value(r.value_at_nodes, unit),
                "with one node fewer": human_value(r.value_at_nodes_minus_1, unit),
                "problem": r.error if isinstance(r.error, str) and r.error else "–",
            }
        )
    return pd.DataFrame(
        rows, columns=["scheduler", "fewest nodes", "GPUs", "metric", "value there", "with one node fewer", "problem"]
    )


def jobs_table(jobs: Sequence[Job]) -> pd.DataFrame:
    """A few jobs as people read them: id, submit time and duration in human units, GPUs (a fraction as ``0.5``),
    user and job type."""
    return pd.DataFrame(
        {
            "job": [j.job_id for j in jobs],
            "submitted at": [human_seconds(j.submit_s) for j in jobs],
            "runs for": [human_seconds(j.duration_s) for j in jobs],
            "GPUs": [f"{j.gpus * j.gpu_fraction:g}" for j in jobs],
            "user": [j.user for j in jobs],
            "job type": [j.job_type for j in jobs],
        }
    )

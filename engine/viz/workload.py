"""Pictures of a workload before any run: arrivals, GPUs per job, durations, volume per user, offered load."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from engine.sim.job import Job
from engine.units import human_seconds, plural
from engine.viz.style import PALETTE, plain_all, time_scale


def jobs_frame(jobs: Sequence[Job]) -> pd.DataFrame:
    """The workload as a table: ``job_id, submit_s, duration_s, gpus, gpu_fraction, gpu_demand, user,
    job_type, gpu_s`` (GPU-seconds at reference speed)."""
    df = pd.DataFrame(
        {
            "job_id": [j.job_id for j in jobs],
            "submit_s": np.array([j.submit_s for j in jobs], dtype=float),
            "duration_s": np.array([j.duration_s for j in jobs], dtype=float),
            "gpus": np.array([j.gpus for j in jobs], dtype=np.int64),
            "gpu_fraction": np.array([j.gpu_fraction for j in jobs], dtype=float),
            "user": [j.user for j in jobs],
            "job_type": [j.job_type for j in jobs],
        }
    )
    df["gpu_demand"] = df["gpus"] * df["gpu_fraction"]
    df["gpu_s"] = df["gpu_demand"] * df["duration_s"]
    return df


def _small(fig: go.Figure, title: str, x: str, y: str) -> go.Figure:
    fig.update_layout(
        title=title,
        xaxis_title=x,
        yaxis_title=y,
        template="plotly_white",
        height=300,
        margin=dict(l=60, r=20, t=50, b=40),
        bargap=0.05,
    )
    return fig


def arrivals_figure(jobs: pd.DataFrame, bins: int = 60) -> go.Figure:
    """Jobs submitted per time bin."""
    span = float(jobs["submit_s"].max()) if len(jobs) else 1.0
    unit, div = time_scale(span)
    counts, edges = np.histogram(jobs["submit_s"] / div, bins=bins, range=(0, max(span / div, 1e-9)))
    fig = go.Figure(
        go.Bar(
            x=(edges[:-1] + edges[1:]) / 2,
            y=counts,
            width=np.diff(edges),
            marker_color=PALETTE[0],
            hovertemplate=f"t=%{{x:.2f}} {unit}: %{{y}} jobs<extra></extra>",
        )
    )
    return _small(
        fig,
        "arrivals over time",
        f"submit time ({unit})",
        f"jobs (per {human_seconds(float(np.diff(edges)[0]) * div)})",
    )


def gpu_count_figure(jobs: pd.DataFrame) -> go.Figure:
    """How many jobs ask for each GPU count (fractional jobs shown as "<1")."""
    label = np.where(jobs["gpu_fraction"] < 1, "<1", jobs["gpus"].astype(str))
    counts = pd.Series(label).value_counts()
    order = sorted(counts.index, key=lambda s: -1.0 if s == "<1" else float(s))
    fig = go.Figure(go.Bar(x=order, y=[int(counts[k]) for k in order], marker_color=PALETTE[1]))
    fig.update_xaxes(type="category")
    return _small(fig, "GPUs per job", "GPUs per job (count)", "jobs (count)")


def duration_figure(jobs: pd.DataFrame, bins: int = 40) -> go.Figure:
    """Distribution of job durations on a log scale."""
    d = jobs["duration_s"].to_numpy(dtype=float)
    d = d[d > 0]
    if d.size:
        edges = np.logspace(np.log10(d.min()), np.log10(max(d.max(), d.min() * 1.01)), bins + 1)
    else:
        edges = np.array([1.0, 10.0])
    counts, _ = np.histogram(d, bins=edges)
    centres = np.sqrt(edges[:-1] * edges[1:])
    fig = go.Figure(
        go.Bar(
            x=centres,
            y=counts,
            width=np.diff(edges),
            marker_color=PALETTE[2],
            hovertemplate="~%{x:.3g} s: %{y} jobs<extra></extra>",
        )
    )
    fig.update_xaxes(type="log")
    return _small(fig, "job durations", "duration at reference speed (s, log scale)", "jobs (count)")


def user_volume_figure(jobs: pd.DataFrame, top: int = 20) -> go.Figure:
    """GPU-hours submitted per user (the ``top`` largest; the rest summed as "other")."""
    vol = jobs.groupby("user")["gpu_s"].sum().sort_values(ascending=False) / 3600.0
    if len(vol) > top:
        vol = pd.concat([vol.iloc[:top], pd.Series({"other": vol.iloc[top:].sum()})])
    fig = go.Figure(go.Bar(x=plain_all(vol.index), y=vol.to_numpy(), marker_color=PALETTE[3]))
    fig.update_xaxes(type="category")
    return _small(fig, "volume per user", "user", "GPU-hours submitted (GPU·h)")


def offered_load_figure(centres: np.ndarray, load: np.ndarray, n_gpus: int) -> go.Figure:
    """Offered load over time on a cluster of ``n_gpus`` GPUs (``centres``: bin centres in seconds, ``load``: the
    load per bin, as :func:`engine.traces.load.offered_load_series` gives them), with the saturation line at
    100 %."""
    unit, div = time_scale(float(centres[-1]) if len(centres) else 1.0)
    fig = go.Figure(
        go.Scatter(
            x=centres / div,
            y=load * 100,
            mode="lines",
            line=dict(shape="hv", color=PALETTE[5]),
            hovertemplate=f"t=%{{x:.2f}} {unit}: %{{y:.0f}}% of the cluster<extra></extra>",
        )
    )
    fig.add_hline(y=100, line_dash="dot", line_color="#555", annotation_text="cluster saturated")
    return _small(fig, f"offered load on {plural(n_gpus, 'GPU')}", f"submit time ({unit})", "offered load (% of GPUs)")

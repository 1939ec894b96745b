"""Distributions of per-job quantities (wait, JCT): empirical CDFs and their figure."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.viz.series import MAX_POINTS
from engine.viz.style import PALETTE, plain, time_scale


def cdf_points(values: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Empirical CDF of the finite values: sorted values and the share of values <= each (0..1]."""
    v = np.sort(np.asarray(values, dtype=float))
    v = v[np.isfinite(v)]
    if v.size == 0:
        return v, v
    return v, np.arange(1, v.size + 1) / v.size


def cdf_curve(values: Sequence[float], points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """:func:`cdf_points` thinned to at most ``points`` points (the value at evenly spaced ranks, always
    including the largest), for drawing."""
    v, p = cdf_points(values)
    if v.size <= points:
        return v, p
    idx = np.unique(np.linspace(0, v.size - 1, points).round().astype(np.int64))
    return v[idx], p[idx]


def cdf_figure(
    job_frames: Mapping[str, pd.DataFrame],
    quantities: Sequence[tuple[str, str]] = (("wait_s", "wait"), ("jct_s", "JCT")),
) -> go.Figure:
    """Empirical CDFs side by side, one panel per ``(column, label)`` of ``quantities`` (columns of the job
    frames, in seconds; the label names the quantity, e.g. "wait"), one line per run, one legend for all.

    One figure rather than one per quantity: the browser lays out one chart instead of several, and Streamlit
    re-creates charts placed in columns on every rerun."""
    fig = make_subplots(
        rows=1,
        cols=len(quantities),
        horizontal_spacing=0.08,
        subplot_titles=[f"{label} CDF" for _, label in quantities],
    )
    for k, (column, label) in enumerate(quantities, start=1):
        values = [f[column].to_numpy(dtype=float) for f in job_frames.values()]
        top = max((float(np.nanmax(v)) for v in values if v.size and np.isfinite(v).any()), default=1.0)
        unit, div = time_scale(top)
        for i, (name, v) in enumerate(zip(job_frames, values)):
            x, p = cdf_curve(v)
            fig.add_trace(
                go.Scatter(
                    x=x / div,
                    y=p * 100,
                    name=plain(name),
                    legendgroup=plain(name),
                    showlegend=k == 1,
                    mode="lines",
                    line=dict(shape="hv", color=PALETTE[i % len(PALETTE)]),
                    hovertemplate=f"{label} ≤ %{{x:.2f}} {unit}: %{{y:.1f}}% of jobs<extra>{plain(name)}</extra>",
                ),
                row=1,
                col=k,
            )
        fig.update_xaxes(title_text=f"{label} ({unit})", row=1, col=k)
        fig.update_yaxes(title_text="jobs (%)" if k == 1 else None, range=[0, 101], row=1, col=k)
    fig.update_layout(
        template="plotly_white", height=360, margin=dict(l=60, r=20, t=50, b=40), legend=dict(orientation="h", y=-0.25)
    )
    return fig

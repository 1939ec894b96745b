"""Plotly figures of sweeps and capacity plans (the app's Explore page; usable from notebooks).

* :func:`sweep_curves_figure`: a metric against load, one line per scheduler with its 95 % band over seeds,
  one panel per cluster.
* :func:`sweep_heatmap_figure`: a metric's mean over two of the grid's parameters.
* :func:`plan_figure`: a metric against node count per scheduler, the target as a line, each answer marked.
* :func:`tradeoff_figure`: one metric against another (wait against cost) per grid point, the Pareto front drawn.

Nothing here imports streamlit or ray.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.analysis.metrics import ALL_METRICS
from engine.analysis.sweep import CELL_COLUMNS, curve_stats
from engine.viz.style import PALETTE

#: Parameters of a sweep a heatmap can put on an axis.
HEATMAP_AXES = CELL_COLUMNS


def metric_title(metric: str) -> str:
    m = ALL_METRICS[metric]
    return m.label if m.unit in ("jobs", "count", "ratio") else f"{m.label} ({m.unit})"


def _band_rgba(colour: str, alpha: float = 0.18) -> str:
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def sweep_curves_figure(frame: pd.DataFrame, metric: str, *, load_label: str = "offered load") -> go.Figure:
    """``metric`` (mean over seeds) against load per scheduler, a shaded 95 % confidence band where there are at
    least two seeds; one panel per cluster of the sweep."""
    stats = curve_stats(frame, metric)
    clusters = list(dict.fromkeys(stats["cluster"]))
    schedulers = list(dict.fromkeys(stats["scheduler"]))
    fig = make_subplots(rows=1, cols=len(clusters), shared_yaxes=True, subplot_titles=clusters,
                        horizontal_spacing=0.04)
    for col, cluster in enumerate(clusters, start=1):
        for i, name in enumerate(schedulers):
            s = stats[(stats.cluster == cluster) & (stats.scheduler == name)].sort_values("load")
            if s.empty:
                continue
            colour = PALETTE[i % len(PALETTE)]
            x, mean, half = s["load"].to_numpy(), s["mean"].to_numpy(), s["ci95"].to_numpy()
            # Plain lists: small, and readable in the figure's JSON (numpy arrays are sent as binary).
            if np.isfinite(half).any():
                lo, hi = mean - np.nan_to_num(half), mean + np.nan_to_num(half)
                fig.add_trace(go.Scatter(x=np.concatenate([x, x[::-1]]).tolist(),
                                         y=np.concatenate([hi, lo[::-1]]).tolist(),
                                         mode="lines", fill="toself", fillcolor=_band_rgba(colour),
                                         line=dict(width=0),
                                         hoverinfo="skip", showlegend=False, legendgroup=name,
                                         name=f"{name} 95 % band"), row=1, col=col)
            fig.add_trace(go.Scatter(x=x.tolist(), y=mean.tolist(), mode="lines+markers", name=name,
                                     legendgroup=name, showlegend=col == 1, line=dict(color=colour),
                                     customdata=np.stack([np.nan_to_num(half), s["seeds"].to_numpy()], axis=1).tolist(),
                                     hovertemplate=f"{load_label} %{{x:g}}: %{{y:.4g}} ± %{{customdata[0]:.3g}} "
                                                   f"(%{{customdata[1]}} seeds)<extra>{name}</extra>"),
                          row=1, col=col)
        fig.update_xaxes(title_text=load_label, row=1, col=col)
    fig.update_yaxes(title_text=metric_title(metric), row=1, col=1)
    fig.update_layout(title=f"{metric_title(metric)} against {load_label} (mean over seeds, 95 % band)",
                      template="plotly_white", height=420, margin=dict(l=60, r=20, t=70, b=40),
                      legend=dict(orientation="h", y=-0.2))
    return fig


def sweep_heatmap_figure(frame: pd.DataFrame, metric: str, x: str, y: str) -> go.Figure:
    """The mean of ``metric`` over every cell with the same ``x`` and ``y`` (two of :data:`HEATMAP_AXES`)."""
    if x == y or x not in HEATMAP_AXES or y not in HEATMAP_AXES:
        raise ValueError(f"heatmap axes must be two different ones of {', '.join(HEATMAP_AXES)}")
    table = frame.pivot_table(index=y, columns=x, values=metric, aggfunc="mean", sort=False)
    fig = go.Figure(go.Heatmap(z=table.to_numpy(dtype=float).tolist(), x=[str(v) for v in table.columns],
                               y=[str(v) for v in table.index], colorscale="Viridis",
                               colorbar=dict(title=metric_title(metric)),
                               hovertemplate=f"{x} %{{x}}, {y} %{{y}}: %{{z:.4g}}<extra></extra>"))
    fig.update_layout(title=f"{metric_title(metric)}: mean over the other parameters", xaxis_title=x,
                      yaxis_title=y, template="plotly_white", height=360, margin=dict(l=90, r=20, t=60, b=40))
    fig.update_xaxes(type="category")
    fig.update_yaxes(type="category")
    return fig


def plan_figure(probes: Sequence[Mapping], answers: Mapping[str, int | None], metric: str,
                target_value: float) -> go.Figure:
    """``metric`` of every run of a plan against its node count, one line per scheduler, the target as a dashed
    line and each scheduler's answer (fewest nodes meeting it) as a larger marker."""
    runs = pd.DataFrame(list(probes), columns=["scheduler", "nodes", "gpus", "value", "meets", "unschedulable"])
    fig = go.Figure()
    for i, (name, group) in enumerate(runs.groupby("scheduler", sort=False)):
        colour = PALETTE[i % len(PALETTE)]
        group = group.sort_values("nodes")
        fig.add_trace(go.Scatter(x=group["nodes"].tolist(), y=group["value"].tolist(), mode="lines+markers",
                                 name=name, legendgroup=name, line=dict(color=colour),
                                 customdata=[[g, "meets" if ok else "misses"]
                                             for g, ok in zip(group["gpus"].tolist(), group["meets"].tolist())],
                                 hovertemplate="%{x} nodes (%{customdata[0]} GPUs): %{y:.4g}, %{customdata[1]}"
                                               f"<extra>{name}</extra>"))
        best = answers.get(name)
        if best is not None:
            at = group[group.nodes == best]
            fig.add_trace(go.Scatter(x=at["nodes"].tolist(), y=at["value"].tolist(), mode="markers", showlegend=False,
                                     legendgroup=name, marker=dict(size=15, color=colour, symbol="star"),
                                     name=f"{name}: {best} nodes", hoverinfo="name"))
    fig.add_hline(y=target_value, line_dash="dash", line_color="#444", annotation_text="target",
                  annotation_position="top left")
    fig.update_layout(title=f"{metric_title(metric)} against nodes (★ fewest nodes meeting the target)",
                      xaxis_title="nodes of the shape", yaxis_title=metric_title(metric), template="plotly_white",
                      height=400, margin=dict(l=60, r=20, t=60, b=40), legend=dict(orientation="h", y=-0.2))
    return fig


def pareto_front(x: Sequence[float], y: Sequence[float]) -> np.ndarray:
    """Which points no other point beats on both (lower ``x`` and lower ``y`` are better): those with no other
    point at most as large on both and smaller on one. NaN points are never on the front."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = ~(np.isnan(xs) | np.isnan(ys))
    front = np.zeros(xs.size, dtype=bool)
    for i in np.flatnonzero(ok):
        beaten = ok & (xs <= xs[i]) & (ys <= ys[i]) & ((xs < xs[i]) | (ys < ys[i]))
        front[i] = not beaten.any()
    return front


def tradeoff_figure(frame: pd.DataFrame, x: str = "cost_usd", y: str = "mean_wait_s") -> go.Figure:
    """``y`` against ``x`` (lower is better on both, e.g. wait against cost; a sweep frame with the energy columns),
    one marker per (cluster, load, scheduler) at its mean over seeds, one colour per scheduler; the Pareto front
    (:func:`pareto_front`: the points nothing beats on both) joined by a line."""
    means = frame.groupby(["cluster", "load", "scheduler"], sort=False)[[x, y]].mean().reset_index()
    front = means[pareto_front(means[x], means[y])].sort_values(x)
    fig = go.Figure(go.Scatter(x=front[x].tolist(), y=front[y].tolist(), mode="lines", name="Pareto front",
                               line=dict(color="#444", dash="dot"), hoverinfo="skip"))
    for i, (name, group) in enumerate(means.groupby("scheduler", sort=False)):
        fig.add_trace(go.Scatter(x=group[x].tolist(), y=group[y].tolist(), mode="markers", name=name,
                                 marker=dict(color=PALETTE[i % len(PALETTE)], size=9),
                                 customdata=group[["cluster", "load"]].astype(str).to_numpy().tolist(),
                                 hovertemplate=f"%{{customdata[0]}}, load %{{customdata[1]}}: "
                                               f"%{{x:.4g}}, %{{y:.4g}}<extra>{name}</extra>"))
    fig.update_layout(title=f"{metric_title(y)} against {metric_title(x)} (mean over seeds; dotted: Pareto front)",
                      xaxis_title=metric_title(x), yaxis_title=metric_title(y), template="plotly_white", height=420,
                      margin=dict(l=60, r=20, t=60, b=40), legend=dict(orientation="h", y=-0.2))
    return fig

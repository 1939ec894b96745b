"""Plotly figures of sweeps and capacity plans (the app's Explore page; usable from notebooks).

* :func:`sweep_curves_figure`: a metric against load, one line per scheduler with its 95 % band over seeds,
  one panel per cluster.
* :func:`sweep_heatmap_figure`: a metric's mean over two of the grid's parameters.
* :func:`plan_figure`: a metric against node count per scheduler, the target as a line, each answer marked.
* :func:`tradeoff_figure`: one metric against another (wait against cost) per grid point, the Pareto front drawn.

Durations are drawn in the time unit their size calls for (:func:`metric_scale`), bands stay inside the metric's
range (:data:`METRIC_RANGES`), and a cluster is labelled by :func:`cluster_label`, never by its JSON.

Nothing here imports streamlit or ray.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.analysis.metrics import ALL_METRICS
from engine.analysis.sweep import CELL_COLUMNS, curve_stats
from engine.errors import EngineError
from engine.sim.cluster import parse_cluster_text
from engine.units import plural
from engine.viz.style import PALETTE, plain, plain_all, time_scale

#: Parameters of a sweep a heatmap can put on an axis.
HEATMAP_AXES = CELL_COLUMNS
#: The values a metric can take (every metric is >= 0; these have tighter bounds): the 95 % band is clipped to them.
METRIC_RANGES = {
    "mean_bounded_slowdown": (1.0, math.inf),
    "utilization": (0.0, 1.0),
    "gini_user_wait": (0.0, 1.0),
    "jain_user_wait": (0.0, 1.0),
    "gini_gpu_busy": (0.0, 1.0),
    "fragmentation": (0.0, 1.0),
}


def metric_title(metric: str) -> str:
    m = ALL_METRICS[metric]
    return m.label if m.unit in ("jobs", "count", "ratio") else f"{m.label} ({m.unit})"


def metric_scale(metric: str, values) -> tuple[str, float]:
    """An axis title for ``metric`` and the divisor its values take on that axis: durations in the time unit their
    largest value calls for (``p95 wait (h)``, divide by 3600), other metrics as they are (divisor 1)."""
    if ALL_METRICS[metric].unit != "s":
        return metric_title(metric), 1.0
    finite = [abs(v) for v in np.asarray(values, dtype=float).ravel() if math.isfinite(v)]
    unit, div = time_scale(max(finite, default=0.0))
    return f"{ALL_METRICS[metric].label} ({unit})", div


def _range_text(metric: str) -> str:
    lo, hi = METRIC_RANGES.get(metric, (0.0, math.inf))
    return f"≥ {lo:g}" if hi == math.inf else f"{lo:g} to {hi:g}"


def cluster_label(spec: str) -> str:
    """A cluster of a sweep as a short label: its shorthand, with its racks counted (a cluster spec may be a JSON
    object of many lines); text that is no cluster is cut to 40 characters."""
    try:
        cluster = parse_cluster_text(spec)
    except EngineError:
        return spec if len(spec) <= 40 else spec[:37] + "..."
    label = cluster.to_shorthand()
    racks = {g.rack for g in cluster.groups if g.rack is not None}
    if racks:
        return f"{label} on {plural(len(racks), 'rack')}"
    return label if cluster.to_spec() == label else f"{label} (custom)"


def _band_rgba(colour: str, alpha: float = 0.18) -> str:
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _band(x, mean, half, metric: str, colour: str, name: str, div: float) -> go.Scatter:
    """The 95 % band mean +/- half, clipped to the values ``metric`` can take, divided by ``div``."""
    lo, hi = METRIC_RANGES.get(metric, (0.0, math.inf))
    low, high = (np.clip(mean + sign * np.nan_to_num(half), lo, hi) / div for sign in (-1, 1))
    # Plain lists: small, and readable in the figure's JSON (numpy arrays are sent as binary).
    return go.Scatter(
        x=np.concatenate([x, x[::-1]]).tolist(),
        y=np.concatenate([high, low[::-1]]).tolist(),
        mode="lines",
        fill="toself",
        fillcolor=_band_rgba(colour),
        line=dict(width=0),
        hoverinfo="skip",
        showlegend=False,
        legendgroup=plain(name),
        name=f"{plain(name)} 95 % band",
    )


def _band_key(metric: str) -> go.Scatter:
    """A legend entry (no data) saying what the shaded bands are and where they are clipped."""
    return go.Scatter(
        x=[None],
        y=[None],
        mode="lines",
        fill="toself",
        fillcolor="rgba(120,120,120,0.25)",
        line=dict(width=0),
        name=f"shaded: 95 % band over seeds, clipped to {_range_text(metric)}",
        legendgroup="band key",
        hoverinfo="skip",
    )


def sweep_curves_figure(frame: pd.DataFrame, metric: str, *, load_label: str = "offered load") -> go.Figure:
    """``metric`` (mean over seeds) against load per scheduler, a shaded 95 % confidence band (clipped to the
    metric's range, :data:`METRIC_RANGES`) where there are at least two seeds; one panel per cluster of the sweep,
    titled by :func:`cluster_label`; durations in the time unit their size calls for."""
    stats = curve_stats(frame, metric)
    clusters = list(dict.fromkeys(stats["cluster"]))
    schedulers = list(dict.fromkeys(stats["scheduler"]))
    title, div = metric_scale(metric, stats["mean"])
    fig = make_subplots(
        rows=1,
        cols=len(clusters),
        shared_yaxes=True,
        horizontal_spacing=0.04,
        subplot_titles=[plain(cluster_label(str(c))) for c in clusters],
    )
    for col, cluster in enumerate(clusters, start=1):
        for i, name in enumerate(schedulers):
            s = stats[(stats.cluster == cluster) & (stats.scheduler == name)].sort_values("load")
            if s.empty:
                continue
            colour = PALETTE[i % len(PALETTE)]
            x, mean, half = s["load"].to_numpy(), s["mean"].to_numpy(), s["ci95"].to_numpy()
            if np.isfinite(half).any():
                fig.add_trace(_band(x, mean, half, metric, colour, name, div), row=1, col=col)
            fig.add_trace(
                go.Scatter(
                    x=x.tolist(),
                    y=(mean / div).tolist(),
                    mode="lines+markers",
                    name=plain(name),
                    legendgroup=plain(name),
                    showlegend=col == 1,
                    line=dict(color=colour),
                    customdata=np.stack([np.nan_to_num(half) / div, s["seeds"].to_numpy()], axis=1).tolist(),
                    hovertemplate=f"{load_label} %{{x:g}}: %{{y:.3g}} ± %{{customdata[0]:.2g}} "
                    f"(%{{customdata[1]}} seeds)<extra>{plain(name)}</extra>",
                ),
                row=1,
                col=col,
            )
        fig.update_xaxes(title_text=load_label, row=1, col=col)
    if (stats["ci95"].notna()).any():
        fig.add_trace(_band_key(metric))
    fig.update_yaxes(title_text=title, row=1, col=1)
    fig.update_layout(
        title=f"{title} against {load_label} (mean over seeds, 95 % band)",
        template="plotly_white",
        height=440,
        margin=dict(l=60, r=20, t=70, b=40),
        legend=dict(orientation="h", y=-0.2),
    )
    return fig


def sweep_heatmap_figure(frame: pd.DataFrame, metric: str, x: str, y: str) -> go.Figure:
    """The mean of ``metric`` over every cell with the same ``x`` and ``y`` (two of :data:`HEATMAP_AXES`)."""
    if x == y or x not in HEATMAP_AXES or y not in HEATMAP_AXES:
        raise ValueError(f"heatmap axes must be two different ones of {', '.join(HEATMAP_AXES)}")
    table = frame.pivot_table(index=y, columns=x, values=metric, aggfunc="mean", sort=False)
    z = table.to_numpy(dtype=float)
    title, div = metric_scale(metric, z)

    def labels(axis: str, values) -> list[str]:
        return plain_all(cluster_label(str(v)) if axis == "cluster" else v for v in values)

    fig = go.Figure(
        go.Heatmap(
            z=(z / div).tolist(),
            x=labels(x, table.columns),
            y=labels(y, table.index),
            colorscale="Viridis",
            colorbar=dict(title=title),
            hovertemplate=f"{x} %{{x}}, {y} %{{y}}: %{{z:.3g}}<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"{title}: mean over the other parameters",
        xaxis_title=x,
        yaxis_title=y,
        template="plotly_white",
        height=360,
        margin=dict(l=90, r=20, t=60, b=40),
    )
    fig.update_xaxes(type="category")
    fig.update_yaxes(type="category")
    return fig


def plan_figure(
    probes: Sequence[Mapping], answers: Mapping[str, int | None], metric: str, target_value: float
) -> go.Figure:
    """``metric`` of every run of a plan against its node count, one line per scheduler, the target as a dashed
    line and each scheduler's answer (fewest nodes meeting it) as a larger marker."""
    runs = pd.DataFrame(list(probes), columns=["scheduler", "nodes", "gpus", "value", "meets", "unschedulable"])
    title, div = metric_scale(metric, [*runs["value"], target_value])
    runs["value"] = runs["value"] / div
    fig = go.Figure()
    for i, (name, group) in enumerate(runs.groupby("scheduler", sort=False)):
        colour = PALETTE[i % len(PALETTE)]
        group = group.sort_values("nodes")
        fig.add_trace(
            go.Scatter(
                x=group["nodes"].tolist(),
                y=group["value"].tolist(),
                mode="lines+markers",
                name=plain(name),
                legendgroup=plain(name),
                line=dict(color=colour),
                customdata=[
                    [g, "meets" if ok else "misses"] for g, ok in zip(group["gpus"].tolist(), group["meets"].tolist())
                ],
                hovertemplate="%{x} nodes (%{customdata[0]} GPUs): %{y:.3g}, %{customdata[1]}"
                f"<extra>{plain(name)}</extra>",
            )
        )
        best = answers.get(name)
        if best is not None:
            at = group[group.nodes == best]
            fig.add_trace(
                go.Scatter(
                    x=at["nodes"].tolist(),
                    y=at["value"].tolist(),
                    mode="markers",
                    showlegend=False,
                    legendgroup=plain(name),
                    marker=dict(size=15, color=colour, symbol="star"),
                    name=f"{plain(name)}: {best} nodes",
                    hoverinfo="name",
                )
            )
    fig.add_hline(
        y=target_value / div,
        line_dash="dash",
        line_color="#444",
        annotation_text="target",
        annotation_position="top left",
    )
    fig.update_layout(
        title=f"{title} against nodes (★ fewest nodes meeting the target)",
        xaxis_title="nodes of the shape",
        yaxis_title=title,
        template="plotly_white",
        height=400,
        margin=dict(l=60, r=20, t=60, b=40),
        legend=dict(orientation="h", y=-0.2),
    )
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
    fig = go.Figure(
        go.Scatter(
            x=front[x].tolist(),
            y=front[y].tolist(),
            mode="lines",
            name="Pareto front",
            line=dict(color="#444", dash="dot"),
            hoverinfo="skip",
        )
    )
    for i, (name, group) in enumerate(means.groupby("scheduler", sort=False)):
        fig.add_trace(
            go.Scatter(
                x=group[x].tolist(),
                y=group[y].tolist(),
                mode="markers",
                name=plain(name),
                marker=dict(color=PALETTE[i % len(PALETTE)], size=9),
                customdata=[[plain(cluster_label(str(c))), load] for c, load in zip(group["cluster"], group["load"])],
                hovertemplate=f"%{{customdata[0]}}, load %{{customdata[1]}}: "
                f"%{{x:.4g}}, %{{y:.4g}}<extra>{plain(name)}</extra>",
            )
        )
    fig.update_layout(
        title=f"{metric_title(y)} against {metric_title(x)} (mean over seeds; dotted: Pareto front)",
        xaxis_title=metric_title(x),
        yaxis_title=metric_title(y),
        template="plotly_white",
        height=420,
        margin=dict(l=60, r=20, t=60, b=40),
        legend=dict(orientation="h", y=-0.2),
    )
    return fig

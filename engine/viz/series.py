"""The run's state over time: queue length, GPU utilisation and (with an energy model) the facility's power, as
step series thinned for drawing."""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.analysis.energy import gpu_power_w, power_series
from engine.sim.options import EnergyModel
from engine.sim.simulator import Result
from engine.viz.style import PALETTE, plain, time_scale


def series_frame(result: Result) -> pd.DataFrame:
    """The run's state over time: ``t_s, queue, running, busy_gpus, utilization`` (busy share, 0..1)."""
    n = max(result.cluster.n_gpus, 1)
    busy = np.asarray(result.series_busy_gpus, dtype=float)
    return pd.DataFrame(
        {
            "t_s": np.asarray(result.series_t, dtype=float),
            "queue": np.asarray(result.series_queue, dtype=np.int64),
            "running": np.asarray(result.series_running, dtype=np.int64),
            "busy_gpus": busy,
            "utilization": busy / n,
        }
    )


def step_at(t_s: np.ndarray, values: np.ndarray, at_s: np.ndarray) -> np.ndarray:
    """Value of the step function (``values[i]`` holds from ``t_s[i]`` on) at each time in ``at_s``;
    0 before the first change."""
    t_s, values = np.asarray(t_s, dtype=float), np.asarray(values)
    idx = np.searchsorted(t_s, np.asarray(at_s, dtype=float), side="right") - 1
    out = np.where(idx >= 0, values[np.clip(idx, 0, max(len(values) - 1, 0))] if len(values) else 0, 0)
    return out.astype(float)


#: Lines of step series and CDFs are drawn with at most this many points: a chart is about 1,000 pixels wide,
#: and every extra point costs the browser time.
MAX_POINTS = 600


def binned_series(
    t_s: np.ndarray, values: np.ndarray, t_end_s: float, bins: int = MAX_POINTS, how: str = "max"
) -> tuple[np.ndarray, np.ndarray]:
    """A step series (``values[i]`` holds from ``t_s[i]`` to the next change, 0 before the first) reduced
    to ``bins`` equal time bins over ``[0, t_end_s]``: per bin its maximum (``how="max"``, keeps peaks such
    as queue spikes) or its time-weighted mean (``how="mean"``). Returns ``(bin start times, values)``;
    a series with at most ``bins`` changes is returned unchanged."""
    t_s, values = np.asarray(t_s, dtype=float), np.asarray(values, dtype=float)
    if len(t_s) <= bins or t_end_s <= 0:
        return t_s, values
    edges = np.linspace(0.0, t_end_s, bins + 1)
    if how == "mean":
        # Integral of the step function at each edge, then differences per bin.
        seg_end = np.append(t_s[1:], max(t_end_s, t_s[-1]))
        area = np.concatenate([[0.0], np.cumsum(values * (seg_end - t_s))])
        k = np.searchsorted(t_s, edges, side="right") - 1
        kc = np.clip(k, 0, None)
        upto = np.where(k >= 0, area[kc] + values[kc] * (edges - t_s[kc]), 0.0)
        return edges[:-1], np.diff(upto) / np.diff(edges)
    if how != "max":
        raise ValueError(f"how must be 'max' or 'mean', got {how!r}")
    # Max per bin: the value holding at the bin start, and every change inside the bin.
    start_val = step_at(t_s, values, edges[:-1])
    b = np.clip(np.searchsorted(edges, t_s, side="right") - 1, 0, bins - 1)
    out = start_val.copy()
    np.maximum.at(out, b, values)
    return edges[:-1], out


def power_kw(result: Result, energy: EnergyModel) -> tuple[np.ndarray, np.ndarray]:
    """The facility's power over the run as a step series in kW (:func:`~engine.analysis.energy.power_series`),
    from time 0, when the cluster idles."""
    t_s, power_w = power_series(result, energy)
    idle_w = energy.pue * float(gpu_power_w(result.cluster)[0].sum())
    return np.concatenate([[0.0], t_s]), np.concatenate([[idle_w], power_w]) / 1000


def series_figure(results: Mapping[str, Result], energy: EnergyModel | None = None) -> go.Figure:
    """Queue length (jobs) and utilisation (% of GPUs busy) over time, one line per run; with ``energy``, a third
    panel: the facility's power (kW, time-weighted mean per bin)."""
    t_end = max((float(r.series_t[-1]) for r in results.values() if len(r.series_t)), default=1.0)
    unit, div = time_scale(t_end)
    rows = 2 if energy is None else 3
    fig = make_subplots(
        rows=rows,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.08,
        subplot_titles=("jobs waiting", "GPU utilisation", "facility power")[:rows],
    )
    for i, (run, r) in enumerate(results.items()):
        s, name = series_frame(r), plain(run)
        colour = PALETTE[i % len(PALETTE)]
        tq, q = binned_series(s["t_s"], s["queue"], t_end, how="max")
        tu, u = binned_series(s["t_s"], s["utilization"], t_end, how="mean")
        fig.add_trace(
            go.Scatter(x=tq / div, y=q, name=name, legendgroup=name, mode="lines", line=dict(shape="hv", color=colour)),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Scatter(
                x=tu / div,
                y=u * 100,
                name=name,
                legendgroup=name,
                showlegend=False,
                mode="lines",
                line=dict(shape="hv", color=colour),
            ),
            row=2,
            col=1,
        )
        if energy is not None:
            tp, p = binned_series(*power_kw(r, energy), t_end, how="mean")
            fig.add_trace(
                go.Scatter(
                    x=tp / div,
                    y=p,
                    name=name,
                    legendgroup=name,
                    showlegend=False,
                    mode="lines",
                    line=dict(shape="hv", color=colour),
                ),
                row=3,
                col=1,
            )
    fig.update_yaxes(
        title_text="queue (jobs; max per bin)" if _binned(results) else "queue (jobs)", rangemode="tozero", row=1, col=1
    )
    fig.update_yaxes(title_text="busy GPUs (%)", range=[0, 105], row=2, col=1)
    if energy is not None:
        fig.update_yaxes(title_text=f"kW (PUE {energy.pue:g})", rangemode="tozero", row=3, col=1)
    fig.update_xaxes(title_text=f"time ({unit})", row=rows, col=1)
    fig.update_layout(
        height=460 if rows == 2 else 640,
        template="plotly_white",
        margin=dict(l=60, r=20, t=40, b=40),
        legend=dict(orientation="h", y=-0.18),
    )
    return fig


def _binned(results: Mapping[str, Result]) -> bool:
    return any(len(r.series_t) > MAX_POINTS for r in results.values())

"""Plotly figures and the data shaping behind them, for the playground and for notebooks.

Pure functions of results and frames: nothing here imports streamlit or torch, so every figure can be
built and checked in a unit test. Every axis title carries its unit.

Main pieces:

* :func:`segments_frame`: one row per (run segment, GPU) of a :class:`engine.Result`, the raw material of
  per-GPU timelines.
* :func:`timeline_figure`: the animated per-GPU timelines of several schedulers side by side, with a play
  button and a time slider moving a cursor, and each scheduler's queue length underneath. Large runs switch
  to WebGL bars or to a GPU x time heatmap (:func:`timeline_mode` decides; the figure's ``meta`` says which).
* :func:`series_figure`, :func:`cdf_figure`, :func:`user_wait_figure`: queue length and utilisation over
  time, JCT/wait CDFs, per-user mean waits.
* workload and cluster pictures: :func:`arrivals_figure`, :func:`gpu_count_figure`,
  :func:`duration_figure`, :func:`user_volume_figure`, :func:`offered_load_figure`, :func:`cluster_figure`.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.sim.cluster import Cluster
from engine.sim.job import Job
from engine.sim.simulator import Result
from engine.units import human_seconds

#: Colour-blind-safe qualitative palette (Okabe-Ito, then Plotly's "Safe"); the last entry is for "other".
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#332288",
           "#117733", "#882255", "#44AA99", "#999933")
OTHER_COLOUR = "#BBBBBB"
#: At most this many categories get their own colour; the rest are drawn as "other".
MAX_CATEGORIES = len(PALETTE)
#: Animation frames of the timeline cursor.
MAX_FRAMES = 200
#: The time slider labels one step in this many: the browser measures every label it draws (a forced layout
#: each), which made 200 labelled steps about half the time of drawing the timeline in our browser benchmark.
SLIDER_LABEL_EVERY = 20
#: Above this many jobs in any one run, or this many bars (run segments x GPUs) in the whole figure, timelines
#: are drawn as a raster: one row per GPU, RASTER_BINS time cells coloured like the job holding the GPU.
#: SVG bars of that many jobs take seconds to lay out in a browser, WebGL bars (``mode="webgl"``) about
#: twice as long as the raster in our browser benchmark.
WEBGL_JOBS = 3000
WEBGL_BARS = 8000
#: Raster time cells per GPU: about one per pixel of a 1,200 px wide page shared by the columns, between
#: RASTER_MIN_BINS and RASTER_BINS (more cells than pixels only cost download and drawing time).
RASTER_BINS = 400
RASTER_MIN_BINS = 150
RASTER_WIDTH_PX = 1200
#: Above this many GPUs, rows are grouped into bands and the timeline shows each band's busy share.
HEATMAP_GPUS = 512
#: Busy-share heatmap resolution: at most this many time bins and rows (GPUs are grouped into bands).
HEATMAP_BINS = 300
HEATMAP_ROWS = 256

_TIME_UNITS = (("s", 1.0), ("min", 60.0), ("h", 3600.0), ("d", 86400.0))


def time_scale(span_s: float) -> tuple[str, float]:
    """The unit that keeps a span of ``span_s`` seconds readable: ``(label, seconds per unit)``."""
    span_s = abs(float(span_s)) if math.isfinite(span_s) else 0.0
    label, div = _TIME_UNITS[0]
    for name, secs in _TIME_UNITS:
        if span_s >= 3 * secs:
            label, div = name, secs
    return label, div


# ----------------------------------------------------------------------------- data shaping
def segments_frame(result: Result) -> pd.DataFrame:
    """One row per (run segment, GPU): ``job_id, gpu, start_s, end_s, fraction, user, job_type, gpus``.

    A job that ran on 4 GPUs in one segment gives 4 rows; a job preempted once gives rows for both segments.
    """
    ptr = np.asarray(result.seg_gpu_ptr, dtype=np.int64)
    counts = np.diff(ptr)
    seg_idx = np.repeat(np.arange(len(counts)), counts)
    job = np.asarray(result.seg_job, dtype=np.int64)[seg_idx]
    users = np.array([j.user for j in result.jobs], dtype=object)
    types = np.array([j.job_type for j in result.jobs], dtype=object)
    gpus = np.array([j.gpus for j in result.jobs], dtype=np.int64)
    return pd.DataFrame({
        "job_id": job,
        "gpu": np.asarray(result.seg_gpu_ids, dtype=np.int64)[: len(seg_idx)],
        "start_s": np.asarray(result.seg_start_s, dtype=float)[seg_idx],
        "end_s": np.asarray(result.seg_end_s, dtype=float)[seg_idx],
        "fraction": np.asarray(result.seg_fraction, dtype=float)[seg_idx],
        "user": users[job] if len(job) else np.array([], dtype=object),
        "job_type": types[job] if len(job) else np.array([], dtype=object),
        "gpus": gpus[job] if len(job) else np.array([], dtype=np.int64),
    })


def series_frame(result: Result) -> pd.DataFrame:
    """The run's state over time: ``t_s, queue, running, busy_gpus, utilization`` (busy share, 0..1)."""
    n = max(result.cluster.n_gpus, 1)
    busy = np.asarray(result.series_busy_gpus, dtype=float)
    return pd.DataFrame({
        "t_s": np.asarray(result.series_t, dtype=float),
        "queue": np.asarray(result.series_queue, dtype=np.int64),
        "running": np.asarray(result.series_running, dtype=np.int64),
        "busy_gpus": busy,
        "utilization": busy / n,
    })


def step_at(t_s: np.ndarray, values: np.ndarray, at_s: np.ndarray) -> np.ndarray:
    """Value of the step function (``values[i]`` holds from ``t_s[i]`` on) at each time in ``at_s``;
    0 before the first change."""
    t_s, values = np.asarray(t_s, dtype=float), np.asarray(values)
    idx = np.searchsorted(t_s, np.asarray(at_s, dtype=float), side="right") - 1
    out = np.where(idx >= 0, values[np.clip(idx, 0, max(len(values) - 1, 0))] if len(values) else 0, 0)
    return out.astype(float)


def cdf_points(values: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Empirical CDF of the finite values: sorted values and the share of values <= each (0..1]."""
    v = np.sort(np.asarray(values, dtype=float))
    v = v[np.isfinite(v)]
    if v.size == 0:
        return v, v
    return v, np.arange(1, v.size + 1) / v.size


#: Lines of step series and CDFs are drawn with at most this many points: a chart is about 1,000 pixels wide,
#: and every extra point costs the browser time.
MAX_POINTS = 600


def binned_series(t_s: np.ndarray, values: np.ndarray, t_end_s: float, bins: int = MAX_POINTS,
                  how: str = "max") -> tuple[np.ndarray, np.ndarray]:
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


def cdf_curve(values: Sequence[float], points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """:func:`cdf_points` thinned to at most ``points`` points (the value at evenly spaced ranks, always
    including the largest), for drawing."""
    v, p = cdf_points(values)
    if v.size <= points:
        return v, p
    idx = np.unique(np.linspace(0, v.size - 1, points).round().astype(np.int64))
    return v[idx], p[idx]


def category_colours(values: Sequence[str], limit: int = MAX_CATEGORIES) -> dict[str, str]:
    """Colour per category: the ``limit - 1`` most frequent get palette colours (ties by name), the rest
    map to grey under the name ``"other"``. Deterministic for equal inputs."""
    counts = pd.Series(list(values), dtype=object).value_counts()
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))
    names = [str(k) for k, _ in ordered]
    if len(names) <= limit:
        return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(sorted(names))}
    top = sorted(names[: limit - 1])
    out = {name: PALETTE[i] for i, name in enumerate(top)}
    out.update({name: OTHER_COLOUR for name in names[limit - 1:]})
    return out


#: How a timeline can be drawn (see :func:`timeline_figure`).
TIMELINE_MODES = ("bars", "webgl", "raster", "heatmap")


def timeline_mode(results: Sequence[Result]) -> str:
    """The drawing the size of the runs calls for: ``"bars"`` (SVG), ``"raster"`` or ``"heatmap"``."""
    if not results:
        return "bars"
    n_gpus = max(r.cluster.n_gpus for r in results)
    segs = sum(len(r.seg_gpu_ids) for r in results)
    jobs = max(r.n_jobs for r in results)
    if n_gpus > HEATMAP_GPUS:
        return "heatmap"
    if jobs > WEBGL_JOBS or segs > WEBGL_BARS:
        return "raster"
    return "bars"


def raster_bins(n_columns: int) -> int:
    """Time cells per GPU of a raster timeline drawn in ``n_columns`` side-by-side columns."""
    return int(min(RASTER_BINS, max(RASTER_MIN_BINS, RASTER_WIDTH_PX // max(n_columns, 1))))


def raster_jobs(seg: pd.DataFrame, n_gpus: int, t_end_s: float, bins: int) -> np.ndarray:
    """Which job holds each GPU in each of ``bins`` equal time cells over ``[0, t_end_s]``: an int array
    ``(n_gpus, bins)`` of job ids, -1 where the GPU is idle. A cell belongs to the segment that covers its
    midpoint (when fractional jobs share a GPU, the one that started last)."""
    grid = np.full((n_gpus, bins), -1, dtype=np.int32)
    if len(seg) == 0 or t_end_s <= 0:
        return grid
    width = t_end_s / bins
    order = np.argsort(seg["start_s"].to_numpy(), kind="stable")
    start = seg["start_s"].to_numpy()[order] / width - 0.5
    end = seg["end_s"].to_numpy()[order] / width - 0.5
    first = np.clip(np.ceil(start), 0, bins).astype(np.int64)  # first cell whose midpoint >= start
    stop = np.clip(np.ceil(end), 0, bins).astype(np.int64)  # first cell whose midpoint >= end
    for g, a, b, j in zip(seg["gpu"].to_numpy()[order].tolist(), first.tolist(), stop.tolist(),
                          seg["job_id"].to_numpy()[order].tolist()):
        if b > a:
            grid[g, a:b] = j
    return grid


def busy_grid(seg: pd.DataFrame, n_gpus: int, edges_s: np.ndarray, rows: int) -> np.ndarray:
    """Mean busy share of each band of GPUs in each time bin: shape ``(rows, len(edges_s) - 1)``, 0..1.

    GPUs ``0..n_gpus-1`` are split into ``rows`` consecutive bands of (nearly) equal size. Each segment row
    contributes ``fraction x overlap`` with every bin, computed in O(segments + bins) per band: partial first
    and last bins directly, full bins through a difference array.
    """
    edges_s = np.asarray(edges_s, dtype=float)
    n_bins = len(edges_s) - 1
    width = np.diff(edges_s)
    band = (seg["gpu"].to_numpy() * rows) // max(n_gpus, 1)
    start = seg["start_s"].to_numpy(dtype=float)
    end = seg["end_s"].to_numpy(dtype=float)
    frac = seg["fraction"].to_numpy(dtype=float)
    grid = np.zeros((rows, n_bins))
    full = np.zeros((rows, n_bins + 1))
    b0 = np.clip(np.searchsorted(edges_s, start, side="right") - 1, 0, n_bins - 1)
    b1 = np.clip(np.searchsorted(edges_s, end, side="left") - 1, 0, n_bins - 1)
    same = b0 == b1
    # Segments within one bin.
    np.add.at(grid, (band[same], b0[same]), frac[same] * (end[same] - start[same]))
    # Segments over several bins: partial first and last bins, then the full bins between them.
    m = ~same
    np.add.at(grid, (band[m], b0[m]), frac[m] * (edges_s[b0[m] + 1] - start[m]))
    np.add.at(grid, (band[m], b1[m]), frac[m] * (end[m] - edges_s[b1[m]]))
    inner = m & (b1 > b0 + 1)
    np.add.at(full, (band[inner], b0[inner] + 1), frac[inner])
    np.add.at(full, (band[inner], b1[inner]), -frac[inner])
    grid += np.cumsum(full, axis=1)[:, :n_bins] * width
    per_band = np.bincount((np.arange(n_gpus) * rows) // max(n_gpus, 1), minlength=rows).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = grid / (width[None, :] * per_band[:, None])
    return np.nan_to_num(np.clip(out, 0.0, 1.0))


# ----------------------------------------------------------------------------- timelines
def timeline_figure(results: Mapping[str, Result], *, color_by: str = "user", frames: int = MAX_FRAMES,
                    mode: str | None = None, animate: bool = True) -> go.Figure:
    """Per-GPU timelines of several runs side by side (one column each), queue length under each.

    One row per GPU; each job's run segments are horizontal bars coloured by ``color_by`` (``"user"`` or
    ``"job_type"``). With ``animate`` the figure has up to ``frames`` animation frames, a play button and a
    time slider; each frame moves a cursor over every column at once. ``mode`` (default:
    :func:`timeline_mode`) picks SVG bars, WebGL bars or a busy-share heatmap; ``fig.layout.meta`` records
    ``{"mode", "frames", "time_unit"}``.
    """
    if color_by not in ("user", "job_type"):
        raise ValueError(f"color_by must be 'user' or 'job_type', got {color_by!r}")
    names = list(results)
    runs = [results[n] for n in names]
    mode = mode or timeline_mode(runs)
    if mode not in TIMELINE_MODES:
        raise ValueError(f"mode must be one of {', '.join(TIMELINE_MODES)}, got {mode!r}")
    n_cols = max(len(runs), 1)
    n_gpus = max((r.cluster.n_gpus for r in runs), default=1)
    t_end = max((float(np.nanmax(r.seg_end_s)) if len(r.seg_end_s) else 0.0 for r in runs), default=0.0)
    t_end = max(t_end, max((float(r.series_t[-1]) if len(r.series_t) else 0.0 for r in runs), default=0.0), 1.0)
    unit, div = time_scale(t_end)
    fig = make_subplots(rows=2, cols=n_cols, shared_xaxes=True, row_heights=[0.8, 0.2], vertical_spacing=0.04,
                        horizontal_spacing=min(0.04, 0.3 / n_cols), subplot_titles=names or ["(no run)"])
    # Everything added below is built here from plain numbers: skip Plotly's per-property validation, which
    # otherwise takes about half of this function's time (see _set_unvalidated for the same reasoning).
    fig._validate = False
    fig.layout._validate = False
    frames_seg = {name: segments_frame(r) for name, r in zip(names, runs)}
    all_cats = pd.concat([f[color_by] for f in frames_seg.values()]) if frames_seg else pd.Series([], dtype=object)
    colours = category_colours(all_cats.tolist())
    height_px = int(min(max(10 * n_gpus, 260), 640))
    line_px = max(1.0, min(18.0, 0.8 * height_px / n_gpus))
    scatter = go.Scattergl if mode == "webgl" else go.Scatter
    legend_done: set[str] = set()
    shapes: list[dict] = []
    # One queue scale for all columns, so their heights compare.
    q_top = 1.05 * max((int(r.series_queue.max()) for r in runs if len(r.series_queue)), default=1) + 0.5
    for col, (name, r) in enumerate(zip(names, runs), start=1):
        seg = frames_seg[name]
        if mode == "heatmap":
            bins = min(HEATMAP_BINS, max(10, len(seg)))
            edges = np.linspace(0.0, t_end, bins + 1)
            rows = min(HEATMAP_ROWS, r.cluster.n_gpus)
            grid = busy_grid(seg, r.cluster.n_gpus, edges, rows)
            fig.add_trace(go.Heatmap(
                z=grid * 100, x=(edges[:-1] + edges[1:]) / 2 / div, y=np.arange(rows), zmin=0, zmax=100,
                colorscale="Blues", showscale=(col == 1), colorbar=dict(title="busy (%)", len=0.7, y=0.6),
                hovertemplate=f"t=%{{x:.2f}} {unit}<br>row %{{y}}<br>busy %{{z:.0f}}%<extra>{name}</extra>"),
                row=1, col=col)
        elif mode == "raster":
            _add_raster(fig, seg, r, col, name, color_by, colours, t_end, div, unit, legend_done,
                        raster_bins(n_cols))
        else:
            lay = r.cluster.layout
            cats = seg[color_by].astype(str).map(lambda c: c if colours.get(c) != OTHER_COLOUR else "other")
            gpu_type = lay.gpu_type[seg["gpu"].to_numpy()] if len(seg) else np.array([], dtype=np.int64)
            other = "user" if color_by == "job_type" else "job_type"
            for cat in sorted(cats.unique(), key=lambda c: (c == "other", c)):
                for t in np.unique(gpu_type[cats.to_numpy() == cat]):
                    # One trace per (colour, GPU type): the hover names the type without a string per point.
                    part = seg[(cats.to_numpy() == cat) & (gpu_type == t)]
                    k = len(part)
                    # float32 and small ints halve what the browser downloads; display precision is ample.
                    x = np.empty(3 * k, dtype=np.float32)
                    x[0::3], x[1::3], x[2::3] = part["start_s"] / div, part["end_s"] / div, np.nan
                    y = np.empty(3 * k, dtype=np.float32)
                    y[0::3] = y[1::3] = part["gpu"].to_numpy()
                    y[2::3] = np.nan
                    small = np.int16 if max(r.n_jobs, lay.n_nodes) < 2**15 else np.int32
                    ids = np.repeat(np.stack([part["job_id"].to_numpy(), lay.gpu_node[part["gpu"].to_numpy()]],
                                             axis=1), 3, axis=0).astype(small)
                    text = np.repeat(part[other].astype(str).to_numpy(), 3)
                    fig.add_trace(scatter(
                        x=x, y=y, mode="lines", name=cat, legendgroup=cat, showlegend=cat not in legend_done,
                        line=dict(color=OTHER_COLOUR if cat == "other" else colours[cat], width=line_px),
                        customdata=ids, text=text, connectgaps=False,
                        hovertemplate=f"job %{{customdata[0]}} · {color_by.replace('_', ' ')} {cat} · "
                                      f"{other.replace('_', ' ')} %{{text}}<br>GPU %{{y}} · "
                                      f"{lay.type_names[int(t)]} · node %{{customdata[1]}}<br>t=%{{x:.2f}} {unit}"
                                      f"<extra>{name}</extra>"), row=1, col=col)
                    legend_done.add(cat)
        tq, q = binned_series(r.series_t, r.series_queue, t_end, how="max")
        fig.add_trace(go.Scatter(x=tq / div, y=q, mode="lines", line=dict(shape="hv", color="#555"),
                                 name="queue", showlegend=False,
                                 hovertemplate=f"t=%{{x:.2f}} {unit}<br>%{{y}} jobs waiting<extra>{name}</extra>"),
                      row=2, col=col)
        per_row = math.ceil(r.cluster.n_gpus / min(HEATMAP_ROWS, r.cluster.n_gpus)) if mode == "heatmap" else 1
        y_title = f"GPU band (row of ≤{per_row} GPUs)" if per_row > 1 else "GPU (node · type)"
        ticks = {} if per_row > 1 else {**_gpu_ticks(r.cluster), "showticklabels": col == 1}
        if per_row == 1:
            shapes += _gpu_bands(r.cluster, col)
        fig.update_yaxes(title_text=y_title if col == 1 else None, autorange="reversed",
                         range=None, showgrid=False, row=1, col=col, **ticks)
        fig.update_yaxes(title_text="queue (jobs)" if col == 1 else None, range=[0, q_top], row=2, col=col)
        fig.update_xaxes(title_text=f"time ({unit})", range=[0, t_end / div], row=2, col=col)
    if shapes:
        fig.layout._validate = True  # set once, validated once (they are few)
        fig.update_layout(shapes=shapes)
        fig.layout._validate = False
    n_frames = 0
    if animate and runs:
        n_frames = _add_cursor_animation(fig, runs, t_end, div, unit, n_gpus, frames)
    fig.update_layout(
        height=height_px + (380 if n_frames else 230), template="plotly_white",
        # Room for the node/type tick labels on the left, the slider and the play button below.
        margin=dict(l=110 if mode != "heatmap" else 60, r=20, t=50, b=200 if n_frames else 40),
        legend=dict(orientation="h", yanchor="bottom", y=1.04, x=0, title_text=color_by.replace("_", " ")),
        meta={"mode": mode, "frames": n_frames, "time_unit": unit}, hovermode="closest", uirevision="timeline")
    return fig


#: Nodes are named on the timeline's axis (one tick each) and shaded in alternate bands up to this many.
NODE_TICKS = 32


def _gpu_ticks(cluster: Cluster) -> dict:
    """Axis ticks of a per-GPU timeline: one per node (``n3 · A100-80``) for small clusters, else one per run of
    nodes of a GPU type (``A100-80 ×64``), at the middle of its GPUs."""
    lay = cluster.layout
    first, count = lay.node_first_gpu.astype(float), lay.node_gpus.astype(float)
    if lay.n_nodes <= NODE_TICKS:
        vals: np.ndarray | list[float] = first + (count - 1) / 2
        text = [f"n{i} · {lay.type_names[int(t)]}" for i, t in enumerate(lay.node_type)]
    else:
        vals, text = [], []
        for a, b, t in _type_runs(lay):
            vals.append((lay.node_first_gpu[a] + lay.node_first_gpu[b - 1] + lay.node_gpus[b - 1] - 1) / 2)
            text.append(f"{lay.type_names[t]} ×{int(lay.node_gpus[a:b].sum())}")
    return dict(tickmode="array", tickvals=[float(v) for v in vals], ticktext=text, ticks="")


def _type_runs(lay) -> list[tuple[int, int, int]]:
    """Runs of consecutive nodes of one GPU type: ``(first node, end node, type index)``."""
    runs, start = [], 0
    for i in range(1, lay.n_nodes + 1):
        if i == lay.n_nodes or lay.node_type[i] != lay.node_type[start]:
            runs.append((start, i, int(lay.node_type[start])))
            start = i
    return runs


def _gpu_bands(cluster: Cluster, col: int) -> list[dict]:
    """Shapes behind column ``col``'s timeline: every other node shaded (small clusters) and a line where the GPU
    type changes, so rows read as nodes and types."""
    lay = cluster.layout
    ref = "" if col == 1 else str(col)
    base = dict(xref=f"x{ref} domain", yref=f"y{ref}", x0=0, x1=1, layer="below")
    out = []
    if lay.n_nodes <= NODE_TICKS:
        for i in range(1, lay.n_nodes, 2):
            y0 = float(lay.node_first_gpu[i]) - 0.5
            out.append(dict(base, type="rect", y0=y0, y1=y0 + float(lay.node_gpus[i]),
                            fillcolor="rgba(0,0,0,0.045)", line=dict(width=0)))
    for a, _, _ in _type_runs(lay)[1:]:
        y = float(lay.node_first_gpu[a]) - 0.5
        out.append(dict(base, type="line", y0=y, y1=y, line=dict(color="#444", width=1.2, dash="dot")))
    return out


def _add_raster(fig: go.Figure, seg: pd.DataFrame, r: Result, col: int, name: str, color_by: str,
                colours: Mapping[str, str], t_end: float, div: float, unit: str, legend_done: set[str],
                bins: int) -> None:
    """One run's timeline as a raster (:func:`raster_jobs`, ``bins`` time cells): a heatmap whose cells take the
    colour of the job's category, hover naming the job; legend entries come from invisible marker traces."""
    grid = raster_jobs(seg, r.cluster.n_gpus, t_end, bins)
    cats = sorted({"other" if colour == OTHER_COLOUR else c for c, colour in colours.items()},
                  key=lambda c: (c == "other", c))
    index = {c: i for i, c in enumerate(cats)}
    # Category index of every job; jobs that never ran have no cell, so their index does not matter.
    job_cat = np.array([index.get("other" if colours.get(v) == OTHER_COLOUR else v, 0)
                        for v in (str(getattr(j, color_by)) for j in r.jobs)], dtype=np.float32)
    z = np.where(grid >= 0, job_cat[np.clip(grid, 0, None)] if len(job_cat) else 0, np.nan).astype(np.float32)
    k = len(cats)
    scale = []
    for i, c in enumerate(cats):
        colour = OTHER_COLOUR if c == "other" else colours[c]
        scale += [[i / k, colour], [(i + 1) / k, colour]]
    centres = (np.arange(bins) + 0.5) * (t_end / bins)
    # Idle cells have no hover (NaN in z), so their job id is never shown: 0 there keeps the base64 payload
    # small (runs of -1 encode as "/////", which Plotly's JSON escapes to six characters each).
    ids = np.where(grid >= 0, grid, 0).astype(np.int16 if len(r.jobs) < 2**15 else np.int32)
    # One heatmap per run of nodes of one GPU type, so that the hover names the GPU's type without a string per
    # cell (the axis names the nodes). Not one per node: that is up to 32 images per column for the browser to
    # draw, and the browser benchmark on this shared machine could not tell whether it costs (too noisy).
    lay = r.cluster.layout
    for a, b, t in _type_runs(lay):
        g0, g1 = int(lay.node_first_gpu[a]), int(lay.node_first_gpu[b - 1] + lay.node_gpus[b - 1])
        fig.add_trace(go.Heatmap(
            z=z[g0:g1], x=centres / div, y=np.arange(g0, g1), customdata=ids[g0:g1], zmin=-0.5, zmax=k - 0.5,
            colorscale=scale, showscale=False, hoverongaps=False,
            hovertemplate=f"job %{{customdata}}<br>GPU %{{y}} · {lay.type_names[t]}<br>t=%{{x:.2f}} {unit}"
                          f"<extra>{name}</extra>"), row=1, col=col)
    for c in cats:
        if c in legend_done:
            continue
        legend_done.add(c)
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=c, legendgroup=c, showlegend=True,
                                 marker=dict(symbol="square", size=12,
                                             color=OTHER_COLOUR if c == "other" else colours[c])), row=1, col=col)


def _add_cursor_animation(fig: go.Figure, runs: Sequence[Result], t_end: float, div: float, unit: str,
                          n_gpus: int, frames: int) -> int:
    """Add one cursor per column (a vertical line over the timeline and a marker on the queue curve),
    ``frames`` animation frames that move them, a play/pause button and a slider. Returns the frame count."""
    frames = max(2, min(int(frames), MAX_FRAMES))
    times = np.linspace(0.0, t_end, frames)
    first_cursor = len(fig.data)
    queues = [step_at(r.series_t, r.series_queue, times) for r in runs]
    labels = [human_seconds(float(t)) for t in times]
    for col in range(1, len(runs) + 1):
        # The cursor's top end carries the time it stands at, so the readout moves with every frame.
        fig.add_trace(go.Scatter(x=[0, 0], y=[-0.5, n_gpus - 0.5], mode="lines+text", showlegend=False,
                                 hoverinfo="skip", text=[labels[0], ""], textposition="top right",
                                 textfont=dict(color="#D62728", size=12), cliponaxis=False,
                                 line=dict(color="#D62728", width=2), name="cursor"), row=1, col=col)
        fig.add_trace(go.Scatter(x=[0], y=[queues[col - 1][0]], mode="markers", showlegend=False,
                                 hoverinfo="skip", marker=dict(color="#D62728", size=8), name="cursor"),
                      row=2, col=col)
    idx = list(range(first_cursor, first_cursor + 2 * len(runs)))
    frame_specs = [
        dict(name=str(k), traces=idx, data=[
            trace for q in queues for trace in (
                dict(type="scatter", x=[float(t / div)] * 2, y=[-0.5, n_gpus - 0.5], text=[labels[k], ""]),
                dict(type="scatter", x=[float(t / div)], y=[float(q[k])]))])
        for k, t in enumerate(times)]
    play = dict(label="▶ play", method="animate",
                args=[None, dict(frame=dict(duration=60, redraw=False), fromcurrent=True,
                                 transition=dict(duration=0), mode="immediate")])
    pause = dict(label="❚❚ pause", method="animate",
                 args=[[None], dict(frame=dict(duration=0, redraw=False), mode="immediate",
                                    transition=dict(duration=0))])
    controls = dict(
        # Below the time axes (their tick labels and titles take about 50 px): a full-width slider, then the
        # buttons on their own line, so that narrow windows keep both usable.
        updatemenus=[dict(type="buttons", direction="left", buttons=[play, pause], x=0, y=0,
                          xanchor="left", yanchor="top", pad=dict(t=150, r=10), showactive=False)],
        # The readout is on the cursor: the slider's own current value would show only the labelled steps'.
        sliders=[dict(active=0, x=0, len=1, y=0, yanchor="top", pad=dict(t=60), currentvalue=dict(visible=False),
                      steps=[dict(label=labels[k] if k % SLIDER_LABEL_EVERY == 0 else "", method="animate",
                                  args=[[str(k)], dict(mode="immediate", frame=dict(duration=0, redraw=False),
                                                       transition=dict(duration=0))])
                             for k, t in enumerate(times)])])
    _set_unvalidated(fig, frame_specs, controls)
    return frames


def _set_unvalidated(fig: go.Figure, frames: list[dict], layout: dict) -> None:
    """Attach animation frames and layout controls without Plotly's per-property validation.

    Validating 200 frames and 200 slider steps costs about two seconds per figure, longer than the
    simulations themselves; these specs are built here from plain numbers, so skipping it is safe.
    (Plotly offers no public switch for frames: ``fig.frames = ...`` always re-validates, hence the
    private ``_frame_objs``; plotly is pinned in requirements.txt.)
    """
    validate = fig.layout._validate
    fig.layout._validate = False
    try:
        fig.update_layout(**layout)
    finally:
        fig.layout._validate = validate
    fig._frame_objs = tuple(go.Frame(f, _validate=False) for f in frames)


# ----------------------------------------------------------------------------- comparison charts
def series_figure(results: Mapping[str, Result]) -> go.Figure:
    """Queue length (jobs) and utilisation (% of GPUs busy) over time, one line per run."""
    t_end = max((float(r.series_t[-1]) for r in results.values() if len(r.series_t)), default=1.0)
    unit, div = time_scale(t_end)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=("jobs waiting", "GPU utilisation"))
    for i, (name, r) in enumerate(results.items()):
        s = series_frame(r)
        colour = PALETTE[i % len(PALETTE)]
        tq, q = binned_series(s["t_s"], s["queue"], t_end, how="max")
        tu, u = binned_series(s["t_s"], s["utilization"], t_end, how="mean")
        fig.add_trace(go.Scatter(x=tq / div, y=q, name=name, legendgroup=name, mode="lines",
                                 line=dict(shape="hv", color=colour)), row=1, col=1)
        fig.add_trace(go.Scatter(x=tu / div, y=u * 100, name=name, legendgroup=name,
                                 showlegend=False, mode="lines", line=dict(shape="hv", color=colour)), row=2, col=1)
    fig.update_yaxes(title_text="queue (jobs; max per bin)" if _binned(results) else "queue (jobs)",
                     rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="busy GPUs (%)", range=[0, 105], row=2, col=1)
    fig.update_xaxes(title_text=f"time ({unit})", row=2, col=1)
    fig.update_layout(height=460, template="plotly_white", margin=dict(l=60, r=20, t=40, b=40),
                      legend=dict(orientation="h", y=-0.18))
    return fig


def _binned(results: Mapping[str, Result]) -> bool:
    return any(len(r.series_t) > MAX_POINTS for r in results.values())


def cdf_figure(job_frames: Mapping[str, pd.DataFrame],
               quantities: Sequence[tuple[str, str]] = (("wait_s", "wait"), ("jct_s", "JCT"))) -> go.Figure:
    """Empirical CDFs side by side, one panel per ``(column, label)`` of ``quantities`` (columns of the job
    frames, in seconds; the label names the quantity, e.g. "wait"), one line per run, one legend for all.

    One figure rather than one per quantity: the browser lays out one chart instead of several, and Streamlit
    re-creates charts placed in columns on every rerun."""
    fig = make_subplots(rows=1, cols=len(quantities), horizontal_spacing=0.08,
                        subplot_titles=[f"{label} CDF" for _, label in quantities])
    for k, (column, label) in enumerate(quantities, start=1):
        values = [f[column].to_numpy(dtype=float) for f in job_frames.values()]
        top = max((float(np.nanmax(v)) for v in values if v.size and np.isfinite(v).any()), default=1.0)
        unit, div = time_scale(top)
        for i, (name, v) in enumerate(zip(job_frames, values)):
            x, p = cdf_curve(v)
            fig.add_trace(go.Scatter(x=x / div, y=p * 100, name=name, legendgroup=name, showlegend=k == 1,
                                     mode="lines", line=dict(shape="hv", color=PALETTE[i % len(PALETTE)]),
                                     hovertemplate=f"{label} ≤ %{{x:.2f}} {unit}: %{{y:.1f}}% of jobs"
                                                   f"<extra>{name}</extra>"), row=1, col=k)
        fig.update_xaxes(title_text=f"{label} ({unit})", row=1, col=k)
        fig.update_yaxes(title_text="jobs (%)" if k == 1 else None, range=[0, 101], row=1, col=k)
    fig.update_layout(template="plotly_white", height=360, margin=dict(l=60, r=20, t=50, b=40),
                      legend=dict(orientation="h", y=-0.25))
    return fig


#: Up to this many users the per-user chart names each user (grouped bars); above, it ranks them (lines).
USER_BARS = 30


def user_wait_frame(job_frames: Mapping[str, pd.DataFrame], column: str = "wait_s") -> pd.DataFrame:
    """Mean ``column`` per user (over completed jobs) for each run: rows = users (those with a completed job in
    any run), columns = runs; users sorted by their mean over runs, largest first (ties by name)."""
    per = {name: f.dropna(subset=[column]).groupby("user")[column].mean() for name, f in job_frames.items()}
    table = pd.DataFrame(per)
    if table.empty:
        return table
    order = table.mean(axis=1).rename("m").to_frame().assign(u=table.index.astype(str))
    return table.loc[order.sort_values(["m", "u"], ascending=[False, True]).index]


def user_wait_figure(job_frames: Mapping[str, pd.DataFrame], fairness: Mapping[str, tuple[float, float]],
                     column: str = "wait_s") -> go.Figure:
    """Mean wait per user for each run, readable at any number of users and when most waits are 0.

    Up to :data:`USER_BARS` users: grouped bars, one per user and run, users by mean wait (largest first). More:
    one line per run through its users ranked by their own mean wait, against the share of users (%), so
    hundreds of users read as a profile (how many wait, how long the worst-off wait). The legend gives each
    run's Gini and Jain index of per-user mean wait (``fairness``) and its share of users who never waited.
    """
    table = user_wait_frame(job_frames, column)
    top = float(np.nanmax(table.to_numpy())) if table.size and np.isfinite(table.to_numpy()).any() else 1.0
    unit, div = time_scale(top)
    fig = go.Figure()
    n_users = len(table)
    for i, name in enumerate(job_frames):
        gini, jain = fairness.get(name, (math.nan, math.nan))
        values = table[name].dropna() if name in table else pd.Series(dtype=float)
        zero = float((values <= 0).mean() * 100) if len(values) else math.nan
        label = f"{name} (Gini {gini:.2f}, Jain {jain:.2f}; {zero:.0f}% of users never waited)"
        colour = PALETTE[i % len(PALETTE)]
        if n_users <= USER_BARS:
            fig.add_trace(go.Bar(x=table.index.astype(str), y=table[name] / div if name in table else [], name=label,
                                 marker_color=colour,
                                 hovertemplate=f"%{{x}}: mean wait %{{y:.3g}} {unit}<extra>{name}</extra>"))
        else:
            ranked = values.sort_values(ascending=False)
            share = (np.arange(1, len(ranked) + 1) / max(len(ranked), 1)) * 100
            fig.add_trace(go.Scatter(x=share, y=ranked.to_numpy() / div, name=label, mode="lines",
                                     line=dict(color=colour, shape="hv"), text=ranked.index.astype(str),
                                     hovertemplate=f"%{{text}}: mean wait %{{y:.3g}} {unit} (top %{{x:.0f}}% of "
                                                   f"users)<extra>{name}</extra>"))
    many = n_users > USER_BARS
    fig.update_layout(barmode="group", title="wait per user", template="plotly_white", height=380,
                      xaxis_title=(f"users ranked by mean wait, longest first (% of {n_users} users)" if many
                                   else "user (longest mean wait first)"),
                      yaxis_title=f"mean wait ({unit})", margin=dict(l=60, r=20, t=50, b=40),
                      legend=dict(orientation="h", y=-0.3))
    fig.update_yaxes(rangemode="tozero")
    return fig


# ----------------------------------------------------------------------------- workload charts
def jobs_frame(jobs: Sequence[Job]) -> pd.DataFrame:
    """The workload as a table: ``job_id, submit_s, duration_s, gpus, gpu_fraction, gpu_demand, user,
    job_type, gpu_s`` (GPU-seconds at reference speed)."""
    df = pd.DataFrame({
        "job_id": [j.job_id for j in jobs],
        "submit_s": np.array([j.submit_s for j in jobs], dtype=float),
        "duration_s": np.array([j.duration_s for j in jobs], dtype=float),
        "gpus": np.array([j.gpus for j in jobs], dtype=np.int64),
        "gpu_fraction": np.array([j.gpu_fraction for j in jobs], dtype=float),
        "user": [j.user for j in jobs],
        "job_type": [j.job_type for j in jobs],
    })
    df["gpu_demand"] = df["gpus"] * df["gpu_fraction"]
    df["gpu_s"] = df["gpu_demand"] * df["duration_s"]
    return df


def _small(fig: go.Figure, title: str, x: str, y: str) -> go.Figure:
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, template="plotly_white", height=300,
                      margin=dict(l=60, r=20, t=50, b=40), bargap=0.05)
    return fig


def arrivals_figure(jobs: pd.DataFrame, bins: int = 60) -> go.Figure:
    """Jobs submitted per time bin."""
    span = float(jobs["submit_s"].max()) if len(jobs) else 1.0
    unit, div = time_scale(span)
    counts, edges = np.histogram(jobs["submit_s"] / div, bins=bins, range=(0, max(span / div, 1e-9)))
    fig = go.Figure(go.Bar(x=(edges[:-1] + edges[1:]) / 2, y=counts, width=np.diff(edges), marker_color=PALETTE[0],
                           hovertemplate=f"t=%{{x:.2f}} {unit}: %{{y}} jobs<extra></extra>"))
    return _small(fig, "arrivals over time", f"submit time ({unit})",
                  f"jobs (count per {np.diff(edges)[0]:.3g} {unit})")


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
    fig = go.Figure(go.Bar(x=centres, y=counts, width=np.diff(edges), marker_color=PALETTE[2],
                           hovertemplate="~%{x:.3g} s: %{y} jobs<extra></extra>"))
    fig.update_xaxes(type="log")
    return _small(fig, "job durations", "duration at reference speed (s, log scale)", "jobs (count)")


def user_volume_figure(jobs: pd.DataFrame, top: int = 20) -> go.Figure:
    """GPU-hours submitted per user (the ``top`` largest; the rest summed as "other")."""
    vol = jobs.groupby("user")["gpu_s"].sum().sort_values(ascending=False) / 3600.0
    if len(vol) > top:
        vol = pd.concat([vol.iloc[:top], pd.Series({"other": vol.iloc[top:].sum()})])
    fig = go.Figure(go.Bar(x=[str(u) for u in vol.index], y=vol.to_numpy(), marker_color=PALETTE[3]))
    fig.update_xaxes(type="category")
    return _small(fig, "volume per user", "user", "GPU-hours submitted (GPU·h)")


def offered_load(jobs: pd.DataFrame, n_gpus: int, bins: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """Offered load per submit-time bin: GPU-seconds submitted in the bin / (GPUs x bin length).
    Returns ``(bin centres in seconds, load)``; 1.0 means the cluster would be exactly saturated."""
    span = max(float(jobs["submit_s"].max()) if len(jobs) else 0.0, 1.0)
    gpu_s, edges = np.histogram(jobs["submit_s"], bins=bins, range=(0.0, span), weights=jobs["gpu_s"])
    return (edges[:-1] + edges[1:]) / 2, gpu_s / (max(n_gpus, 1) * np.diff(edges))


def offered_load_figure(jobs: pd.DataFrame, n_gpus: int, bins: int = 60) -> go.Figure:
    """Offered load over time on a cluster of ``n_gpus`` GPUs, with the saturation line at 100 %."""
    centres, load = offered_load(jobs, n_gpus, bins)
    unit, div = time_scale(float(centres[-1]) if len(centres) else 1.0)
    fig = go.Figure(go.Scatter(x=centres / div, y=load * 100, mode="lines", line=dict(shape="hv", color=PALETTE[5]),
                               hovertemplate=f"t=%{{x:.2f}} {unit}: %{{y:.0f}}% of the cluster<extra></extra>"))
    fig.add_hline(y=100, line_dash="dot", line_color="#555", annotation_text="cluster saturated")
    return _small(fig, f"offered load on {n_gpus} GPUs", f"submit time ({unit})", "offered load (% of GPUs)")


# ----------------------------------------------------------------------------- cluster picture
def cluster_frame(cluster: Cluster) -> pd.DataFrame:
    """One row per GPU: ``gpu, node, slot, rack, gpu_type, x`` where ``x`` places nodes left to right with
    a gap between racks."""
    lay = cluster.layout
    gpu = np.arange(lay.n_gpus)
    node = lay.gpu_node
    slot = gpu - lay.node_first_gpu[node]
    rack = lay.node_rack[node]
    # Node position: its index plus one empty column per rack boundary before it.
    node_x = np.arange(lay.n_nodes) + np.concatenate([[0], np.cumsum(np.diff(lay.node_rack) != 0)])
    return pd.DataFrame({
        "gpu": gpu, "node": node, "slot": slot, "rack": np.array(lay.rack_names, dtype=object)[rack],
        "gpu_type": np.array(lay.type_names, dtype=object)[lay.gpu_type], "x": node_x[node],
    })


def cluster_figure(cluster: Cluster) -> go.Figure:
    """A picture of the cluster: a column of squares per node (one square per GPU, coloured by type),
    nodes grouped by rack with a gap between racks."""
    df = cluster_frame(cluster)
    big = len(df) > 2000
    marker = go.Scattergl if big else go.Scatter
    n_cols = int(df["x"].max()) + 1 if len(df) else 1
    size = float(np.clip(600 / max(n_cols, 1), 3, 16))
    fig = go.Figure()
    colours = {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(cluster.layout.type_names)}
    for t, part in df.groupby("gpu_type", sort=False):
        fig.add_trace(marker(x=part["x"], y=part["slot"], mode="markers", name=str(t),
                             marker=dict(symbol="square", size=size, color=colours[t], line=dict(width=0)),
                             customdata=np.stack([part["gpu"], part["node"], part["rack"]], axis=1),
                             hovertemplate="GPU %{customdata[0]} · node %{customdata[1]} · %{customdata[2]}"
                                           f"<extra>{t}</extra>"))
    if len(df) and cluster.layout.n_nodes <= 200:
        for rack, part in df.groupby("rack", sort=False):
            fig.add_annotation(x=(part["x"].min() + part["x"].max()) / 2, y=-1, text=str(rack), showarrow=False,
                               yanchor="top", font=dict(size=10))
    max_slot = int(df["slot"].max()) if len(df) else 1
    fig.update_yaxes(title_text="GPU slot in node (index)", range=[max_slot + 0.5, -2.5])
    fig.update_xaxes(title_text="node (grouped by rack)", showticklabels=False, showgrid=False)
    fig.update_layout(template="plotly_white", height=int(np.clip(40 + 26 * (max_slot + 3), 220, 420)),
                      margin=dict(l=60, r=20, t=30, b=40), legend=dict(orientation="h", y=1.1, title_text="GPU type"))
    return fig


# ----------------------------------------------------------------------------- training curves
#: TensorBoard tags of a MaskablePPO run worth plotting live, with their labels.
TRAINING_TAGS = {
    "rollout/ep_rew_mean": "training episode return (mean)",
    "eval/mean_reward": "evaluation return (mean, deterministic policy)",
    "rollout/ep_len_mean": "episode length (decisions)",
}


def training_curves(log_dir) -> pd.DataFrame:
    """Scalars logged so far under ``log_dir`` (TensorBoard event files, searched recursively) for the tags in
    :data:`TRAINING_TAGS`: columns ``tag, step, value``, sorted by tag and step. Empty when nothing is logged
    yet. Reads files that are still being written (a live run)."""
    from pathlib import Path

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    rows: list[tuple] = []
    for events in sorted(Path(log_dir).rglob("events.out.tfevents.*")):
        acc = EventAccumulator(str(events.parent), size_guidance={"scalars": 0})
        acc.Reload()
        for tag in TRAINING_TAGS:
            if tag in acc.Tags().get("scalars", ()):
                rows.extend((tag, int(e.step), float(e.value)) for e in acc.Scalars(tag))
    frame = pd.DataFrame(rows, columns=["tag", "step", "value"])
    return frame.drop_duplicates(["tag", "step"], keep="last").sort_values(["tag", "step"], ignore_index=True)


def training_figure(curves: pd.DataFrame) -> go.Figure:
    """Returns (training and evaluation) against environment steps, and episode length."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("return", "episode length"))
    for i, tag in enumerate(TRAINING_TAGS):
        part = curves[curves["tag"] == tag]
        col = 2 if tag.endswith("ep_len_mean") else 1
        fig.add_trace(go.Scatter(x=part["step"], y=part["value"], mode="lines+markers", name=TRAINING_TAGS[tag],
                                 line=dict(color=PALETTE[i])), row=1, col=col)
    fig.update_xaxes(title_text="environment steps (count)")
    fig.update_yaxes(title_text="return (reward units)", row=1, col=1)
    fig.update_yaxes(title_text="length (decisions)", row=1, col=2)
    fig.update_layout(template="plotly_white", height=340, margin=dict(l=60, r=20, t=40, b=40),
                      legend=dict(orientation="h", y=-0.3))
    return fig

"""The animated per-GPU timelines of several runs side by side, and the data shaping behind them.

* :func:`segments_frame`: one row per (run segment, GPU) of a :class:`engine.Result`.
* :func:`timeline_figure`: one column per run, a play button and a time slider moving a cursor, each run's queue
  length underneath; with failures modelled, a red band over each node while it is down and a cross where a node
  failure stopped a job (:func:`interrupted_points`); with deadlines, a tick where each job that ran was due, green
  when it met its deadline, red when it missed it (:func:`deadline_points`; up to ``WEBGL_JOBS`` jobs a run); with
  elastic jobs, a triangle where a scheduler resized one (:func:`resize_points`: its bar continues on the new GPUs,
  one bar per size). Large runs switch to a raster of GPU x time cells or to a busy-share heatmap of GPU bands
  (:func:`timeline_mode` decides; the figure's ``meta`` says which).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.analysis.deadlines import has_deadlines, job_deadlines
from engine.analysis.elastic import has_elastic
from engine.sim.cluster import Cluster
from engine.sim.simulator import Result
from engine.units import human_seconds
from engine.viz.series import binned_series, step_at
from engine.viz.style import OTHER_COLOUR, category_colours, plain, plain_all, time_scale

#: Animation frames of the timeline cursor.
MAX_FRAMES = 200
#: The time slider labels one step in this many: the browser measures every label it draws (a forced layout
#: each), which made 200 labelled steps about half the time of drawing the timeline in our browser benchmark.
SLIDER_LABEL_EVERY = 20
#: Right margin, px, that holds Plotly's toolbar (upright, about 30 px wide) beside the timelines, clear of the legend.
MODEBAR_PX = 44
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
    return pd.DataFrame(
        {
            "job_id": job,
            "gpu": np.asarray(result.seg_gpu_ids, dtype=np.int64)[: len(seg_idx)],
            "start_s": np.asarray(result.seg_start_s, dtype=float)[seg_idx],
            "end_s": np.asarray(result.seg_end_s, dtype=float)[seg_idx],
            "fraction": np.asarray(result.seg_fraction, dtype=float)[seg_idx],
            "user": users[job] if len(job) else np.array([], dtype=object),
            "job_type": types[job] if len(job) else np.array([], dtype=object),
            "gpus": gpus[job] if len(job) else np.array([], dtype=np.int64),
        }
    )


def interrupted_points(seg: pd.DataFrame, result: Result) -> pd.DataFrame:
    """Where node failures stopped jobs: one row per stopped run segment, ``job_id, gpu, t_s`` (its first GPU on
    the failed node, the failure's time), from ``seg`` (:func:`segments_frame` of ``result``): a segment stopped by
    a failure ends when an outage of one of its nodes begins."""
    node = result.cluster.layout.gpu_node[seg["gpu"].to_numpy()]
    outages = pd.DataFrame({"node": result.outage_node.astype(np.int64), "end_s": result.outage_start_s})
    hit = seg.assign(node=node).merge(outages, on=["node", "end_s"])
    first = hit.groupby(["job_id", "end_s"], as_index=False)["gpu"].min()
    return first.rename(columns={"end_s": "t_s"})[["job_id", "gpu", "t_s"]]


def deadline_points(seg: pd.DataFrame, result: Result) -> pd.DataFrame:
    """Where each job that ran and has a deadline was due: one row per job, ``job_id, gpu, t_s, met`` (its
    deadline, on the first GPU of its last run segment), from ``seg`` (:func:`segments_frame` of ``result``)."""
    last = seg[seg["end_s"] == seg.groupby("job_id")["end_s"].transform("max")]
    rows = last.groupby("job_id", as_index=False)["gpu"].min()
    due = job_deadlines(result)
    ids = rows["job_id"].to_numpy()
    rows = rows.assign(t_s=due["deadline_s"][ids], met=due["deadline_met"][ids])
    return rows[np.isfinite(rows["t_s"].to_numpy())].reset_index(drop=True)


def resize_points(result: Result) -> pd.DataFrame:
    """Where schedulers resized elastic jobs: one row per resize, ``job_id, gpu, t_s, from_gpus, to_gpus`` (the
    first GPU of the segment it starts, the time, the GPU counts before and after). A resize ends a job's run
    segment and starts the next at the same instant (:mod:`engine.sim.elastic`); only jobs with rescales count."""
    job = np.asarray(result.seg_job, dtype=np.int64)
    start = np.asarray(result.seg_start_s, dtype=float)
    end = np.asarray(result.seg_end_s, dtype=float)
    ptr = np.asarray(result.seg_gpu_ptr, dtype=np.int64)
    size = np.diff(ptr)
    rescaled = np.asarray(result.rescales)[job] > 0 if len(job) else np.zeros(0, dtype=bool)
    order = np.lexsort((start, job))  # each job's segments in time order
    prev, nxt = order[:-1], order[1:]
    hit = (job[prev] == job[nxt]) & (end[prev] == start[nxt]) & rescaled[nxt]
    prev, nxt = prev[hit], nxt[hit]
    gpu_ids = np.asarray(result.seg_gpu_ids, dtype=np.int64)
    return pd.DataFrame(
        {
            "job_id": job[nxt],
            "gpu": gpu_ids[ptr[nxt]] if len(nxt) else np.zeros(0, dtype=np.int64),
            "t_s": start[nxt],
            "from_gpus": size[prev],
            "to_gpus": size[nxt],
        }
    )


#: Down nodes are shaded for at most this many outages per run (each is a shape the browser lays out): the first.
MAX_OUTAGE_SHAPES = 300
OUTAGE_COLOUR = "rgba(214,39,40,0.22)"

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
    for g, a, b, j in zip(
        seg["gpu"].to_numpy()[order].tolist(), first.tolist(), stop.tolist(), seg["job_id"].to_numpy()[order].tolist()
    ):
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


@dataclass(frozen=True)
class _Canvas:
    """What every column of one timeline figure is drawn with (``legend_done``: categories already in the legend,
    so that each appears once)."""

    fig: go.Figure
    mode: str
    color_by: str
    colours: Mapping[str, str]
    t_end_s: float
    unit: str
    div: float
    line_px: float
    legend_done: set[str] = field(default_factory=set)


def timeline_figure(
    results: Mapping[str, Result],
    *,
    color_by: str = "user",
    frames: int = MAX_FRAMES,
    mode: str | None = None,
    animate: bool = True,
) -> go.Figure:
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
    n_gpus = max((r.cluster.n_gpus for r in runs), default=1)
    t_end = _end_s(runs)
    unit, div = time_scale(t_end)
    fig = _unvalidated_subplots(names)
    frames_seg = {name: segments_frame(r) for name, r in zip(names, runs)}
    all_cats = pd.concat([f[color_by] for f in frames_seg.values()]) if frames_seg else pd.Series([], dtype=object)
    height_px = int(min(max(10 * n_gpus, 260), 640))
    canvas = _Canvas(
        fig,
        mode,
        color_by,
        category_colours(all_cats.tolist()),
        t_end,
        unit,
        div,
        line_px=max(1.0, min(18.0, 0.8 * height_px / n_gpus)),
    )
    # One queue scale for all columns, so their heights compare.
    q_top = 1.05 * max((int(r.series_queue.max()) for r in runs if len(r.series_queue)), default=1) + 0.5
    shapes: list[dict] = []
    for col, (name, r) in enumerate(zip(names, runs), start=1):
        _add_column(canvas, frames_seg[name], r, col, plain(name), raster_bins(max(len(runs), 1)))
        shapes += _column_axes(canvas, r, col, q_top)
    if shapes:
        fig.layout._validate = True  # set once, validated once (they are few)
        fig.update_layout(shapes=shapes)
        fig.layout._validate = False
    n_frames = 0
    if animate and runs:
        n_frames = _add_cursor_animation(fig, runs, t_end, div, unit, n_gpus, frames)
    fig.update_layout(
        height=height_px + (380 if n_frames else 230),
        template="plotly_white",
        # Room for the node/type tick labels on the left, the slider and the play button below, and on the right
        # for Plotly's toolbar standing upright there: lying at the top right it covered the legend's end.
        margin=dict(l=110 if mode != "heatmap" else 60, r=MODEBAR_PX, t=50, b=200 if n_frames else 40),
        modebar=dict(orientation="v"),
        legend=dict(orientation="h", yanchor="bottom", y=1.04, x=0, title_text=color_by.replace("_", " ")),
        meta={"mode": mode, "frames": n_frames, "time_unit": unit},
        hovermode="closest",
        uirevision="timeline",
    )
    return fig


def _end_s(runs: Sequence[Result]) -> float:
    """Where the time axes end: the last segment end or series change of any run, at least 1 s."""
    t_end = max((float(np.nanmax(r.seg_end_s)) if len(r.seg_end_s) else 0.0 for r in runs), default=0.0)
    return max(t_end, max((float(r.series_t[-1]) if len(r.series_t) else 0.0 for r in runs), default=0.0), 1.0)


def _unvalidated_subplots(names: Sequence[str]) -> go.Figure:
    """The empty figure: a timeline row and a queue row per run, titled by run name."""
    n_cols = max(len(names), 1)
    fig = make_subplots(
        rows=2,
        cols=n_cols,
        shared_xaxes=True,
        row_heights=[0.8, 0.2],
        vertical_spacing=0.04,
        horizontal_spacing=min(0.04, 0.3 / n_cols),
        subplot_titles=plain_all(names) or ["(no run)"],
    )
    # Everything added below is built here from plain numbers: skip Plotly's per-property validation, which
    # otherwise takes about half of this function's time (see _set_unvalidated for the same reasoning).
    fig._validate = False
    fig.layout._validate = False
    return fig


def _add_column(c: _Canvas, seg: pd.DataFrame, r: Result, col: int, name: str, bins: int) -> None:
    """Run ``r``'s timeline in column ``col`` as the canvas's mode draws it, its queue length underneath (``name``:
    the run's name as :func:`~engine.viz.style.plain` gives it)."""
    if c.mode == "heatmap":
        _add_heatmap(c, seg, r, col, name)
    elif c.mode == "raster":
        _add_raster(c, seg, r, col, name, bins)
    else:
        _add_bars(c, seg, r, col, name)
    if r.outage_node.size and c.mode != "heatmap":
        _add_interruptions(c, seg, r, col, name)
    if c.mode != "heatmap" and has_deadlines(r) and r.n_jobs <= WEBGL_JOBS:  # a raster's many jobs: no ticks
        _add_deadlines(c, seg, r, col, name)
    if c.mode != "heatmap" and has_elastic(r) and r.n_jobs <= WEBGL_JOBS:
        _add_resizes(c, r, col, name)
    tq, q = binned_series(r.series_t, r.series_queue, c.t_end_s, how="max")
    c.fig.add_trace(
        go.Scatter(
            x=tq / c.div,
            y=q,
            mode="lines",
            line=dict(shape="hv", color="#555"),
            name="queue",
            showlegend=False,
            hovertemplate=f"t=%{{x:.2f}} {c.unit}<br>%{{y}} jobs waiting<extra>{name}</extra>",
        ),
        row=2,
        col=col,
    )


def _add_markers(c: _Canvas, col: int, label: str, points: pd.DataFrame, customdata, marker: dict, hover: str) -> None:
    """One marker trace of ``points`` (columns ``t_s`` and ``gpu``) named ``label``, whose legend entry shows once for
    all runs."""
    c.fig.add_trace(
        go.Scatter(
            x=points["t_s"] / c.div,
            y=points["gpu"],
            mode="markers",
            name=label,
            legendgroup=label,
            showlegend=label not in c.legend_done,
            customdata=customdata,
            marker=marker,
            hovertemplate=hover,
        ),
        row=1,
        col=col,
    )
    c.legend_done.add(label)


def _add_interruptions(c: _Canvas, seg: pd.DataFrame, r: Result, col: int, name: str) -> None:
    """A cross where a node failure stopped a job (:func:`interrupted_points`), one legend entry for all runs."""
    points = interrupted_points(seg, r)
    marker = dict(symbol="x", size=9, color="#d62728", line=dict(width=1, color="#fff"))
    hover = f"job %{{customdata}} stopped by a node failure<br>GPU %{{y}} · t=%{{x:.2f}} {c.unit}<extra>{name}</extra>"
    _add_markers(c, col, "stopped by a node failure", points, points["job_id"], marker, hover)


#: The deadline ticks' colours: met, missed.
DEADLINE_COLOURS = {True: "#2ca02c", False: "#d62728"}


def _add_deadlines(c: _Canvas, seg: pd.DataFrame, r: Result, col: int, name: str) -> None:
    """A tick at each job's deadline (:func:`deadline_points`), green if met, red if missed; one legend entry each
    for all runs."""
    points = deadline_points(seg, r)
    for met, colour in DEADLINE_COLOURS.items():
        part = points[points["met"] == met]
        if part.empty:  # Plotly leaves an empty trace out of the legend: the entry goes to a run that has ticks
            continue
        label = "deadline met" if met else "deadline missed"
        marker = dict(symbol="line-ns", size=12, line=dict(width=2, color=colour))
        hover = f"job %{{customdata}}: {label}<br>due t=%{{x:.2f}} {c.unit}<extra>{name}</extra>"
        _add_markers(c, col, label, part, part["job_id"], marker, hover)


#: The resize markers' colour.
RESIZE_COLOUR = "#6a3d9a"


def _add_resizes(c: _Canvas, r: Result, col: int, name: str) -> None:
    """A triangle where a scheduler resized an elastic job (:func:`resize_points`), pointing up when it grew and
    down when it shrank, hover naming the GPU counts; one legend entry for all runs (a run without resizes adds
    no trace: Plotly leaves an empty trace out of the legend)."""
    points = resize_points(r)
    if points.empty:
        return
    grew = points["to_gpus"].to_numpy() > points["from_gpus"].to_numpy()
    marker = dict(
        symbol=np.where(grew, "triangle-up", "triangle-down"),
        size=10,
        color=RESIZE_COLOUR,
        line=dict(width=1, color="#fff"),
    )
    hover = (
        "job %{customdata[0]} resized from %{customdata[1]} to %{customdata[2]} GPUs<br>"
        f"GPU %{{y}} · t=%{{x:.2f}} {c.unit}<extra>{name}</extra>"
    )
    _add_markers(
        c, col, "elastic job resized", points, points[["job_id", "from_gpus", "to_gpus"]].to_numpy(), marker, hover
    )


def _outage_shapes(c: _Canvas, r: Result, col: int) -> list[dict]:
    """A red band over each node of ``r`` while it is down (to the axis's end when never repaired), for the first
    :data:`MAX_OUTAGE_SHAPES` outages."""
    lay = r.cluster.layout
    ref = "" if col == 1 else str(col)
    end_s = np.nan_to_num(r.outage_end_s, nan=c.t_end_s)
    out = []
    for node, a, b in list(zip(r.outage_node.tolist(), r.outage_start_s.tolist(), end_s.tolist()))[:MAX_OUTAGE_SHAPES]:
        y0 = float(lay.node_first_gpu[node]) - 0.5
        out.append(
            dict(
                type="rect",
                xref=f"x{ref}",
                yref=f"y{ref}",
                x0=a / c.div,
                x1=b / c.div,
                y0=y0,
                y1=y0 + float(lay.node_gpus[node]),
                fillcolor=OUTAGE_COLOUR,
                line=dict(width=0),
                layer="above",
            )
        )
    return out


def _add_heatmap(c: _Canvas, seg: pd.DataFrame, r: Result, col: int, name: str) -> None:
    """One run's timeline as the busy share of bands of GPUs (:func:`busy_grid`) per time bin."""
    bins = min(HEATMAP_BINS, max(10, len(seg)))
    edges = np.linspace(0.0, c.t_end_s, bins + 1)
    rows = min(HEATMAP_ROWS, r.cluster.n_gpus)
    grid = busy_grid(seg, r.cluster.n_gpus, edges, rows)
    c.fig.add_trace(
        go.Heatmap(
            z=grid * 100,
            x=(edges[:-1] + edges[1:]) / 2 / c.div,
            y=np.arange(rows),
            zmin=0,
            zmax=100,
            colorscale="Blues",
            showscale=(col == 1),
            colorbar=dict(title="busy (%)", len=0.7, y=0.6),
            hovertemplate=f"t=%{{x:.2f}} {c.unit}<br>row %{{y}}<br>busy %{{z:.0f}}%<extra>{name}</extra>",
        ),
        row=1,
        col=col,
    )


def _add_bars(c: _Canvas, seg: pd.DataFrame, r: Result, col: int, name: str) -> None:
    """One run's timeline as a horizontal bar per (segment, GPU): one trace per (colour, GPU type), so that the
    hover names the type without a string per point."""
    lay = r.cluster.layout
    cats = seg[c.color_by].astype(str).map(lambda v: v if c.colours.get(v) != OTHER_COLOUR else "other")
    gpu_type = lay.gpu_type[seg["gpu"].to_numpy()] if len(seg) else np.array([], dtype=np.int64)
    other = "user" if c.color_by == "job_type" else "job_type"
    scatter = go.Scattergl if c.mode == "webgl" else go.Scatter
    for cat in sorted(cats.unique(), key=lambda v: (v == "other", v)):
        for t in np.unique(gpu_type[cats.to_numpy() == cat]):
            part = seg[(cats.to_numpy() == cat) & (gpu_type == t)]
            x, y, ids = _bar_points(part, lay, r.n_jobs, c.div)
            text = np.repeat(np.array(plain_all(part[other]), dtype=object), 3)
            c.fig.add_trace(
                scatter(
                    x=x,
                    y=y,
                    mode="lines",
                    name=plain(cat),
                    legendgroup=plain(cat),
                    showlegend=cat not in c.legend_done,
                    line=dict(color=OTHER_COLOUR if cat == "other" else c.colours[cat], width=c.line_px),
                    customdata=ids,
                    text=text,
                    connectgaps=False,
                    hovertemplate=f"job %{{customdata[0]}} · {c.color_by.replace('_', ' ')} {plain(cat)} · "
                    f"{other.replace('_', ' ')} %{{text}}<br>GPU %{{y}} · "
                    f"{plain(lay.type_names[int(t)])} · node %{{customdata[1]}}<br>t=%{{x:.2f}} {c.unit}"
                    f"<extra>{name}</extra>",
                ),
                row=1,
                col=col,
            )
            c.legend_done.add(cat)


def _bar_points(part: pd.DataFrame, lay, n_jobs: int, div: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Line points of the bars of ``part``'s segment rows: ``(x, y, [job id, node] per point)``, three points per
    bar (start, end, a gap)."""
    k = len(part)
    # float32 and small ints halve what the browser downloads; display precision is ample.
    x = np.empty(3 * k, dtype=np.float32)
    x[0::3], x[1::3], x[2::3] = part["start_s"] / div, part["end_s"] / div, np.nan
    y = np.empty(3 * k, dtype=np.float32)
    y[0::3] = y[1::3] = part["gpu"].to_numpy()
    y[2::3] = np.nan
    small = np.int16 if max(n_jobs, lay.n_nodes) < 2**15 else np.int32
    ids = np.repeat(
        np.stack([part["job_id"].to_numpy(), lay.gpu_node[part["gpu"].to_numpy()]], axis=1), 3, axis=0
    ).astype(small)
    return x, y, ids


def _column_axes(c: _Canvas, r: Result, col: int, q_top: float) -> list[dict]:
    """Titles, ticks and ranges of column ``col``'s axes; returns the shapes to draw behind its timeline."""
    per_row = math.ceil(r.cluster.n_gpus / min(HEATMAP_ROWS, r.cluster.n_gpus)) if c.mode == "heatmap" else 1
    y_title = f"GPU band (row of ≤{per_row} GPUs)" if per_row > 1 else "GPU (node · type)"
    ticks = {} if per_row > 1 else {**_gpu_ticks(r.cluster), "showticklabels": col == 1}
    shapes = _gpu_bands(r.cluster, col) + _outage_shapes(c, r, col) if per_row == 1 else []
    c.fig.update_yaxes(
        title_text=y_title if col == 1 else None,
        autorange="reversed",
        range=None,
        showgrid=False,
        row=1,
        col=col,
        **ticks,
    )
    c.fig.update_yaxes(title_text="queue (jobs)" if col == 1 else None, range=[0, q_top], row=2, col=col)
    c.fig.update_xaxes(title_text=f"time ({c.unit})", range=[0, c.t_end_s / c.div], row=2, col=col)
    return shapes


#: Nodes are named on the timeline's axis (one tick each) and shaded in alternate bands up to this many.
NODE_TICKS = 32


def _gpu_ticks(cluster: Cluster) -> dict:
    """Axis ticks of a per-GPU timeline: one per node (``n3 · A100-80``) for small clusters, else one per run of
    nodes of a GPU type (``A100-80 ×64``), at the middle of its GPUs."""
    lay = cluster.layout
    first, count = lay.node_first_gpu.astype(float), lay.node_gpus.astype(float)
    if lay.n_nodes <= NODE_TICKS:
        vals: np.ndarray | list[float] = first + (count - 1) / 2
        text = [f"n{i} · {plain(lay.type_names[int(t)])}" for i, t in enumerate(lay.node_type)]
    else:
        vals, text = [], []
        for a, b, t in _type_runs(lay):
            vals.append((lay.node_first_gpu[a] + lay.node_first_gpu[b - 1] + lay.node_gpus[b - 1] - 1) / 2)
            text.append(f"{plain(lay.type_names[t])} ×{int(lay.node_gpus[a:b].sum())}")
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
            out.append(
                dict(
                    base,
                    type="rect",
                    y0=y0,
                    y1=y0 + float(lay.node_gpus[i]),
                    fillcolor="rgba(0,0,0,0.045)",
                    line=dict(width=0),
                )
            )
    for a, _, _ in _type_runs(lay)[1:]:
        y = float(lay.node_first_gpu[a]) - 0.5
        out.append(dict(base, type="line", y0=y, y1=y, line=dict(color="#444", width=1.2, dash="dot")))
    return out


def _add_raster(cv: _Canvas, seg: pd.DataFrame, r: Result, col: int, name: str, bins: int) -> None:
    """One run's timeline as a raster (:func:`raster_jobs`, ``bins`` time cells): a heatmap whose cells take the
    colour of the job's category, hover naming the job; legend entries come from invisible marker traces."""
    fig, colours, t_end, div, unit, legend_done = cv.fig, cv.colours, cv.t_end_s, cv.div, cv.unit, cv.legend_done
    grid = raster_jobs(seg, r.cluster.n_gpus, t_end, bins)
    cats = sorted(
        {"other" if colour == OTHER_COLOUR else c for c, colour in colours.items()}, key=lambda c: (c == "other", c)
    )
    index = {c: i for i, c in enumerate(cats)}
    # Category index of every job; jobs that never ran have no cell, so their index does not matter.
    job_cat = np.array(
        [
            index.get("other" if colours.get(v) == OTHER_COLOUR else v, 0)
            for v in (str(getattr(j, cv.color_by)) for j in r.jobs)
        ],
        dtype=np.float32,
    )
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
        fig.add_trace(
            go.Heatmap(
                z=z[g0:g1],
                x=centres / div,
                y=np.arange(g0, g1),
                customdata=ids[g0:g1],
                zmin=-0.5,
                zmax=k - 0.5,
                colorscale=scale,
                showscale=False,
                hoverongaps=False,
                hovertemplate=f"job %{{customdata}}<br>GPU %{{y}} · {plain(lay.type_names[t])}<br>t=%{{x:.2f}} {unit}"
                f"<extra>{name}</extra>",
            ),
            row=1,
            col=col,
        )
    for c in cats:
        if c in legend_done:
            continue
        legend_done.add(c)
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=plain(c),
                legendgroup=plain(c),
                showlegend=True,
                marker=dict(symbol="square", size=12, color=OTHER_COLOUR if c == "other" else colours[c]),
            ),
            row=1,
            col=col,
        )


def _add_cursor_animation(
    fig: go.Figure, runs: Sequence[Result], t_end: float, div: float, unit: str, n_gpus: int, frames: int
) -> int:
    """Add one cursor per column (a vertical line over the timeline and a marker on the queue curve),
    ``frames`` animation frames that move them, a play/pause button and a slider. Returns the frame count."""
    frames = max(2, min(int(frames), MAX_FRAMES))
    times = np.linspace(0.0, t_end, frames)
    first_cursor = len(fig.data)
    queues = [step_at(r.series_t, r.series_queue, times) for r in runs]
    labels = [human_seconds(float(t)) for t in times]
    for col in range(1, len(runs) + 1):
        # The cursor's top end carries the time it stands at, so the readout moves with every frame.
        fig.add_trace(
            go.Scatter(
                x=[0, 0],
                y=[-0.5, n_gpus - 0.5],
                mode="lines+text",
                showlegend=False,
                hoverinfo="skip",
                text=[labels[0], ""],
                textposition="top right",
                textfont=dict(color="#D62728", size=12),
                cliponaxis=False,
                line=dict(color="#D62728", width=2),
                name="cursor",
            ),
            row=1,
            col=col,
        )
        fig.add_trace(
            go.Scatter(
                x=[0],
                y=[queues[col - 1][0]],
                mode="markers",
                showlegend=False,
                hoverinfo="skip",
                marker=dict(color="#D62728", size=8),
                name="cursor",
            ),
            row=2,
            col=col,
        )
    idx = list(range(first_cursor, first_cursor + 2 * len(runs)))
    frame_specs = [
        dict(
            name=str(k),
            traces=idx,
            data=[
                trace
                for q in queues
                for trace in (
                    dict(type="scatter", x=[float(t / div)] * 2, y=[-0.5, n_gpus - 0.5], text=[labels[k], ""]),
                    dict(type="scatter", x=[float(t / div)], y=[float(q[k])]),
                )
            ],
        )
        for k, t in enumerate(times)
    ]
    play = dict(
        label="▶ play",
        method="animate",
        args=[
            None,
            dict(
                frame=dict(duration=60, redraw=False), fromcurrent=True, transition=dict(duration=0), mode="immediate"
            ),
        ],
    )
    pause = dict(
        label="❚❚ pause",
        method="animate",
        args=[[None], dict(frame=dict(duration=0, redraw=False), mode="immediate", transition=dict(duration=0))],
    )
    controls = dict(
        # Below the time axes (their tick labels and titles take about 50 px): a full-width slider, then the
        # buttons on their own line, so that narrow windows keep both usable.
        updatemenus=[
            dict(
                type="buttons",
                direction="left",
                buttons=[play, pause],
                x=0,
                y=0,
                xanchor="left",
                yanchor="top",
                pad=dict(t=150, r=10),
                showactive=False,
            )
        ],
        # The readout is on the cursor: the slider's own current value would show only the labelled steps'.
        sliders=[
            dict(
                active=0,
                x=0,
                len=1,
                y=0,
                yanchor="top",
                pad=dict(t=60),
                currentvalue=dict(visible=False),
                steps=[
                    dict(
                        label=labels[k] if k % SLIDER_LABEL_EVERY == 0 else "",
                        method="animate",
                        args=[
                            [str(k)],
                            dict(mode="immediate", frame=dict(duration=0, redraw=False), transition=dict(duration=0)),
                        ],
                    )
                    for k, t in enumerate(times)
                ],
            )
        ],
    )
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

"""The animated per-GPU timeline: its data shaping, its drawing modes, its animation."""

import numpy as np
import pandas as pd
import pytest

from engine import Job, make_scheduler, parse_cluster, simulate
from engine.viz import timeline


def test_segments_frame_has_one_row_per_segment_gpu(runs):
    r = runs["fifo"]
    seg = timeline.segments_frame(r)
    assert len(seg) == len(r.seg_gpu_ids) == sum(j.gpus for j in r.jobs)
    four = seg[seg["job_id"] == 2]  # job 2 asks for 4 GPUs
    assert len(four) == 4 and four["gpu"].nunique() == 4 and four["start_s"].nunique() == 1
    assert (seg["end_s"] > seg["start_s"]).all()
    assert set(seg["user"]) == {"u0", "u1", "u2"}


def test_busy_grid_integrates_segments_exactly():
    seg = pd.DataFrame(
        {"gpu": [0, 1, 1], "start_s": [1.0, 0.0, 9.0], "end_s": [7.0, 2.0, 10.0], "fraction": [1.0, 0.5, 1.0]}
    )
    grid = timeline.busy_grid(seg, n_gpus=2, edges_s=np.array([0.0, 2.0, 4.0, 6.0, 8.0, 10.0]), rows=2)
    assert grid[0].tolist() == pytest.approx([0.5, 1.0, 1.0, 0.5, 0.0])
    assert grid[1].tolist() == pytest.approx([0.5, 0.0, 0.0, 0.0, 0.5])
    # Bands: 2 GPUs in one row average their busy shares.
    band = timeline.busy_grid(seg, n_gpus=2, edges_s=np.array([0.0, 10.0]), rows=1)
    assert band[0, 0] == pytest.approx((6.0 + 0.5 * 2 + 1.0) / 20)


@pytest.mark.parametrize("color_by", ["user", "job_type"])
def test_timeline_figure_side_by_side_with_animation(runs, color_by):
    fig = timeline.timeline_figure(runs, color_by=color_by, frames=50)
    assert fig.layout.meta["mode"] == "bars" and fig.layout.meta["frames"] == 50
    spec = fig.to_dict()  # frames are attached unvalidated; read them from the spec the browser gets
    assert len(spec["frames"]) == 50
    xs = [fr["data"][0]["x"][0] for fr in spec["frames"]]
    assert xs[0] == 0 and xs == sorted(xs) and xs[-1] > xs[0]  # the cursor sweeps forward
    assert [a.text for a in fig.layout.annotations][:2] == ["fifo", "best-fit"]
    legend = {t.name for t in fig.data if t.showlegend}
    expected = {"u0", "u1", "u2"} if color_by == "user" else {"training", "inference"}
    assert legend == expected
    assert fig.layout.updatemenus[0].buttons[0].method == "animate"
    steps = fig.layout.sliders[0].steps
    assert len(steps) == 50
    # Every step moves the cursor; only every SLIDER_LABEL_EVERY-th has a label (each label costs a layout).
    assert [list(s.args[0]) for s in steps] == [[str(k)] for k in range(50)]
    assert [k for k, s in enumerate(steps) if s.label] == list(range(0, 50, timeline.SLIDER_LABEL_EVERY))
    # Labels and the cursor's readout in human time; the readout changes with every frame.
    assert all(s.label.endswith((" s", " min", " h", " d")) for s in steps if s.label)
    readouts = [fr["data"][0]["text"][0] for fr in spec["frames"]]
    assert readouts[0] == "0 s" and len(set(readouts)) == 50 and readouts[-1].endswith(" min")
    # Rows read as nodes and GPU types: a tick per node, a dotted line where the type changes, and a hover
    # that names the job, its user and job type, the GPU's type and its node.
    assert list(fig.layout.yaxis.ticktext) == ["n0 · A100-80", "n1 · A100-80", "n2 · V100-32"]
    assert [sh.type for sh in fig.layout.shapes].count("line") == 2  # one per column
    bar = next(t for t in fig.data if t.showlegend)
    assert "job %{customdata[0]}" in bar.hovertemplate and "node %{customdata[1]}" in bar.hovertemplate
    assert ("A100-80" in bar.hovertemplate or "V100-32" in bar.hovertemplate) and "%{text}" in bar.hovertemplate
    titles = [
        ax.title.text
        for name, ax in fig.layout.to_plotly_json().items()
        if name.startswith("xaxis")
        for ax in [fig.layout[name]]
        if ax.title.text
    ]
    assert titles and all(t == "time (min)" for t in titles)


def test_timeline_frames_are_capped_and_large_runs_switch_mode(runs, monkeypatch):
    assert timeline.timeline_figure(runs, frames=10_000).layout.meta["frames"] == timeline.MAX_FRAMES
    assert timeline.timeline_mode(list(runs.values())) == "bars"
    monkeypatch.setattr(timeline, "WEBGL_BARS", 10)
    assert timeline.timeline_mode(list(runs.values())) == "raster"
    monkeypatch.setattr(timeline, "WEBGL_BARS", 10**9)
    monkeypatch.setattr(timeline, "WEBGL_JOBS", 10)
    assert timeline.timeline_mode(list(runs.values())) == "raster"
    fig = timeline.timeline_figure(runs, animate=False, mode="webgl")
    assert any(t.type == "scattergl" for t in fig.data) and not fig.frames
    monkeypatch.setattr(timeline, "HEATMAP_GPUS", 4)
    fig = timeline.timeline_figure(runs)
    assert fig.layout.meta["mode"] == "heatmap"
    heat = [t for t in fig.data if t.type == "heatmap"]
    assert len(heat) == 2 and 0 < np.max(heat[0].z) <= 100
    with pytest.raises(ValueError, match="mode must be one of"):
        timeline.timeline_figure(runs, mode="3d")


def test_raster_bins_follow_the_width_of_a_column():
    assert timeline.raster_bins(1) == timeline.RASTER_BINS
    assert timeline.raster_bins(5) == timeline.RASTER_WIDTH_PX // 5
    assert timeline.raster_bins(50) == timeline.RASTER_MIN_BINS


def test_raster_jobs_assigns_cells_by_midpoint():
    seg = pd.DataFrame({"gpu": [0, 0, 1], "job_id": [4, 5, 6], "start_s": [0.0, 3.0, 2.4], "end_s": [3.0, 10.0, 2.6]})
    grid = timeline.raster_jobs(seg, n_gpus=2, t_end_s=10.0, bins=10)
    assert grid[0].tolist() == [4, 4, 4, 5, 5, 5, 5, 5, 5, 5]
    assert grid[1].tolist() == [-1, -1, 6, -1, -1, -1, -1, -1, -1, -1]  # covers the midpoint 2.5 only


def test_raster_timeline_colours_cells_like_the_jobs(runs, monkeypatch):
    monkeypatch.setattr(timeline, "WEBGL_BARS", 10)
    assert timeline.timeline_mode(list(runs.values())) == "raster"
    fig = timeline.timeline_figure(runs, color_by="user")
    assert fig.layout.meta["mode"] == "raster"
    heat = [t for t in fig.data if t.type == "heatmap"]
    # One heatmap per GPU type (A100-80, V100-32) and run; stacked, they cover every GPU once.
    assert len(heat) == 4 and "GPU %{y} · V100-32" in heat[1].hovertemplate
    z = np.concatenate([np.asarray(t.z) for t in heat[:2]])
    jobs = np.concatenate([np.asarray(t.customdata) for t in heat[:2]])
    assert np.concatenate([np.asarray(t.y) for t in heat[:2]]).tolist() == list(range(runs["fifo"].cluster.n_gpus))
    n_gpus = runs["fifo"].cluster.n_gpus
    assert z.shape == jobs.shape == (n_gpus, timeline.raster_bins(2))
    users = sorted({j.user for j in runs["fifo"].jobs})
    busy = ~np.isnan(z)
    assert busy.any() and (~busy).any()
    expected = [users.index(runs["fifo"].jobs[j].user) for j in jobs[busy]]
    assert z[busy].tolist() == expected
    assert {t.name for t in fig.data if t.showlegend} == set(users)


def test_clusters_above_the_gpu_limit_get_a_banded_heatmap():
    cluster = parse_cluster("75x8:T4")  # 600 GPUs > HEATMAP_GPUS
    jobs = tuple(Job(i, submit_s=10.0 * i, duration_s=500.0, gpus=8) for i in range(30))
    fig = timeline.timeline_figure({"fifo": simulate(cluster, jobs, make_scheduler("fifo"))})
    assert fig.layout.meta["mode"] == "heatmap"
    assert fig.layout.yaxis.title.text == "GPU band (row of ≤3 GPUs)"
    heat = next(t for t in fig.data if t.type == "heatmap")
    assert np.asarray(heat.z).shape[0] == timeline.HEATMAP_ROWS


def test_a_down_node_is_shaded_and_each_job_a_failure_stopped_is_marked():
    from engine.analysis.scenario import Scenario

    sc = Scenario.from_query(
        {
            "cluster": "2x4:T4",
            "w.n_jobs": "40",
            "o.failures.mtbf_h": "20.0",
            "o.preemption.checkpoint_interval_s": "1800.0",
        }
    )
    cluster = sc.build_cluster()
    result = simulate(cluster, sc.build_jobs(cluster), make_scheduler("fifo"), seed=sc.seed, options=sc.options)
    points = timeline.interrupted_points(timeline.segments_frame(result), result)
    assert len(points) == result.interruptions.sum() > 0  # one mark per stop
    assert (points.groupby("job_id").size() == result.interruptions[points["job_id"].unique()]).all()
    nodes = cluster.layout.gpu_node[points["gpu"].to_numpy()]
    assert all(((result.outage_node == n) & (result.outage_start_s == t)).any() for n, t in zip(nodes, points["t_s"]))
    fig = timeline.timeline_figure({"fifo": result}, animate=False)
    down = [s for s in fig.layout.shapes if s.fillcolor == timeline.OUTAGE_COLOUR]
    assert len(down) == result.outage_node.size
    node = int(result.outage_node[0])  # the first band covers the first failed node's GPUs, for a while
    assert (down[0].y0, down[0].y1) == (
        cluster.layout.node_first_gpu[node] - 0.5,
        cluster.layout.node_first_gpu[node] - 0.5 + cluster.layout.node_gpus[node],
    )
    assert down[0].x1 > down[0].x0
    (marks,) = [t for t in fig.data if t.name == "stopped by a node failure"]
    assert len(marks.x) == len(points)
    plain = timeline.timeline_figure(
        {"fifo": simulate(cluster, sc.build_jobs(cluster), make_scheduler("fifo"))}, animate=False
    )
    assert not any(s.fillcolor == timeline.OUTAGE_COLOUR for s in plain.layout.shapes)
    assert not any(t.name == "stopped by a node failure" for t in plain.data)


def test_each_jobs_deadline_is_a_tick_green_if_met_red_if_missed():
    # One GPU: job 0 runs 0..100 (due 150: met), job 1 waits and runs 100..200 (due 120: missed), job 2 has none.
    jobs = [Job(0, 0.0, 100.0, deadline_s=150.0), Job(1, 1.0, 100.0, deadline_s=120.0), Job(2, 2.0, 10.0)]
    result = simulate(parse_cluster("1x1:V100-32"), jobs, make_scheduler("fifo"))
    points = timeline.deadline_points(timeline.segments_frame(result), result)
    assert points[["job_id", "gpu", "t_s", "met"]].values.tolist() == [[0, 0, 150.0, True], [1, 0, 120.0, False]]
    fig = timeline.timeline_figure({"fifo": result}, animate=False)
    met, missed = (next(t for t in fig.data if t.name == name) for name in ("deadline met", "deadline missed"))
    assert list(met.customdata) == [0] and list(missed.customdata) == [1]
    assert met.marker.line.color == timeline.DEADLINE_COLOURS[True] != missed.marker.line.color
    assert fig.layout.meta["time_unit"] == "min" and list(missed.x) == [2.0] and list(met.x) == [2.5]
    alone = simulate(parse_cluster("1x1:V100-32"), [Job(0, 0.0, 10.0)], make_scheduler("fifo"))
    plain = timeline.timeline_figure({"fifo": alone}, animate=False)
    assert not any(t.name in ("deadline met", "deadline missed") for t in plain.data)


def test_the_deadline_missed_entry_is_in_the_legend_when_only_a_later_run_misses_one():
    met_only = simulate(parse_cluster("1x1:V100-32"), [Job(0, 0.0, 100.0, deadline_s=150.0)], make_scheduler("fifo"))
    late = simulate(parse_cluster("1x1:V100-32"), [Job(0, 0.0, 100.0, deadline_s=50.0)], make_scheduler("fifo"))
    fig = timeline.timeline_figure({"a": met_only, "b": late}, animate=False)
    (missed,) = [t for t in fig.data if t.name == "deadline missed"]
    assert missed.showlegend and list(missed.customdata) == [0] and missed.xaxis == "x2"  # drawn in b's column


def test_each_resize_of_an_elastic_job_is_a_triangle_and_its_bars_show_each_size():
    from engine import Resize, Start, Wake
    from tests.sim.test_elastic import CLUSTER, Script, elastic_job

    # Job 0 starts on 2 GPUs, grows to 4 at t=40 s, shrinks to 1 at t=60 s; job 1 is rigid.
    script = Script(
        [Start(0, (0, 1)), Start(1, (4,)), Wake(40.0)], [Resize(0, (0, 1, 2, 3)), Wake(60.0)], [Resize(0, (2,))]
    )
    result = simulate(CLUSTER, [elastic_job(), Job(1, 0.0, 10.0)], script)
    points = timeline.resize_points(result)
    assert points.values.tolist() == [[0, 0, 40.0, 2, 4], [0, 2, 60.0, 4, 1]]
    seg = timeline.segments_frame(result)
    assert seg[seg["job_id"] == 0].groupby("start_s")["gpu"].count().tolist() == [2, 4, 1]  # a bar per size
    fig = timeline.timeline_figure({"script": result}, animate=False)
    (marks,) = [t for t in fig.data if t.name == "elastic job resized"]
    assert list(marks.x) == [40.0 / 60, 1.0] and list(marks.marker.symbol) == ["triangle-up", "triangle-down"]
    assert "resized from %{customdata[1]} to %{customdata[2]} GPUs" in marks.hovertemplate
    rigid = simulate(CLUSTER, [Job(0, 0.0, 100.0, gpus=2)], make_scheduler("fifo"))
    assert timeline.resize_points(rigid).empty
    assert not any(t.name == "elastic job resized" for t in timeline.timeline_figure({"fifo": rigid}).data)

"""Chart data shaping and figure specs (no streamlit needed)."""

import math

import numpy as np
import pandas as pd
import pytest

from engine import Job, make_scheduler, parse_cluster, simulate
from engine.analysis.metrics import job_frame
from engine.viz import charts


@pytest.fixture(scope="module")
def runs():
    cluster = parse_cluster("2x4:A100-80,1x2:V100-32")
    jobs = tuple(Job(i, submit_s=30.0 * i, duration_s=400.0 + 50 * (i % 5), gpus=(1, 2, 4)[i % 3],
                     user=f"u{i % 3}", job_type=("training", "inference")[i % 2]) for i in range(24))
    return {name: simulate(cluster, jobs, make_scheduler(name)) for name in ("fifo", "best-fit")}


def test_time_scale_picks_readable_units():
    assert charts.time_scale(50) == ("s", 1.0)
    assert charts.time_scale(600) == ("min", 60.0)
    assert charts.time_scale(5 * 3600) == ("h", 3600.0)
    assert charts.time_scale(10 * 86400) == ("d", 86400.0)
    assert charts.time_scale(math.nan) == ("s", 1.0)


def test_segments_frame_has_one_row_per_segment_gpu(runs):
    r = runs["fifo"]
    seg = charts.segments_frame(r)
    assert len(seg) == len(r.seg_gpu_ids) == sum(j.gpus for j in r.jobs)
    four = seg[seg["job_id"] == 2]  # job 2 asks for 4 GPUs
    assert len(four) == 4 and four["gpu"].nunique() == 4 and four["start_s"].nunique() == 1
    assert (seg["end_s"] > seg["start_s"]).all()
    assert set(seg["user"]) == {"u0", "u1", "u2"}


def test_step_at_and_cdf_points():
    t, v = np.array([0.0, 10.0, 20.0]), np.array([1, 3, 0])
    assert charts.step_at(t, v, np.array([-1.0, 0.0, 5.0, 10.0, 25.0])).tolist() == [0, 1, 1, 3, 0]
    x, p = charts.cdf_points([3.0, np.nan, 1.0, 2.0])
    assert x.tolist() == [1.0, 2.0, 3.0] and p.tolist() == pytest.approx([1 / 3, 2 / 3, 1.0])


def test_category_colours_groups_the_rare_ones_as_other():
    values = [f"u{i}" for i in range(20) for _ in range(20 - i)]
    colours = charts.category_colours(values, limit=5)
    assert sum(c != charts.OTHER_COLOUR for c in colours.values()) == 4
    assert colours["u0"] != charts.OTHER_COLOUR and colours["u19"] == charts.OTHER_COLOUR
    assert charts.category_colours(values, limit=5) == colours


def test_busy_grid_integrates_segments_exactly():
    seg = pd.DataFrame({"gpu": [0, 1, 1], "start_s": [1.0, 0.0, 9.0], "end_s": [7.0, 2.0, 10.0],
                        "fraction": [1.0, 0.5, 1.0]})
    grid = charts.busy_grid(seg, n_gpus=2, edges_s=np.array([0.0, 2.0, 4.0, 6.0, 8.0, 10.0]), rows=2)
    assert grid[0].tolist() == pytest.approx([0.5, 1.0, 1.0, 0.5, 0.0])
    assert grid[1].tolist() == pytest.approx([0.5, 0.0, 0.0, 0.0, 0.5])
    # Bands: 2 GPUs in one row average their busy shares.
    band = charts.busy_grid(seg, n_gpus=2, edges_s=np.array([0.0, 10.0]), rows=1)
    assert band[0, 0] == pytest.approx((6.0 + 0.5 * 2 + 1.0) / 20)


@pytest.mark.parametrize("color_by", ["user", "job_type"])
def test_timeline_figure_side_by_side_with_animation(runs, color_by):
    fig = charts.timeline_figure(runs, color_by=color_by, frames=50)
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
    assert [k for k, s in enumerate(steps) if s.label] == list(range(0, 50, charts.SLIDER_LABEL_EVERY))
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
    titles = [ax.title.text for name, ax in fig.layout.to_plotly_json().items() if name.startswith("xaxis")
              for ax in [fig.layout[name]] if ax.title.text]
    assert titles and all(t == "time (min)" for t in titles)


def test_timeline_frames_are_capped_and_large_runs_switch_mode(runs, monkeypatch):
    assert charts.timeline_figure(runs, frames=10_000).layout.meta["frames"] == charts.MAX_FRAMES
    assert charts.timeline_mode(list(runs.values())) == "bars"
    monkeypatch.setattr(charts, "WEBGL_BARS", 10)
    assert charts.timeline_mode(list(runs.values())) == "raster"
    monkeypatch.setattr(charts, "WEBGL_BARS", 10**9)
    monkeypatch.setattr(charts, "WEBGL_JOBS", 10)
    assert charts.timeline_mode(list(runs.values())) == "raster"
    fig = charts.timeline_figure(runs, animate=False, mode="webgl")
    assert any(t.type == "scattergl" for t in fig.data) and not fig.frames
    monkeypatch.setattr(charts, "HEATMAP_GPUS", 4)
    fig = charts.timeline_figure(runs)
    assert fig.layout.meta["mode"] == "heatmap"
    heat = [t for t in fig.data if t.type == "heatmap"]
    assert len(heat) == 2 and 0 < np.max(heat[0].z) <= 100
    with pytest.raises(ValueError, match="mode must be one of"):
        charts.timeline_figure(runs, mode="3d")


def test_series_cdf_and_box_figures(runs):
    fig = charts.series_figure(runs)
    assert fig.layout.yaxis.title.text == "queue (jobs)" and fig.layout.yaxis2.title.text == "busy GPUs (%)"
    assert max(max(t.y) for t in fig.data if t.yaxis == "y2") <= 100
    frames = {name: job_frame(r) for name, r in runs.items()}
    cdf = charts.cdf_figure(frames)
    assert [a.text for a in cdf.layout.annotations] == ["wait CDF", "JCT CDF"]
    assert [(t.name, t.xaxis, t.showlegend) for t in cdf.data] == [
        ("fifo", "x", True), ("best-fit", "x", True), ("fifo", "x2", False), ("best-fit", "x2", False)]
    assert all(t.y[-1] == pytest.approx(100) for t in cdf.data)
    waits = np.sort(frames["fifo"]["wait_s"].to_numpy())
    unit, div = charts.time_scale(max(float(np.nanmax(f["wait_s"])) for f in frames.values()))
    assert cdf.data[0].x[-1] == pytest.approx(waits[-1] / div)
    assert cdf.layout.xaxis.title.text == f"wait ({unit})" and cdf.layout.xaxis2.title.text.startswith("JCT (")
    users = charts.user_wait_figure(frames, {"fifo": (0.25, 0.8)})
    assert users.data[0].name.startswith("fifo (Gini 0.25, Jain 0.80;") and "nan" in users.data[1].name


def test_workload_figures_and_offered_load():
    jobs = tuple(Job(i, submit_s=100.0 * i, duration_s=50.0 * (1 + i % 4), gpus=1 + (i % 2),
                     gpu_fraction=0.5 if i % 7 == 0 and i % 2 == 0 else 1.0, user=f"u{i % 4}") for i in range(40))
    df = charts.jobs_frame(jobs)
    centres, load = charts.offered_load(df, n_gpus=4, bins=10)
    width = (df["submit_s"].max()) / 10
    assert (load * 4 * width).sum() == pytest.approx(df["gpu_s"].sum())
    assert "<1" in list(charts.gpu_count_figure(df).data[0].x)
    for fig in (charts.arrivals_figure(df), charts.duration_figure(df), charts.user_volume_figure(df),
                charts.offered_load_figure(df, 4)):
        assert "(" in fig.layout.yaxis.title.text
        assert fig.layout.xaxis.title.text


def test_cluster_frame_and_figure():
    cluster = parse_cluster({"groups": [{"gpu_type": "A100-80", "nodes": 2, "gpus_per_node": 4, "rack": "a"},
                                        {"gpu_type": "T4", "nodes": 1, "gpus_per_node": 2, "rack": "b"}]})
    df = charts.cluster_frame(cluster)
    assert len(df) == 10 and df["x"].tolist() == [0] * 4 + [1] * 4 + [3] * 2  # one gap column before rack b
    fig = charts.cluster_figure(cluster)
    assert {t.name for t in fig.data} == {"A100-80", "T4"}
    assert [a.text for a in fig.layout.annotations] == ["a", "b"]


def test_binned_series_keeps_peaks_and_means():
    t = np.arange(0.0, 1000.0)  # a change every second
    v = np.zeros(1000)
    v[500] = 7.0  # a one-second spike
    v[600:] = 2.0
    tb, peak = charts.binned_series(t, v, 1000.0, bins=10, how="max")
    assert len(tb) == 10 and peak[5] == 7.0 and peak[6:].tolist() == [2.0] * 4 and peak[:5].max() == 0
    _, mean = charts.binned_series(t, v, 1000.0, bins=10, how="mean")
    assert mean[5] == pytest.approx(0.07) and mean[7] == pytest.approx(2.0)  # 7 for 1 s of a 100 s bin
    # Total area is preserved by the time-weighted mean.
    assert (mean * 100).sum() == pytest.approx(v.sum())
    short_t, short_v = charts.binned_series(t[:5], v[:5], 5.0, bins=10)
    assert short_t.tolist() == t[:5].tolist()


def test_cdf_curve_thins_but_keeps_the_ends():
    v, p = charts.cdf_curve(np.arange(10_000.0), points=100)
    assert len(v) == 100 and v[0] == 0 and v[-1] == 9999 and p[-1] == 1.0
    assert np.all(np.diff(v) > 0)


def test_user_wait_figure_names_few_users_and_ranks_hundreds_even_when_most_waits_are_zero():
    few = {"fifo": pd.DataFrame({"user": ["a", "a", "b", "c"], "wait_s": [0.0, 600.0, 0.0, np.nan]}),
           "sjf": pd.DataFrame({"user": ["a", "a", "b", "c"], "wait_s": [0.0, 0.0, 0.0, 120.0]})}
    fig = charts.user_wait_figure(few, {"fifo": (0.25, 0.8)})
    assert [t.type for t in fig.data] == ["bar", "bar"] and list(fig.data[0].x) == ["a", "c", "b"]
    assert list(fig.data[0].y[:1]) == [5.0] and fig.layout.yaxis.title.text == "mean wait (min)"
    assert fig.data[0].name == "fifo (Gini 0.25, Jain 0.80; 50% of users never waited)" and "nan" in fig.data[1].name
    # 400 users, 90 % of whom never wait: one ranked line per run, every user on it, zeros included.
    rng = np.random.default_rng(0)
    waits = np.where(np.arange(400) % 10 == 0, rng.uniform(3600, 7200, 400), 0.0)
    many = {"fifo": pd.DataFrame({"user": [f"u{i}" for i in range(400)], "wait_s": waits})}
    fig = charts.user_wait_figure(many, {})
    (line,) = fig.data
    assert line.type == "scatter" and len(line.y) == 400 and list(line.y).count(0.0) == 360
    assert list(line.y) == sorted(line.y, reverse=True) and line.x[-1] == 100
    assert "90% of users never waited" in line.name and "400 users" in fig.layout.xaxis.title.text


def test_raster_bins_follow_the_width_of_a_column():
    assert charts.raster_bins(1) == charts.RASTER_BINS
    assert charts.raster_bins(5) == charts.RASTER_WIDTH_PX // 5
    assert charts.raster_bins(50) == charts.RASTER_MIN_BINS


def test_raster_jobs_assigns_cells_by_midpoint():
    seg = pd.DataFrame({"gpu": [0, 0, 1], "job_id": [4, 5, 6], "start_s": [0.0, 3.0, 2.4],
                        "end_s": [3.0, 10.0, 2.6]})
    grid = charts.raster_jobs(seg, n_gpus=2, t_end_s=10.0, bins=10)
    assert grid[0].tolist() == [4, 4, 4, 5, 5, 5, 5, 5, 5, 5]
    assert grid[1].tolist() == [-1, -1, 6, -1, -1, -1, -1, -1, -1, -1]  # covers the midpoint 2.5 only


def test_raster_timeline_colours_cells_like_the_jobs(runs, monkeypatch):
    monkeypatch.setattr(charts, "WEBGL_BARS", 10)
    assert charts.timeline_mode(list(runs.values())) == "raster"
    fig = charts.timeline_figure(runs, color_by="user")
    assert fig.layout.meta["mode"] == "raster"
    heat = [t for t in fig.data if t.type == "heatmap"]
    # One heatmap per GPU type (A100-80, V100-32) and run; stacked, they cover every GPU once.
    assert len(heat) == 4 and "GPU %{y} · V100-32" in heat[1].hovertemplate
    z = np.concatenate([np.asarray(t.z) for t in heat[:2]])
    jobs = np.concatenate([np.asarray(t.customdata) for t in heat[:2]])
    assert np.concatenate([np.asarray(t.y) for t in heat[:2]]).tolist() == list(range(runs["fifo"].cluster.n_gpus))
    n_gpus = runs["fifo"].cluster.n_gpus
    assert z.shape == jobs.shape == (n_gpus, charts.raster_bins(2))
    users = sorted({j.user for j in runs["fifo"].jobs})
    busy = ~np.isnan(z)
    assert busy.any() and (~busy).any()
    expected = [users.index(runs["fifo"].jobs[j].user) for j in jobs[busy]]
    assert z[busy].tolist() == expected
    assert {t.name for t in fig.data if t.showlegend} == set(users)


def test_training_curves_read_live_tensorboard_scalars(tmp_path):
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(tmp_path / "tb" / "ppo_1"))
    for step, reward in ((1024, -5.0), (2048, -3.5), (3072, -2.0)):
        for tag, value in (("rollout/ep_rew_mean", reward), ("train/loss", 0.1), ("eval/mean_reward", reward + 1)):
            summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])
            writer.add_event(event_pb2.Event(step=step, summary=summary))
    writer.flush()  # still open: the reader must cope with a file being written
    curves = charts.training_curves(tmp_path / "tb")
    assert set(curves["tag"]) == {"rollout/ep_rew_mean", "eval/mean_reward"}
    ep = curves[curves["tag"] == "rollout/ep_rew_mean"]
    assert ep["step"].tolist() == [1024, 2048, 3072] and ep["value"].tolist() == [-5.0, -3.5, -2.0]
    fig = charts.training_figure(curves)
    assert [t.name for t in fig.data if len(t.x)] == [charts.TRAINING_TAGS["rollout/ep_rew_mean"],
                                                      charts.TRAINING_TAGS["eval/mean_reward"]]
    assert charts.training_curves(tmp_path / "nothing").empty
    writer.close()


def test_clusters_above_the_gpu_limit_get_a_banded_heatmap():
    cluster = parse_cluster("75x8:T4")  # 600 GPUs > HEATMAP_GPUS
    jobs = tuple(Job(i, submit_s=10.0 * i, duration_s=500.0, gpus=8) for i in range(30))
    fig = charts.timeline_figure({"fifo": simulate(cluster, jobs, make_scheduler("fifo"))})
    assert fig.layout.meta["mode"] == "heatmap"
    assert fig.layout.yaxis.title.text == "GPU band (row of ≤3 GPUs)"
    heat = next(t for t in fig.data if t.type == "heatmap")
    assert np.asarray(heat.z).shape[0] == charts.HEATMAP_ROWS

"""Names from data (user names and job types of a trace, run and scheduler names, cluster and rack names) show in
every chart as typed: Plotly renders a subset of HTML (links, bold) in legends, hover text, titles and tick labels,
and fields in hover templates, so a name carrying them must reach the figure escaped (issue 32, injection)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from engine import make_scheduler, parse_cluster, simulate
from engine.analysis.metrics import job_frame
from engine.viz import cluster, distributions, explore, series, timeline, users, workload
from engine.viz.style import plain

from .conftest import chart_jobs

#: Markup, a link, a hover-template field and an entity: each would render as something else than typed.
HOSTILE = '<b>x</b><a href="https://evil.example/">click</a>%{meta}&amp;'
RAW = ("<b>x", "<a href", "%{meta}", "&amp;<", "/a>%")


def strings(fig) -> list[str]:
    """Every string in the figure as the browser receives it."""
    out: list[str] = []

    def walk(value) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(json.loads(fig.to_json()))
    return out


def assert_escaped(fig) -> None:
    text = strings(fig)
    assert not [s for s in text if any(r in s for r in RAW)]
    assert any(plain(HOSTILE) in s for s in text)  # the name is there, escaped


@pytest.fixture(scope="module")
def hostile_runs():
    racks = {"groups": [{"gpu_type": "A100-80", "nodes": 2, "gpus_per_node": 4, "rack": HOSTILE}]}
    where = parse_cluster(racks)
    jobs = chart_jobs(user=HOSTILE, job_type=HOSTILE)
    return {HOSTILE: simulate(where, jobs, make_scheduler("fifo")), "sjf": simulate(where, jobs, make_scheduler("sjf"))}


@pytest.mark.parametrize("color_by", ["user", "job_type"])
@pytest.mark.parametrize("mode", ["bars", "raster", "heatmap"])
def test_the_timeline_shows_run_user_and_job_type_names_as_typed(hostile_runs, color_by, mode):
    assert_escaped(timeline.timeline_figure(hostile_runs, color_by=color_by, mode=mode, frames=3))


def test_series_cdfs_and_the_per_user_chart_show_names_as_typed(hostile_runs):
    frames = {name: job_frame(r) for name, r in hostile_runs.items()}
    assert_escaped(series.series_figure(hostile_runs))
    assert_escaped(distributions.cdf_figure(frames))
    assert_escaped(users.user_wait_figure(frames, {}))
    many = {name: f.assign(user=[f"{HOSTILE}{i}" for i in range(len(f))]) for name, f in frames.items()}
    assert_escaped(users.user_wait_figure(many, {}))  # ranked lines past USER_BARS users


def test_the_cluster_picture_and_the_workload_show_rack_and_user_names_as_typed(hostile_runs):
    run = next(iter(hostile_runs.values()))
    assert_escaped(cluster.cluster_figure(run.cluster))
    assert_escaped(workload.user_volume_figure(workload.jobs_frame(run.jobs)))


def test_sweep_and_plan_charts_show_scheduler_and_cluster_names_as_typed():
    rows = [
        {"cluster": c, "load": load, "seed": seed, "scheduler": s, "p95_wait_s": 100 * load + seed, "cost_usd": k}
        for c in (HOSTILE, "2x4:T4")
        for load in (0.5, 1.0)
        for seed in range(2)
        for k, s in enumerate((HOSTILE, "sjf"))
    ]
    frame = pd.DataFrame(rows)
    assert_escaped(explore.sweep_curves_figure(frame, "p95_wait_s"))
    assert_escaped(explore.sweep_heatmap_figure(frame, "p95_wait_s", "cluster", "scheduler"))
    assert_escaped(explore.tradeoff_figure(frame, "cost_usd", "p95_wait_s"))
    probes = [
        {"scheduler": HOSTILE, "nodes": n, "gpus": 8 * n, "value": 100 / n, "meets": n > 1, "unschedulable": 0}
        for n in (1, 2, 3)
    ]
    assert_escaped(explore.plan_figure(probes, {HOSTILE: 2}, "p95_wait_s", 60))


def test_plain_keeps_ordinary_names_and_escapes_each_markup_character():
    assert plain("fifo · no failures") == "fifo · no failures" and plain(3) == "3"
    assert plain('<a href="x">&%{y}') == '&lt;a href="x"&gt;&amp;&#37;{y}'

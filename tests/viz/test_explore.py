"""Figures of sweeps and plans: the band is mean +/- the 95 % CI over seeds, the heatmap holds means, the plan's
answers are marked."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from engine.analysis.evaluate import mean_ci
from engine.viz.explore import (
    cluster_label,
    pareto_front,
    plan_figure,
    sweep_curves_figure,
    sweep_heatmap_figure,
    tradeoff_figure,
)


@pytest.fixture
def frame() -> pd.DataFrame:
    rows = [
        {"cluster": c, "load": load, "seed": seed, "scheduler": s, "p95_wait_s": 100 * load + 10 * seed + k}
        for c in ("2x4:T4", "4x4:T4")
        for load in (0.5, 1.0)
        for seed in range(3)
        for k, s in enumerate(("fifo", "sjf"))
    ]
    return pd.DataFrame(rows)


def test_curves_have_one_panel_per_cluster_and_the_confidence_band(frame):
    fig = sweep_curves_figure(frame, "p95_wait_s").to_plotly_json()
    assert [a["text"] for a in fig["layout"]["annotations"]] == ["2x4:T4", "4x4:T4"]
    lines = [t for t in fig["data"] if t["mode"] == "lines+markers"]
    assert [t["name"] for t in lines] == ["fifo", "sjf", "fifo", "sjf"]
    mean, half = mean_ci([100 * 1.0 + 10 * seed + 1 for seed in range(3)])
    sjf, band = lines[1], next(t for t in fig["data"] if t.get("fill") == "toself" and t["legendgroup"] == "sjf")
    assert list(sjf["x"]) == [0.5, 1.0] and sjf["y"][1] == pytest.approx(mean)
    assert band["y"][1] == pytest.approx(mean + half) and band["y"][2] == pytest.approx(mean - half)


def test_heatmap_holds_the_mean_over_the_other_parameters(frame):
    fig = sweep_heatmap_figure(frame, "p95_wait_s", "load", "scheduler").to_plotly_json()
    heat = fig["data"][0]
    assert list(heat["x"]) == ["0.5", "1.0"] and list(heat["y"]) == ["fifo", "sjf"]
    assert heat["z"][1][0] == pytest.approx(frame.query("load == 0.5 and scheduler == 'sjf'").p95_wait_s.mean())
    with pytest.raises(ValueError, match="two different ones"):
        sweep_heatmap_figure(frame, "p95_wait_s", "load", "load")


def test_plan_figure_marks_each_answer_and_the_target():
    probes = [
        {"scheduler": "fifo", "nodes": n, "gpus": 4 * n, "value": 1000 / n, "meets": n >= 4, "unschedulable": 0}
        for n in (1, 2, 3, 4, 8)
    ]
    fig = plan_figure(probes, {"fifo": 4}, "p95_wait_s", 300.0).to_plotly_json()
    line, star = fig["data"]
    assert list(line["x"]) == [1, 2, 3, 4, 8] and list(star["x"]) == [4] and star["marker"]["symbol"] == "star"
    assert fig["layout"]["shapes"][0]["y0"] == 5.0 and fig["layout"]["yaxis"]["title"]["text"] == "p95 wait (min)"


def test_the_band_stays_in_the_metrics_range_and_the_legend_says_so():
    # Two seeds far apart: mean +/- the t interval reaches below 0 s (and above 1 for utilisation).
    rows = [
        {
            "cluster": "2x4:T4",
            "load": load,
            "seed": seed,
            "scheduler": "fifo",
            "p95_wait_s": [1.0, 200.0][seed],
            "utilization": [0.2, 0.99][seed],
        }
        for load in (0.5, 1.0)
        for seed in range(2)
    ]
    frame = pd.DataFrame(rows)
    fig = sweep_curves_figure(frame, "p95_wait_s").to_plotly_json()
    band = next(t for t in fig["data"] if t["name"] == "fifo 95 % band")
    assert min(band["y"]) == 0.0
    assert any(t["name"] == "shaded: 95 % band over seeds, clipped to ≥ 0" for t in fig["data"])
    fig = sweep_curves_figure(frame, "utilization").to_plotly_json()
    band = next(t for t in fig["data"] if t["name"] == "fifo 95 % band")
    assert (min(band["y"]), max(band["y"])) == (0.0, 1.0)
    assert any(t["name"] == "shaded: 95 % band over seeds, clipped to 0 to 1" for t in fig["data"])


def test_durations_are_drawn_in_the_unit_their_size_calls_for(frame):
    hours = frame.assign(p95_wait_s=frame.p95_wait_s * 100)  # up to 14,000 s
    fig = sweep_curves_figure(hours, "p95_wait_s").to_plotly_json()
    line = next(t for t in fig["data"] if t["mode"] == "lines+markers")
    assert fig["layout"]["yaxis"]["title"]["text"] == "p95 wait (h)" and line["y"][1] == pytest.approx(11_000 / 3600)
    heat = sweep_heatmap_figure(hours, "p95_wait_s", "load", "scheduler").to_plotly_json()
    assert heat["data"][0]["colorbar"]["title"]["text"] == "p95 wait (h)"
    probes = [
        {"scheduler": "fifo", "nodes": n, "gpus": 4 * n, "value": 36_000 / n, "meets": n >= 4, "unschedulable": 0}
        for n in (1, 2, 4)
    ]
    plan = plan_figure(probes, {"fifo": 4}, "p95_wait_s", 1800.0).to_plotly_json()
    assert plan["layout"]["yaxis"]["title"]["text"] == "p95 wait (h)" and plan["layout"]["shapes"][0]["y0"] == 0.5


def test_a_cluster_is_labelled_by_a_short_name_even_with_racks(frame):
    racks = json.dumps(
        {
            "groups": [
                {"nodes": 2, "gpus_per_node": 4, "gpu_type": "T4", "rack": "r1"},
                {"nodes": 2, "gpus_per_node": 4, "gpu_type": "T4", "rack": "r2"},
            ]
        },
        indent=2,
    )
    assert cluster_label(racks) == "2x4:T4,2x4:T4 on 2 racks"
    assert cluster_label("2x4:T4") == "2x4:T4" and cluster_label("{" + "x" * 100) == "{" + "x" * 36 + "..."
    fig = sweep_curves_figure(frame.replace({"cluster": {"4x4:T4": racks}}), "p95_wait_s").to_plotly_json()
    assert [a["text"] for a in fig["layout"]["annotations"]] == ["2x4:T4", "2x4:T4,2x4:T4 on 2 racks"]
    heat = sweep_heatmap_figure(frame.replace({"cluster": {"4x4:T4": racks}}), "p95_wait_s", "cluster", "load")
    assert list(heat.to_plotly_json()["data"][0]["x"]) == ["2x4:T4", "2x4:T4,2x4:T4 on 2 racks"]


def test_pareto_front_keeps_the_points_nothing_beats_on_both():
    cost = [1.0, 2.0, 3.0, 2.0, 4.0, float("nan"), 1.0]
    wait = [9.0, 5.0, 1.0, 6.0, 1.0, 0.0, 9.0]
    # (2, 6) loses to (2, 5), (4, 1) to (3, 1); NaN never counts; the tie (1, 9) twice: both stay.
    assert pareto_front(cost, wait).tolist() == [True, True, True, False, False, False, True]


def test_tradeoff_figure_marks_each_grid_point_and_joins_the_front(frame):
    frame = frame.assign(cost_usd=lambda f: 50 - f.p95_wait_s / 10 + (f.scheduler == "sjf") * 20)
    fig = tradeoff_figure(frame, "cost_usd", "p95_wait_s").to_plotly_json()
    front, *points = fig["data"]
    assert front["name"] == "Pareto front" and [t["name"] for t in points] == ["fifo", "sjf"]
    means = frame.groupby(["cluster", "load", "scheduler"])[["cost_usd", "p95_wait_s"]].mean()
    assert len(points[0]["x"]) == len(points[1]["x"]) == 4
    # sjf costs 20 more for 1 s less wait: every fifo point is on the front, no sjf point is.
    fifo = means.xs("fifo", level="scheduler").sort_values("cost_usd")
    assert list(front["x"]) == fifo.cost_usd.tolist() and list(front["y"]) == fifo.p95_wait_s.tolist()
    assert fig["layout"]["xaxis"]["title"]["text"] == "Cost of GPUs held (USD)"

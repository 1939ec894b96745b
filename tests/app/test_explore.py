"""The Explore page under AppTest, on the session's local Ray: a sweep's curves, heatmap, table and downloads
(the spec downloaded is one the CLI takes back), and a capacity plan's answer and curve."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from engine import make_scheduler, parse_cluster, simulate
from engine.analysis.metrics import summarize
from engine.analysis.sweep import SweepSpec
from engine.traces.generator import generate
from tests.app.test_pages import APP, errors

pytestmark = pytest.mark.timeout(300)
QUERY = {"cluster": "2x4:V100-32", "sched": "fifo,sjf", "w.n_jobs": "40"}


def explore(query: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=240)
    for k, v in (QUERY if query is None else query).items():
        at.query_params[k] = v
    at.run()
    at.switch_page("app_pages/explore.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def find_fewest_nodes(at: AppTest, node: str, metric: str, value: str, *, op: str = "", max_nodes: int = 0) -> None:
    """Fill the capacity plan form (``op`` and ``max_nodes`` left as they are unless given), press its button
    and check that the page shows no exception and no error."""
    at.text_input(key="plan_node").set_value(node)
    at.selectbox(key="plan_metric").select(metric)
    if op:
        at.radio(key="plan_op").set_value(op)
    if max_nodes:
        at.number_input(key="plan_max_nodes").set_value(max_nodes)
    at.text_input(key="plan_value").set_value(value)
    at.button(key="FormSubmitter:plan_form-▶ Find the fewest nodes").click().run()
    assert not at.exception and not errors(at), errors(at)


def charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def test_a_sweep_shows_curves_with_bands_a_heatmap_and_the_rows(ray_local):
    at = explore()
    assert at.title[0].value == "Explore" and not errors(at)
    at.text_input(key="sweep_loads").set_value("0.6,1.2")
    at.number_input(key="sweep_seeds").set_value(2)
    at.button(key="FormSubmitter:sweep_form-▶ Run sweep").click().run()
    assert not at.exception and not errors(at), errors(at)
    assert any("8 of 8 cells completed on Ray (2 CPUs)" in s.value for s in at.success)
    curves, heatmap = charts(at)[:2]
    lines = [t for t in curves["data"] if t.get("mode") == "lines+markers"]
    assert [t["name"] for t in lines] == ["fifo", "sjf"] and all(t["x"] == [0.6, 1.2] for t in lines)
    assert sum(t["name"].endswith(" 95 % band") for t in curves["data"]) == 2  # a 95 % band per scheduler
    assert curves["layout"]["title"]["text"].startswith("p95 wait (")
    assert heatmap["data"][0]["type"] == "heatmap" and heatmap["data"][0]["x"] == ["0.6", "1.2"]
    assert at.selectbox(key="sweep_heat_x").value == "load" and at.selectbox(key="sweep_heat_y").value == "scheduler"
    table = at.session_state["explore_sweep"]["frame"]
    assert len(table) == 8 and list(table.columns[:4]) == ["cluster", "load", "seed", "scheduler"]
    shown = at.dataframe[-1].value
    assert list(shown.columns[:5]) == ["cluster", "offered load", "seed", "scheduler", "Jobs"]
    assert "p95 wait ↓" in shown.columns and not shown.isin([None, "None"]).any().any()
    # The row of a cell is that cell's run: load 1.2, seed 1, sjf on the generated workload of the scenario.
    jobs = generate("2x4:V100-32", 40, load=1.2, seed=1, users=6)
    expected = summarize(simulate(parse_cluster("2x4:V100-32"), jobs, make_scheduler("sjf"), seed=1))
    row = table[(table.load == 1.2) & (table.seed == 1) & (table.scheduler == "sjf")].iloc[0]
    assert row["mean_wait_s"] == expected.mean_wait_s
    # Another metric redraws the curves without rerunning the sweep.
    at.selectbox(key="sweep_metric").select("utilization").run()
    assert "GPU utilisation" in charts(at)[0]["layout"]["title"]["text"]
    labels = {d.proto.label for d in at.get("download_button")}
    assert {"Results (CSV, one row per cell)", "Sweep spec (JSON, for python -m engine sweep --spec)"} <= labels
    spec = at.session_state["explore_sweep"]["spec"]
    assert SweepSpec.from_json(spec.to_json()) == spec and spec.base.workload.users == 6


def test_a_sweep_of_elastic_jobs_offers_the_elastic_metrics(ray_local):
    """Found using the app as a stranger: with elastic jobs (Workload page) the sweep's metric list had no
    rescales or elastic GPU efficiency, although Compare shows them."""
    at = explore({**QUERY, "sched": "fifo,optimus", "w.elastic": "0.5", "w.n_jobs": "30"})
    at.text_input(key="sweep_loads").set_value("1.2")
    at.number_input(key="sweep_seeds").set_value(1)
    at.button(key="FormSubmitter:sweep_form-▶ Run sweep").click().run()
    assert not at.exception and not errors(at), errors(at)
    assert {"Rescales", "Elastic GPU efficiency"} <= set(at.selectbox(key="sweep_metric").options)
    at.selectbox(key="sweep_metric").select("elastic_gpu_efficiency").run()
    assert charts(at)[0]["layout"]["title"]["text"].startswith("Elastic GPU efficiency")


def test_a_capacity_plan_shows_the_fewest_nodes_and_its_curve(ray_local):
    at = explore()
    assert at.checkbox(key="plan_grow").value  # by default a plan grows the cluster the user built
    find_fewest_nodes(at, "4:V100-32", "mean_wait_s", "15 min")
    answer = at.session_state["explore_plan"]["answer"]
    assert at.session_state["explore_plan"]["target"].value == 900.0
    shown = {m.label: (m.value, m.proto.delta) for m in at.metric}
    for row in answer.itertuples():
        assert shown[row.scheduler] == (f"{row.nodes} node{'' if row.nodes == 1 else 's'}", f"{row.gpus} GPUs in all")
    table = at.dataframe[-1].value
    assert list(table.columns) == [
        "scheduler",
        "fewest nodes",
        "GPUs",
        "metric",
        "value there",
        "with one node fewer",
        "problem",
    ]
    assert not table.isin([None, "None"]).any().any() and set(table["metric"]) == {"Mean wait"}
    figure = next(c for c in charts(at) if "against nodes" in c["layout"]["title"]["text"])
    assert {t["name"] for t in figure["data"] if t.get("mode") == "lines+markers"} == {"fifo", "sjf"}
    scale = {"Mean wait (s)": 1, "Mean wait (min)": 60, "Mean wait (h)": 3600, "Mean wait (d)": 86_400}[
        figure["layout"]["yaxis"]["title"]["text"]
    ]
    assert figure["layout"]["shapes"][0]["y0"] == 900.0 / scale  # the target line


def test_a_bad_grid_is_an_inline_error_in_its_own_tab():
    at = explore()
    at.text_input(key="sweep_loads").set_value("0.5,abc")
    at.button(key="FormSubmitter:sweep_form-▶ Run sweep").click().run()
    assert not at.exception
    sweep_tab, plan_tab, _ = at.tabs
    assert len(sweep_tab.error) == 1 and "expected comma\\-separated numbers" in sweep_tab.error[0].value
    # The capacity plan tab still draws its form, with no error of the sweep's.
    assert not plan_tab.error and plan_tab.text_input(key="plan_node").value


def test_more_clusters_are_shorthand_only_never_a_path_on_the_server():
    at = explore()
    at.text_area(key="sweep_clusters").set_value("openb:/etc/passwd")
    at.button(key="FormSubmitter:sweep_form-▶ Run sweep").click().run()
    assert not at.exception and "explore_sweep" not in at.session_state
    assert any("expected NODESxGPUS:TYPE" in e for e in errors(at)), errors(at)


def test_a_plan_target_that_is_no_duration_is_one_line_in_its_tab():
    at = explore()
    at.text_input(key="plan_value").set_value("half an hour")
    at.button(key="FormSubmitter:plan_form-▶ Find the fewest nodes").click().run()
    assert not at.exception and "explore_plan" not in at.session_state
    assert len(at.tabs[1].error) == 1 and "e.g. 90 s, 30 min, 2 h, 1 d" in errors(at)[0], errors(at)

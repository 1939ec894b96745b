"""Failures in the app: the Cluster page sets the scenario's failure model (a preset, then node MTBF, repair,
checkpoint interval and cost, job failures) into the link; bad input is one line."""

from __future__ import annotations

import base64
import json
from dataclasses import replace

import numpy as np
import pytest

from app_pages.lib import reliability
from engine.sim.options import FAILURE_PRESETS, FailureModel, OptionsError, RunOptions
from engine.viz.timeline import OUTAGE_COLOUR
from tests.app.test_pages import app, errors

APPLY_RELIABILITY = "FormSubmitter:cluster_reliability_form-Apply reliability"
KNOBS = {
    "mtbf": "100 h",
    "repair": "2 h",
    "checkpoint_every": "30 min",
    "checkpoint_cost": "60 s",
    "job_failures": "helios",
}


def test_knobs_typed_with_units_become_the_failure_model_and_the_checkpoint_interval():
    options = reliability.with_failures(RunOptions(), FAILURE_PRESETS["stress"], **KNOBS)
    assert options.failures == FailureModel(
        mtbf_h=100.0,
        repair_h=2.0,
        repair_law="exponential",
        lemon_share=0.15,
        lemon_factor=5.0,
        job_failure_rate=0.155,
        checkpoint_cost_s=60.0,
    )
    assert options.preemption.checkpoint_interval_s == 1800.0
    off = reliability.with_failures(
        options,
        options.failures,
        **{**KNOBS, "mtbf": "", "checkpoint_every": "", "checkpoint_cost": "", "job_failures": "0"},
    )
    assert not off.failures.active and off.preemption.checkpoint_interval_s is None
    assert reliability.describe(off) == "Nothing fails: nodes stay up and jobs never crash."
    assert "every 4.17 d on average" in reliability.describe(options)


@pytest.mark.parametrize(
    "knob, text, words",
    [
        ("mtbf", "often", "node MTBF: duration 'often'"),
        ("mtbf", "0 h", "failures.mtbf_h must be a number of hours > 0"),
        ("job_failures", "lots", "job failures must be one of none, philly, helios, acme or a share"),
        ("job_failures", "1.5", "a share from 0 to 1, got 1.5"),
        ("checkpoint_every", "", "checkpoint_cost_s needs options.preemption.checkpoint_interval_s"),
    ],
)
def test_bad_knobs_are_one_line_naming_the_knob(knob, text, words):
    with pytest.raises(OptionsError, match=words) as err:
        reliability.with_failures(RunOptions(), FailureModel(), **{**KNOBS, knob: text})
    assert "\n" not in str(err.value)


def _values(array) -> np.ndarray:
    """A Plotly JSON array: a list, or numpy's bytes in base64 (``{"dtype", "bdata"}``)."""
    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"])
    return np.asarray(array)


def text_input(at, label: str):
    return next(t for t in at.text_input if t.label == label)


def test_cluster_page_sets_a_failure_preset_and_its_knobs_into_the_link_and_bad_input_is_one_line():
    at = app("app_pages/cluster.py")
    assert "Reliability" in [s.value for s in at.subheader]
    assert "cluster_failures_reset" not in [b.key for b in at.button]  # nothing fails by default
    at.selectbox(key="cluster_failure_preset").select("meta-rsc1").run()
    at.button(key="cluster_use_failure_preset").click().run()
    assert not at.exception and not errors(at), errors(at)
    assert at.session_state["scenario"].options.failures == FAILURE_PRESETS["meta-rsc1"]
    assert float(at.query_params["o.failures.mtbf_h"]) == FAILURE_PRESETS["meta-rsc1"].mtbf_h
    assert text_input(at, "Node MTBF (empty: never fails)").value == "3692.31 h"  # the knobs show the preset
    text_input(at, "Node MTBF (empty: never fails)").set_value("often")
    at.button(key=APPLY_RELIABILITY).click().run()
    assert not at.exception
    (line,) = errors(at)
    assert line.startswith("reliability: node MTBF: duration 'often'")
    assert at.session_state["scenario"].options.failures == FAILURE_PRESETS["meta-rsc1"]  # unchanged
    text_input(at, "Node MTBF (empty: never fails)").set_value("500 h")
    text_input(at, "Checkpoint every (empty: when stopped)").set_value("1 h")
    text_input(at, "Checkpoint cost").set_value("30 s")
    text_input(at, "Job failures (preset or share)").set_value("philly")
    at.button(key=APPLY_RELIABILITY).click().run()
    assert not at.exception and not errors(at), errors(at)
    options = at.session_state["scenario"].options
    assert (
        options.failures.mtbf_h,
        options.failures.job_failure_rate,
        options.failures.checkpoint_cost_s,
        options.preemption.checkpoint_interval_s,
    ) == (500.0, 0.305, 30.0, 3600.0)
    assert at.query_params["o.preemption.checkpoint_interval_s"] == "3600.0"
    assert at.query_params["o.failures.job_failure_rate"] == "0.305"
    assert any(c.value.startswith("Each node fails every 20.8 d") for c in at.caption)
    at.button(key="cluster_failures_reset").click().run()
    assert at.session_state["scenario"].options.failures == FailureModel()
    assert not any(k.startswith("o.failures") for k in at.query_params)


FAILING = {
    "cluster": "2x4:T4",
    "sched": "fifo,first-fit",
    "w.n_jobs": "40",
    "o.failures.mtbf_h": "20.0",
    "o.failures.job_failure_rate": "0.3",
    "o.preemption.checkpoint_interval_s": "1800.0",
}


def test_compare_runs_with_the_scenarios_failures_and_shows_the_reliability_rows():
    from engine.analysis.metrics import RELIABILITY_METRICS, metric_name, summarize
    from engine.units import human_value

    at = app("app_pages/compare.py", query=FAILING)
    at.button(key="compare_run").click().run()
    assert not at.exception and not errors(at), errors(at)
    results = at.session_state["results"]["results"]
    assert all(r.options == at.session_state["scenario"].options for r in results.values())  # run with them
    kpi = at.dataframe[0].value.set_index("metric")
    for name, result in results.items():
        summary = summarize(result)
        assert summary.reliability is not None
        for key, metric in RELIABILITY_METRICS.items():
            assert kpi.loc[metric_name(key), name] == human_value(summary.value(key), metric.unit)
    assert summarize(results["fifo"]).reliability.node_failures > 0
    assert summarize(results["fifo"]).reliability.failed_jobs > 0
    # The timeline shades each node while it is down and marks each job a failure stopped.
    timeline = next(
        json.loads(c.proto.spec) for c in at.get("plotly_chart") if "stopped by a node failure" in c.proto.spec
    )
    marks = [t for t in timeline["data"] if t.get("name") == "stopped by a node failure"]
    assert len(marks) == len(results) and sum(len(_values(t["x"])) for t in marks) == sum(
        int(r.interruptions.sum()) for r in results.values()
    )
    down = [s for s in timeline["layout"]["shapes"] if s.get("fillcolor") == OUTAGE_COLOUR]
    assert len(down) == sum(r.outage_node.size for r in results.values())
    # "Why is this job waiting?" names the failures a job met.
    fifo = results["fifo"]
    stopped = int(fifo.interruptions.argmax())
    at.text_input(key="compare_job").set_value(fifo.jobs[stopped].name or str(stopped)).run()
    story = next(t.value for t in at.text if t.value.startswith("fifo: "))
    assert f"a node failure stopped it {int(fifo.interruptions[stopped])} time(s)" in story
    # Without failures: no reliability rows, and a word on where to set them.
    plain = app("app_pages/compare.py", query={k: v for k, v in FAILING.items() if not k.startswith("o.")})
    plain.button(key="compare_run").click().run()
    assert metric_name("ettr") not in set(plain.dataframe[0].value["metric"])
    assert any("set a failure model on the Cluster page" in c.value for c in plain.caption)


@pytest.mark.timeout(300)
def test_the_capacity_plan_runs_under_the_scenarios_failures(ray_local):
    from engine import make_scheduler, simulate
    from engine.analysis.metrics import summarize
    from engine.analysis.plan import grown_cluster
    from engine.analysis.scenario import Scenario
    from tests.app.test_explore import explore, find_fewest_nodes

    query = {**FAILING, "sched": "fifo", "o.failures.job_failure_rate": "0.0"}
    at = explore(query)
    assert any("Every run of the plan meets the scenario's failures" in c.value for c in at.caption)
    find_fewest_nodes(at, "4:T4", "mean_wait_s", "2 h", max_nodes=6)
    probe = at.session_state["explore_plan"]["answer"].attrs["probes"][0]
    sc = Scenario.from_query(query)
    cluster = grown_cluster((4, "T4"), probe["nodes"], sc.build_cluster())
    jobs = sc.build_jobs(sc.build_cluster())
    with_failures = summarize(simulate(cluster, jobs, make_scheduler("fifo"), seed=sc.seed, options=sc.options))
    assert probe["value"] == with_failures.mean_wait_s  # the plan's run is the run under the failures
    assert with_failures.reliability.node_failures > 0
    assert probe["value"] != summarize(simulate(cluster, jobs, make_scheduler("fifo"), seed=sc.seed)).mean_wait_s


@pytest.mark.timeout(300)
def test_a_plan_target_may_be_a_reliability_metric_only_under_failures():
    from tests.app.test_explore import explore

    at = explore({**FAILING, "sched": "fifo"})
    assert "ETTR" in at.selectbox(key="plan_metric").options and "ETTR" in at.selectbox(key="mix_metric").options
    plain = explore({k: v for k, v in FAILING.items() if not k.startswith("o.")})
    assert "ETTR" not in plain.selectbox(key="plan_metric").options  # a run without failures has no ETTR


@pytest.mark.timeout(300)
def test_a_sweep_under_the_scenarios_failures_carries_the_reliability_columns(ray_local):
    from engine.analysis.metrics import RELIABILITY_METRICS, metric_name
    from tests.app.test_explore import explore

    at = explore({**FAILING, "sched": "fifo"})
    at.text_input(key="sweep_loads").set_value("0.5,1.0")
    at.number_input(key="sweep_seeds").set_value(1)
    at.button(key="FormSubmitter:sweep_form-▶ Run sweep").click().run()
    assert not at.exception and not errors(at), errors(at)
    frame = at.session_state["explore_sweep"]["frame"]
    assert set(RELIABILITY_METRICS) <= set(frame.columns) and (frame["node_failures"] > 0).all()
    at.selectbox(key="sweep_metric").select("ettr").run()  # a reliability metric can be drawn against load
    assert not at.exception and any("ETTR" in c.proto.spec for c in at.get("plotly_chart"))
    assert metric_name("availability") in at.dataframe[-1].value.columns


@pytest.mark.timeout(300)
def test_a_sweep_can_run_every_cell_again_without_failures_beside_them(ray_local):
    from tests.app.test_explore import explore

    at = explore({**FAILING, "sched": "fifo"})
    at.text_input(key="sweep_loads").set_value("0.5,1.0")
    at.number_input(key="sweep_seeds").set_value(1)
    at.checkbox(key="sweep_no_failures").check()
    at.button(key="FormSubmitter:sweep_form-▶ Run sweep").click().run()
    assert not at.exception and not errors(at), errors(at)
    frame = at.session_state["explore_sweep"]["frame"]
    off = f"fifo{reliability.NO_FAILURES}"
    assert sorted(frame["scheduler"]) == ["fifo", "fifo", off, off] and frame.attrs["meta"]["completed"] == 4
    by = frame.set_index(["scheduler", "load"])
    assert by.loc[off, "node_failures"].isna().all() and (by.loc["fifo", "node_failures"] > 0).all()
    assert (by.loc[off, "mean_wait_s"] != by.loc["fifo", "mean_wait_s"]).any()
    names = [{t.get("name") for t in json.loads(c.proto.spec)["data"]} for c in at.get("plotly_chart")]
    assert any({"fifo", off} <= n for n in names), names  # the curves: each scheduler beside itself without
    plain = explore({k: v for k, v in FAILING.items() if not k.startswith("o.")})
    assert plain.checkbox(key="sweep_no_failures").disabled  # a scenario without failures cannot ask for it


@pytest.mark.timeout(300)
def test_a_sweep_compares_node_mtbfs_each_scheduler_at_each(ray_local):
    # Issue 34: MTBF as a sweep axis in Explore. Each row is the scenario run at that MTBF (its other failure
    # settings kept), each curve one scheduler at one MTBF, beside the grid without failures when asked.
    from engine.analysis.metrics import summarize
    from engine.analysis.scenario import Scenario
    from tests.app.test_explore import explore

    at = explore({**FAILING, "sched": "fifo"})
    at.text_input(key="sweep_loads").set_value("1.0")
    at.number_input(key="sweep_seeds").set_value(1)
    at.text_input(key="sweep_mtbf").set_value("5, 500")
    at.checkbox(key="sweep_no_failures").check()
    at.button(key="FormSubmitter:sweep_form-▶ Run sweep").click().run()
    assert not at.exception and not errors(at), errors(at)
    saved = at.session_state["explore_sweep"]
    frame = saved["frame"]
    off = f"fifo{reliability.NO_FAILURES}"
    assert list(frame["scheduler"]) == ["fifo · MTBF 5 h", "fifo · MTBF 500 h", off]
    assert saved["spec"].axes == (("failures.mtbf_h", (5.0, 500.0)),)
    sc = Scenario.from_query({**FAILING, "sched": "fifo"})
    for _, row in frame.iloc[:2].iterrows():  # the scenario at load 1 with that MTBF, its other settings kept
        failures = replace(sc.options.failures, mtbf_h=row["failures.mtbf_h"])
        run = replace(sc, workload=replace(sc.workload, load=1.0), options=replace(sc.options, failures=failures))
        direct = summarize(run.with_seed(0).run()["fifo"])
        assert row.mean_wait_s == direct.mean_wait_s and row.node_failures == direct.reliability.node_failures
    assert frame["node_failures"].iloc[0] > frame["node_failures"].iloc[1]
    names = [{t.get("name") for t in json.loads(c.proto.spec)["data"]} for c in at.get("plotly_chart")]
    assert any({"fifo · MTBF 5 h", "fifo · MTBF 500 h", off} <= n for n in names), names
    at.text_input(key="sweep_mtbf").set_value("5, 0")
    at.button(key="FormSubmitter:sweep_form-▶ Run sweep").click().run()
    assert any("node MTBFs '5, 0': expected comma-separated numbers > 0" in e for e in errors(at)), errors(at)

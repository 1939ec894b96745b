"""Scenario records: JSON and URL round trips, validation, identity."""

import json

import pytest

from engine.analysis.scenario import Scenario, ScenarioError, WorkloadSpec, content_hash
from engine.errors import EngineError

TRACE = Scenario(
    cluster='{"groups": [{"gpu_type": "T4", "nodes": 2, "gpus_per_node": 4, "rack": "r1"}]}',
    workload=WorkloadSpec(source="trace", trace_sha256=content_hash(b"abc"), trace_name="jobs.swf",
                          trace_format="swf", time_unit="ms", column_map=(("submit", "t0"), ("gpus", "n")),
                          first=50, skip_bad=True),
    schedulers=("fifo", "sjf+best-fit"), seed=7, name="mine")
GENERATED = Scenario(workload=WorkloadSpec(n_jobs=1234, load=1.25, seed=3, arrival="diurnal", users=9,
                                           mix=(("training", 0.5), ("inference", 0.25))))


@pytest.mark.parametrize("scenario", [Scenario(), TRACE, GENERATED], ids=["default", "trace", "generated"])
def test_json_and_query_round_trip(scenario):
    assert Scenario.from_json(scenario.to_json()) == scenario
    query = scenario.to_query()
    assert all(isinstance(v, str) for v in query.values())
    assert Scenario.from_query(query) == scenario
    # Streamlit may hand query values over as lists; the last one counts.
    assert Scenario.from_query({k: [v] for k, v in query.items()}) == scenario


def test_query_leaves_defaults_out():
    assert set(Scenario().to_query()) == {"cluster", "sched"}
    assert GENERATED.to_query()["w.mix"] == "inference:0.25,training:0.5"


def test_workload_key_ignores_schedulers_and_name():
    assert TRACE.workload_key() == TRACE.with_schedulers(["best-fit"]).workload_key()
    assert TRACE.workload_key() != GENERATED.workload_key()
    assert json.loads(GENERATED.workload_key())["workload"]["n_jobs"] == 1234


def test_build_cluster_reads_shorthand_and_json():
    assert Scenario().build_cluster().n_gpus == 32
    assert TRACE.build_cluster().layout.rack_names == ("r1",)


@pytest.mark.parametrize("data, words", [
    ({"cluster": "1x1:T4", "colour": 1}, "unknown keys"),
    ({"cluster": "1x1:T4", "workload": {"n_jobs": "many"}}, "n_jobs must be an integer"),
    ({"cluster": "1x1:T4", "workload": {"load": 0}}, "load must be a number in (0, 4]"),
    ({"cluster": "1x1:T4", "workload": {"arrival": "weekly"}}, "arrival 'weekly'"),
    ({"cluster": "1x1:T4", "workload": {"source": "trace"}}, "trace_sha256"),
    ({"cluster": "1x1:T4", "schedulers": "fifo"}, "list of scheduler names"),
    ({"cluster": "1x1:T4", "schedulers": ["fifo", "fifo"]}, "twice"),
    ({"cluster": ""}, "non-empty"),
])
def test_bad_scenarios_name_the_field(data, words):
    with pytest.raises(ScenarioError) as err:
        Scenario.from_dict(data)
    assert words in str(err.value) and isinstance(err.value, EngineError)


def test_bad_query_and_json():
    with pytest.raises(ScenarioError, match="no 'cluster'"):
        Scenario.from_query({"sched": "fifo"})
    with pytest.raises(ScenarioError, match="NAME:VALUE"):
        Scenario.from_query({"cluster": "1x1:T4", "w.mix": "training"})
    with pytest.raises(ScenarioError, match="not valid JSON"):
        Scenario.from_json("{nope")


def test_trace_bytes_must_match_the_hash():
    cluster = TRACE.build_cluster()
    with pytest.raises(ScenarioError, match="upload it again"):
        TRACE.build_jobs(cluster, None)
    with pytest.raises(ScenarioError, match="do not match"):
        TRACE.build_jobs(cluster, b"abd")


def test_worked_example_separates_the_basic_schedulers():
    from engine import make_scheduler, simulate
    from engine.analysis.metrics import summarize
    from engine.analysis.scenario import worked_example

    cluster, jobs = worked_example()
    waits = {n: summarize(simulate(cluster, jobs, make_scheduler(n))).mean_wait_s for n in ("fifo", "first-fit", "sjf")}
    assert waits["sjf"] < waits["first-fit"] < waits["fifo"]


def test_every_preset_becomes_a_scenario_with_the_presets_jobs():
    from engine.analysis.presets import PRESETS
    from engine.analysis.scenario import scenario_from_preset

    assert PRESETS
    for name, preset in PRESETS.items():
        sc = scenario_from_preset(name)
        assert sc.schedulers == tuple(preset.schedulers) and sc.name == name
        assert Scenario.from_query(sc.to_query()) == sc
        jobs = sc.build_jobs(sc.build_cluster())
        assert jobs == tuple(preset.build_jobs(preset.seed))

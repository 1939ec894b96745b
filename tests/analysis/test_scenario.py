"""Scenario records: JSON and URL round trips, validation, identity."""

import json
from dataclasses import replace

import pytest

from engine.analysis.scenario import Scenario, ScenarioError, WorkloadSpec, content_hash, unknown_link_keys
from engine.errors import EngineError

TRACE = Scenario(
    cluster='{"groups": [{"gpu_type": "T4", "nodes": 2, "gpus_per_node": 4, "rack": "r1"}]}',
    workload=WorkloadSpec(
        source="trace",
        trace_sha256=content_hash(b"abc"),
        trace_name="jobs.swf",
        trace_format="swf",
        time_unit="ms",
        column_map=(("submit", "t0"), ("gpus", "n")),
        first=50,
        skip_bad=True,
    ),
    schedulers=("fifo", "sjf+best-fit"),
    seed=7,
    name="mine",
)
GENERATED = Scenario(
    workload=WorkloadSpec(
        n_jobs=1234, load=1.25, seed=3, arrival="diurnal", users=9, mix=(("training", 0.5), ("inference", 0.25))
    )
)


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


@pytest.mark.parametrize(
    "data, words",
    [
        ({"cluster": "1x1:T4", "colour": 1}, "unknown keys"),
        ({"cluster": "1x1:T4", "workload": {"n_jobs": "many"}}, "n_jobs must be an integer"),
        ({"cluster": "1x1:T4", "workload": {"load": 0}}, "load must be a number in (0, 4]"),
        ({"cluster": "1x1:T4", "workload": {"arrival": "weekly"}}, "arrival 'weekly'"),
        ({"cluster": "1x1:T4", "workload": {"source": "trace"}}, "trace_sha256"),
        ({"cluster": "1x1:T4", "schedulers": "fifo"}, "list of scheduler names"),
        ({"cluster": "1x1:T4", "schedulers": ["fifo", "fifo"]}, "twice"),
        ({"cluster": ""}, "non-empty"),
    ],
)
def test_bad_scenarios_name_the_field(data, words):
    with pytest.raises(ScenarioError) as err:
        Scenario.from_dict(data)
    assert words in str(err.value) and isinstance(err.value, EngineError)


def test_bad_query_and_json():
    with pytest.raises(ScenarioError, match="no 'cluster'"):
        Scenario.from_query({"sched": "fifo"})
    assert Scenario.from_query({"sched": "fifo"}, cluster="1x4:T4") == Scenario(cluster="1x4:T4", schedulers=("fifo",))
    assert Scenario.from_query({"cluster": "1x1:T4"}, cluster="1x4:T4").cluster == "1x1:T4"  # the link's own wins
    with pytest.raises(ScenarioError, match="w.skip_bad must be True or False, got 'yes'"):  # was False, silently
        Scenario.from_query({"cluster": "1x1:T4", "w.skip_bad": "yes"})
    assert unknown_link_keys({"cluster": "", "w.njobs": "1", "o.energy.pue": "1", "o.energy.pues": "1"}) == [
        "w.njobs",
        "o.energy.pues",
    ]
    with pytest.raises(ScenarioError, match="NAME:VALUE"):
        Scenario.from_query({"cluster": "1x1:T4", "w.mix": "training"})
    with pytest.raises(ScenarioError, match="not valid JSON"):
        Scenario.from_json("{nope")


def test_a_text_option_may_be_typed_bare_in_a_link():
    # Found by hand: o.admission.policy=feasible was "not valid JSON" (the app writes "feasible", quoted).
    typed = Scenario.from_query(
        {"cluster": "1x4:T4", "o.admission.policy": "feasible", "o.energy.price_list": "on-demand"}
    )
    quoted = Scenario.from_query({"cluster": "1x4:T4", "o.admission.policy": '"feasible"'})
    assert typed.options.admission.policy == quoted.options.admission.policy == "feasible"
    assert typed.options.energy.price_list == "on-demand"
    with pytest.raises(ScenarioError, match="admission"):
        Scenario.from_query({"cluster": "1x4:T4", "o.admission.policy": "maybe"})
    with pytest.raises(ScenarioError, match="not valid JSON"):  # numbers stay JSON
        Scenario.from_query({"cluster": "1x4:T4", "o.energy.pue": "high"})


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


# ------------------------------------------------------------------ the one record: new fields, trust, old files
def test_run_options_and_trace_cuts_round_trip_through_json_and_links():
    from engine.sim.options import PreemptionModel, RunOptions

    sc = Scenario(
        workload=WorkloadSpec(
            source="trace",
            trace_sha256=content_hash(b"x"),
            trace_name="t.csv",
            window=(0.0, 3600.0),
            load_scale=2.0,
            skip=5,
        ),
        options=RunOptions(preemption=PreemptionModel(checkpoint_interval_s=1800.0, restart_overhead_s=60.0)),
    )
    assert Scenario.from_json(sc.to_json()) == sc and Scenario.from_query(sc.to_query()) == sc
    assert json.loads(sc.to_json())["options"]["preemption"]["checkpoint_interval_s"] == 1800.0
    typed = Scenario(workload=WorkloadSpec(types={"training": {"median_s": 600}}, user_skew=2.0))
    assert Scenario.from_json(typed.to_json()) == typed and Scenario.from_query(typed.to_query()) == typed


def test_an_energy_model_with_a_carbon_series_travels_in_a_link_whole_and_bounded():
    from engine.sim.options import CarbonSeries, EnergyModel, RunOptions

    day = CarbonSeries(3600.0, tuple(300.0 + 10 * h for h in range(24)), "2024-01-01T00:00:00Z")
    sc = Scenario(options=RunOptions(energy=EnergyModel(pue=1.2, carbon_g_per_kwh=day, price_list="on-demand")))
    query = sc.to_query()
    assert json.loads(query["o.energy.carbon_g_per_kwh"])["g_per_kwh"][23] == 530.0
    assert Scenario.from_query(query) == sc
    long = {**query, "o.energy.carbon_g_per_kwh": json.dumps({"step_s": 1, "g_per_kwh": [1.0] * 20_000})}
    with pytest.raises(ScenarioError, match="link parameter 'o.energy.carbon_g_per_kwh' has 100,"):
        Scenario.from_query(long)
    with pytest.raises(ScenarioError, match="scenario.options.energy.pue must be a number from 1 to 10, got 0.5"):
        Scenario.from_query({**query, "o.energy.pue": "0.5"})


def test_untrusted_scenarios_name_no_trace_file():
    data = {"cluster": "1x4:T4", "workload": {"source": "trace", "trace_path": "/etc/passwd"}}
    with pytest.raises(ScenarioError, match="trace_sha256 only"):
        Scenario.from_dict(data)
    with pytest.raises(ScenarioError, match="trace_sha256 only"):
        Scenario.from_query({"cluster": "1x4:T4", "w.source": "trace", "w.trace_path": "/etc/passwd"})
    assert Scenario.from_dict(data, trusted=True).workload.trace_path == "/etc/passwd"


@pytest.mark.parametrize(
    "workload, message",
    [
        ({"load": "x"}, "scenario.workload.load must be a number in (0, 4], got 'x'"),
        ({"user_skew": -1}, "scenario.workload.user_skew must be a number in [0, 10], got -1"),
        ({"block": -1}, "scenario.workload.block must be an integer from 0 to 100,000, got -1"),
        ({"window": [5, 1]}, "scenario.workload.window must be [START_S, END_S]"),
        ({"types": {"training": {"colour": 1}}}, "scenario.workload.types: job type 'training': unknown keys"),
        ({"mix": {"gaming": 1.0}}, "scenario.workload.mix: unknown job type 'gaming'"),
        ({"deadlines": "tomorrow"}, "scenario.workload.deadlines 'tomorrow': expected one of none, elasticflow, gavel"),
        ({"best_effort": 1.5}, "scenario.workload.best_effort must be a number in [0, 1], got 1.5"),
        ({"trace_format": ["csv"]}, "scenario.workload.trace_format ['csv']: expected one of"),
    ],
)
def test_every_bound_is_checked_in_one_place_and_names_the_key(workload, message):
    with pytest.raises(ScenarioError) as err:
        Scenario.from_dict({"cluster": "1x4:T4", "workload": workload})
    assert message in str(err.value)


#: A literal copy of an early "Scenario (JSON)" download of the app (no run options, no cuts): files like it must
#: still load, and run as they did.
EARLY_APP_SCENARIO = {
    "cluster": "2x4:V100-32",
    "name": "",
    "schedulers": ["fifo", "sjf"],
    "seed": 0,
    "workload": {
        "arrival": "poisson",
        "column_map": {},
        "first": 0,
        "load": 1.2,
        "mix": {"training": 1.0},
        "n_jobs": 40,
        "preset": "",
        "seed": 3,
        "skip_bad": False,
        "source": "generate",
        "time_unit": "",
        "trace_format": "",
        "trace_name": "",
        "trace_sha256": "",
        "users": 6,
    },
}


def test_a_scenario_file_the_app_wrote_before_run_options_still_loads():
    from engine.traces.generator import generate

    sc = Scenario.from_json(json.dumps(EARLY_APP_SCENARIO))
    cluster = sc.build_cluster()
    assert sc.build_jobs(cluster) == generate(cluster, 40, 1.2, 3, mix={"training": 1.0}, users=6)


def test_an_old_link_still_loads():
    from engine.traces.generator import generate

    old = {
        "cluster": "2x4:V100-32",
        "sched": "fifo,sjf",
        "w.n_jobs": "40",
        "w.seed": "2",
        "w.mix": "batch:0.5,training:0.5",
    }
    sc = Scenario.from_query(old)
    cluster = sc.build_cluster()
    assert sc.schedulers == ("fifo", "sjf") and sc.workload.users == 6 and sc.workload.load == 0.9
    assert sc.build_jobs(cluster) == generate(cluster, 40, 0.9, 2, mix={"batch": 0.5, "training": 0.5}, users=6)


def test_deadlines_travel_in_the_scenario_and_old_records_keep_their_keys():
    from engine.traces.generator import generate

    sc = Scenario(workload=WorkloadSpec(n_jobs=60, load=1.2, seed=4, deadlines="elasticflow", best_effort=0.25))
    assert Scenario.from_json(sc.to_json()) == sc and Scenario.from_query(sc.to_query()) == sc
    assert sc.to_query()["w.deadlines"] == "elasticflow" and sc.to_query()["w.best_effort"] == "0.25"
    cluster = sc.build_cluster()
    jobs = sc.build_jobs(cluster)
    assert jobs == generate(cluster, 60, 1.2, 4, users=6, deadlines="elasticflow", best_effort=0.25)
    assert 0 < sum(j.deadline_s != float("inf") for j in jobs) < 60  # some best-effort jobs, most with one
    # At their defaults the keys are left out: older files, links and workload keys are unchanged.
    assert "deadlines" not in GENERATED.to_dict()["workload"] and "best_effort" not in GENERATED.workload_key()
    assert WorkloadSpec.from_generator_args(60, 1.2, 4, deadlines="gavel").generator_args() == {"deadlines": "gavel"}


def test_a_deadline_law_replaces_a_traces_own_deadlines_seeded():
    trace = WorkloadSpec(source="trace", trace_path="sample_traces/canonical.csv")
    cluster = Scenario(cluster="4x8:V100-32").build_cluster()
    plain = trace.build_jobs(cluster)
    jobs = replace(trace, deadlines="gavel").build_jobs(cluster, seed=1)
    assert [j.job_id for j in jobs] == [j.job_id for j in plain]
    factors = {round((j.deadline_s - j.submit_s) / j.duration_s, 6) for j in jobs}
    assert factors <= {1.2, 2.0, 10.0} and len(factors) > 1

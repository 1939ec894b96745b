"""A scenario's results as JSON: the metrics table the CLI writes, per-job records and the timeline, strict JSON."""

from __future__ import annotations

import json

import pytest

from engine.analysis.metrics import summarize
from engine.analysis.results import metrics_json, results_as_json, run_scenario, scenario_results
from engine.analysis.scenario import Scenario, ScenarioError, WorkloadSpec
from engine.errors import UnknownNameError
from engine.schedulers import make_scheduler
from engine.sim.simulator import simulate

SCENARIO = Scenario(
    cluster="1x4:V100-32", workload=WorkloadSpec(n_jobs=30, load=1.5, seed=4), schedulers=("fifo", "sjf"), seed=1
)


def test_results_are_the_direct_runs_metrics_and_strict_json():
    seen = []
    out = scenario_results(SCENARIO, on_progress=lambda done, total: seen.append((done, total)))
    cluster = SCENARIO.build_cluster()
    jobs = SCENARIO.build_jobs(cluster)
    for name in SCENARIO.schedulers:
        direct = simulate(cluster, jobs, make_scheduler(name), seed=1, options=SCENARIO.options)
        assert out["metrics"][name] == summarize(direct).to_dict()
        assert [r["job_id"] for r in out["jobs"][name]] == list(range(30))
        assert out["timeline"][name]["t_s"] == [float(t) for t in direct.series_t]
    texts = results_as_json(out)  # strict: NaN (a wait of a job that never ran) is null
    assert {part: json.loads(text) for part, text in texts.items()} == out
    assert seen[-1] == (60, 60) and all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))


def test_a_summary_and_a_result_give_the_same_metrics():
    run = run_scenario(SCENARIO)
    assert metrics_json(run.results) == metrics_json({n: summarize(r) for n, r in run.results.items()})


def test_every_scheduler_name_is_checked_before_any_run():
    with pytest.raises(ScenarioError, match="names no scheduler"):
        run_scenario(SCENARIO.with_schedulers(()))
    with pytest.raises(UnknownNameError):
        run_scenario(SCENARIO.with_schedulers(("fifo", "no-such-policy")), on_progress=lambda *_: pytest.fail())


def test_per_job_records_are_the_job_frames_rows_with_failures_and_deadlines():
    from engine.analysis.metrics import job_frame
    from engine.analysis.results import jobs_json
    from engine.sim.options import FailureModel, RunOptions
    from engine.traces.generator import generate

    cluster = SCENARIO.build_cluster()
    jobs = generate(cluster, 80, load=1.3, seed=2, deadlines="gavel", best_effort=0.3)
    options = RunOptions(failures=FailureModel(mtbf_h=5.0, job_failure_rate=0.1, job_retries=1))
    result = simulate(cluster, jobs, make_scheduler("fifo"), seed=1, options=options)
    records = jobs_json({"fifo": result})["fifo"]
    frame = job_frame(result)
    assert list(records[0]) == list(frame.columns) and {"deadline_met", "job_failures"} <= set(frame.columns)
    expected = json.loads(frame.to_json(orient="records", double_precision=15))
    assert len(records) == len(expected) == 80
    for got, want in zip(records, expected):
        assert got.keys() == want.keys()
        for key, value in got.items():
            assert (
                value == pytest.approx(want[key], rel=1e-12, nan_ok=True)
                if isinstance(value, float)
                else value == want[key]
            )
    json.dumps(records, allow_nan=False)  # strict JSON: NaN is null

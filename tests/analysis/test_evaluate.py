"""Seeded evaluation: same workloads for every scheduler, mean/CI and paired differences computed right."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from engine.analysis.evaluate import SCENARIOS, evaluate, mean_ci, parse_scenario
from engine.analysis.metrics import summarize
from engine.analysis.scenario import trace_block
from engine.cli import main
from engine.errors import EngineError
from engine.schedulers import make_scheduler
from engine.sim.cluster import parse_cluster
from engine.sim.job import Job
from engine.sim.simulator import simulate

SPEC = "cluster=2x4:V100-32;jobs=30;load=1.2"


def test_mean_ci_by_hand():
    mean, half = mean_ci([1.0, 2.0, 3.0])
    assert mean == 2.0
    assert half == pytest.approx(4.303 * 1.0 / math.sqrt(3))
    assert math.isnan(mean_ci([5.0])[1])
    assert mean_ci([float("nan"), 4.0, 6.0])[0] == 5.0


def test_evaluate_pairs_schedulers_on_the_same_workloads():
    ev = evaluate(["first-fit", "sjf"], SPEC, 3)
    assert ev.seeds == (0, 1, 2) and ev.baseline == "first-fit"
    assert [r["jobs"] for r in ev.runs["sjf"]] == [r["jobs"] for r in ev.runs["first-fit"]] == [30, 30, 30]
    a, b = np.array(ev.values("sjf", "mean_wait_s")), np.array(ev.values("first-fit", "mean_wait_s"))
    diff, half, rel = ev.paired()["mean_wait_s"]["sjf"]
    assert diff == pytest.approx((a - b).mean())
    assert half == pytest.approx(mean_ci((a - b).tolist())[1])
    assert rel == pytest.approx((a - b).mean() / b.mean())
    assert ev.stats()["mean_wait_s"]["sjf"][0] == pytest.approx(a.mean())
    # Same seeds -> same numbers.
    assert evaluate(["first-fit", "sjf"], SPEC, 3).runs == ev.runs


def test_extra_metrics_are_added_to_every_run():
    ev = evaluate(["first-fit"], SPEC, 2, extra={"n_segments": lambda r: float(r.seg_job.size)})
    assert [r["n_segments"] for r in ev.runs["first-fit"]] == [30.0, 30.0]
    assert "n_segments" in ev.stats()


@pytest.mark.parametrize(
    "text,match",
    [
        ("no-such-scenario", "unknown scenario"),
        ("jobs=10;load=1", "needs cluster="),
        ("cluster=2x4:V100-32;colour=red", "unknown keys"),
        ("cluster=2x4:V100-32;jobs=ten", "scenario spec"),
        ("cluster=2x4:V100-32;jobs=0", "jobs must be >= 1"),
        ("cluster=2x4:NOPE", "unknown GPU type"),
    ],
)
def test_bad_scenarios_are_one_line_errors(text, match):
    with pytest.raises(EngineError, match=match):
        parse_scenario(text)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"schedulers": ["first-fit", "first-fit"]}, "repeat"),
        ({"schedulers": ["first-fit"], "baseline": "sjf"}, "baseline"),
        ({"schedulers": ["nope"]}, "unknown scheduler"),
        ({"schedulers": ["first-fit"], "seeds": []}, "at least one seed"),
    ],
)
def test_bad_evaluations_fail_before_running(kwargs, match):
    kw = {"seeds": 1, **kwargs}
    with pytest.raises(EngineError, match=match):
        evaluate(kw.pop("schedulers"), SPEC, kw.pop("seeds"), **kw)


def test_trace_blocks_are_renumbered_and_scaled_to_the_load():
    jobs = tuple(Job(i, 10.0 * i, 100.0, gpus=2) for i in range(10))
    block = trace_block(jobs, 1, 4, load=0.5, n_gpus=8)
    assert [j.job_id for j in block] == [0, 1, 2, 3] and block[0].submit_s == 0.0
    span = block[-1].submit_s
    # GPU-seconds used before the last arrival, had each job started on arrival, over span x GPUs
    offered = sum(j.gpus * min(j.duration_s, span - j.submit_s) for j in block) / (span * 8)
    assert offered == pytest.approx(0.5)
    with pytest.raises(EngineError, match="not enough"):
        trace_block(jobs, 2, 4, 0.5, 8)


def test_a_long_job_in_a_trace_block_does_not_stand_for_load_after_its_arrivals():
    # One job runs 1000x longer than the rest: counted whole, it would stretch the arrivals until the short jobs
    # never met each other; counted only while the block's arrivals last, the short jobs still contend.
    jobs = (Job(0, 0.0, 1e6, gpus=1),) + tuple(Job(i, float(i), 1000.0, gpus=4) for i in range(1, 40))
    block = trace_block(jobs, 0, 40, load=1.5, n_gpus=8)
    result = simulate(parse_cluster("1x8:V100-32"), block, make_scheduler("fifo"))
    assert summarize(result).mean_wait_s > 1000.0


def test_cli_prints_table_and_writes_json(tmp_path, capsys):
    out = tmp_path / "ev.json"
    assert (
        main(
            [
                "evaluate",
                "--schedulers",
                "first-fit,sjf",
                "--scenario",
                SPEC,
                "--seeds",
                "2",
                "--json",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "mean_wait_s" in text and "paired difference vs first-fit" in text
    data = json.loads(out.read_text())
    assert data["seeds"] == [0, 1] and set(data["stats"]["mean_wait_s"]) == {"first-fit", "sjf"}


def test_cli_bad_input_is_one_line_exit_2(capsys):
    assert main(["evaluate", "--schedulers", "first-fit,bogus", "--scenario", SPEC, "--seeds", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown scheduler 'bogus'" in err


def test_philly_windows_are_congested(traces_dir):
    # A window where every job starts on arrival says nothing about a scheduler: most must make jobs wait.
    scenario = SCENARIOS["philly-64"]
    cluster = scenario.build_cluster()
    waits = []
    for seed in range(10):
        jobs = scenario.workload.build_jobs(cluster, seed)
        assert len(jobs) == 300 and jobs[0].submit_s == 0.0
        waits.append(summarize(simulate(cluster, jobs, make_scheduler("fifo"))).mean_wait_s)
    assert sum(w > 60.0 for w in waits) >= 9, waits


def test_trace_scenario_spec_skips_the_start_of_the_trace(traces_dir):
    path = traces_dir / "philly" / "philly.csv"
    plain = parse_scenario(f"cluster=8x8:V100-32;jobs=100;load=1.2;trace={path}")
    skipped = parse_scenario(f"cluster=8x8:V100-32;jobs=100;load=1.2;trace={path};skip=100")
    cluster = plain.build_cluster()
    assert [j.duration_s for j in skipped.workload.build_jobs(cluster, 0)] == [
        j.duration_s for j in plain.workload.build_jobs(cluster, 1)
    ]
    with pytest.raises(EngineError, match="skip=N needs trace"):
        parse_scenario("cluster=8x8:V100-32;skip=100")


def test_teaching_presets_are_scenarios():
    from engine.analysis.metrics import summarize
    from engine.analysis.presets import load_preset
    from engine.schedulers import make_scheduler
    from engine.sim.simulator import simulate

    scenario = parse_scenario("head-of-line-blocking")
    preset = load_preset("head-of-line-blocking")
    assert scenario == preset.scenario and scenario.name == "head-of-line-blocking"
    assert scenario.workload.build_jobs(scenario.build_cluster(), 1) == preset.build_jobs(1)
    ev = evaluate(["fifo"], "head-of-line-blocking", 1)
    direct = summarize(simulate(preset.build_cluster(), preset.build_jobs(0), make_scheduler("fifo")))
    assert ev.runs["fifo"][0]["mean_wait_s"] == pytest.approx(direct.mean_wait_s)


def test_cli_preemption_model_makes_preemptions_cost_work(tmp_path, capsys):
    # tiresias preempts on this overloaded scenario; checkpoints every 600 s and a 120 s restart cost lose work.
    spec = "cluster=2x4:V100-32;jobs=60;load=2.0"
    runs = {}
    for name, extra in (("free", []), ("costly", ["--checkpoint-interval", "600", "--restart-overhead", "120"])):
        out = tmp_path / f"{name}.json"
        assert (
            main(
                [
                    "evaluate",
                    "--schedulers",
                    "tiresias",
                    "--scenario",
                    spec,
                    "--seeds",
                    "2",
                    "--json",
                    str(out),
                    "--quiet",
                    *extra,
                ]
            )
            == 0
        )
        runs[name] = json.loads(out.read_text())["runs"]["tiresias"]
    text = capsys.readouterr().out
    assert "preempted jobs lose nothing" in text and "checkpoint every 600 s, restart costs 120 s" in text
    assert sum(r["preemptions"] for r in runs["free"]) > 0
    assert all(r["lost_gpu_h"] == 0 for r in runs["free"]) and sum(r["lost_gpu_h"] for r in runs["costly"]) > 0

"""The failure flags on the command line (issue 34): ``--failures --node-mtbf-h --repair-h --checkpoint-cost
--job-failures`` on every simulating command, reliability metrics in tables, JSON and CSV when failures are
modelled, and bad values refused in one line naming the flag, exit 2, before anything runs. Each command runs as
a real ``python -m engine`` process."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import partial

import pytest

from engine.analysis.metrics import METRICS, RELIABILITY_METRICS
from engine.analysis.sweep import SweepSpec, run_sweep
from engine.cli.common import run_options_from
from engine.errors import EngineError
from engine.sim.options import FAILURE_PRESETS, FailureModel, PreemptionModel, RunOptions
from tests.cli import engine_process
from tests.cli.engine_process import REPO, run_option_args

CLUSTER = "16x8:A100-80"
FAILURE_FLAGS = ("--failures", "--node-mtbf-h", "--repair-h", "--checkpoint-cost", "--job-failures")
engine = partial(engine_process.engine, timeout_s=300)  # runs of 3,000 jobs, interpreted in a checkout


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> str:
    """3,000 generated jobs at offered load 2 on 16 nodes: about 110 hours of run, so a node MTBF of 2,000 h
    gives about one failure (16 x 110 / 2000)."""
    path = tmp_path_factory.mktemp("failures") / "w.csv"
    proc = engine("generate", "--cluster", CLUSTER, "--jobs", "3000", "--load", "2", "--out", str(path))
    assert proc.returncode == 0, proc.stderr
    return str(path)


@pytest.mark.parametrize("command", ["simulate", "compare", "evaluate", "sweep", "plan"])
def test_every_simulating_command_takes_the_failure_flags(command):
    proc = engine(command, "--help")
    assert proc.returncode == 0
    assert all(flag in proc.stdout for flag in FAILURE_FLAGS), proc.stdout


def test_the_issues_run_fails_nodes_the_same_way_for_fifo_and_easy_backfill(trace, tmp_path):
    out = tmp_path / "c.json"
    proc = engine(
        "compare",
        "--cluster",
        CLUSTER,
        "--trace",
        trace,
        "--schedulers",
        "fifo,easy-backfill",
        "--node-mtbf-h",
        "2000",
        "--repair-h",
        "4",
        "--checkpoint-interval",
        "3600",
        "--quiet",
        "--json",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    assert "ETTR" in proc.stdout and "Node failures" in proc.stdout
    runs = json.loads(out.read_text())
    for s in runs.values():
        assert list(s) == [*METRICS, *RELIABILITY_METRICS]
        assert s["node_failures"] > 0 and s["interruptions"] > 0
        assert s["ettr"] < 1 and s["failure_lost_gpu_h"] > 0 and s["availability"] < 1
    assert runs["fifo"]["node_failures"] == runs["easy-backfill"]["node_failures"]
    down_gpu_s = {name: (1 - s["availability"]) * 128 * s["makespan_s"] for name, s in runs.items()}
    assert down_gpu_s["fifo"] == pytest.approx(down_gpu_s["easy-backfill"])  # the same outages, in other windows
    assert runs["fifo"]["mean_wait_s"] != runs["easy-backfill"]["mean_wait_s"]  # the schedulers did differ


def test_without_failure_flags_nothing_fails_and_no_reliability_key_is_written(trace, tmp_path):
    out, jobs_csv = tmp_path / "s.json", tmp_path / "jobs.csv"
    proc = engine(
        "simulate",
        "--cluster",
        CLUSTER,
        "--trace",
        trace,
        "--scheduler",
        "fifo",
        "--quiet",
        "--first",
        "200",
        "--json",
        str(out),
        "--jobs-csv",
        str(jobs_csv),
    )
    assert proc.returncode == 0, proc.stderr
    assert list(json.loads(out.read_text())) == list(METRICS) and "ETTR" not in proc.stdout
    assert "interruptions" not in jobs_csv.read_text().splitlines()[0]


def test_simulate_with_job_failures_writes_reliability_in_json_and_the_jobs_csv(trace, tmp_path):
    out, jobs_csv = tmp_path / "s.json", tmp_path / "jobs.csv"
    proc = engine(
        "simulate",
        "--cluster",
        CLUSTER,
        "--trace",
        trace,
        "--scheduler",
        "fifo",
        "--quiet",
        "--job-failures",
        "0.3",
        "--json",
        str(out),
        "--jobs-csv",
        str(jobs_csv),
    )
    assert proc.returncode == 0, proc.stderr
    s = json.loads(out.read_text())
    assert s["node_failures"] == 0 and s["availability"] == 1
    assert 0.25 < s["failed_jobs"] / s["jobs"] < 0.35 and s["ettr"] < 1  # about 30 % of 3,000 jobs
    header = jobs_csv.read_text().splitlines()[0].split(",")
    assert {"interruptions", "failure_lost_gpu_s", "checkpoint_gpu_s"} <= set(header)


def test_evaluate_prints_reliability_and_its_paired_differences(tmp_path):
    out = tmp_path / "ev.json"
    proc = engine(
        "evaluate",
        "--scenario",
        "cluster=4x8:A100-80;jobs=60;load=1.5",
        "--schedulers",
        "fifo,easy-backfill",
        "--seeds",
        "2",
        "--quiet",
        "--failures",
        "stress",
        "--checkpoint-interval",
        "1800",
        "--checkpoint-cost",
        "60",
        "--json",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    assert "\nettr (higher)" in proc.stdout and "\nfailure_lost_gpu_h " in proc.stdout
    runs = json.loads(out.read_text())["runs"]
    assert all(set(RELIABILITY_METRICS) <= set(r) and r["checkpoint_gpu_h"] > 0 for rows in runs.values() for r in rows)


def test_a_serial_sweep_of_failing_runs_has_the_reliability_columns():
    spec = SweepSpec.grid(("2x4:A100-80",), ("fifo",), seeds=1, jobs=30, loads=(1.0,))
    failing = FailureModel(mtbf_h=5.0, repair_h=1.0)
    frame = run_sweep(replace(spec, base=replace(spec.base, options=RunOptions(failures=failing))), backend="serial")
    assert list(RELIABILITY_METRICS) == list(frame.columns[-len(RELIABILITY_METRICS) :])
    assert frame["node_failures"].iloc[0] > 0
    plain = run_sweep(spec, backend="serial")
    assert not set(RELIABILITY_METRICS) & set(plain.columns)


def test_the_flags_change_a_preset_and_keep_a_scenarios_other_values():
    base = RunOptions(preemption=PreemptionModel(600.0), failures=FailureModel(job_failure_rate=0.1))
    assert run_options_from(run_option_args(), base) == base
    got = run_options_from(
        run_option_args(
            "--failures", "llama3", "--node-mtbf-h", "100", "--job-failures", "helios", "--checkpoint-cost", "30"
        ),
        base,
    ).failures
    llama3 = FAILURE_PRESETS["llama3"]
    assert (got.mtbf_h, got.mtbf_per, got.job_failure_rate, got.checkpoint_cost_s) == (100.0, "node", 0.155, 30.0)
    assert got.manual_repair_share == llama3.manual_repair_share  # the preset's repairs stay
    assert run_options_from(run_option_args("--repair-h", "0"), base).failures.job_failure_rate == 0.1


def test_a_checkpoint_cost_without_an_interval_names_both_flags():
    with pytest.raises(EngineError, match="--checkpoint-cost needs --checkpoint-interval"):
        run_options_from(run_option_args("--checkpoint-cost", "30"), RunOptions())


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--node-mtbf-h", "0"], "--node-mtbf-h"),
        (["--node-mtbf-h", "-3"], "--node-mtbf-h"),
        (["--node-mtbf-h", "nan"], "--node-mtbf-h"),
        (["--repair-h", "-1"], "--repair-h"),
        (["--job-failures", "1.5"], "--job-failures"),
        (["--job-failures", "nan"], "--job-failures"),
        (["--job-failures", "google"], "--job-failures"),
        (["--failures", "meta-rsc3"], "--failures"),
        (["--checkpoint-cost", "-2", "--checkpoint-interval", "60"], "--checkpoint-cost"),
        (["--checkpoint-cost", "30"], "--checkpoint-cost"),
    ],
)
@pytest.mark.parametrize("command", ["simulate", "evaluate"])
def test_bad_failure_flags_are_one_line_naming_the_flag_exit_2_and_nothing_run(tmp_path, flags, named, command):
    out = tmp_path / "out.json"
    argv = (
        [
            "simulate",
            "--cluster",
            "1x2:A100-80",
            "--trace",
            str(REPO / "sample_traces" / "canonical.csv"),
            "--scheduler",
            "fifo",
        ]
        if command == "simulate"
        else ["evaluate", "--scenario", "cluster=1x4:T4;jobs=5;load=1", "--schedulers", "fifo", "--seeds", "1"]
    )
    proc = engine(*argv, "--quiet", "--json", str(out), *flags)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and named in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not out.exists() and proc.stdout == ""

"""Deadlines and admission on the command line: ``generate --deadlines/--best-effort`` writes the canonical CSV's
``deadline_s`` column, traces carry deadlines (canonical ``deadline_s``, ``--map deadline=...``), every simulating
command takes ``--admission``, and summaries and the per-job CSV say which deadlines were met."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from engine.analysis.metrics import summarize
from engine.cli import main
from engine.schedulers import make_scheduler
from engine.sim.cluster import parse_cluster
from engine.sim.options import AdmissionModel, RunOptions
from engine.sim.simulator import simulate
from engine.traces import load_trace
from engine.traces.generator import generate

CLUSTER = "1x8:A100-80"


@pytest.fixture
def deadline_csv(tmp_path):
    out = tmp_path / "d.csv"
    argv = ["generate", "--cluster", CLUSTER, "--jobs", "40", "--load", "1.2", "--seed", "3"]
    assert main([*argv, "--deadlines", "elasticflow", "--best-effort", "0.2", "--out", str(out)]) == 0
    return out


def test_generate_writes_the_deadlines_of_the_law(deadline_csv):
    frame = pd.read_csv(deadline_csv)
    assert "deadline_s" in frame.columns
    expected = generate(CLUSTER, 40, 1.2, 3, deadlines="elasticflow", best_effort=0.2)
    assert load_trace(str(deadline_csv)).jobs == tuple(expected)  # read back: the same jobs, deadlines included
    with_deadline = frame.dropna(subset=["deadline_s"])
    assert 0 < len(with_deadline) < 40  # best-effort jobs have none
    factor = (with_deadline.deadline_s - with_deadline.submit_s) / with_deadline.duration_s
    assert factor.between(0.5, 1.5).all()  # ElasticFlow's U(0.5, 1.5) x duration


def test_simulate_with_admission_says_which_deadlines_were_met(deadline_csv, tmp_path, capsys):
    js, jobs_csv = tmp_path / "s.json", tmp_path / "jobs.csv"
    argv = ["simulate", "--cluster", CLUSTER, "--trace", str(deadline_csv), "--scheduler", "fifo", "--quiet"]
    assert main([*argv, "--admission", "feasible", "--json", str(js), "--jobs-csv", str(jobs_csv)]) == 0
    assert "Deadlines met" in capsys.readouterr().out
    got = json.loads(js.read_text())
    options = RunOptions(admission=AdmissionModel("feasible"))
    result = simulate(
        parse_cluster(CLUSTER), load_trace(str(deadline_csv)).jobs, make_scheduler("fifo"), options=options
    )
    assert got == pytest.approx(summarize(result).to_dict(), nan_ok=True)
    assert {"deadline_ratio", "declined", "mean_tardiness_s", "p95_tardiness_s"} <= set(got)
    assert got["declined"] > 0  # ElasticFlow's factors below 1 are deadlines a rigid job cannot meet
    jobs = pd.read_csv(jobs_csv)
    has = jobs.dropna(subset=["deadline_s"])
    met = (has.status == "completed") & (has.end_s <= has.deadline_s)
    assert (has.deadline_met.astype(bool) == met).all()  # each outcome matches its recorded end and deadline
    assert got["deadline_ratio"] == pytest.approx(met.mean())
    # accept-all (the default) declines nothing
    assert main([*argv, "--json", str(js)]) == 0
    assert json.loads(js.read_text())["declined"] == 0


@pytest.mark.parametrize("command", ["compare", "evaluate", "sweep", "plan"])
def test_every_simulating_command_takes_admission(command):
    from engine.cli import build_parser

    sub = build_parser(command)._subparsers._group_actions[0].choices[command]
    action = next(a for a in sub._actions if "--admission" in a.option_strings)
    assert list(action.choices) == ["accept-all", "feasible"]


def test_compare_runs_under_admission(deadline_csv, tmp_path, capsys):
    js = tmp_path / "c.json"
    argv = ["compare", "--cluster", CLUSTER, "--trace", str(deadline_csv), "--schedulers", "fifo,sjf", "--quiet"]
    assert main([*argv, "--admission", "feasible", "--json", str(js)]) == 0
    got = json.loads(js.read_text())
    assert got["fifo"]["declined"] == got["sjf"]["declined"] > 0  # declined at arrival, whatever the order


def test_a_deadline_column_of_a_mapped_trace_is_read(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("t,run,n,due\n0,100,1,150\n10,50,2,\n")
    jobs = load_trace(
        str(path), format="mapped", column_map={"submit": "t", "duration": "run", "gpus": "n", "deadline": "due"}
    ).jobs
    assert [j.deadline_s for j in jobs] == [150.0, math.inf]
    assert main(["trace", "info", str(path), "--map", "submit=t,duration=run,gpus=n,deadline=due"]) == 0


@pytest.mark.parametrize(
    "argv, named",
    [
        (
            ["generate", "--cluster", CLUSTER, "--jobs", "5", "--deadlines", "soon", "--out", "x.csv"],
            "argument --deadlines: invalid choice",
        ),
        (
            ["generate", "--cluster", CLUSTER, "--jobs", "5", "--best-effort", "1.5", "--out", "x.csv"],
            "argument --best-effort: expected a share",
        ),
        (["simulate", "--cluster", CLUSTER, "--trace", "BAD", "--scheduler", "fifo"], "deadline_s"),
        (
            ["simulate", "--cluster", CLUSTER, "--trace", "GOOD", "--scheduler", "fifo", "--admission", "all"],
            "argument --admission: invalid choice",
        ),
    ],
)
def test_bad_deadline_input_is_one_line_and_exit_2(argv, named, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "BAD").write_text("submit_s,duration_s,deadline_s\n0,100,150\n10,100,5\n")  # before its submit
    (tmp_path / "GOOD").write_text("submit_s,duration_s,deadline_s\n0,100,150\n")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert named in err and err.count("\n") == 1, err


def test_sweep_and_plan_carry_the_deadline_metrics(ray_local, deadline_csv, tmp_path, capsys):
    out = tmp_path / "r.csv"
    argv = ["sweep", "--cluster", CLUSTER, "--trace", str(deadline_csv), "--schedulers", "fifo,edf"]
    assert main([*argv, "--admission", "feasible", "--out", str(out)]) == 0
    table = pd.read_csv(out).set_index("scheduler")
    for name in ("fifo", "edf"):  # each row as simulate gives it
        js = tmp_path / f"{name}.json"
        sim = ["simulate", "--cluster", CLUSTER, "--trace", str(deadline_csv), "--scheduler", name, "--quiet"]
        assert main([*sim, "--admission", "feasible", "--json", str(js)]) == 0
        got = json.loads(js.read_text())
        assert table.loc[name, "deadline_ratio"] == pytest.approx(got["deadline_ratio"])
        assert table.loc[name, "declined"] == got["declined"] > 0
    plan = tmp_path / "plan.json"
    argv = ["plan", "--trace", str(deadline_csv), "--node", "8:A100-80", "--scheduler", "edf"]
    assert main([*argv, "--target", "deadline_ratio>=0.5", "--admission", "feasible", "--json", str(plan)]) == 0
    answer = json.loads(plan.read_text())
    assert answer["value_at_nodes"] >= 0.5 and (answer["nodes"] == 1 or answer["value_at_nodes_minus_1"] < 0.5)
    assert "deadline_ratio>=0.5" in capsys.readouterr().out

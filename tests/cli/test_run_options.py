"""Run options on the command line: one set of flags for every command that simulates (engine.cli.common), the
energy flags adding energy, cost and carbon to tables, JSON and CSV, and bad values refused naming the flag."""

from __future__ import annotations

import argparse
import json
from dataclasses import fields

import pandas as pd
import pytest

from engine import Job
from engine.analysis.metrics import ENERGY_METRICS, METRICS, summarize
from engine.analysis.scenario import Scenario, WorkloadSpec
from engine.cli import build_parser, main
from engine.cli.common import RUN_OPTION_FLAGS, add_run_option_arguments, run_options_from
from engine.schedulers import make_scheduler
from engine.sim.cluster import parse_cluster
from engine.sim.options import EnergyModel, PowerDownModel, PreemptionModel, RunOptions
from engine.sim.simulator import simulate
from engine.traces import load_trace, write_csv
from engine.traces.carbon import load_carbon_csv
from tests.cli.engine_process import run_option_args

CLUSTER = "1x2:A100-80"
SIMULATING = ("simulate", "compare", "evaluate", "sweep", "plan")


@pytest.fixture
def trace(tmp_path):
    jobs = [Job(0, 0.0, 3600.0), Job(1, 60.0, 1800.0, gpus=2), Job(2, 120.0, 600.0, user="b")]
    return str(write_csv(jobs, tmp_path / "trace.csv"))


@pytest.fixture
def carbon_csv(tmp_path):
    path = tmp_path / "carbon.csv"
    path.write_text("timestamp,carbon_intensity\n0,100\n3600,300\n")
    return str(path)


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings}


def test_every_simulating_command_takes_the_same_run_option_flags():
    probe = argparse.ArgumentParser()
    add_run_option_arguments(probe)
    expected = _flags(probe) - {"-h", "--help"}
    assert {"--checkpoint-interval", "--restart-overhead", "--pue", "--carbon", "--price-list"} <= expected
    assert {"--count-energy", "--power-down-after", "--wake-delay", "--sleep-w"} <= expected
    for command in SIMULATING:
        sub = build_parser(command)._subparsers._group_actions[0].choices[command]
        assert expected <= _flags(sub), command


def test_flags_not_given_keep_the_base_values():
    base = RunOptions(preemption=PreemptionModel(600.0, 120.0), energy=EnergyModel(pue=1.2, price_list="on-demand"))
    assert run_options_from(run_option_args(), base) == base
    got = run_options_from(run_option_args("--checkpoint-interval", "60", "--carbon", "10"), base)
    assert got == RunOptions(
        preemption=PreemptionModel(60.0, 120.0),
        energy=EnergyModel(pue=1.2, carbon_g_per_kwh=10.0, price_list="on-demand"),
    )
    assert set(RUN_OPTION_FLAGS) <= {f.name for f in fields(RunOptions)}


def test_simulate_with_energy_flags_writes_energy_in_table_json_and_csvs(capsys, trace, carbon_csv, tmp_path):
    js, jobs_csv, users_csv = tmp_path / "s.json", tmp_path / "jobs.csv", tmp_path / "users.csv"
    assert (
        main(
            [
                "simulate",
                "--cluster",
                CLUSTER,
                "--trace",
                trace,
                "--scheduler",
                "fifo",
                "--quiet",
                "--pue",
                "1.25",
                "--carbon",
                carbon_csv,
                "--price-list",
                "on-demand",
                "--json",
                str(js),
                "--jobs-csv",
                str(jobs_csv),
                "--users-csv",
                str(users_csv),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "Energy (kWh)" in out and "Cluster price (USD/h)" in out and "7.86" in out  # 2 x 3.93 $/h
    model = EnergyModel(pue=1.25, carbon_g_per_kwh=load_carbon_csv(carbon_csv), price_list="on-demand")
    assert model.carbon_g_per_kwh.g_per_kwh == (100.0, 300.0)
    cluster = parse_cluster(CLUSTER)
    result = simulate(cluster, load_trace(trace).jobs, make_scheduler("fifo"))
    expected = summarize(result, energy=model).to_dict()
    got = json.loads(js.read_text())
    assert list(got) == [*METRICS, *ENERGY_METRICS]
    assert got == pytest.approx(expected) and got["co2_kg"] > 0
    jobs = pd.read_csv(jobs_csv)
    assert jobs["cost_usd"].sum() == pytest.approx(got["cost_usd"])
    assert pd.read_csv(users_csv)["energy_kwh"].sum() == pytest.approx(got["energy_kwh"] - got["idle_energy_kwh"])


def test_without_energy_flags_the_summary_is_unchanged(capsys, trace, tmp_path):
    js = tmp_path / "c.json"
    assert (
        main(
            [
                "compare",
                "--cluster",
                CLUSTER,
                "--trace",
                trace,
                "--schedulers",
                "fifo,sjf",
                "--quiet",
                "--json",
                str(js),
            ]
        )
        == 0
    )
    assert "Energy" not in capsys.readouterr().out
    assert all(list(s) == list(METRICS) for s in json.loads(js.read_text()).values())


def test_compare_prints_and_writes_energy_rows(capsys, trace, tmp_path):
    js = tmp_path / "c.json"
    assert (
        main(
            [
                "compare",
                "--cluster",
                CLUSTER,
                "--trace",
                trace,
                "--schedulers",
                "fifo,sjf",
                "--quiet",
                "--price-list",
                "catalog",
                "--json",
                str(js),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "Cost of the cluster (USD)" in out and "Carbon (kg)" in out
    assert all(list(s) == [*METRICS, *ENERGY_METRICS] for s in json.loads(js.read_text()).values())


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--pue", "0.9"], "--pue"),
        (["--pue", "nan"], "--pue"),
        (["--carbon", "-1"], "--carbon"),
        (["--carbon", "missing.csv"], "--carbon"),
        (["--carbon", "BAD"], "--carbon"),
        (["--price-list", "cheapest"], "--price-list"),
        (["--price-list", "gcp-preemptible-2020"], "--price-list"),  # it has no A100 price
        (["--restart-overhead", "-5"], "--restart-overhead"),
        (["--power-down-after", "-1"], "--power-down-after"),
        (["--wake-delay", "nan"], "--wake-delay"),
        (["--sleep-w", "-3"], "--sleep-w"),
        (["--wake-delay", "60"], "--power-down-after"),  # a delay with nothing that powers down
    ],
)
def test_bad_run_options_are_one_line_naming_the_flag_and_exit_2(capsys, trace, tmp_path, flags, named):
    (tmp_path / "BAD").write_text("timestamp,carbon_intensity\n0,100\n3600,nan\n")
    flags = [str(tmp_path / "BAD") if f == "BAD" else f for f in flags]
    code = main(["simulate", "--cluster", CLUSTER, "--trace", trace, "--scheduler", "fifo", "--quiet", *flags])
    err = capsys.readouterr().err
    assert code == 2 and named in err and err.count("\n") == 1, err


def test_a_scenario_file_with_an_energy_model_adds_its_metrics_and_flags_replace_its_options(capsys, tmp_path):
    sc = Scenario(
        cluster="1x4:T4",
        workload=WorkloadSpec(n_jobs=20, load=1.2, seed=1),
        schedulers=("fifo",),
        options=RunOptions(energy=EnergyModel(pue=1.1)),
    )
    path, out = tmp_path / "s.json", tmp_path / "out.json"
    path.write_text(sc.to_json())
    assert main(["simulate", "--scenario", str(path), "--quiet", "--json", str(out), "--pue", "1.5"]) == 0
    cluster = sc.build_cluster()
    result = simulate(cluster, sc.build_jobs(cluster), make_scheduler("fifo"), seed=sc.seed, options=sc.options)
    assert json.loads(out.read_text())["fifo"] == pytest.approx(
        summarize(result, energy=EnergyModel(pue=1.5)).to_dict()
    )
    older = {k: v for k, v in sc.to_dict().items() if k != "options"}  # written before run options existed
    path.write_text(json.dumps(older))
    assert main(["simulate", "--scenario", str(path), "--quiet", "--json", str(out)]) == 0
    assert list(json.loads(out.read_text())["fifo"]) == list(METRICS)


def test_evaluate_adds_energy_to_every_run_and_its_paired_differences(capsys, tmp_path):
    out = tmp_path / "ev.json"
    assert (
        main(
            [
                "evaluate",
                "--scenario",
                "cluster=1x4:T4;jobs=20;load=1.2",
                "--schedulers",
                "fifo,sjf",
                "--seeds",
                "2",
                "--quiet",
                "--carbon",
                "200",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "cost_usd (lower)" in text and "\nco2_kg " in text
    runs = json.loads(out.read_text())["runs"]
    assert all(set(ENERGY_METRICS) <= set(r) for rows in runs.values() for r in rows)
    assert runs["fifo"][0]["cluster_price_per_h"] == pytest.approx(4 * 0.35)


def test_power_down_and_count_energy_flags_add_energy_and_the_power_down_saves_it(capsys, tmp_path):
    # One node of two A100-80s: job 1 arrives at 7200 s, after the node has idled an hour since job 0 ended.
    jobs = [Job(0, 0.0, 2400.0, job_type="training"), Job(1, 7200.0 + 1000.0, 2400.0, job_type="training")]
    trace = str(write_csv(jobs, tmp_path / "idle.csv"))
    runs = {}
    for name, flags in (("counted", ["--count-energy"]), ("down", ["--power-down-after", "600", "--wake-delay", "90"])):
        out = tmp_path / f"{name}.json"
        args = [
            "simulate",
            "--cluster",
            CLUSTER,
            "--trace",
            trace,
            "--scheduler",
            "fifo",
            "--quiet",
            "--json",
            str(out),
        ]
        assert main([*args, *flags]) == 0
        runs[name] = json.loads(out.read_text())
    counted, down = runs["counted"], runs["down"]
    assert list(counted) == [*METRICS, *ENERGY_METRICS]  # the default model, counted
    assert down["energy_kwh"] < counted["energy_kwh"]  # the node was down from 1600 s to 8200 s
    assert down["mean_wait_s"] == pytest.approx(counted["mean_wait_s"] + 90.0 / 2)  # job 1 waited for the wake
    got = run_options_from(run_option_args("--power-down-after", "600", "--sleep-w", "5"), RunOptions())
    assert got.power_down == PowerDownModel(idle_timeout_s=600.0, sleep_w=5.0)

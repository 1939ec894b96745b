"""``python -m engine sweep`` and ``plan``: the CSV's columns are those of ``compare --json``, meta.json says
where it ran, a spec file reproduces the grid, ``--address`` joins a running Ray, bad input is one line."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import main
from engine.traces import write_csv
from engine.traces.generator import generate

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(300)
GRID = [
    "--cluster",
    "2x4:V100-32",
    "--cluster",
    "1x4:T4",
    "--jobs",
    "30",
    "--load",
    "0.6,1.2",
    "--schedulers",
    "fifo,sjf",
    "--seeds",
    "2",
]


def rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_sweep_writes_one_row_per_cell_with_the_metrics_of_compare(ray_local, tmp_path, capsys):
    assert main(["sweep", *GRID, "--out", str(tmp_path / "r.csv"), "--json", str(tmp_path / "meta.json")]) == 0
    out = capsys.readouterr().out
    assert "16 cells (2 cluster(s) x 2 load(s) x 2 seed(s) x 2 scheduler(s))" in out and "0 failed" in out
    table = rows(tmp_path / "r.csv")
    assert len(table) == 16
    trace = str(write_csv(generate("1x4:T4", 30, load=0.6, seed=1), tmp_path / "t.csv"))
    assert (
        main(
            [
                "compare",
                "--cluster",
                "1x4:T4",
                "--trace",
                trace,
                "--schedulers",
                "fifo,sjf",
                "--seed",
                "1",
                "--quiet",
                "--json",
                str(tmp_path / "c.json"),
            ]
        )
        == 0
    )
    compared = json.loads((tmp_path / "c.json").read_text())
    assert list(table[0]) == ["cluster", "load", "seed", "scheduler", *compared["fifo"]]
    row = next(
        r for r in table if (r["cluster"], r["load"], r["seed"], r["scheduler"]) == ("1x4:T4", "0.6", "1", "sjf")
    )
    assert float(row["mean_wait_s"]) == compared["sjf"]["mean_wait_s"] and int(row["jobs"]) == 30
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert meta["backend"] == "ray" and meta["address"] == ray_local and meta["cells"] == 16
    assert meta["failures"] == [] and meta["wall_s"] > 0
    # The spec in meta.json is a grid file the command takes back: the same rows.
    (tmp_path / "spec.json").write_text(json.dumps(meta["spec"]))
    assert main(["sweep", "--spec", str(tmp_path / "spec.json"), "--out", str(tmp_path / "again.csv")]) == 0
    assert rows(tmp_path / "again.csv") == table
    capsys.readouterr()


def test_sweep_with_energy_flags_adds_cost_and_energy_to_every_row_and_its_spec_keeps_them(ray_local, tmp_path, capsys):
    assert (
        main(
            [
                "sweep",
                "--cluster",
                "1x4:T4",
                "--jobs",
                "20",
                "--load",
                "0.6",
                "--schedulers",
                "fifo,sjf",
                "--pue",
                "1.3",
                "--out",
                str(tmp_path / "r.csv"),
                "--json",
                str(tmp_path / "meta.json"),
            ]
        )
        == 0
    )
    table = rows(tmp_path / "r.csv")
    trace = str(write_csv(generate("1x4:T4", 20, load=0.6, seed=0), tmp_path / "t.csv"))
    assert (
        main(
            [
                "compare",
                "--cluster",
                "1x4:T4",
                "--trace",
                trace,
                "--schedulers",
                "fifo,sjf",
                "--pue",
                "1.3",
                "--quiet",
                "--json",
                str(tmp_path / "c.json"),
            ]
        )
        == 0
    )
    compared = json.loads((tmp_path / "c.json").read_text())
    assert list(table[0]) == ["cluster", "load", "seed", "scheduler", *compared["fifo"]]
    assert [float(r["energy_kwh"]) for r in table] == [compared[s]["energy_kwh"] for s in ("fifo", "sjf")]
    # The spec in meta.json sets the energy model (PUE 1.3): run again, its rows have the energy columns too.
    (tmp_path / "spec.json").write_text(json.dumps(json.loads((tmp_path / "meta.json").read_text())["spec"]))
    assert main(["sweep", "--spec", str(tmp_path / "spec.json"), "--out", str(tmp_path / "again.csv")]) == 0
    assert rows(tmp_path / "again.csv") == table
    capsys.readouterr()


@pytest.mark.parametrize("how", ["--address", "RAY_ADDRESS"])
def test_sweep_joins_the_ray_cluster_at_an_address(ray_local, tmp_path, how):
    env = {**os.environ, "ENGINE_PURE_PYTHON": "1"}
    env.pop("RAY_ADDRESS", None)
    join = ["--address", ray_local] if how == "--address" else []
    if how == "RAY_ADDRESS":
        env["RAY_ADDRESS"] = ray_local
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine",
            "sweep",
            "--cluster",
            "1x4:T4",
            "--jobs",
            "20",
            "--load",
            "0.8",
            "--schedulers",
            "fifo",
            *join,
            "--out",
            str(tmp_path / "r.csv"),
            "--json",
            str(tmp_path / "m.json"),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "m.json").read_text())["address"] == ray_local
    assert len(rows(tmp_path / "r.csv")) == 1


def test_sweep_of_a_trace_takes_load_scales(ray_local, tmp_path, capsys):
    trace = str(write_csv(generate("1x4:T4", 30, load=0.8, seed=2), tmp_path / "t.csv"))
    assert (
        main(
            [
                "sweep",
                "--cluster",
                "1x4:T4",
                "--trace",
                trace,
                "--first",
                "25",
                "--load-scale",
                "1,2",
                "--schedulers",
                "sjf",
                "--out",
                str(tmp_path / "r.csv"),
                "--json",
                str(tmp_path / "m.json"),
            ]
        )
        == 0
    )
    table = rows(tmp_path / "r.csv")
    assert [(r["load"], r["jobs"]) for r in table] == [("1.0", "25"), ("2.0", "25")]
    assert (
        main(
            [
                "simulate",
                "--cluster",
                "1x4:T4",
                "--trace",
                trace,
                "--first",
                "25",
                "--load-scale",
                "2",
                "--scheduler",
                "sjf",
                "--quiet",
                "--json",
                str(tmp_path / "s.json"),
            ]
        )
        == 0
    )
    assert float(table[1]["mean_jct_s"]) == json.loads((tmp_path / "s.json").read_text())["mean_jct_s"]
    spec = json.loads((tmp_path / "m.json").read_text())["spec"]
    workload = spec["base"]["workload"]
    assert (workload["trace_path"], workload["first"], spec["loads"]) == (trace, 25, [1.0, 2.0])
    capsys.readouterr()


def test_plan_writes_the_answer_and_the_metric_around_it(ray_local, tmp_path, capsys):
    trace = str(write_csv(generate("3x4:V100-32", 60, load=1.0, seed=3), tmp_path / "t.csv"))
    assert (
        main(
            [
                "plan",
                "--trace",
                trace,
                "--node",
                "4:V100-32",
                "--scheduler",
                "fifo",
                "--scheduler",
                "sjf",
                "--target",
                "p95_wait_s<=3600",
                "--json",
                str(tmp_path / "plan.json"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    answer = json.loads((tmp_path / "plan.json").read_text())
    assert set(answer["schedulers"]) == {"fifo", "sjf"} and answer["backend"] == "ray"
    best = answer["schedulers"][answer["fewest_gpus"]]
    assert answer["nodes"] == best["nodes"] >= 1 and answer["value_at_nodes"] <= 3600
    assert answer["nodes"] == 1 or answer["value_at_nodes_minus_1"] > 3600
    probes = {(p["scheduler"], p["nodes"]): p for p in answer["probes"]}
    assert probes[(answer["fewest_gpus"], answer["nodes"])]["meets"]
    assert f"fewest GPUs: {answer['fewest_gpus']}" in out


def test_plan_in_money_writes_the_cheapest_mix_and_its_runner_up(ray_local, tmp_path, capsys):
    trace = str(write_csv(generate("2x4:V100-32", 40, load=1.0, seed=2), tmp_path / "t.csv"))
    assert (
        main(
            [
                "plan",
                "--trace",
                trace,
                "--node",
                "4:T4",
                "--node",
                "1:A100-80",
                "--minimize",
                "cluster_price_per_h",
                "--scheduler",
                "fifo",
                "--target",
                "mean_wait_s<=900",
                "--max-nodes",
                "6",
                "--json",
                str(tmp_path / "plan.json"),
            ]
        )
        == 0
    )
    answer = json.loads((tmp_path / "plan.json").read_text())
    # The cheapest mix (checked by brute force in tests/analysis/test_plan.py): one T4 node and four A100s.
    assert answer["cluster"] == "1x4:T4,4x1:A100-80" and answer["nodes"] == [1, 4]
    assert answer["cluster_price_per_h"] == pytest.approx(4 * 0.35 + 4 * 3.93) and answer["value"] <= 900
    assert answer["runner_up"]["cluster"] == "5x1:A100-80"
    assert answer["runner_up"]["cluster_price_per_h"] == pytest.approx(5 * 3.93)
    assert answer["minimize"] == "cluster_price_per_h" and answer["price_list"] == "catalog"
    assert "1x4:T4,4x1:A100-80" in capsys.readouterr().out
    assert (
        main(
            [
                "plan",
                "--trace",
                trace,
                "--node",
                "4:T4",
                "--node",
                "1:A100-80",
                "--scheduler",
                "fifo",
                "--target",
                "mean_wait_s<=900",
                "--max-nodes",
                "6",
                "--price-list",
                "gcp-preemptible-2020",
            ]
        )
        == 2
    )
    assert "no price_per_h for T4" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["sweep", *GRID, "--trace", "x.csv"], "either --trace FILE or --jobs N"),
        (["sweep", "--cluster", "1x4:T4", "--jobs", "5", "--schedulers", "fifo"], "--jobs needs --load"),
        (
            ["sweep", "--cluster", "1x4:T4", "--jobs", "5", "--load", "0.5", "--schedulers", "fifo,nope"],
            "unknown scheduler 'nope'",
        ),
        (["sweep", "--jobs", "5", "--load", "0.5", "--schedulers", "fifo"], "sweep needs --cluster"),
        (
            ["sweep", "--cluster", "1x4:T4", "--jobs", "5", "--load", "0.5,0.5", "--schedulers", "fifo"],
            "more than once",
        ),
        (
            [
                "sweep",
                "--cluster",
                "1x4:T4",
                "--jobs",
                "5",
                "--load",
                "0.5",
                "--schedulers",
                "fifo",
                "--grid",
                "mtbf=1",
            ],
            "sweep axes: 'mtbf' is not a numeric run option; valid: preemption.checkpoint_interval_s",
        ),
        (
            ["sweep", "--cluster", "1x4:T4", "--jobs", "5", "--load", "0.5", "--schedulers", "fifo"]
            + ["--grid", "failures.mtbf_h=100,0"],
            "options.failures.mtbf_h must be a number of hours > 0 or null",
        ),
        (
            ["plan", "--trace", "x.csv", "--node", "8:A100-80", "--scheduler", "fifo", "--target", "p95<=1"],
            "unknown metric 'p95'",
        ),
        (
            ["plan", "--trace", "x.csv", "--node", "8:A100-80", "--scheduler", "fifo", "--target", "ettr>=0.9"],
            "ettr is measured only under failures; give a failure model",
        ),
        (
            ["plan", "--trace", "x.csv", "--node", "8", "--scheduler", "fifo", "--target", "p95_wait_s<=1"],
            "node shape '8'",
        ),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, argv, message):
    trace = write_csv(generate("1x4:T4", 5, load=0.5, seed=0), tmp_path / "x.csv")
    argv = [str(trace) if a == "x.csv" else a for a in argv]
    assert main([*argv, *([] if argv[0] == "plan" else ["--out", str(tmp_path / "r.csv")])]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "r.csv").exists()


def test_sweep_runs_a_plugin_scheduler_on_ray_workers(ray_local, registry, tmp_path):
    """--plugin is imported by the driver and by every worker, so a user's scheduler runs as a cell."""
    out = tmp_path / "r.csv"
    code = main(
        [
            "sweep",
            "--plugin",
            str(REPO / "examples" / "widest_first.py"),
            "--cluster",
            "2x4:generic",
            "--jobs",
            "40",
            "--load",
            "0.9",
            "--schedulers",
            "widest-first,fifo",
            "--seeds",
            "1",
            "--out",
            str(out),
            "--quiet",
            "--address",
            ray_local,
        ]
    )
    assert code == 0
    rows = list(csv.DictReader(out.open()))
    assert sorted(r["scheduler"] for r in rows) == ["fifo", "widest-first"]
    assert all(int(r["completed"]) == 40 for r in rows)


def test_a_killed_sweep_resumes_from_its_finished_cells(tmp_path, capsys, monkeypatch):
    # Issue 32: a killed sweep lost every finished cell (and wrote its CSV and meta in place). Finished cells are
    # kept in OUT.cells.jsonl as they finish; the same command resumes, and the CSV equals an uninterrupted one.
    # (Serial here: the cells run in this process, where a kill after the fourth is simulated.)
    from functools import partial

    from engine.analysis import sweep as sweep_mod

    monkeypatch.setattr(sweep_mod, "run_sweep", partial(sweep_mod.run_sweep, backend="serial"))
    real_cell, ran = sweep_mod.run_cell, []

    def cell(*args, kill_after=None):
        if len(ran) == kill_after:
            raise KeyboardInterrupt
        ran.append(args[2:4])
        return real_cell(*args)

    argv = ["sweep", *GRID, "--quiet", "--out", str(tmp_path / "r.csv"), "--json", str(tmp_path / "meta.json")]
    monkeypatch.setattr(sweep_mod, "run_cell", partial(cell, kill_after=4))
    assert main(argv) == 130
    assert not (tmp_path / "r.csv").exists() and not (tmp_path / "meta.json").exists()
    assert len((tmp_path / "r.csv.cells.jsonl").read_text().splitlines()) == 1 + 4  # the header, 4 cells

    ran.clear()
    monkeypatch.setattr(sweep_mod, "run_cell", cell)
    assert main(argv) == 0
    assert "resuming: 4 of 16 cells kept" in capsys.readouterr().out
    assert len(ran) == 12 and not (tmp_path / "r.csv.cells.jsonl").exists()
    resumed = rows(tmp_path / "r.csv")
    assert json.loads((tmp_path / "meta.json").read_text())["completed"] == 16
    assert main([*argv[:-4], "--out", str(tmp_path / "whole.csv")]) == 0
    assert resumed == rows(tmp_path / "whole.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["meta.json", "r.csv", "whole.csv"]


def test_sweep_grid_flag_varies_a_run_option_and_each_row_carries_its_value(tmp_path, capsys, monkeypatch):
    # Issue 34: --grid failures.mtbf_h=... makes the MTBF an axis; its spec file (--json) runs the same grid again.
    from functools import partial

    from engine.analysis import sweep as sweep_mod

    monkeypatch.setattr(sweep_mod, "run_sweep", partial(sweep_mod.run_sweep, backend="serial"))
    argv = ["sweep", "--cluster", "2x4:A100-80", "--jobs", "40", "--load", "0.9", "--schedulers", "fifo,sjf"]
    argv += ["--grid", "failures.mtbf_h=10,10000", "--repair-h", "4", "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "r.csv"), "--json", str(tmp_path / "m.json")]) == 0
    assert "4 cells (1 cluster(s) x 1 load(s) x 2 failures.mtbf_h value(s) x 1 seed(s) x 2 scheduler(s))" in (
        capsys.readouterr().out
    )
    table = rows(tmp_path / "r.csv")
    assert [(r["failures.mtbf_h"], r["scheduler"]) for r in table] == [
        ("10.0", "fifo"),
        ("10.0", "sjf"),
        ("10000.0", "fifo"),
        ("10000.0", "sjf"),
    ]
    assert int(table[0]["node_failures"]) > int(table[2]["node_failures"])
    spec = json.loads((tmp_path / "m.json").read_text())["spec"]
    assert spec["axes"] == {"failures.mtbf_h": [10.0, 10000.0]}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    assert main(["sweep", "--spec", str(tmp_path / "spec.json"), "--quiet", "--out", str(tmp_path / "again.csv")]) == 0
    assert rows(tmp_path / "again.csv") == table

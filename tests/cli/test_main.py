"""The command line, in-process through ``main([...])`` and as a real ``python -m engine`` subprocess."""

from __future__ import annotations

import io
import json
import sys

import pandas as pd
import pytest

from engine import SCHEDULERS, Job
from engine.analysis.metrics import METRICS
from engine.cli import COMMANDS, Command, _resolve, main
from engine.cli.common import format_table, format_value, progress
from engine.traces import TRACE_FORMATS, write_csv
from tests.cli.engine_process import engine

# The keys issue 2 requires in every scheduler's entry of `compare --json`.
REQUIRED_KEYS = {
    "jobs",
    "completed",
    "unschedulable",
    "mean_wait_s",
    "p95_wait_s",
    "max_wait_s",
    "mean_jct_s",
    "mean_bounded_slowdown",
    "makespan_s",
    "utilization",
    "gini_user_wait",
    "jain_user_wait",
}

CLUSTER = "1x2:generic"


@pytest.fixture
def trace(tmp_path):
    """On 2 GPUs: job 0 holds one GPU for 100 s; job 1 (2 GPUs) must wait for it. Strict fifo makes job 2 wait
    behind job 1 (waits 0, 99, 108); first-fit lets it start at once (waits 0, 99, 0)."""
    jobs = [Job(0, 0.0, 100.0), Job(1, 1.0, 10.0, gpus=2), Job(2, 2.0, 10.0, user="b")]
    return str(write_csv(jobs, tmp_path / "trace.csv"))


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_simulate_prints_table_and_writes_json_and_jobs_csv(capsys, trace, tmp_path):
    js, jobs_csv, users_csv = tmp_path / "s.json", tmp_path / "jobs.csv", tmp_path / "users.csv"
    code, out, err = run_cli(
        capsys,
        "simulate",
        "--cluster",
        CLUSTER,
        "--trace",
        trace,
        "--scheduler",
        "fifo",
        "--json",
        str(js),
        "--jobs-csv",
        str(jobs_csv),
        "--users-csv",
        str(users_csv),
    )
    assert code == 0, err
    assert "Mean wait (s)" in out and "69.0" in out  # (0 + 99 + 108) / 3
    summary = json.loads(js.read_text())
    assert list(summary) == list(METRICS)
    assert summary["mean_wait_s"] == pytest.approx(69.0) and summary["completed"] == 3
    frame = pd.read_csv(jobs_csv)
    assert frame["wait_s"].tolist() == pytest.approx([0, 99, 108])
    assert frame["user"].tolist() == ["user0", "user0", "b"]
    users = pd.read_csv(users_csv)
    assert users["user"].tolist() == ["b", "user0"]
    assert users["mean_wait_s"].tolist() == pytest.approx([108, 49.5])


def test_compare_marks_best_values_and_writes_json(capsys, trace, tmp_path):
    js = tmp_path / "c.json"
    code, out, err = run_cli(
        capsys, "compare", "--cluster", CLUSTER, "--trace", trace, "--schedulers", "fifo,first-fit", "--json", str(js)
    )
    assert code == 0, err
    lines = {line.split("  ")[0]: line for line in out.splitlines()}
    wait = lines["Mean wait (s)"].split()
    assert wait[-2:] == ["69.0", "33.0*"]  # fifo, first-fit: only the best is marked
    assert "*" not in lines["Jobs"]  # a count of the input has no best
    assert "*" not in lines["Preemptions"]  # a tie everywhere marks nothing
    data = json.loads(js.read_text())
    assert list(data) == ["fifo", "first-fit"]
    for name in data:
        assert REQUIRED_KEYS <= set(data[name])
    assert data["fifo"]["mean_wait_s"] == pytest.approx(69.0)
    assert data["first-fit"]["mean_wait_s"] == pytest.approx(33.0)


def test_unschedulable_jobs_are_reported_and_undefined_metrics_are_null(capsys, tmp_path):
    trace = str(write_csv([Job(0, 0.0, 10.0, gpus=2), Job(1, 1.0, 10.0, gpus=4)], tmp_path / "big.csv"))
    js = tmp_path / "s.json"
    code, out, err = run_cli(
        capsys, "simulate", "--cluster", "1x1:generic", "--trace", trace, "--scheduler", "fifo", "--json", str(js)
    )
    assert code == 0, err
    assert (
        "2 of 2 jobs (100.0 %) can never run on this cluster: the widest (job 1) "
        "needs 4 GPUs of one type; the most any allowed type has is 1 (generic)" in out
    )
    assert "1 job(s): needs 2 GPUs of one type" in out and "Never ran (cannot fit the cluster)" in out
    data = json.loads(js.read_text())
    assert data["unschedulable"] == 2 and data["mean_wait_s"] is None and data["utilization"] == 0


def test_compare_states_the_jobs_that_never_ran(capsys, tmp_path):
    jobs = [Job(0, 0.0, 10.0, gpus=1), Job(1, 1.0, 10.0, gpus=8), Job(2, 2.0, 10.0, gpus=1)]
    trace = str(write_csv(jobs, tmp_path / "wide.csv"))
    code, out, err = run_cli(capsys, "compare", "--cluster", "1x4:T4", "--trace", trace, "--schedulers", "fifo,sjf")
    assert code == 0, err
    assert (
        "1 of 3 jobs (33.3 %) can never run on this cluster: the widest (job 1) needs 8 GPUs of one type; "
        "the most any allowed type has is 4 (T4). Wait, JCT and utilisation count only the jobs that ran." in out
    )
    row = next(line for line in out.splitlines() if line.startswith("Never ran"))
    assert row.split()[-2:] == ["1", "1"]


def test_same_seed_same_json(capsys, trace, tmp_path):
    outs = []
    for i in range(2):
        path = tmp_path / f"r{i}.json"
        assert (
            main(
                [
                    "simulate",
                    "--cluster",
                    "2x2:generic",
                    "--trace",
                    trace,
                    "--scheduler",
                    "random",
                    "--seed",
                    "7",
                    "--json",
                    str(path),
                ]
            )
            == 0
        )
        outs.append(path.read_text())
    assert outs[0] == outs[1]


def test_real_swf_trace_through_the_cli(capsys, traces_dir, tmp_path):
    # KTH SP2 (100 processors = 100 one-GPU nodes), first 2,000 jobs: skipping blocked jobs must cut mean wait.
    js = tmp_path / "kth.json"
    code, out, err = run_cli(
        capsys,
        "compare",
        "--cluster",
        "100x1:generic",
        "--format",
        "swf",
        "--first",
        "2000",
        "--trace",
        str(traces_dir / "swf-kth-sp2" / "KTH-SP2-1996-2.1-cln.swf"),
        "--schedulers",
        "fifo,first-fit",
        "--json",
        str(js),
    )
    assert code == 0, err
    data = json.loads(js.read_text())
    assert data["fifo"]["jobs"] == data["first-fit"]["jobs"] == 2000
    assert data["first-fit"]["mean_wait_s"] < data["fifo"]["mean_wait_s"]
    assert "swf, 2,000 jobs" in out


def test_list_shows_every_scheduler_and_trace_format(capsys):
    code, out, _ = run_cli(capsys, "list")
    assert code == 0
    names = {line.split()[0] for line in out.splitlines() if line.startswith("  ") and line.split()}
    assert set(SCHEDULERS) <= names
    assert set(TRACE_FORMATS) <= names


def test_list_json_prints_the_catalog_with_power_and_price(capsys):
    code, out, _ = run_cli(capsys, "list", "--json")
    assert code == 0
    data = json.loads(out)
    assert set(data["schedulers"]) == set(SCHEDULERS)
    h100 = next(t for t in data["gpu_types"] if t["name"] == "H100-80")
    assert h100 == {
        "name": "H100-80",
        "vram_gib": 80.0,
        "speed": 4.0,
        "board_w": 700.0,
        "idle_w": 105.0,
        "busy_w": 532.0,
        "price_per_h": 11.06,
    }
    assert data["price_lists"]["gcp-preemptible-2020"]["prices"]["K80"] == 0.135


def bad_cluster_file(tmp_path):
    path = tmp_path / "cluster.json"
    path.write_text("{not json")
    return str(path)


def bad_trace_file(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("submit_s,duration_s\n0,10\n5,ten\n")
    return str(path)


@pytest.mark.parametrize(
    "make_args, expected",
    [
        (
            lambda t, p: ["simulate", "--cluster", CLUSTER, "--trace", str(p / "missing.csv"), "--scheduler", "fifo"],
            "missing.csv",
        ),
        (lambda t, p: ["simulate", "--cluster", "2x4:NOPE", "--trace", t, "--scheduler", "fifo"], "unknown GPU type"),
        (
            lambda t, p: ["simulate", "--cluster", bad_cluster_file(p), "--trace", t, "--scheduler", "fifo"],
            "not valid JSON",
        ),
        (lambda t, p: ["simulate", "--cluster", CLUSTER, "--trace", t, "--scheduler", "nope"], "valid: "),
        (lambda t, p: ["compare", "--cluster", CLUSTER, "--trace", t, "--schedulers", "fifo,nope"], "valid: "),
        (
            lambda t, p: ["simulate", "--cluster", CLUSTER, "--trace", bad_trace_file(p), "--scheduler", "fifo"],
            "line 3",
        ),
        (
            lambda t, p: ["simulate", "--cluster", CLUSTER, "--trace", t, "--scheduler", "fifo", "--format", "xyz"],
            "invalid choice: 'xyz'",
        ),
        (lambda t, p: ["simulate", "--cluster", CLUSTER, "--trace", t], "--scheduler"),
        (lambda t, p: ["compare", "--cluster", CLUSTER, "--trace", t, "--schedulers", "fifo,fifo"], "more than once"),
        (
            lambda t, p: [
                "simulate",
                "--cluster",
                CLUSTER,
                "--trace",
                t,
                "--scheduler",
                "fifo",
                "--checkpoint-interval",
                "-1",
            ],
            "> 0",
        ),
        (
            lambda t, p: [
                "simulate",
                "--cluster",
                CLUSTER,
                "--trace",
                t,
                "--scheduler",
                "fifo",
                "--json",
                str(p / "no" / "dir.json"),
            ],
            "does not exist",
        ),
        (lambda t, p: ["frobnicate"], "invalid choice"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, trace, tmp_path, make_args, expected):
    code, out, err = run_cli(capsys, *make_args(trace, tmp_path))
    assert code == 2
    assert len(err.splitlines()) == 1, err
    assert expected in err and "Traceback" not in err


def test_unknown_scheduler_lists_valid_names(capsys, trace):
    _, _, err = run_cli(capsys, "simulate", "--cluster", CLUSTER, "--trace", trace, "--scheduler", "nope")
    assert all(name in err for name in SCHEDULERS)


def test_help_exits_0(capsys):
    code, out, _ = run_cli(capsys, "--help")
    assert code == 0 and all(name in out for name in COMMANDS)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_resolves(name):
    cmd = COMMANDS[name]
    assert cmd.help
    assert callable(_resolve(cmd.add_arguments)) and callable(_resolve(cmd.run))


def test_a_command_that_cannot_load_is_one_line(capsys, monkeypatch):
    monkeypatch.setitem(
        COMMANDS,
        "broken",
        Command("needs a missing module", "engine.no_such_module:add_arguments", "engine.no_such_module:run"),
    )
    code, _, err = run_cli(capsys, "broken")
    assert code == 1 and len(err.splitlines()) == 1 and "no_such_module" in err and "Traceback" not in err


def test_subprocess_compare_and_error(trace, tmp_path):
    js = tmp_path / "c.json"
    ok = engine(
        "compare", "--cluster", CLUSTER, "--trace", trace, "--schedulers", "fifo,first-fit,sjf", "--json", str(js)
    )
    assert ok.returncode == 0, ok.stderr
    assert "33.0*" in ok.stdout
    assert set(json.loads(js.read_text())) == {"fifo", "first-fit", "sjf"}
    bad = engine("simulate", "--cluster", CLUSTER, "--trace", str(tmp_path / "nope.csv"), "--scheduler", "fifo")
    assert bad.returncode == 2
    assert bad.stdout == "" and len(bad.stderr.splitlines()) == 1 and "nope.csv" in bad.stderr


def test_list_imports_no_heavy_framework():
    code = (
        "import runpy, sys\n"
        "sys.argv = ['engine', 'list']\n"
        "try:\n"
        "    runpy.run_module('engine', run_name='__main__')\n"
        "except SystemExit as e:\n"
        "    assert e.code == 0, e.code\n"
        "heavy = sorted(m for m in ('torch', 'gymnasium', 'streamlit', 'stable_baselines3') if m in sys.modules)\n"
        "print('HEAVY', heavy)\n"
    )
    proc = engine(code=code)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stdout


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_only_on_a_terminal(monkeypatch):
    with progress("x") as cb:
        assert cb is None  # pytest's captured stderr is not a terminal
    with progress("x", quiet=True) as cb:
        assert cb is None
    fake = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", fake)
    with progress("fifo") as cb:
        cb(5, 10)
        cb(10, 10)
    assert "fifo" in fake.getvalue() and "10/10" in fake.getvalue()


def test_formatting():
    assert format_value(float("nan"), "s") == "-" and format_value(None, "ratio") == "-"
    assert format_value(12345.0, "jobs") == "12,345"
    assert format_value(1234.56, "s") == "1,234.6"
    assert format_value(0.12345, "ratio") == "0.123"
    assert format_table(["a", "bb"], [["x", "1"], ["yyy", "22"]]).splitlines() == [
        "a    bb",
        "---  --",
        "x     1",
        "yyy  22",
    ]

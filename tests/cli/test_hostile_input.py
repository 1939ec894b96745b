"""Input that used to hang the command line or print a traceback (issue 32): a FIFO named as a file, a spec
without end, a plug-in whose decide() fails, a message that said "at least inf", a local Ray that fails to start.
Each runs as a real process with a timeout (the Ray one in this process, its start made to fail), and gives one
line on stderr and exit status 2 within seconds."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.cli.engine_process import REPO, engine

TRACE = str(REPO / "sample_traces" / "canonical.csv")
GRID = ["--cluster", "1x4:T4", "--jobs", "5", "--load", "0.5", "--schedulers", "fifo"]


def one_line_error(proc: subprocess.CompletedProcess, words: str) -> None:
    err = proc.stderr
    assert proc.returncode == 2, (proc.returncode, err[-2000:])
    assert "Traceback" not in err and err.count("\n") == 1, err[-2000:]
    assert words in err, err


@pytest.mark.parametrize("where", ["--cluster", "--trace"])
def test_a_fifo_given_as_a_file_is_refused_without_opening_it(tmp_path, where):
    fifo = tmp_path / "c.json"
    os.mkfifo(fifo)
    args = {"--cluster": "1x4:T4", "--trace": TRACE, where: str(fifo)}
    proc = engine("simulate", *[x for kv in args.items() for x in kv], "--scheduler", "fifo", timeout_s=60)
    one_line_error(proc, ": not a regular file (a FIFO, a device or a socket); refused")
    assert proc.stderr.startswith(f"error: {where} '/")


def test_a_spec_without_end_is_refused(tmp_path):
    one_line_error(
        engine("sweep", "--spec", "/dev/zero", "--out", str(tmp_path / "r.csv"), timeout_s=60),
        "--spec '/dev/zero': not a regular file",
    )
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as f:
        f.truncate(64 * 2**20)  # sparse: 64 MiB of zeros, read no further than the limit
    one_line_error(
        engine("sweep", "--spec", str(huge), "--out", str(tmp_path / "r.csv"), timeout_s=60),
        "larger than the limit of 16,777,216 bytes",
    )
    assert not (tmp_path / "r.csv").exists()


BROKEN = {
    "raises": "raise ZeroDivisionError('division by zero')",
    "returns None": "return None",
    "raises a BaseException": "raise Stop('stop')",
    "exits": "raise SystemExit(3)",
}


def broken_plugin(tmp_path: Path, how: str) -> str:
    plugin = tmp_path / "broken.py"
    plugin.write_text(
        "from engine.schedulers import SchedulerSpec, register\n\n"
        "class Stop(BaseException):\n    pass\n\n"
        "class Broken:\n    name = 'broken'\n\n    def reset(self, state):\n        pass\n\n"
        f"    def decide(self, state):\n        {BROKEN[how]}\n\n"
        "register(SchedulerSpec('broken', Broken, 'Fails in decide().'))\n"
    )
    return str(plugin)


@pytest.mark.parametrize("how", list(BROKEN))
def test_a_plugin_whose_decide_fails_is_one_line_naming_it(tmp_path, how):
    proc = engine(
        "simulate",
        "--plugin",
        broken_plugin(tmp_path, how),
        "--cluster",
        "1x4:T4",
        "--trace",
        TRACE,
        "--scheduler",
        "broken",
        "--quiet",
    )
    one_line_error(proc, "scheduler 'broken' failed while it ran: ")
    if how == "returns None":
        assert "decide() must return or yield decisions" in proc.stderr


def test_evaluate_names_a_failing_plugin_scheduler_in_one_line(tmp_path):
    proc = engine(
        "evaluate",
        "--plugin",
        broken_plugin(tmp_path, "raises a BaseException"),
        "--schedulers",
        "fifo,broken",
        "--scenario",
        "v100-32",
        "--seeds",
        "1",
        "--quiet",
    )
    one_line_error(proc, "scheduler 'broken' failed while it ran: Stop: stop")


def test_a_load_scale_past_every_time_names_a_finite_scale():
    proc = engine("simulate", "--cluster", "1x4:T4", "--trace", TRACE, "--scheduler", "fifo", "--load-scale", "5e-324")
    one_line_error(proc, "use a scale of at least ")
    assert "inf" not in proc.stderr and "nan" not in proc.stderr


def test_a_fifo_given_as_the_carbon_csv_is_refused(tmp_path):
    fifo = tmp_path / "carbon.csv"
    os.mkfifo(fifo)
    proc = engine(
        "simulate", "--cluster", "1x4:T4", "--trace", TRACE, "--scheduler", "fifo", "--carbon", str(fifo), timeout_s=60
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "not a regular file" in proc.stderr


@pytest.mark.parametrize("command", ["plan", "sweep"])
def test_a_ray_that_fails_to_start_is_one_line(command, tmp_path, monkeypatch, capsys):
    ray = pytest.importorskip("ray")
    from engine.cli import main

    def broken_start(*args, **kwargs):
        raise RuntimeError("Failed to start the GCS server.\nSee /tmp/ray/session_latest/logs for details.")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", broken_start)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    argv = {
        "plan": ["--trace", TRACE, "--node", "8:A100-80", "--scheduler", "fifo", "--target", "p95_wait_s<=1800"],
        "sweep": [*GRID, "--out", str(tmp_path / "cells.csv")],
    }[command]
    assert main([command, *argv, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert (
        err == "error: could not start a local Ray on this machine: RuntimeError: Failed to start the GCS server. "
        "See /tmp/ray/session_latest/logs for details.\n"
    )

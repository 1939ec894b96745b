"""Schedulers from outside the repository: --plugin files and modules, entry points, and the examples."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine import Job, make_scheduler, parse_cluster, simulate
from engine.cli import main
from engine.plugins import PluginError, load_entry_points, load_plugin
from engine.traces import write_csv

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "widest_first.py"


@pytest.fixture
def trace(tmp_path):
    """On 8 GPUs: a 1-GPU job holds the cluster's first GPU, then a 1-GPU and an 8-GPU job arrive together."""
    jobs = [Job(0, 0.0, 100.0), Job(1, 1.0, 50.0), Job(2, 1.0, 10.0, gpus=8)]
    return str(write_csv(jobs, tmp_path / "trace.csv"))


def test_cli_runs_a_plugin_file_scheduler_next_to_built_in_ones(registry, trace, tmp_path, capsys):
    out_json = tmp_path / "c.json"
    code = main(
        [
            "compare",
            "--plugin",
            str(EXAMPLE),
            "--cluster",
            "1x8:generic",
            "--trace",
            trace,
            "--schedulers",
            "widest-first,first-fit",
            "--quiet",
            "--json",
            str(out_json),
        ]
    )
    assert code == 0, capsys.readouterr().err
    data = json.loads(out_json.read_text())
    assert set(data) == {"widest-first", "first-fit"}
    assert "widest-first" in capsys.readouterr().out


def test_plugin_scheduler_orders_widest_first(registry):
    load_plugin(str(EXAMPLE))
    cluster = parse_cluster("1x8:generic")
    # Job 0 holds all 8 GPUs until 100 s; then a 4-GPU job (older) and an 8-GPU job wait: first-fit starts the
    # older one and the wide job waits for it, widest-first starts the wide job first.
    jobs = (Job(0, 0.0, 100.0, gpus=8), Job(1, 1.0, 50.0, gpus=4), Job(2, 2.0, 10.0, gpus=8))
    result = simulate(cluster, jobs, make_scheduler("widest-first"))
    fifo = simulate(cluster, jobs, make_scheduler("first-fit"))
    assert result.first_start_s[2] < result.first_start_s[1]
    assert fifo.first_start_s[1] < fifo.first_start_s[2]


def test_loading_a_file_twice_registers_once(registry):
    first = load_plugin(str(EXAMPLE))
    assert load_plugin(str(EXAMPLE)) is first
    assert "widest-first" in registry


def test_plugin_as_a_module_name(registry, tmp_path, monkeypatch):
    (tmp_path / "my_sched.py").write_text(
        textwrap.dedent("""
        from engine.schedulers import ListScheduler, SchedulerSpec, StaticKeyOrder, first_fit, register
        register(SchedulerSpec("longest-first", lambda: ListScheduler(
            "longest-first", StaticKeyOrder(key=lambda job: -job.estimate_s), first_fit), "Longest estimate first."))
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    load_plugin("my_sched")
    assert registry["longest-first"].summary == "Longest estimate first."


@pytest.mark.parametrize(
    "spec, message",
    [
        ("missing_plugin.py", "no such file"),
        ("no_such_module_anywhere", "no such module"),
    ],
)
def test_missing_plugin_is_one_line_and_exit_2(spec, message, trace, capsys):
    code = main(["simulate", "--plugin", spec, "--cluster", "1x8:generic", "--trace", trace, "--scheduler", "fifo"])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and err.count("\n") == 1


def test_plugin_that_raises_names_itself(tmp_path, registry):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from engine.schedulers import SchedulerSpec, register\n"
        "register(SchedulerSpec('fifo', lambda: None, 'clashes with a built-in'))\n"
    )
    with pytest.raises(PluginError, match="bad.py failed while loading: ValueError: scheduler 'fifo' is already"):
        load_plugin(str(bad))
    with pytest.raises(PluginError):  # a failed file is not cached as loaded
        load_plugin(str(bad))


def test_installed_entry_point_registers_its_schedulers(registry, tmp_path, monkeypatch):
    """A package installed with an entry point in the group appears without --plugin."""
    (tmp_path / "ep_sched.py").write_text(
        "from engine.schedulers import ListScheduler, SchedulerSpec, StaticKeyOrder, best_fit, register\n"
        "def setup():\n"
        "    register(SchedulerSpec('ep-best', lambda: ListScheduler('ep-best', StaticKeyOrder(), best_fit), 'x'))\n"
    )
    dist = tmp_path / "ep_sched-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-sched\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[gpu_scheduling_playground.schedulers]\nep = ep_sched:setup\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_entry_points() == ["ep"]
    assert "ep-best" in registry


def test_broken_entry_point_warns_and_is_skipped(registry, tmp_path, monkeypatch):
    dist = tmp_path / "broken-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[gpu_scheduling_playground.schedulers]\nbroken = not_a_module_x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(RuntimeWarning, match="'broken'"):
        assert load_entry_points() == []


def test_api_tour_example_runs():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "api_tour.py")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    header = next(line for line in done.stdout.splitlines() if "widest-first" in line)
    assert header.split() == ["fifo", "easy-backfill", "tiresias", "widest-first"]
    assert "mean_wait_s" in done.stdout

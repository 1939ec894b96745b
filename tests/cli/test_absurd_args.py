"""No argument makes the command line print a traceback: absurd sizes, thousands of digits, files that are not
what they claim. Each gets one line on stderr and exit status 2, quickly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import main

REPO = Path(__file__).resolve().parents[2]
TRACE = str(REPO / "sample_traces" / "canonical.csv")
DIGITS = "9" * 5000


def deep_json(tmp: Path) -> str:
    path = tmp / "deep.json"
    path.write_text('{"groups": ' + "[" * 100_000 + "]" * 100_000 + "}")
    return str(path)


def bad_json(tmp: Path) -> str:
    path = tmp / "bad.json"
    path.write_text(
        json.dumps(
            {"groups": [{"gpu_type": "T4", "nodes": 1e308 * 10, "gpus_per_node": 1}], "colocation_slowdown": "fast"}
        )
    )
    return str(path)


CASES = [
    (["simulate", "--cluster", "100000000x8:A100-80", "--trace", TRACE, "--scheduler", "fifo"], "100,000 nodes"),
    (["simulate", "--cluster", "1000000x8:A100-80", "--trace", TRACE, "--scheduler", "fifo"], "1,000,000 GPUs"),
    (["simulate", "--cluster", DIGITS + "x8:A100-80", "--trace", TRACE, "--scheduler", "fifo"], "100,000 nodes"),
    (["simulate", "--cluster", "2x" + DIGITS + ":T4", "--trace", TRACE, "--scheduler", "fifo"], "64 GPUs per node"),
    (["simulate", "--cluster", "[" * 100_000, "--trace", TRACE, "--scheduler", "fifo"], "expected NODESxGPUS"),
    (["simulate", "--cluster", "{" * 100_000, "--trace", TRACE, "--scheduler", "fifo"], "limit is"),
    (["simulate", "--cluster", "DEEP", "--trace", TRACE, "--scheduler", "fifo"], "limit is 8"),
    (["simulate", "--cluster", "BAD", "--trace", TRACE, "--scheduler", "fifo"], "groups[0]"),
    (["simulate", "--cluster", "2x4:T4", "--trace", TRACE, "--scheduler", "fifo", "--seed", DIGITS], "integer from 0"),
    (["simulate", "--cluster", "2x4:T4", "--trace", TRACE, "--scheduler", "fifo", "--seed", "-1"], "integer from 0"),
    (["simulate", "--cluster", "2x4:T4", "--trace", TRACE, "--scheduler", "fifo", "--first", DIGITS], "integer from"),
    (
        ["simulate", "--cluster", "2x4:T4", "--trace", TRACE, "--scheduler", "fifo", "--load-scale", "5e-324"],
        "use a scale of at least",
    ),
    (
        ["simulate", "--cluster", "2x4:T4", "--trace", TRACE, "--scheduler", "fifo", "--load-scale", DIGITS],
        "finite number",
    ),
    (
        ["simulate", "--cluster", "2x4:T4", "--trace", TRACE, "--scheduler", "fifo", "--window", f"{DIGITS}:1"],
        "0 <= START <= END",
    ),
    (
        ["simulate", "--cluster", "2x4:T4", "--trace", TRACE, "--scheduler", "fifo", "--checkpoint-interval", DIGITS],
        "finite number",
    ),
    (["generate", "--cluster", "2x4:T4", "--jobs", "1000000000000", "--out", "OUT"], "5,000,000"),
    (["generate", "--cluster", "2x4:T4", "--jobs", "10", "--users", "1000000000", "--out", "OUT"], "1,000,000"),
    (["generate", "--cluster", "2x4:T4", "--jobs", "10", "--user-skew", "nan", "--out", "OUT"], ""),
    (["trace", "info", TRACE, "--cluster", "100000000x8:A100-80"], "100,000 nodes"),
    (["evaluate", "--schedulers", "fifo", "--scenario", "v100-32", "--seeds", "1000000000"], "10,000"),
]


@pytest.mark.parametrize("argv,words", CASES, ids=[str(i) for i in range(len(CASES))])
def test_absurd_arguments_give_one_line_and_exit_2(tmp_path, capsys, argv, words):
    subst = {"DEEP": deep_json(tmp_path), "BAD": bad_json(tmp_path), "OUT": str(tmp_path / "out.csv")}
    code = main([subst.get(a, a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 2, (code, err[-500:])
    assert "Traceback" not in err and err.count("\n") == 1 and len(err) < 400, err[:1000]
    assert words in err, err


def test_a_real_process_prints_no_traceback_for_an_absurd_cluster():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine",
            "simulate",
            "--cluster",
            "100000000x8:A100-80",
            "--trace",
            TRACE,
            "--scheduler",
            "fifo",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "the limit is 100,000 nodes and 1,000,000 GPUs" in proc.stderr

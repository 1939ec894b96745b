"""What the command-line tests share: ``python -m engine`` in a process of its own, and the run-option flags
parsed as every simulating command parses them."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from engine.cli.common import add_run_option_arguments

REPO = Path(__file__).resolve().parents[2]


def engine(*argv: str, timeout_s: float = 120, code: str | None = None) -> subprocess.CompletedProcess:
    """``python -m engine ARGV`` (with ``code``: ``python -c CODE ARGV``) in a process of its own, run from the
    repository root; a hang fails the test (TimeoutExpired)."""
    return subprocess.run(
        [sys.executable, *(["-c", code] if code else ["-m", "engine"]), *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def run_option_args(*flags: str) -> argparse.Namespace:
    """``flags`` parsed by a parser holding only the run-option flags (:func:`add_run_option_arguments`)."""
    parser = argparse.ArgumentParser()
    add_run_option_arguments(parser)
    return parser.parse_args(list(flags))

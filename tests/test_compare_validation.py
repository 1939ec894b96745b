"""``scripts/compare_validation.py``: agents and policies paired on a training config's validation episodes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "compare_validation.py"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=REPO, timeout=600)


def test_pairs_each_entry_with_the_first_on_the_same_episodes(tmp_path):
    out = _run("wait-mlp", "sjf", "fifo", "wait-mlp=models", "--episodes", "3", "--start", "20")
    assert out.returncode == 0, out.stderr
    rows = {}
    for line in out.stdout.splitlines():
        m = re.fullmatch(r"(\S+)\s+objective (\S+)\s+minus sjf: (\S+) \+- (\S+)", line)
        assert m, line
        rows[m[1]] = tuple(float(x) for x in m.groups()[1:])
    assert list(rows) == ["sjf", "fifo", "wait-mlp=models"]
    assert rows["sjf"][1:] == (0.0, 0.0)  # the base minus itself
    for entry in ("fifo", "wait-mlp=models"):  # a paired mean difference is the difference of the means
        assert abs(rows[entry][1] - (rows[entry][0] - rows["sjf"][0])) < 2e-4
        assert rows[entry][2] > 0
    assert rows["fifo"][0] != rows["sjf"][0]


def test_bad_entries_and_counts_get_one_line_errors():
    for args, message in (
        (("wait-mlp", "nosuch"), "unknown scheduler"),
        (("wait-mlp", "wait-mlp=/nonexistent"), "no model 'wait-mlp'"),
        (("wait-mlp", "../../etc/passwd=models"), "no paths"),
        (("no-such-config", "sjf"), "no such shipped config"),
    ):
        out = _run(*args, "--episodes", "2")
        assert out.returncode != 0 and message in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    out = _run("wait-mlp", "sjf", "--episodes", "100000")
    assert out.returncode == 2 and "--episodes must be 2-1000" in out.stderr
    out = _run("wait-mlp", "sjf", "fifo", "sjf", "--episodes", "2")
    assert out.returncode == 2 and "each entry may be given once" in out.stderr

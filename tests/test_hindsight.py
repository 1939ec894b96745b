"""``scripts/hindsight.py``: a selector's pool, its per-run best in hindsight and the selector, paired."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "hindsight.py"
sys.path.insert(0, str(REPO / "scripts"))

import hindsight  # noqa: E402


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=REPO, timeout=600)


def test_the_hindsight_pick_is_each_seeds_best_policy_paired_against_the_best_single_one():
    objectives = hindsight.runs("select-wait", "v100-32", 3, "free")
    assert len(objectives) == 12 and all(len(v) == 3 for v in objectives.values())  # 11 policies and the agent
    out = _run("select-wait", "--scenario", "v100-32", "--seeds", "3", "--preemption", "free")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    means = [re.fullmatch(r"(\S+)\s+objective (\S+)", line) for line in lines[:12]]
    assert {m[1]: float(m[2]) for m in means if m} == {n: round(sum(v) / 3, 4) for n, v in objectives.items()}
    pool = [n for n in objectives if not n.startswith("rl:")]
    best = min(pool, key=lambda n: sum(objectives[n]))
    picked = [min(seed) for seed in zip(*(objectives[n] for n in pool))]
    diff = sum(picked) / 3 - sum(objectives[best]) / 3
    m = re.fullmatch(rf"hindsight pick minus {best}: (\S+) \+- \S+ \(\S+ % \+- \S+ %\): .+", lines[12])
    assert m and abs(float(m[1]) - diff) < 1e-4 and diff <= 0  # never worse than any one policy of the pool
    assert lines[13].startswith(f"rl:select-wait minus {best}: ")


def test_a_first_seed_skips_that_many_of_the_scripts_seeds():
    three = hindsight.runs("select-wait", "v100-32", 3, "free", policies="fgd,sjf")
    later = hindsight.runs("select-wait", "v100-32", 2, "free", policies="fgd,sjf", first=1)
    assert later == {n: v[1:] for n, v in three.items()}
    assert three["fgd"][1:] != three["fgd"][:2]  # the seeds' workloads differ


def test_the_lookahead_selector_runs_on_the_given_pool_and_is_paired_against_its_best_policy():
    pool = "short-spare-evict-est-cap,short-whole,fgd"
    args = ("select-wait", "--scenario", "v100-32", "--seeds", "2", "--policies", pool, "--lookahead-period", "600")
    out = _run(*args)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    means = dict(re.fullmatch(r"(\S+)\s+objective (\S+)", line).groups() for line in lines[:5])
    assert list(means) == [*pool.split(","), "rl:select-wait", "lookahead-select"]
    best = min(pool.split(","), key=lambda n: float(means[n]))
    assert [line.split(" minus ")[0] for line in lines[5:]] == ["hindsight pick", "rl:select-wait", "lookahead-select"]
    assert lines[7].startswith(f"lookahead-select minus {best}: ")


def test_bad_arguments_get_one_line_errors():
    for args, message in (
        (("wait-mlp",), "is not a selector"),
        (("../../etc/passwd",), "no paths"),
        (("select-wait", "--scenario", "nope"), "unknown scenario"),
        (("select-wait", "--seeds", "1"), "--seeds must be 2-1000"),
        (("select-wait", "--preemption", "sometimes"), "invalid choice"),
        (("select-wait", "--policies", "fgd,../x"), "unknown scheduler"),
        (("select-wait", "--policies", "sjf-oracle"), "an oracle"),
        (("select-wait", "--lookahead-period", "-1"), "period_s must be"),
        (("select-wait", "--first-seed", "-3"), "--first-seed must be 0-1000"),
    ):
        out = _run(*args)
        assert out.returncode != 0 and message in out.stderr, (args, out.stderr)
        assert "Traceback" not in out.stderr

"""The docs stay true: every repository path README.md and ARCHITECTURE.md name exists, and the README's agents
table is the one the cards generate."""

from __future__ import annotations

import fnmatch
import importlib.util
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "ARCHITECTURE.md")
EXTENSIONS = (".py", ".json", ".md", ".csv", ".toml", ".npz", ".txt", ".yaml", ".yml", ".cfg", ".sh", ".gz", ".ipynb")
#: Files the docs name that are not in the repository: what commands write and what a user creates.
NOT_IN_REPO = {"results.csv", "meta.json", "plan.json", ".streamlit/secrets.toml"}


def _ignored_patterns() -> list[str]:
    lines = (REPO / ".gitignore").read_text().splitlines()
    return [p.strip().strip("/") for p in lines if p.strip() and not p.startswith("#")]


def named_paths(text: str) -> list[str]:
    """The backticked tokens of ``text`` that name a path: they hold a ``/`` or end in a file extension; URLs,
    commands (with spaces), placeholders (``<name>``), bare extensions (``.npz``), dotted Python names
    (``engine.sweep/plan``), URL routes and paths outside the checkout (``/docs``, ``~/.ray/auth_token``) are not
    repository paths."""
    out = []
    for token in re.findall(r"`([^`\n]+)`", text):
        if any(c in token for c in " <>{}") or "://" in token or token.startswith(("-", "/", "~")):
            continue
        if not ("/" in token or token.endswith(EXTENSIONS)):
            continue
        if (token.startswith(".") and "/" not in token) or re.match(r"[A-Za-z_]\w*\.[A-Za-z_]\w*/", token):
            continue
        out.append(token)
    return out


def exists(token: str) -> bool:
    """Whether ``token`` names something in this checkout (relative to the root, or to ``engine/``, whose
    subpackages the docs name short); globs must match something."""
    if token in NOT_IN_REPO or token.startswith("../shared/") and not (REPO.parent / "shared").is_dir():
        return True
    path = token.rstrip("/")
    if any(path == p or path.startswith(p + "/") or fnmatch.fnmatch(path, p) for p in _ignored_patterns()):
        return True  # the repository ignores it: written at run time or by the build
    for base in (REPO, REPO / "engine"):
        if any(c in path for c in "*?["):
            if list(base.glob(path)):
                return True
        elif (base / path).exists():
            return True
    return False


@pytest.mark.parametrize("doc", DOCS)
def test_every_named_path_exists(doc):
    paths = named_paths((REPO / doc).read_text())
    assert len(paths) > 10, "the parser found (almost) no paths: the test would check nothing"
    missing = sorted({p for p in paths if not exists(p)})
    assert not missing, f"{doc} names paths that do not exist: {missing}"


def test_named_paths_parser():
    text = (
        "`engine/sim/` and `app.py`, `presets/*.json`, `models/<name>.md`, `python -m engine run`, `.npz`, "
        "`https://x.org/a`, `engine.sweep/plan`, `rl:wait-mlp`, `../shared/DESIGN.md`"
    )
    assert named_paths(text) == ["engine/sim/", "app.py", "presets/*.json", "../shared/DESIGN.md"]
    assert exists("presets/*.json") and exists("sim/") and exists("runs/models/")
    assert not exists("engine/no_such_module.py") and not exists("presets/*.yaml")


def _agent_table_module():
    spec = importlib.util.spec_from_file_location("agent_table", REPO / "scripts" / "agent_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_agents_table_is_generated_from_the_cards():
    agent_table = _agent_table_module()
    table = agent_table.agent_table()
    cards = sorted((REPO / "models").glob("*.json"))
    assert len(table.splitlines()) == 2 + len(cards)
    assert agent_table.readme_table((REPO / "README.md").read_text()) == table, (
        "README.md's agents table differs from the cards': run `python scripts/agent_table.py --write`"
    )


def test_agents_table_states_what_the_cards_say():
    agent_table = _agent_table_module()
    assert (
        agent_table.objective({"wait": 1.0, "bounded_slowdown": 0.5, "jct": 0.0}) == "mean wait + 0.5 bounded slowdown"
    )

    def row(relative, verdict):
        return {"best_baseline": "fgd", "vs_best": {"verdict": verdict, "relative": relative}}

    card = {
        "evaluation": {
            "scenarios": {
                "a": {"free": row(0.2, "worse"), "costly": row(0.571, "worse")},
                "b": {"free": row(-0.1, "better"), "costly": row(0.0, "no clear difference")},
            }
        }
    }
    assert agent_table.where(card, "worse") == "2 of 4: a +20 to +57 % (vs `fgd`)"
    assert agent_table.where(card, "better") == "1 of 4: b free -10 % (vs `fgd`)"
    env = {"clusters": ["2x8:T4,1x8:A10"], "loads": [0.6, 1.2], "n_jobs": 200}
    assert agent_table.trained_on(env, []) == "1 cluster (T4, A10), load 0.6-1.2, 200 jobs, free preemption"
    assert agent_table.trained_on({**env, "presets": ["heavy-user", "deadlines-edf"]}, []).endswith(
        "free preemption, and the 2 teaching presets (other seeds)"
    )
    assert "load 0.6-1.2, 200-600 jobs," in agent_table.trained_on({**env, "n_jobs": [200, 600]}, [])


def test_architecture_stays_short():
    """ARCHITECTURE.md is a code map, contracts and invariants (issue 31): at most 12 KB."""
    assert (REPO / "ARCHITECTURE.md").stat().st_size <= 12 * 1024

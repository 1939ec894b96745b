"""The folders are the architecture (ARCHITECTURE.md): each package imports only from the layers below it, and no
modules import each other in a circle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[1] / "engine"

#: package -> the engine packages its modules may import (itself always allowed).
ALLOWED = {
    "errors": set(),
    "units": set(),
    "_native": set(),
    "sim": {"errors", "units"},
    "schedulers": {"errors", "units", "sim"},
    "plugins": {"errors", "units"},
    "traces": {"errors", "units", "sim"},
    "analysis": {"errors", "units", "sim", "schedulers", "traces", "plugins"},
    "viz": {"errors", "units", "sim", "plugins", "analysis"},
    "rl": {"errors", "units", "sim", "schedulers", "plugins", "traces", "analysis", "viz"},
    "cli": {"errors", "units", "sim", "schedulers", "plugins", "traces", "analysis", "viz", "rl"},
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in ENGINE.rglob("*.py"):
        parts = list(path.relative_to(ENGINE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(path: Path, *, top_level_only: bool) -> set[str]:
    """Engine modules imported by ``path`` (outside ``if TYPE_CHECKING:`` blocks)."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()

    def visit(node: ast.AST, nested: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            inner = nested or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if top_level_only and inner:
                continue
            if isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                if child.module.split(".")[0] == "engine":
                    found.add(child.module)
                    found.update(f"{child.module}.{a.name}" for a in child.names)
            elif isinstance(child, ast.Import):
                found.update(a.name for a in child.names if a.name.split(".")[0] == "engine")
            visit(child, inner)

    visit(tree, False)
    return found


MODULES = _modules()


def _package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _package(m) in ALLOWED))
def test_a_module_imports_only_the_layers_below_it(module):
    own = _package(module)
    wrong = {m for m in _imports(MODULES[module], top_level_only=False)
             if m in MODULES and _package(m) not in (None, own) and _package(m) not in ALLOWED[own]}
    assert not wrong, f"{module} imports {sorted(wrong)}; {own} may import only {sorted(ALLOWED[own])}"


def test_every_engine_package_has_a_layer():
    assert {_package(m) for m in MODULES} - {None, "__main__"} <= set(ALLOWED)


def test_no_import_circles():
    graph = {m: {i for i in _imports(p, top_level_only=True) if i in MODULES and i != m} for m, p in MODULES.items()}
    # A module's package __init__ runs first when the module is imported: that edge is not an import of the module.
    done: set[str] = set()
    stack: list[str] = []

    def walk(m: str) -> None:
        if m in stack:
            cycle = stack[stack.index(m):] + [m]
            raise AssertionError("import circle: " + " -> ".join(cycle))
        if m in done:
            return
        stack.append(m)
        for n in sorted(graph[m]):
            if not m.startswith(n + "."):  # a submodule importing its own package's __init__ is fine
                walk(n)
        stack.pop()
        done.add(m)

    for m in sorted(graph):
        walk(m)

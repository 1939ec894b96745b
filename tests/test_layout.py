"""The folders are the architecture (ARCHITECTURE.md): each package imports only from the layers below it, and no
modules of ``engine/`` or ``app_pages/`` import each other in a circle, not even through an import inside a function
(only imports under ``if TYPE_CHECKING:`` are aside: they never run)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ENGINE = REPO / "engine"
#: The top-level packages whose modules the circle check covers.
CHECKED = ("engine", "app_pages")

#: package -> the engine packages its modules may import (itself always allowed).
ALLOWED = {
    "errors": set(),
    "units": set(),
    "io": set(),
    "_native": set(),
    "sim": {"errors", "units", "io"},
    "schedulers": {"errors", "units", "io", "sim"},
    "plugins": {"errors", "units", "io"},
    "traces": {"errors", "units", "io", "sim"},
    "analysis": {"errors", "units", "io", "sim", "schedulers", "traces", "plugins"},
    "viz": {"errors", "units", "io", "sim", "plugins", "analysis"},
    "rl": {"errors", "units", "io", "sim", "schedulers", "plugins", "traces", "analysis", "viz"},
    "runner": {"errors", "units", "io", "sim", "schedulers", "plugins", "traces", "analysis"},
    "api": {"errors", "units", "io", "sim", "schedulers", "plugins", "traces", "analysis", "rl", "runner"},
    "cli": {
        "errors",
        "units",
        "io",
        "sim",
        "schedulers",
        "plugins",
        "traces",
        "analysis",
        "viz",
        "rl",
        "runner",
        "api",
    },
}


def _modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package in ``root`` (a package is its ``__init__``)."""
    out = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path, repo: Path = REPO) -> set[str]:
    """The modules of :data:`CHECKED` packages that ``path`` (a file under ``repo``) imports anywhere: at the top,
    inside functions, classes and blocks; not under ``if TYPE_CHECKING:`` (its ``else:`` runs, so it counts).
    ``from a import b`` names both ``a`` and ``a.b`` (``b`` may be a submodule); relative imports are resolved
    against ``path``'s package."""
    tree = ast.parse(path.read_text())
    aside = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and _is_type_checking(node.test)
        for stmt in node.body
        for n in ast.walk(stmt)
    }
    package = path.parent.relative_to(repo).parts
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in aside:
            continue
        if isinstance(node, ast.ImportFrom):
            base = (
                ".".join([*package[: len(package) - node.level + 1], *([node.module] if node.module else [])])
                if node.level
                else node.module or ""
            )
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m.split(".")[0] in CHECKED}


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    """The first import circle of ``graph`` (module -> the modules it imports), as a path back to its start; ``None``
    if there is none. A module importing its own package (whose ``__init__`` runs first anyway) is no edge."""
    done: set[str] = set()
    stack: list[str] = []

    def walk(m: str) -> list[str] | None:
        if m in stack:
            return stack[stack.index(m) :] + [m]
        if m in done:
            return None
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if not m.startswith(n + "."):
                found = walk(n)
                if found:
                    return found
        stack.pop()
        done.add(m)
        return None

    for m in sorted(graph):
        found = walk(m)
        if found:
            return found
    return None


MODULES = _modules(ENGINE)
CHECKED_MODULES = {m: p for root in CHECKED for m, p in _modules(REPO / root).items()}


def _package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _package(m) in ALLOWED))
def test_a_module_imports_only_the_layers_below_it(module):
    own = _package(module)
    wrong = {
        m
        for m in _imports(MODULES[module])
        if m in MODULES and _package(m) not in (None, own) and _package(m) not in ALLOWED[own]
    }
    assert not wrong, f"{module} imports {sorted(wrong)}; {own} may import only {sorted(ALLOWED[own])}"


def test_every_engine_package_has_a_layer():
    assert {_package(m) for m in MODULES} - {None, "__main__"} <= set(ALLOWED)


def test_no_import_circles():
    graph = {m: {i for i in _imports(p) if i in CHECKED_MODULES and i != m} for m, p in CHECKED_MODULES.items()}
    circle = _circle(graph)
    assert circle is None, "import circle: " + " -> ".join(circle or ())


def test_the_circle_check_sees_imports_inside_functions_and_skips_type_checking(tmp_path):
    pkg = tmp_path / "engine"
    pkg.mkdir()
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from engine.c import C\nelse:\n    import engine.d\n"
        "def f():\n    from engine.b import g\n    from . import e\n"
    )
    assert _imports(pkg / "a.py", tmp_path) == {"engine.b", "engine.b.g", "engine.d", "engine", "engine.e"}
    assert _circle({"engine.a": {"engine.b"}, "engine.b": {"engine.c"}, "engine.c": {"engine.a"}}) == [
        "engine.a",
        "engine.b",
        "engine.c",
        "engine.a",
    ]
    assert _circle({"engine.rl.x": {"engine.rl"}, "engine.rl": {"engine.rl.x"}}) is None

"""The event loop stays readable: ``Simulation.advance`` fits on a screen and the class holds only the loop (checking
decisions lives in engine/sim/checks.py, recording results in engine/sim/record.py)."""

from __future__ import annotations

import ast
from pathlib import Path

SIMULATOR = Path(__file__).resolve().parents[2] / "engine" / "sim" / "simulator.py"


def lines_of_code(node: ast.AST, source: list[str]) -> int:
    """Lines of ``node`` that hold code: blank lines, comments and docstrings (its own and those of everything
    defined in it) do not count."""
    docstrings: set[int] = set()
    for inner in ast.walk(node):
        body = getattr(inner, "body", None)
        if isinstance(inner, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                docstrings.update(range(first.lineno, first.end_lineno + 1))
    return sum(
        1
        for i in range(node.lineno, node.end_lineno + 1)
        if i not in docstrings and source[i - 1].strip() and not source[i - 1].strip().startswith("#")
    )


def _simulation() -> tuple[ast.ClassDef, list[str]]:
    text = SIMULATOR.read_text()
    tree = ast.parse(text)
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Simulation"]
    return cls, text.splitlines()


def test_lines_of_code_skips_blanks_comments_and_docstrings():
    text = 'def f():\n    """Doc\n    string."""\n\n    # why\n    x = 1\n    return x\n'
    assert lines_of_code(ast.parse(text).body[0], text.splitlines()) == 3


def test_advance_is_at_most_25_lines_of_code():
    cls, source = _simulation()
    (advance,) = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "advance"]
    assert lines_of_code(advance, source) <= 25


def test_the_simulation_class_is_at_most_400_lines_of_code():
    cls, source = _simulation()
    assert lines_of_code(cls, source) <= 400

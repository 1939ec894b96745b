"""Every function in engine/viz/ reads in one screen: at most MAX_LINES lines of code."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.code_size import logical_lines

VIZ = Path(__file__).resolve().parents[2] / "engine" / "viz"
#: Lines of code a function's body may hold (logical lines, the docstring aside: tests/code_size.py).
MAX_LINES = 40


def _functions() -> list[tuple[str, int]]:
    out = []
    for path in sorted(VIZ.glob("*.py")):
        source = path.read_text()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((f"{path.name}:{node.name}", logical_lines(source, node, body_only=True)))
    return out


@pytest.mark.parametrize(("name", "lines"), _functions(), ids=[n for n, _ in _functions()])
def test_no_function_in_viz_is_longer_than_a_screen(name, lines):
    assert lines <= MAX_LINES, f"{name} has {lines} lines of code; at most {MAX_LINES}: split it into named helpers"


def test_body_lines_skip_the_docstring_blank_lines_comments_and_wrapping():
    source = 'def f(x):\n    """Doc.\n\n    more."""\n    # why\n\n    y = (x +\n         1)  # note\n    return y\n'
    assert logical_lines(source, ast.parse(source).body[0], body_only=True) == 2

"""Every function in engine/viz/ reads in one screen: at most MAX_LINES lines of code."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import pytest

VIZ = Path(__file__).resolve().parents[2] / "engine" / "viz"
#: Lines of code a function's body may hold (non-blank, non-comment lines, the docstring aside).
MAX_LINES = 40


def code_lines(source: str, func: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of ``func``'s body (in ``source``) that hold code: blank lines, comment-only lines and the docstring
    do not count; a nested function counts towards the function that holds it."""
    body = func.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    if not body:
        return 0
    first, last = body[0].lineno, body[-1].end_lineno
    lines = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (
            tokenize.COMMENT,
            tokenize.NL,
            tokenize.NEWLINE,
            tokenize.INDENT,
            tokenize.DEDENT,
            tokenize.ENDMARKER,
        ):
            continue
        lines.update(n for n in range(tok.start[0], tok.end[0] + 1) if first <= n <= last)
    return len(lines)


def _functions() -> list[tuple[str, int]]:
    out = []
    for path in sorted(VIZ.glob("*.py")):
        source = path.read_text()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((f"{path.name}:{node.name}", code_lines(source, node)))
    return out


@pytest.mark.parametrize(("name", "lines"), _functions(), ids=[n for n, _ in _functions()])
def test_no_function_in_viz_is_longer_than_a_screen(name, lines):
    assert lines <= MAX_LINES, f"{name} has {lines} lines of code; at most {MAX_LINES}: split it into named helpers"


def test_code_lines_skips_the_docstring_blank_lines_and_comments():
    source = 'def f(x):\n    """Doc.\n\n    more."""\n    # why\n\n    y = (x +\n         1)  # note\n    return y\n'
    assert code_lines(source, ast.parse(source).body[0]) == 3

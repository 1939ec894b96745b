"""How long code is, independent of how the formatter wraps it: logical lines (one per statement, a ``def`` or
``class`` header, or a decorator; a call wrapped over several lines is one), docstrings left out."""

from __future__ import annotations

import ast
import io
import tokenize


def _docstring_lines(node: ast.AST) -> set[int]:
    """The physical lines of the docstrings of ``node`` and of everything defined in it."""
    lines: set[int] = set()
    for inner in ast.walk(node):
        body = getattr(inner, "body", None)
        if isinstance(inner, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def logical_lines(source: str, node: ast.AST, *, body_only: bool = False) -> int:
    """Logical lines of code of ``node`` (parsed from ``source``): statements ending in its line range, docstrings
    aside; with ``body_only`` the ``def``/``class`` header and its decorators are left out too."""
    first = node.body[0].lineno if body_only else min([node.lineno, *(d.lineno for d in node.decorator_list)])
    skip = _docstring_lines(node)
    return sum(
        1
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.NEWLINE and first <= tok.start[0] <= node.end_lineno and tok.start[0] not in skip
    )

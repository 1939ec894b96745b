"""The event loop stays readable: ``Simulation.advance`` fits on a screen and the class holds only the loop (checking
decisions lives in engine/sim/checks.py, recording results in engine/sim/record.py)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.code_size import logical_lines

SIMULATOR = Path(__file__).resolve().parents[2] / "engine" / "sim" / "simulator.py"


def _simulation() -> tuple[ast.ClassDef, str]:
    text = SIMULATOR.read_text()
    tree = ast.parse(text)
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Simulation"]
    return cls, text


def test_logical_lines_skip_blanks_comments_docstrings_and_wrapping():
    text = (
        'def f():\n    """Doc\n    string."""\n\n    # why\n    x = g(\n        1,\n        2,\n    )\n    return x\n'
    )
    assert logical_lines(text, ast.parse(text).body[0]) == 3
    assert logical_lines(text, ast.parse(text).body[0], body_only=True) == 2


def test_advance_is_at_most_25_lines_of_code():
    cls, source = _simulation()
    (advance,) = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "advance"]
    assert logical_lines(source, advance) <= 25


def test_the_simulation_class_is_at_most_400_lines_of_code():
    cls, source = _simulation()
    assert logical_lines(source, cls) <= 400

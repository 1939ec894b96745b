"""Durations typed by people read back into seconds; counts with their noun in the right number."""

from __future__ import annotations

import pytest

from engine.units import parse_duration, plural


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("90 s", 90),
        ("30 min", 1800),
        ("2 h", 7200),
        ("1 d", 86_400),
        ("1800", 1800),
        ("1.5h", 5400),
        (" 2 H ", 7200),
        ("45 minutes", 2700),
        ("0", 0),
    ],
)
def test_a_duration_reads_in_its_unit(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["abc", "-5", "", "3 weeks", "30 min 2", "1e400", "x" * 5000])
def test_anything_else_is_one_line_quoting_the_text(text):
    with pytest.raises(ValueError) as info:
        parse_duration(text)
    message = str(info.value)
    assert "\n" not in message and len(message) < 130 and repr(text[:10])[:-1] in message


def test_plural():
    assert [plural(1, "GPU"), plural(2, "GPU"), plural(0, "job"), plural(1200, "job")] == [
        "1 GPU",
        "2 GPUs",
        "0 jobs",
        "1,200 jobs",
    ]
    assert plural(3, "box", "boxes") == "3 boxes"

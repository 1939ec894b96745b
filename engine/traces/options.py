"""The options a trace is loaded with, in one place: the time units of formats whose unit is not fixed, and the
:func:`engine.traces.load_trace` keyword arguments a stored workload (format, time unit, column map, first N,
skip bad rows) stands for, "empty" meaning "the loader's default"."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

#: Time units of the formats whose unit is an option (tiresias, mapped): name -> seconds per unit.
TIME_UNITS = {"s": 1.0, "ms": 1e-3}
#: The unit a trace's times are read in when none is given.
DEFAULT_TIME_UNIT = "s"


def seconds_per(time_unit: str | None) -> float:
    """Seconds per unit of ``time_unit`` (``None`` or ``""``: :data:`DEFAULT_TIME_UNIT`); ``KeyError`` when
    unknown (:func:`engine.traces.load_trace` refuses unknown units before reading)."""
    return TIME_UNITS[time_unit or DEFAULT_TIME_UNIT]


def load_options(
    *,
    format: str = "",
    skip_bad: bool = False,
    time_unit: str = "",
    column_map: Iterable[tuple[str, str]] = (),
    first: int = 0,
) -> dict[str, Any]:
    """The :func:`engine.traces.load_trace` keyword arguments these settings stand for, in this order, with the
    empty ones (``""``, ``False``, no columns, ``first=0``: the loader's defaults) left out: a trace workload
    stored with them loads the same from the app, a scenario file and a sweep spec."""
    options = {
        "format": format or None,
        "skip_bad": skip_bad,
        "time_unit": time_unit or None,
        "column_map": dict(column_map) or None,
        "first": first or None,
    }
    return {k: v for k, v in options.items() if v}

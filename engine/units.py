"""Values for people: durations in the unit their size calls for, metric values in their unit, durations typed
by people (``30 min``) read back into seconds (imports nothing)."""

from __future__ import annotations

import math
import re

#: Units a duration is shown in, largest first: (suffix, seconds); a value takes the largest unit it spans twice.
TIME_UNITS = (("d", 86_400.0), ("h", 3_600.0), ("min", 60.0))
YEAR_S = 365.25 * 86_400.0
#: Units :func:`parse_duration` reads: suffix -> seconds.
DURATION_UNITS = {
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1.0),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60.0),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 3_600.0),
    **dict.fromkeys(("d", "day", "days"), 86_400.0),
}
_DURATION = re.compile(r"\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z]*)\s*", re.IGNORECASE)


def human_seconds(s: float) -> str:
    """A duration for people, its unit chosen by its size: ``42 s``, ``3.5 min``, ``2.1 h``, ``178 d`` (years
    past two); NaN -> ``–``."""
    if s != s:
        return "–"
    if abs(s) >= 2 * YEAR_S:  # only a wrong time unit or a very long trace gets here
        return f"{s / YEAR_S:,.3g} years" if abs(s) < 1000 * YEAR_S else f"{s / YEAR_S:,.0f} years"
    for unit, div in TIME_UNITS:
        if abs(s) >= 2 * div:
            return f"{s / div:.3g} {unit}"
    return f"{s:.3g} s"


def human_value(value: float, unit: str) -> str:
    """A metric value in its unit: durations by :func:`human_seconds`, counts as integers, dollars to the cent
    (``$12.50``, ``$3.93/h``), kWh and kg of CO2 and others to 3 digits."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if unit == "s":
        return human_seconds(value)
    if unit in ("jobs", "count"):
        return f"{int(value):,}"
    if unit == "GPU-h":
        return f"{value:,.0f} GPU-h" if abs(value) >= 1000 else f"{value:.3g} GPU-h"
    if unit in ("USD", "USD/h"):
        return f"${value:,.2f}" + ("/h" if unit == "USD/h" else "")
    if unit in ("kWh", "kg"):
        text = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
        return f"{text} {unit}" + (" CO2" if unit == "kg" else "")
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def parse_duration(text: str) -> float:
    """Seconds in a duration typed by a person: ``90 s``, ``30 min``, ``2 h``, ``1 d`` or plain seconds (``1800``).

    Raises:
        ValueError: anything else (negative, not finite, an unknown unit), in one line quoting the start of the
            text and showing the accepted forms.
    """
    text = str(text)
    shown = repr(text if len(text) <= 40 else text[:37] + "...")
    match = _DURATION.fullmatch(text)
    unit = match.group(2).lower() if match else ""
    if match is None or (unit and unit not in DURATION_UNITS):
        raise ValueError(f"duration {shown}: expected seconds or a number and a unit, e.g. 90 s, 30 min, 2 h, 1 d")
    seconds = float(match.group(1)) * DURATION_UNITS[unit or "s"]
    if not math.isfinite(seconds):
        raise ValueError(f"duration {shown}: too large")
    return seconds


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word`` in the number it takes: ``1 GPU``, ``2 GPUs``, ``1,200 jobs`` (``many``: an irregular
    plural)."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"

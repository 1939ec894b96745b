"""What every chart shares: the colour palette, colours per category, readable time units and :func:`plain`, the
one way text from data (user names, job types, scheduler and run names, cluster and GPU type names) enters a
figure."""

from __future__ import annotations

import math
from typing import Sequence

import pandas as pd

from engine.units import TIME_UNITS

#: Colour-blind-safe qualitative palette (Okabe-Ito, then Plotly's "Safe"); the last entry is for "other".
PALETTE = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#332288",
    "#117733",
    "#882255",
    "#44AA99",
    "#999933",
)
OTHER_COLOUR = "#BBBBBB"
#: Plotly reads a subset of HTML (``<a href>``, ``<b>``, ``<br>``, entities) in every text it draws (legends,
#: hover labels, titles, tick labels, annotations) and ``%{...}`` in hover templates; these characters keep a name
#: literal (Plotly turns the entities back into the characters when it draws).
_PLOTLY_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "%": "&#37;"})
#: At most this many categories get their own colour; the rest are drawn as "other".
MAX_CATEGORIES = len(PALETTE)

#: An axis is labelled in the largest unit of :data:`engine.units.TIME_UNITS` it spans this many times (a single
#: value, :func:`engine.units.human_seconds`, takes the largest it spans twice), so the axis reads 0 to 3 or more.
AXIS_SPANS = 3


def plain(text: object) -> str:
    """``text`` as a figure must hold it to show it literally: no markup, link or hover-template field of a name
    from data ever renders (``<a href=x>`` shows as typed)."""
    return str(text).translate(_PLOTLY_ESCAPES)


def plain_all(values) -> list[str]:
    """:func:`plain` of every value (category labels, hover text)."""
    return [plain(v) for v in values]


def time_scale(span_s: float) -> tuple[str, float]:
    """The unit that keeps an axis spanning ``span_s`` seconds readable: ``(label, seconds per unit)``."""
    span_s = abs(float(span_s)) if math.isfinite(span_s) else 0.0
    for name, secs in TIME_UNITS:  # largest first
        if span_s >= AXIS_SPANS * secs:
            return name, secs
    return "s", 1.0


def category_colours(values: Sequence[str], limit: int = MAX_CATEGORIES) -> dict[str, str]:
    """Colour per category: the ``limit - 1`` most frequent get palette colours (ties by name), the rest
    map to grey under the name ``"other"``. Deterministic for equal inputs."""
    counts = pd.Series(list(values), dtype=object).value_counts()
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))
    names = [str(k) for k, _ in ordered]
    if len(names) <= limit:
        return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(sorted(names))}
    top = sorted(names[: limit - 1])
    out = {name: PALETTE[i] for i, name in enumerate(top)}
    out.update({name: OTHER_COLOUR for name in names[limit - 1 :]})
    return out

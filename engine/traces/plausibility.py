"""The one plausibility check every trace import runs: do the times read as the unit the loader assumed?

A trace whose times are milliseconds but are read as seconds loads without any error, only 1,000 times too
long (a span of centuries, millions of GPU-hours). No job's numbers are wrong on their own, so the check looks
at the whole: the median job's run time and the span of the arrivals. Both thresholds are estimates chosen for
this check, far above what real traces hold: the real traces in ``../shared/traces`` have median jobs of 19 min
(Philly), 9 min (Alibaba openb) and 14 min (KTH SP2) and span 109, 149 and 333 days (measured with
``load_trace``); a median job of more than a week, or arrivals spread over more than five years, means the
unit is almost surely wrong.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from engine.units import human_seconds

#: A median job this long (seconds) or a workload spanning this long suggests the numbers are not seconds.
SUSPECT_MEDIAN_S = 7 * 86_400.0
SUSPECT_SPAN_S = 5 * 365 * 86_400.0
UNIT_NAMES = {"s": "seconds", "ms": "milliseconds"}


def unit_warning(
    submit_s: Sequence[float] | np.ndarray,
    duration_s: Sequence[float] | np.ndarray,
    *,
    time_unit: str = "s",
    switchable: bool = True,
    jobs_label: str = "the jobs",
) -> str:
    """One sentence when the times, read in ``time_unit``, look implausible; ``""`` when they look fine.

    Args:
        submit_s: the jobs' submit times in seconds, as read (any order).
        duration_s: their run times in seconds, as read (non-positive and non-finite values are ignored).
        time_unit: the unit the numbers were read in (``"s"`` or ``"ms"``).
        switchable: whether the format can be read in another unit; the sentence then says to choose ms.
        jobs_label: how the sentence names the jobs looked at (``"the first 100 rows"``).
    """
    lengths = np.asarray(duration_s, dtype=np.float64)
    lengths = np.sort(lengths[np.isfinite(lengths) & (lengths > 0)])
    median = float(lengths[len(lengths) // 2]) if len(lengths) else math.nan
    submits = np.asarray(submit_s, dtype=np.float64)
    submits = submits[np.isfinite(submits)]
    span = float(submits.max() - submits.min()) if len(submits) > 1 else 0.0
    if not (median > SUSPECT_MEDIAN_S or span > SUSPECT_SPAN_S):
        return ""
    facts = []
    if median == median:
        facts.append(f"the median job would run {human_seconds(median)}")
    if span:
        facts.append(f"{jobs_label} would span {human_seconds(span)}")
    sentence = f"If these times are {UNIT_NAMES.get(time_unit, time_unit)}, {' and '.join(facts)}."
    if time_unit != "s":
        return sentence
    if switchable:
        return sentence + " They look like milliseconds: choose the time unit ms."
    return sentence + " The format is read in seconds: check the file's time unit."

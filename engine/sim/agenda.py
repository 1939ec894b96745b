"""Agenda: integer entries due at float times, taken in time order; the entries due at one time in the order they
were put in.

The simulator's event calendar (completions and wake-ups) and tiresias's own timers (demotions, promotions) are
agendas. It is a heap of the *distinct* times, plain floats, cheaper to compare than tuples, and per time its first
entry, plus a list of the rest for the few times that have several (most times are distinct). An entry's meaning
is its owner's: owners encode what they need in an int (for instance ``version * n_jobs + job``) and skip entries
that have gone stale.
"""

from __future__ import annotations

import heapq
import math
from typing import Final

_heappush: Final = heapq.heappush  # compiled, a C variable: no lookup in the heapq module per call
_heappop: Final = heapq.heappop


class Agenda:
    """Entries due at times. The owner reads :attr:`times` (a heap: ``times[0]`` is the earliest), and takes what
    is due with :meth:`pop` or, in a hot loop, straight from :attr:`times`, :attr:`first` and :attr:`more` as
    :meth:`pop` does."""

    def __init__(self) -> None:
        self.times: list[float] = []  # heap of the distinct times that have entries
        self.first: dict[float, int] = {}  # time -> the first entry put in for it
        self.more: dict[float, list[int]] = {}  # time -> the entries put in after the first, in order

    def push(self, t: float, entry: int) -> None:
        """Put ``entry`` in, due at ``t``."""
        first = self.first
        n = len(first)
        first.setdefault(t, entry)  # (one lookup, not "in" and then a store)
        if len(first) != n:  # a time not in the agenda yet
            _heappush(self.times, t)
            return
        more = self.more.get(t)
        if more is None:
            self.more[t] = [entry]
        else:
            more.append(entry)

    def earliest(self) -> float:
        """The earliest time with entries (``inf`` when there is none)."""
        return self.times[0] if self.times else math.inf

    def pop(self) -> list[int]:
        """Take out the entries of the earliest time, in the order they were put in (the agenda must not be
        empty)."""
        t = _heappop(self.times)
        out = [self.first.pop(t)]
        if self.more:
            more = self.more.pop(t, None)
            if more is not None:
                out.extend(more)
        return out

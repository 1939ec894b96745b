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

_heappush: Final = heapq.heappush  # bound once (ARCHITECTURE.md, "Final module names")
_heappop: Final = heapq.heappop


class Agenda:
    """Entries due at times: :meth:`push` them, read :meth:`earliest`, :meth:`peek` at or :meth:`pop` what is due
    then."""

    def __init__(self) -> None:
        self._times: list[float] = []  # heap of the distinct times that have entries
        self._first: dict[float, int] = {}  # time -> the first entry put in for it
        self._more: dict[float, list[int]] = {}  # time -> the entries put in after the first, in order

    def push(self, t: float, entry: int) -> None:
        """Put ``entry`` in, due at ``t``."""
        first = self._first
        n = len(first)
        first.setdefault(t, entry)  # (one lookup, not "in" and then a store)
        if len(first) != n:  # a time not in the agenda yet
            _heappush(self._times, t)
            return
        more = self._more.get(t)
        if more is None:
            self._more[t] = [entry]
        else:
            more.append(entry)

    def earliest(self) -> float:
        """The earliest time with entries (``inf`` when there is none)."""
        return self._times[0] if self._times else math.inf

    def peek(self) -> list[int]:
        """The entries of the earliest time, in the order they were put in, left in place (the agenda must not be
        empty)."""
        t = self._times[0]
        more = self._more.get(t)
        return [self._first[t]] if more is None else [self._first[t], *more]

    def pop(self) -> list[int]:
        """Take out the entries of the earliest time, in the order they were put in (the agenda must not be
        empty). Entries pushed for that same time afterwards are due at it afresh: :meth:`earliest` tells."""
        t = _heappop(self._times)
        out = [self._first.pop(t)]
        if self._more:
            more = self._more.pop(t, None)
            if more is not None:
                out.extend(more)
        return out

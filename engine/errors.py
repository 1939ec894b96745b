"""Errors the engine raises on bad input or impossible schedules.

Every error here is meant to be shown to a person as one line: the CLI prints ``str(err)`` and exits 2,
the app shows it inline. None of them should ever surface as a traceback.
"""

from __future__ import annotations

from typing import Any


def clip(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters: a message quotes only the start of what a user gave (a
    5,000-digit number or a 100,000-character spec must not become a 5,000-character error line)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def quote(value: Any, limit: int = 60) -> str:
    """``repr(value)``, clipped as :func:`clip` does."""
    return clip(repr(value), limit)


class EngineError(Exception):
    """Base class: a problem with the user's input or with a scheduler's decisions."""


def check_int(value: Any, where: str, low: int, high: int, error: type[Exception] = EngineError) -> int:
    """``value`` if it is an integer (not a boolean) from ``low`` to ``high``; else ``error`` naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise error(f"{where} must be an integer from {low:,} to {high:,}, got {quote(value)}")
    return value


class ClusterSpecError(EngineError, ValueError):
    """A cluster specification (shorthand or JSON) is invalid; the message names the bad part."""


class TraceError(EngineError, ValueError):
    """A trace file is malformed.

    ``line`` is the 1-based line number in the file (``None`` when the problem is not tied to one line),
    ``column`` the column name; the message says what was expected.
    """

    def __init__(
        self, message: str, *, path: str | None = None, line: int | None = None, column: str | None = None
    ) -> None:
        where = []
        if path:
            where.append(str(path))
        if line is not None:
            where.append(f"line {line}")
        if column:
            where.append(f"column {column!r}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)
        self.path, self.line, self.column, self.reason = path, line, column, message


class InvalidDecision(EngineError):
    """A scheduler returned a decision that breaks a constraint; the message names job and constraint."""


class StallError(EngineError):
    """Jobs are waiting, nothing runs, nothing can start and no event is pending: the run cannot progress."""


class RunCancelled(EngineError):
    """The user stopped this work while it ran (its ``cancel`` event was set): a worker call's process was killed,
    or a sweep's or plan's pending cells were cancelled."""


class UnknownNameError(EngineError, KeyError):
    """A registry lookup failed; the message lists the valid names."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def reject_unknown_keys(
    data: object, valid: set[str] | frozenset[str], where: str, error: type[Exception] = EngineError
) -> None:
    """Raise ``error`` naming ``where``, the keys of ``data`` that are not in ``valid``, and the valid keys; the
    one check behind every ``from_dict`` of a config, card, preset or cluster file. The unknown keys come from a
    user: they are quoted clipped (:func:`quote`)."""
    unknown = set(data) - set(valid)  # type: ignore[call-overload]
    if unknown:
        raise error(f"{where}: unknown keys {quote(sorted(map(str, unknown)))}; valid keys: {sorted(valid)}")

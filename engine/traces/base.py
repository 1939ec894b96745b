"""Plumbing shared by every trace reader: opening files, per-row errors, the columnar row store.

A reader walks its file one row at a time (memory stays proportional to the jobs kept, never to the file),
converts fields with the helpers here, and either adds a job to :class:`Rows` or counts a drop by reason.
A field it cannot read raises :class:`BadField`; :class:`ReadContext` turns that into a
:class:`~engine.errors.TraceError` naming the line, the column and what was expected, or, with
``skip_bad``, counts the row as ``malformed`` and moves on.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import os
import stat
import zlib
from array import array
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable, Iterable, Iterator

import numpy as np
import pandas as pd

from engine.errors import TraceError
from engine.sim.job import MAX_GPUS, MAX_TIME_S, MAX_VRAM_GIB
from engine.sim.scaling import SCALING_CURVES

#: Drop reasons a reader may count, with what each means (the keys of ``TraceReport.dropped``).
DROP_REASONS: dict[str, str] = {
    "non_positive_duration": "run time is zero or negative (or -1 = unknown)",
    "no_gpu": "asks for no GPU (or a non-positive processor/GPU count)",
    "unknown_gpu_type": "asks only for GPU types the format's tables do not know",
    "unknown_model": "names a model the format's throughput table does not know (Gavel)",
    "unknown_application": "names an application without a run-time profile (Pollux workloads)",
    "missing_time": "submit time (or another time the duration needs) is missing",
    "malformed": "a field could not be read (only counted with skip_bad; otherwise an error)",
}

#: Longest line a reader accepts; a longer one is an error, so a file without newlines cannot fill memory.
MAX_LINE_CHARS = 1 << 20

#: How many example messages of skipped malformed rows a report keeps.
MAX_EXAMPLES = 5

GZIP_MAGIC = b"\x1f\x8b"


class BadField(Exception):
    """A field of the current row could not be read: ``column`` and what was ``expected``."""

    def __init__(self, column: str, expected: str, value: object = None) -> None:
        super().__init__(column, expected, value)
        self.column, self.expected, self.value = column, expected, value


def open_text(path: Path) -> IO[str]:
    """Open ``path`` as UTF-8 text (a leading byte-order mark is skipped), transparently un-gzipping it when it
    starts with the gzip magic. Anything but a regular file or a folder (a FIFO would block forever, a device
    never end) is refused before it is opened."""
    try:
        mode = os.stat(path).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise TraceError("not a regular file (a FIFO, a device or a socket); refused", path=str(path))
        with open(path, "rb") as raw:
            magic = raw.read(2)
        if magic == GZIP_MAGIC:
            return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", newline="")
        return open(path, encoding="utf-8-sig", newline="")
    except FileNotFoundError:
        raise TraceError("file not found", path=str(path)) from None
    except IsADirectoryError:
        raise TraceError("is a directory, expected a trace file", path=str(path)) from None
    except OSError as exc:
        raise TraceError(f"cannot open ({exc.strerror or exc})", path=str(path)) from None


def iter_raw_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` of a text file (1-based, newline kept), with bounded line length."""
    line_no = 0
    with open_text(path) as f:
        try:
            while True:
                text = f.readline(MAX_LINE_CHARS + 1)
                if not text:
                    return
                line_no += 1
                if len(text) > MAX_LINE_CHARS and not text.endswith("\n"):
                    raise TraceError(
                        f"line longer than {MAX_LINE_CHARS} characters; is this a trace file?",
                        path=str(path),
                        line=line_no,
                    )
                if "\x00" in text:
                    raise TraceError("contains NUL bytes; expected a text file", path=str(path), line=line_no)
                yield line_no, text
        except UnicodeDecodeError:
            raise TraceError("not UTF-8 text; expected a text trace file", path=str(path), line=line_no + 1) from None
        except (EOFError, OSError, zlib.error) as exc:  # zlib.error: a gzip file whose body is corrupt
            raise TraceError(f"cannot read ({exc})", path=str(path), line=line_no + 1) from None


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Like :func:`iter_raw_lines`, without the line endings."""
    for line_no, text in iter_raw_lines(path):
        yield line_no, text.rstrip("\r\n")


def iter_csv(path: Path, delimiter: str = ",") -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line_number, fields)`` for each non-blank CSV record (line number of the record's start)."""
    reader = csv.reader((text for _, text in iter_raw_lines(path)), delimiter=delimiter, strict=True)
    start = 1
    try:
        for fields in reader:
            line_no, start = start, reader.line_num + 1
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue
            yield line_no, fields
    except csv.Error as exc:
        raise TraceError(f"not valid CSV ({exc})", path=str(path), line=start) from None


# ----------------------------------------------------------------------------------------- field readers
def to_float(text: str, column: str) -> float:
    """A finite number; ``BadField`` otherwise."""
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise BadField(column, "a number", text) from None
    if not math.isfinite(v):
        raise BadField(column, "a finite number", text)
    return v


def to_time(text: str, column: str, scale: float = 1.0) -> float:
    """A time or duration in seconds (``text`` in units of ``scale`` seconds), within ``MAX_TIME_S``."""
    v = to_float(text, column) * scale
    if abs(v) > MAX_TIME_S:
        raise BadField(column, f"a time within +-{MAX_TIME_S:.0e} seconds", text)
    return v


#: Integers must be smaller than this in magnitude: every such integer is exact as a float (the fast path reads
#: numbers as floats) and fits the 64-bit columns jobs are stored in.
MAX_INT = 2**53


def to_int(text: str, column: str) -> int:
    """An integer (``"4"`` or ``"4.0"``) of magnitude below :data:`MAX_INT`; ``BadField`` otherwise."""
    try:
        v: float | int = int(text)
    except (TypeError, ValueError):
        try:
            v = to_float(text, column)
        except BadField:
            raise BadField(column, "an integer", text) from None
        if v != int(v):
            raise BadField(column, "an integer", text) from None
    if abs(v) >= MAX_INT:
        raise BadField(column, f"an integer of magnitude below 2**53 ({MAX_INT:,})", text)
    return int(v)


def describe(value: object, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ----------------------------------------------------------------------------------------------- rows
@dataclass
class Rows:
    """Kept rows, stored column by column (compact: about 60 bytes a row plus the strings)."""

    submit_s: array = field(default_factory=lambda: array("d"))
    duration_s: array = field(default_factory=lambda: array("d"))
    gpus: array = field(default_factory=lambda: array("q"))
    gpu_fraction: array = field(default_factory=lambda: array("d"))
    vram_gib: array = field(default_factory=lambda: array("d"))
    priority: array = field(default_factory=lambda: array("q"))
    estimate_s: array = field(default_factory=lambda: array("d"))
    user: array = field(default_factory=lambda: array("q"))  # index into user_names
    job_type: array = field(default_factory=lambda: array("q"))  # index into job_types
    allowed: array = field(default_factory=lambda: array("q"))  # index into allowed_sets
    failed: array = field(default_factory=lambda: array("q"))  # 1: the trace recorded the job as failed
    deadline_s: array = field(default_factory=lambda: array("d"))  # absolute, in the file's time; NaN: none
    elastic: dict = field(default_factory=dict)  # row -> (min_gpus, max_gpus, scaling), rows that give them only
    name: list = field(default_factory=list)
    user_names: list = field(default_factory=list)
    job_types: list = field(default_factory=list)
    allowed_sets: list = field(default_factory=list)
    _user_ix: dict = field(default_factory=dict)
    _type_ix: dict = field(default_factory=dict)
    _allowed_ix: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.submit_s)

    def add(
        self,
        submit_s: float,
        duration_s: float,
        gpus: int,
        gpu_fraction: float,
        vram_gib: float,
        user: str,
        job_type: str,
        priority: int,
        allowed_types: frozenset[str],
        estimate_s: float,
        name: str,
        failed: bool = False,
        deadline_s: float = math.nan,
        elastic: tuple[int, int, str] | None = None,
    ) -> None:
        """Store one job; the values must already satisfy :class:`~engine.sim.job.Job`'s rules (``elastic``:
        ``(min_gpus, max_gpus, scaling)`` when the row gives them)."""
        if elastic is not None:
            self.elastic[len(self.submit_s)] = elastic
        self.submit_s.append(submit_s)
        self.duration_s.append(duration_s)
        self.gpus.append(gpus)
        self.gpu_fraction.append(gpu_fraction)
        self.vram_gib.append(vram_gib)
        self.priority.append(priority)
        self.estimate_s.append(estimate_s)
        self.user.append(_intern(self._user_ix, self.user_names, user))
        self.job_type.append(_intern(self._type_ix, self.job_types, job_type))
        self.allowed.append(_intern(self._allowed_ix, self.allowed_sets, allowed_types))
        self.failed.append(1 if failed else 0)
        self.deadline_s.append(deadline_s)
        self.name.append(name)

    def extend(
        self,
        submit_s,
        duration_s,
        gpus,
        gpu_fraction,
        vram_gib,
        user,
        job_type,
        priority,
        allowed,
        estimate_s,
        name,
        failed,
        deadline_s,
    ) -> None:
        """Store many valid jobs at once: numeric arguments (``failed``: booleans; ``deadline_s``: NaN for none)
        are arrays, ``user``,
        ``job_type``, ``allowed`` (frozensets) and ``name`` are sequences of the same length."""
        for col, values, kind in (
            (self.submit_s, submit_s, "d"),
            (self.duration_s, duration_s, "d"),
            (self.gpus, gpus, "q"),
            (self.gpu_fraction, gpu_fraction, "d"),
            (self.vram_gib, vram_gib, "d"),
            (self.priority, priority, "q"),
            (self.estimate_s, estimate_s, "d"),
            (self.failed, failed, "q"),
            (self.deadline_s, deadline_s, "d"),
        ):
            col.frombytes(np.ascontiguousarray(values, dtype="f8" if kind == "d" else "i8").tobytes())
        for col, index, names, values in (
            (self.user, self._user_ix, self.user_names, user),
            (self.job_type, self._type_ix, self.job_types, job_type),
            (self.allowed, self._allowed_ix, self.allowed_sets, allowed),
        ):
            codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=False)
            remap = np.array([_intern(index, names, u) for u in uniques], dtype="i8")
            col.frombytes(remap[codes].astype("i8").tobytes())
        self.name.extend(name)


def _intern(index: dict, values: list, value: object) -> int:
    i = index.get(value)
    if i is None:
        i = index[value] = len(values)
        values.append(value)
    return i


@dataclass(frozen=True)
class Columns:
    """The file's names for the fields :meth:`ReadContext.keep` checks (used in error messages)."""

    gpus: str = "gpus"
    gpu_fraction: str = "gpu_fraction"
    vram_gib: str = "vram_gib"
    estimate_s: str = "estimate_s"
    duration_s: str = "duration_s"
    deadline_s: str = "deadline_s"
    min_gpus: str = "min_gpus"
    max_gpus: str = "max_gpus"
    scaling: str = "scaling"


CANONICAL = Columns()


@dataclass
class ReadContext:
    """What a reader needs besides the path: options, the row store and the drop counters."""

    path: Path
    skip_bad: bool = False
    time_unit: str | None = None
    column_map: dict[str, str] | None = None
    rows: Rows = field(default_factory=Rows)
    n_rows: int = 0
    dropped: Counter = field(default_factory=Counter)
    examples: list = field(default_factory=list)
    used_fast_path: bool = False

    def error(self, message: str, line: int | None = None, column: str | None = None) -> TraceError:
        return TraceError(message, path=str(self.path), line=line, column=column)

    def bad(self, line: int, exc: BadField) -> None:
        """A row had an unreadable field: raise, or count it as malformed when skipping bad rows."""
        message = f"expected {exc.expected}, got {describe(exc.value)}"
        if not self.skip_bad:
            raise self.error(message, line, exc.column)
        self.dropped["malformed"] += 1
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(f"line {line}, column {exc.column!r}: {message}")

    def drop(self, reason: str) -> None:
        self.dropped[reason] += 1

    def keep(
        self,
        submit_s: float,
        duration_s: float,
        *,
        gpus: int = 1,
        gpu_fraction: float = 1.0,
        vram_gib: float = 0.0,
        user: str = "user0",
        job_type: str = "batch",
        priority: int = 0,
        allowed_types: frozenset[str] | None = frozenset(),
        estimate_s: float = math.nan,
        name: str = "",
        failed: bool = False,
        deadline_s: float = math.nan,
        min_gpus: int | None = None,
        max_gpus: int | None = None,
        scaling: str = "",
        columns: Columns = CANONICAL,
    ) -> None:
        """Apply the drop rules every format shares, check the values, and store the job (``failed``: the trace
        recorded it as failed; ``deadline_s``: its absolute deadline in the file's time, NaN for none;
        ``min_gpus``, ``max_gpus``, ``scaling``: an elastic job's range and curve, ``None``/``""`` for a rigid one).

        Drops, in this order: ``allowed_types`` is ``None`` (only unknown GPU types named) ->
        ``unknown_gpu_type``; ``gpus <= 0`` -> ``no_gpu``; NaN submit or duration -> ``missing_time``;
        ``duration_s <= 0`` -> ``non_positive_duration``. Values a :class:`~engine.sim.job.Job` would reject
        raise ``BadField`` named by ``columns``.
        """
        if allowed_types is None:
            self.dropped["unknown_gpu_type"] += 1
        elif gpus <= 0:
            self.dropped["no_gpu"] += 1
        elif math.isnan(submit_s) or math.isnan(duration_s):
            self.dropped["missing_time"] += 1
        elif duration_s <= 0:
            self.dropped["non_positive_duration"] += 1
        else:
            if gpus > MAX_GPUS:
                raise BadField(columns.gpus, f"a GPU count up to {MAX_GPUS:,}", gpus)
            if not 0 < gpu_fraction <= 1:
                raise BadField(columns.gpu_fraction, "a GPU fraction in (0, 1]", gpu_fraction)
            if gpu_fraction < 1 and gpus != 1:
                raise BadField(
                    columns.gpu_fraction,
                    "a whole GPU when more than one GPU is requested (a fraction needs exactly 1 GPU)",
                    gpu_fraction,
                )
            if not 0 <= vram_gib <= MAX_VRAM_GIB:
                raise BadField(columns.vram_gib, f"GPU memory >= 0 and <= {MAX_VRAM_GIB:g} GiB", vram_gib)
            if not (math.isnan(estimate_s) or estimate_s > 0):
                raise BadField(columns.estimate_s, "an estimate > 0 seconds (or empty)", estimate_s)
            if duration_s > MAX_TIME_S or estimate_s > MAX_TIME_S:
                raise BadField(columns.duration_s, f"a duration up to {MAX_TIME_S:.0e} seconds", duration_s)
            if not (math.isnan(deadline_s) or 0 < deadline_s - submit_s <= MAX_TIME_S):
                raise BadField(columns.deadline_s, "a deadline after the submit time (or empty)", deadline_s)
            elastic = None
            if min_gpus is not None or max_gpus is not None or scaling:
                elastic = _elastic(gpus, gpu_fraction, min_gpus, max_gpus, scaling, columns)
            self.rows.add(
                submit_s,
                duration_s,
                gpus,
                gpu_fraction,
                vram_gib,
                user,
                job_type,
                priority,
                allowed_types,
                estimate_s,
                name,
                failed,
                deadline_s,
                elastic,
            )


def _elastic(
    gpus: int, fraction: float, min_gpus: int | None, max_gpus: int | None, scaling: str, columns: Columns
) -> tuple[int, int, str]:
    """``(min_gpus, max_gpus, scaling)`` of a row (``None``: ``gpus``), or ``BadField`` naming the column."""
    least = gpus if min_gpus is None else min_gpus
    most = gpus if max_gpus is None else max_gpus
    if not 1 <= least <= gpus:
        raise BadField(columns.min_gpus, f"a GPU count from 1 to the job's gpus ({gpus})", min_gpus)
    if not gpus <= most <= MAX_GPUS:
        raise BadField(columns.max_gpus, f"a GPU count from the job's gpus ({gpus}) to {MAX_GPUS:,}", max_gpus)
    if scaling and scaling not in SCALING_CURVES:
        raise BadField(columns.scaling, f"a scaling curve ({', '.join(SCALING_CURVES)})", scaling)
    if least < most and (not scaling or fraction < 1):
        raise BadField(
            columns.scaling, "a scaling curve for an elastic job (min_gpus < max_gpus) of whole GPUs", scaling
        )
    return least, most, scaling


# ------------------------------------------------------------------------------------- headers and rows
def read_header(
    ctx: ReadContext, valid: Iterable[str] | None, required: Iterable[str], delimiter: str = ","
) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """Read and check a CSV header: ``(column names, remaining rows)``.

    ``valid`` lists the accepted column names (``None``: any); ``required`` those that must be present.
    """
    rows = iter_csv(ctx.path, delimiter)
    first = next(rows, None)
    if first is None:
        raise ctx.error("empty file; expected a header line naming the columns")
    line, header = first
    header = [h.strip() for h in header]
    if valid is not None:
        valid = tuple(valid)
        unknown = [h for h in header if h not in valid]
        if unknown:
            raise ctx.error(f"unknown column {unknown[0]!r}; valid columns: {', '.join(valid)}", line, unknown[0])
    missing = [c for c in required if c not in header]
    if missing:
        raise ctx.error(f"missing required column {missing[0]!r}; the header has {', '.join(header)}", line)
    dup = next((h for h in header if header.count(h) > 1), None)
    if dup:
        raise ctx.error(f"column {dup!r} appears twice", line, dup)
    return header, rows


def check_width(fields: list[str], header: list[str], like: str = "as in the header") -> None:
    """``BadField`` when a row has fewer or more fields than the header (``like`` says where the count comes
    from, for files without a header line)."""
    expected = f"{len(header)} fields {like}, got {len(fields)}"
    if len(fields) < len(header):
        raise BadField(header[len(fields)], expected, ",".join(fields))
    raise BadField(f"field {len(header) + 1}", expected, fields[len(header)])


def read_rows(
    ctx: ReadContext,
    rows: Iterable[tuple[int, list[str]]],
    handle: Callable[[list[str], int], None],
    *,
    width: int | None = None,
    header: list[str] | None = None,
    like: str = "as in the header",
) -> None:
    """Count each row and hand it to ``handle(fields, line)``; unreadable fields go to ``ctx.bad``.

    With ``width``, a row with another number of fields is malformed (named by ``header``'s columns; ``like``
    says where the expected count comes from).
    """
    for line, fields in rows:
        ctx.n_rows += 1
        try:
            if width is not None and len(fields) != width:
                check_width(fields, header or [f"field {i + 1}" for i in range(width)], like)
            handle(fields, line)
        except BadField as exc:
            ctx.bad(line, exc)

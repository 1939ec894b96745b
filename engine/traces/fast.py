"""The vectorised fast path: clean files parsed by pandas in chunks, with the row path as the authority.

A format may offer ``fast(ctx)``: it reads its file with ``pandas.read_csv`` in chunks of
:data:`CHUNK_ROWS` rows (memory bounded by the chunk, not the file) and hands each chunk's columns to
:func:`keep_frame`, which applies the same drop rules and checks as :meth:`ReadContext.keep`. Anything
unusual (a value pandas cannot parse, a missing time, an out-of-range value, a blank or ragged line, bytes
that are not UTF-8...) raises :class:`Fallback`, and the loader re-reads the file with the row-by-row path,
which is the reference: it names the line and column of an error or counts the row with ``skip_bad``. So the
fast path only ever handles files the row path would accept, and must give exactly the same jobs (a test
checks both paths on the real traces and on generated files).
"""

from __future__ import annotations

import csv
from typing import Iterator

import numpy as np
import pandas as pd

from engine.sim.job import MAX_VRAM_GIB
from engine.traces.base import MAX_GPUS, MAX_INT, MAX_TIME_S, ReadContext, open_text

#: Rows per pandas chunk.
CHUNK_ROWS = 200_000


class Fallback(Exception):
    """The fast path met something it does not handle; re-read the file row by row."""


def read_chunks(ctx: ReadContext, *, sep: str = ",", expected: tuple[str, ...] | None = None) -> Iterator[pd.DataFrame]:
    """Chunks of a CSV with a header, every column as text; ``Fallback`` on any parse problem.

    A row with fewer fields than the header (pandas would pad it) and, with ``expected``, a header other
    than these columns hand the file to the row path.
    """
    try:
        if expected is not None:
            check_widths(ctx, len(expected), sep)
        with open_text(ctx.path) as f:
            reader = pd.read_csv(
                f,
                sep=sep,
                header=0,
                dtype=object,
                keep_default_na=False,
                chunksize=CHUNK_ROWS,
                engine="c",
                skip_blank_lines=True,
                quoting=csv.QUOTE_MINIMAL,
                on_bad_lines="error",
            )
            for chunk in reader:
                if expected is not None and list(chunk.columns) != list(expected):
                    raise Fallback
                yield chunk
    except Fallback:
        raise
    except Exception as exc:  # noqa: BLE001 -- any pandas/IO/decoding trouble: the row path explains it
        raise Fallback from exc


def check_widths(ctx: ReadContext, width: int, sep: str = ",", block_bytes: int = 1 << 24) -> None:
    """``Fallback`` unless every non-blank line has exactly ``width - 1`` separators, no quote character, no
    NUL byte, no carriage return but before a line feed, and at most ``csv.field_size_limit()`` bytes.

    pandas pads short rows silently, reads NUL bytes in columns it then ignores and fields of any length, and
    splits records at a lone carriage return differently; the row path calls all of these malformed (its
    ``csv`` module refuses a field longer than its limit, and a line longer than that may hold one).
    Counting on the raw bytes (block by block, so memory stays bounded) finds them cheaply.
    """
    sep_b = ord(sep)
    max_line = csv.field_size_limit()
    carry_seps = carry_len = 0  # the unfinished line at the end of the previous block
    with open_text(ctx.path) as f:
        while block := f.buffer.read(block_bytes):  # type: ignore[attr-defined]  # open_text gives a TextIOWrapper
            data = np.frombuffer(block, dtype=np.uint8)
            if (data == ord('"')).any() or (data == 0).any():
                raise Fallback
            cr = np.flatnonzero(data == ord("\r"))
            if len(cr) and (cr[-1] == len(data) - 1 or (data[cr + 1] != ord("\n")).any()):
                raise Fallback  # a lone carriage return ends a record for the csv module, not for pandas
            ends = np.flatnonzero(data == ord("\n"))
            sep_at = np.flatnonzero(data == sep_b)
            starts = np.concatenate([[0], ends + 1])
            stops = np.append(ends, len(data))
            line_seps = np.searchsorted(sep_at, stops) - np.searchsorted(sep_at, starts)
            line_seps[0] += carry_seps
            if (stops - starts > max_line).any() or carry_len + int(stops[0] - starts[0]) > max_line:
                raise Fallback  # the row path refuses over-long fields and lines
            for i in np.flatnonzero(line_seps[:-1] != width - 1).tolist():
                if (i == 0 and carry_len) or block[starts[i] : stops[i]].strip():
                    raise Fallback  # a short or long row (blank lines are fine)
            carry_seps = int(line_seps[-1])
            carry_len = (carry_len if len(ends) == 0 else 0) + int(stops[-1] - starts[-1])
    if carry_len and carry_seps != width - 1:
        raise Fallback


def numbers(
    chunk: pd.DataFrame, column: str, *, integer: bool = False, time: bool = False, allow_missing: bool = False
) -> np.ndarray:
    """A column parsed exactly as the row path does (Python ``float``), NaN where empty.

    ``Fallback`` where the row path would reject a value (or count a missing one) so that it decides.
    """
    text = chunk[column].str.strip()
    missing = (text == "").to_numpy()
    if missing.any():
        if not allow_missing:
            raise Fallback
        text = text.where(~missing, "nan")
    try:  # object -> float64 calls Python's float() on each string: exactly the row path's parsing
        values = text.to_numpy(dtype=object).astype(np.float64)
    except (TypeError, ValueError):
        raise Fallback from None
    present = values[~missing]
    if not np.isfinite(present).all():
        raise Fallback
    if integer and ((present != np.floor(present)).any() or (np.abs(present) >= MAX_INT).any()):
        raise Fallback
    if time and (np.abs(present) > MAX_TIME_S).any():
        raise Fallback
    return values


def strings(chunk: pd.DataFrame, column: str) -> np.ndarray:
    """A string column, stripped, as an object array; ``Fallback`` on NUL characters."""
    values = chunk[column].astype(str).str.strip()
    if values.str.contains("\x00", regex=False).any():
        raise Fallback
    return values.to_numpy(dtype=object)


def keep_frame(
    ctx: ReadContext,
    *,
    submit_s: np.ndarray,
    duration_s: np.ndarray,
    gpus: np.ndarray,
    gpu_fraction: np.ndarray | float = 1.0,
    vram_gib: np.ndarray | float = 0.0,
    user: np.ndarray | str = "user0",
    job_type: np.ndarray | str = "batch",
    priority: np.ndarray | int = 0,
    allowed: np.ndarray | list | None = None,
    estimate_s: np.ndarray | float = np.nan,
    name: np.ndarray,
    failed: np.ndarray | bool = False,
    deadline_s: np.ndarray | float = np.nan,
) -> None:
    """Vectorised :meth:`ReadContext.keep` for one chunk (``allowed``: frozensets, ``None`` = unknown types;
    ``failed``: the jobs the trace recorded as failed; ``deadline_s``: absolute deadlines, NaN for none)."""
    n = len(submit_s)
    ctx.n_rows += n

    def full(value, dtype=None):
        return np.full(n, value, dtype=dtype) if np.ndim(value) == 0 else np.asarray(value, dtype=dtype)

    frac, vram, est = full(gpu_fraction, "f8"), full(vram_gib, "f8"), full(estimate_s, "f8")
    prio = full(priority, "i8")
    allowed_arr = np.empty(n, dtype=object)
    if allowed is None:
        allowed_arr[:] = [frozenset()] * n
    else:
        allowed_arr[:] = list(allowed)
    unknown = np.array([a is None for a in allowed_arr], dtype=bool) if allowed is not None else np.zeros(n, bool)
    no_gpu = ~unknown & (gpus <= 0)
    rest = ~unknown & ~no_gpu
    if np.isnan(submit_s[rest]).any() or np.isnan(duration_s[rest]).any():
        raise Fallback  # missing times: the row path counts them in its own order
    non_pos = rest & (duration_s <= 0)
    keep = rest & ~non_pos
    k_gpus, k_frac, k_vram, k_est, k_dur = gpus[keep], frac[keep], vram[keep], est[keep], duration_s[keep]
    k_deadline = full(deadline_s, "f8")[keep]
    k_slack = k_deadline - submit_s[keep]
    bad = (
        (k_gpus > MAX_GPUS)
        | ~((k_frac > 0) & (k_frac <= 1))
        | ((k_frac < 1) & (k_gpus != 1))
        | ~((k_vram >= 0) & (k_vram <= MAX_VRAM_GIB))
        | ~(np.isnan(k_est) | (k_est > 0))
        | (k_dur > MAX_TIME_S)
        | (k_est > MAX_TIME_S)
        | ~(np.isnan(k_slack) | ((k_slack > 0) & (k_slack <= MAX_TIME_S)))
    )
    if bad.any():
        raise Fallback
    for reason, mask in (("unknown_gpu_type", unknown), ("no_gpu", no_gpu), ("non_positive_duration", non_pos)):
        count = int(mask.sum())
        if count:
            ctx.dropped[reason] += count
    ctx.rows.extend(
        submit_s[keep],
        k_dur,
        k_gpus,
        k_frac,
        k_vram,
        full(user, object)[keep],
        full(job_type, object)[keep],
        prio[keep],
        allowed_arr[keep],
        k_est,
        list(name[keep]),
        full(failed, "i8")[keep],
        k_deadline,
    )

"""Microsoft Philly jobs as processed for the Pollux paper (OSDI'21): ``philly.csv``.

Columns: ``timestamp`` (``YYYY-MM-DD HH:MM:SS``, no zone; read as UTC, only differences matter),
``duration`` (s), ``num_gpus`` (1-128), ``gpu_time`` (= duration x num_gpus; not used), ``cluster``
(virtual-cluster id, kept as a string: ``6214e9`` is not a number).

Mapping: submit = timestamp; duration as given; GPUs = ``num_gpus``; user = the virtual cluster (the
natural tenant for fairness metrics); job type ``training`` (Philly ran deep-learning training); no
estimate (schedulers see the true duration as estimate); name = ``row<N>`` (N-th data row). A duration <= 0 drops the row
as ``non_positive_duration``, ``num_gpus`` <= 0 as ``no_gpu``, an empty timestamp or duration as
``missing_time``. The file is not sorted by time; the loader sorts it. Data: CC BY 4.0 (Jeon et al., ATC'19).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from engine.traces.base import BadField, Columns, ReadContext, read_header, read_rows, to_int, to_time
from engine.traces.fast import Fallback, keep_frame, numbers, read_chunks, strings

COLUMNS = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")
REQUIRED = ("timestamp", "duration", "num_gpus")
EPOCH = datetime(1970, 1, 1)
COLUMN_NAMES = Columns(gpus="num_gpus", duration_s="duration")
#: The one timestamp form the fast path reads itself (any other goes to the row path).
STAMP_FORM = r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}"


def parse_timestamp(text: str, column: str) -> float:
    """Seconds since 1970 of an ISO date-time (``2017-10-09 07:01:55``; without a zone it is read as UTC, with
    one, such as ``+02:00`` or ``Z``, converted to UTC), or a plain number of seconds."""
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        pass
    else:
        if stamp.tzinfo is not None:
            stamp = stamp.astimezone(UTC).replace(tzinfo=None)
        return (stamp - EPOCH).total_seconds()
    try:
        return to_time(text, column)
    except BadField:
        raise BadField(column, "a date-time YYYY-MM-DD HH:MM:SS (or seconds)", text) from None


def read(ctx: ReadContext) -> None:
    """Read a Philly CSV into ``ctx``, row by row."""
    header, rows = read_header(ctx, COLUMNS, REQUIRED)
    i_ts, i_dur, i_gpus = (header.index(c) for c in REQUIRED)
    i_vc = header.index("cluster") if "cluster" in header else None
    keep = ctx.keep

    def row(f: list[str], line: int) -> None:
        ts, dur_txt = f[i_ts].strip(), f[i_dur].strip()
        keep(
            parse_timestamp(ts, "timestamp") if ts else math.nan,
            to_time(dur_txt, "duration") if dur_txt else math.nan,
            gpus=to_int(f[i_gpus], "num_gpus"),
            user=_user(f[i_vc].strip() if i_vc is not None else None),
            job_type="training",
            name=f"row{ctx.n_rows}",
            columns=COLUMN_NAMES,
        )

    read_rows(ctx, rows, row, width=len(header), header=header)


def _user(cluster: str | None) -> str:
    return "philly" if cluster is None else (cluster or "unknown")


def fast(ctx: ReadContext) -> None:
    """The vectorised path (see :mod:`engine.traces.fast`)."""
    header, _ = read_header(ctx, COLUMNS, REQUIRED)
    start = 0
    for chunk in read_chunks(ctx, expected=tuple(header)):
        n = len(chunk)
        text = strings(chunk, "timestamp")
        # Only the exact form: pandas also takes "2017-1-9 7:1:55", which the row path's fromisoformat refuses.
        if not pd.Series(text, dtype=object).str.fullmatch(STAMP_FORM).all():
            raise Fallback
        stamps = pd.to_datetime(text, format="%Y-%m-%d %H:%M:%S", errors="coerce")
        if stamps.isna().any():
            raise Fallback
        submit = np.asarray((stamps - pd.Timestamp(EPOCH)).total_seconds(), dtype=np.float64)
        if "cluster" in chunk:
            vc = strings(chunk, "cluster")
            user: np.ndarray | str = np.where(vc == "", "unknown", vc).astype(object)
        else:
            user = _user(None)
        keep_frame(
            ctx,
            submit_s=submit,
            duration_s=numbers(chunk, "duration", time=True),
            gpus=numbers(chunk, "num_gpus", integer=True),
            user=user,
            job_type="training",
            name=np.array([f"row{i}" for i in range(start + 1, start + n + 1)], dtype=object),
        )
        start += n

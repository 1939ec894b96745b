"""Grid carbon-intensity files: ``timestamp,carbon_intensity`` rows (OpenDC's carbon-trace columns), read into a
:class:`~engine.sim.options.CarbonSeries`.

The file::

    timestamp,carbon_intensity
    2024-01-01T00:00:00Z,412.5
    2024-01-01T01:00:00Z,398.0

``timestamp``: ISO 8601 (a time without a zone is read as UTC) or seconds (a plain number); ``carbon_intensity``:
gCO2 per kWh, a finite number >= 0. Rows are evenly spaced (every hour in OpenDC's traces) and in time order: a
gap, a repeated or earlier time, a missing or NaN value or other columns are refused with one line naming the file
and line (:class:`~engine.errors.TraceError`). The first row is simulated time 0.
"""

from __future__ import annotations

import csv
import io
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Iterable, Iterator

from engine.errors import TraceError, quote
from engine.sim.options import MAX_CARBON_ROWS, CarbonSeries
from engine.traces.base import iter_csv

COLUMNS = ("timestamp", "carbon_intensity")


def load_carbon_csv(path: str | Path) -> CarbonSeries:
    """The carbon series of the file at ``path`` (plain or gzipped); ``TraceError`` names the line of a problem."""
    return _read(iter_csv(Path(path)), str(path))


def parse_carbon_csv(text: str, source: str = "carbon CSV") -> CarbonSeries:
    """The carbon series of CSV ``text`` (an upload); ``source`` names it in errors."""
    reader = csv.reader(io.StringIO(text), strict=True)

    def rows() -> Iterator[tuple[int, list[str]]]:
        try:
            for fields in reader:
                if fields and any(f.strip() for f in fields):
                    yield reader.line_num, fields
        except csv.Error as exc:
            raise TraceError(f"not valid CSV ({exc})", path=source, line=reader.line_num) from None

    return _read(rows(), source)


def _read(rows: Iterable[tuple[int, list[str]]], source: str) -> CarbonSeries:
    it = iter(rows)
    header = next(it, None)
    expected = ",".join(COLUMNS)
    if header is None:
        raise TraceError(f"empty; expected the header {expected}", path=source)
    line, names = header
    if [n.strip().lower() for n in names] != list(COLUMNS):
        raise TraceError(
            f"columns {quote([n.strip() for n in names])}; expected exactly {expected} (OpenDC's carbon-trace columns)",
            path=source,
            line=line,
        )
    start = ""
    times: list[float] = []
    values: list[float] = []
    for line, fields in it:
        if len(fields) != 2:
            raise TraceError(f"{len(fields)} fields; expected 2 ({expected})", path=source, line=line)
        t = _seconds(fields[0].strip(), source, line)
        g = _intensity(fields[1].strip(), source, line)
        if times:
            step = t - times[-1]
            first_step = times[1] - times[0] if len(times) > 1 else step
            if step <= 0:
                raise TraceError(
                    f"timestamp {quote(fields[0].strip())} is not after the previous row's; rows must be "
                    "in time order, each time once",
                    path=source,
                    line=line,
                    column="timestamp",
                )
            if abs(step - first_step) > 1e-9 * first_step:  # seconds given as decimals round
                raise TraceError(
                    f"timestamp {quote(fields[0].strip())} is {step:g} s after the previous row; rows "
                    f"must be evenly spaced, every {first_step:g} s (a gap or a missing row?)",
                    path=source,
                    line=line,
                    column="timestamp",
                )
        else:
            start = fields[0].strip()
        if len(times) == MAX_CARBON_ROWS:
            raise TraceError(
                f"more than {MAX_CARBON_ROWS:,} rows; the limit is {MAX_CARBON_ROWS:,}", path=source, line=line
            )
        times.append(t)
        values.append(g)
    if len(times) < 2:
        raise TraceError(f"{len(times)} data row(s); at least 2 are needed (their spacing is the step)", path=source)
    return CarbonSeries(times[1] - times[0], tuple(values), start)


def _seconds(text: str, source: str, line: int) -> float:
    """A timestamp in seconds: a plain number, or ISO 8601 seconds since the Unix epoch (no zone: UTC)."""
    try:
        v = float(text)
    except ValueError:
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            raise TraceError(
                f"timestamp {quote(text)} is neither ISO 8601 (2024-01-01T00:00:00Z) nor seconds",
                path=source,
                line=line,
                column="timestamp",
            ) from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return when.timestamp()
    if not math.isfinite(v):
        raise TraceError(
            f"timestamp {quote(text)} must be a finite number of seconds", path=source, line=line, column="timestamp"
        )
    return v


def _intensity(text: str, source: str, line: int) -> float:
    try:
        g = float(text)
    except ValueError:
        g = math.nan
    if not (math.isfinite(g) and g >= 0):
        raise TraceError(
            f"carbon_intensity {quote(text)} must be a finite number >= 0 (gCO2/kWh)",
            path=source,
            line=line,
            column="carbon_intensity",
        )
    return g

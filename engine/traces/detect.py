"""Guess a trace file's format from its first lines (``--format`` overrides the guess).

Rules, in order:

* lines starting with ``;`` or a first data line of 18 whitespace-separated numbers: ``swf``;
* a first line of 10 or 7 tab-separated fields ending in a number: ``gavel`` (either layout; it has no
  header);
* a CSV header naming ``submit_s`` and ``duration_s``: ``csv``; ``timestamp, duration, num_gpus``:
  ``philly``; ``name, num_gpu, gpu_milli``: ``openb``; ``job_id, num_gpu, submit_time, duration``:
  ``tiresias``; ``name, time, application, num_replicas, batch_size``: ``pollux``;
* an openb *node* list (``sn, gpu, model``) is not a trace: the error says to use it as a cluster;
* anything else is an error that suggests ``--format mapped --map ...``.
"""

from __future__ import annotations

import csv
from pathlib import Path

from engine.errors import TraceError
from engine.traces.base import iter_lines
from engine.traces.gavel import layout_of

#: ``format -> header columns that identify it`` (all must be present).
HEADER_SIGNATURES: dict[str, frozenset[str]] = {
    "csv": frozenset({"submit_s", "duration_s"}),
    "philly": frozenset({"timestamp", "duration", "num_gpus"}),
    "openb": frozenset({"name", "num_gpu", "gpu_milli"}),
    "tiresias": frozenset({"job_id", "num_gpu", "submit_time", "duration"}),
    "pollux": frozenset({"name", "time", "application", "num_replicas", "batch_size"}),
}
OPENB_NODE_COLUMNS = frozenset({"sn", "gpu", "model"})
#: How the error for a file of no known format begins (front ends that word it their own way look for it).
UNKNOWN_FORMAT = "its first line fits no known trace format"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def detect_format(path: Path) -> str:
    """The name of ``path``'s format, or a ``TraceError`` saying why none fits."""
    first = None
    for line, text in iter_lines(path):
        if text.strip():
            first = (line, text)
            break
        if line > 1000:
            break
    if first is None:
        raise TraceError("empty file; expected a trace (header line or data rows)", path=str(path))
    line, text = first
    stripped = text.strip()
    if stripped.startswith(";"):
        return "swf"
    words = stripped.split()
    if len(words) == 18 and all(_is_number(w) for w in words):
        return "swf"
    tabs = text.split("\t")
    if layout_of(len(tabs)) is not None and _is_number(tabs[-1].strip()):
        return "gavel"
    try:
        header = {h.strip() for h in next(csv.reader([text]))}
    except csv.Error as exc:
        raise TraceError(f"not valid CSV ({exc})", path=str(path), line=line) from None
    for name, columns in HEADER_SIGNATURES.items():
        if columns <= header:
            return name
    if OPENB_NODE_COLUMNS <= header:
        raise TraceError(
            "this is an openb node list, not a job trace; use it as a cluster: --cluster openb:PATH",
            path=str(path),
            line=line,
        )
    known = ", ".join(f for f in (*HEADER_SIGNATURES, "swf", "gavel"))
    raise TraceError(
        f"{UNKNOWN_FORMAT} ({known}): choose the format, or map its columns to submit time, "
        f"duration and GPUs; it reads {stripped[:60]!r}",
        path=str(path),
        line=line,
    )

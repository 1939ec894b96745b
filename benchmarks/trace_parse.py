"""Trace loading speed: rows parsed per second for each format (target: Philly's 82,247 rows in under 1 s).

Usage: ``.venv/bin/python -m benchmarks.trace_parse [--quick] [--repeat 3]``.

Measures ``load_trace`` end to end (read, check, sort, build the ``Job`` records, report) on:

* every real trace in ``../shared/traces`` that is present (Philly, KTH SWF, openb pods, Tiresias, Gavel);
* a 100,000-job canonical CSV written from the generator, read as ``csv`` and through a column map
  (``mapped``), so the benchmark also runs on a fresh clone without the real traces.

For the formats with a vectorised fast path it also times the row-by-row reference path, and it prints the
floor no loader can beat: constructing the same number of ``Job`` records directly. Each figure is the best
of ``--repeat`` runs; the load average is printed with them, since these timings depend on the machine.
Peak traced memory of one Philly load is printed too (measured separately: tracing slows Python down).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine.sim.job import Job  # noqa: E402
from engine.traces import TRACE_FORMATS, load_trace, write_csv  # noqa: E402
from engine.traces.generator import generate  # noqa: E402

TRACES = REPO.parent / "shared" / "traces"
REAL = [
    ("philly", "philly/philly.csv", {}),
    ("swf", "swf-kth-sp2/KTH-SP2-1996-2.1-cln.swf", {}),
    ("openb", "alibaba-gpu-v2023-openb/openb_pod_list_gpuspec33.csv", {}),
    ("tiresias", "tiresias/60_job.csv", {}),
    ("gavel", "gavel/artifact_evaluation.trace", {}),
]
MAP = {
    "submit_s": "submit_s",
    "duration_s": "duration_s",
    "gpus": "gpus",
    "gpu_fraction": "gpu_fraction",
    "vram_gib": "vram_gib",
    "user": "user",
    "job_type": "job_type",
    "estimate_s": "estimate_s",
    "name": "name",
}


def best_time(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def job_floor(n: int, repeat: int) -> float:
    """Seconds to construct ``n`` Job records directly (the lower bound of any loader)."""
    return best_time(
        lambda: [Job(i, float(i), 60.0, 1, 1.0, 0.0, "u", "batch", 0, frozenset(), 120.0, "") for i in range(n)], repeat
    )[0]


def row(label: str, fmt: str, path_kind: str, rows: int, seconds: float, floor: float) -> None:
    print(
        f"{label:<34} {fmt:<9} {path_kind:<5} {rows:>9,} rows  {seconds:7.3f} s  {rows / seconds:>11,.0f} rows/s"
        f"  (Job floor {floor:.3f} s)",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="one repetition, 20,000 synthetic jobs")
    p.add_argument("--repeat", type=int, default=3, help="repetitions; the best is reported (default 3)")
    args = p.parse_args(argv)
    repeat = 1 if args.quick else args.repeat
    n_synthetic = 20_000 if args.quick else 100_000
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; best of {repeat}", flush=True)

    cases = []
    if TRACES.is_dir():
        cases += [(Path(rel).name, fmt, TRACES / rel, kw) for fmt, rel, kw in REAL if (TRACES / rel).exists()]
    else:
        print(f"(real traces not found at {TRACES}: synthetic files only)")
    tmp = tempfile.TemporaryDirectory()
    synthetic = write_csv(generate("16x8:A100-80", n_synthetic, 0.8, 1), Path(tmp.name) / "synthetic.csv")
    cases += [
        (f"synthetic {n_synthetic:,} jobs", "csv", synthetic, {}),
        (f"synthetic {n_synthetic:,} jobs", "mapped", synthetic, {"column_map": MAP}),
    ]

    for label, fmt, path, kwargs in cases:
        seconds, trace = best_time(lambda: load_trace(path, fmt, **kwargs), repeat)
        rows = trace.report.rows
        floor = job_floor(trace.report.jobs, repeat)
        row(label, fmt, "fast" if TRACE_FORMATS[fmt].fast else "rows", rows, seconds, floor)
        spec = TRACE_FORMATS[fmt]
        if spec.fast is not None:
            TRACE_FORMATS[fmt] = dataclasses.replace(spec, fast=None)
            try:
                slow, _ = best_time(lambda: load_trace(path, fmt, **kwargs), repeat)
            finally:
                TRACE_FORMATS[fmt] = spec
            row(label, fmt, "rows", rows, slow, floor)

    philly = TRACES / "philly" / "philly.csv"
    if philly.exists():
        tracemalloc.start()
        load_trace(philly)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(
            f"peak traced memory, one Philly load: {peak / 2**20:.0f} MiB "
            f"(file {philly.stat().st_size / 2**20:.1f} MiB)"
        )
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

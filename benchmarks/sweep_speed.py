"""Sweep speed: cells per second for one grid, sequentially in this process and on a local Ray, in the same run.

The grid (default 200 cells: 1 cluster x 5 loads x 10 seeds x 4 schedulers, 200 generated jobs per workload)
runs first with ``backend="serial"`` (one cell after the other in this process, workloads generated here),
then on a local Ray with ``--cpus`` CPUs (default: all of this machine's) through the same
:func:`engine.analysis.sweep.run_sweep`, after Ray has started and a warm-up sweep has made every worker import
the engine (Ray's start is printed apart). Both frames must be equal. Printed:

* **cells/s** of each and the **speed-up** (serial wall time / Ray wall time), and **% of linear** (speed-up
  / CPUs); the issue's target is at least 80 % of linear on 2 CPUs for at least 200 cells;
* **per-task overhead**: the same count of 1-job cells (whose simulation costs next to nothing), on Ray at one
  CPU's worth of tasks at a time, minus serially: what each task costs Ray (submission, scheduling, argument
  and result transfer);
* the **workload sizes** in the object store (pickled bytes of one workload of ``--jobs`` jobs and of 10,000
  jobs) and the time ``ray.put`` takes for each;
* the load average before and after: the machine is shared, and wall times count what else runs on it.

Usage: ``.venv/bin/python -m benchmarks.sweep_speed [--quick] [--cpus N | --address HOST:PORT] [--jobs 200]
[--seeds 10] [--json out.json]``; ``--quick`` uses 100 jobs per workload (the grid keeps its 200 cells).
``--address`` joins a running Ray cluster (its token as for ``sweep --address``) instead of starting a local
Ray, and uses all of its CPUs; the per-task overhead is then not measured (it needs a 1-CPU Ray).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import time

SCHEDULERS = ("fifo", "sjf", "first-fit", "easy-backfill")
LOADS = (0.6, 0.8, 1.0, 1.2, 1.4)
CLUSTER = "4x8:V100-32"


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="100 jobs per workload (still 200 cells)")
    p.add_argument("--cpus", type=int, default=os.cpu_count() or 1, help="CPUs of the local Ray (default: all)")
    p.add_argument("--address", help="join this Ray cluster instead of starting a local Ray")
    p.add_argument("--jobs", type=int, help="jobs per generated workload (default 200, 100 with --quick)")
    p.add_argument("--seeds", type=int, default=10, help="seeds per load (default 10: 200 cells)")
    p.add_argument("--json", help="write the measurements to this file")
    args = p.parse_args(argv)

    import pandas as pd
    import ray

    from engine.analysis.ray_join import join_cluster
    from engine.analysis.sweep import SweepSpec, run_sweep
    from engine.traces.generator import generate

    n_jobs = args.jobs or (100 if args.quick else 200)
    spec = SweepSpec.grid(clusters=(CLUSTER,), schedulers=SCHEDULERS, jobs=n_jobs, loads=LOADS, seeds=args.seeds)
    tiny = SweepSpec.grid(clusters=(CLUSTER,), schedulers=SCHEDULERS, jobs=1, loads=LOADS, seeds=args.seeds)
    load_before = os.getloadavg()
    print(
        f"grid: {spec.cells} cells ({CLUSTER}, loads {','.join(map(str, LOADS))}, {args.seeds} seeds, "
        f"{', '.join(SCHEDULERS)}), {n_jobs} jobs per workload; {os.cpu_count()} cores here; "
        f"load average {', '.join(f'{x:.2f}' for x in load_before)}",
        flush=True,
    )

    serial, serial_s = timed(run_sweep, spec, backend="serial")
    print(f"serial (in-process): {serial_s:7.2f} s  {spec.cells / serial_s:7.2f} cells/s", flush=True)

    if args.address:
        _, init_s = timed(join_cluster, args.address, log_to_driver=False)
    else:
        _, init_s = timed(ray.init, address="local", num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    cpus = int(ray.cluster_resources().get("CPU", 1))
    where = f"Ray at {args.address}" if args.address else "local Ray"
    run_sweep(tiny, backend="ray")  # warm-up: every worker imports the engine once
    on_ray, ray_s = timed(run_sweep, spec, backend="ray")
    pd.testing.assert_frame_equal(serial, on_ray)  # the same cells, whichever backend ran them
    speedup = serial_s / ray_s
    print(
        f"{where} ({cpus} CPUs): {ray_s:7.2f} s  {spec.cells / ray_s:7.2f} cells/s   "
        f"speed-up {speedup:.2f}x = {100 * speedup / cpus:.0f} % of linear   (Ray start {init_s:.1f} s)",
        flush=True,
    )

    overhead_ms = None
    if not args.address:  # per-task overhead: 1-job cells, Ray one task at a time, against them in-process
        _, tiny_serial_s = timed(run_sweep, tiny, backend="serial")
        ray.shutdown()
        ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)
        run_sweep(tiny, backend="ray")
        _, tiny_ray_s = timed(run_sweep, tiny, backend="ray")
        overhead_ms = 1000 * (tiny_ray_s - tiny_serial_s) / tiny.cells
        print(
            f"per-task overhead (1-job cells, 1 CPU): {overhead_ms:.2f} ms (Ray "
            f"{1000 * tiny_ray_s / tiny.cells:.2f} ms/cell, in-process {1000 * tiny_serial_s / tiny.cells:.2f})"
        )

    sizes = {}
    for n in (n_jobs, 10_000):
        jobs = generate(CLUSTER, n, load=1.0, seed=0)
        _, put_s = timed(ray.put, jobs)
        sizes[n] = {"bytes": len(pickle.dumps(jobs)), "put_ms": 1000 * put_s}
        print(f"workload of {n:,} jobs: {sizes[n]['bytes'] / 1024:,.1f} KiB pickled, ray.put {1000 * put_s:.1f} ms")
    ray.shutdown()
    load_after = os.getloadavg()
    print(f"load average at the end: {', '.join(f'{x:.2f}' for x in load_after)}")
    result = {
        "cells": spec.cells,
        "jobs_per_workload": n_jobs,
        "cpus": cpus,
        "address": args.address,
        "serial_s": serial_s,
        "ray_s": ray_s,
        "serial_cells_per_s": spec.cells / serial_s,
        "ray_cells_per_s": spec.cells / ray_s,
        "speedup": speedup,
        "percent_of_linear": 100 * speedup / cpus,
        "ray_init_s": init_s,
        "overhead_ms_per_task": overhead_ms,
        "mean_cell_s": serial_s / spec.cells,
        "workloads": sizes,
        "load_before": load_before,
        "load_after": load_after,
    }
    print(json.dumps(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

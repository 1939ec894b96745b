"""Engine speed: jobs simulated per second, peak memory and growth with the number of jobs.

Runs every registered scheduler (or those given) on seeded synthetic workloads
(:func:`engine.traces.generator.generate`, default job mix) on clusters of 8-GPU ``generic`` nodes (speed 1,
so the offered load is the real load) at offered load 0.8 and 1.1 (overload: the queue grows all run), and
on the KTH SP2 SWF trace on 100 GPUs (``25x4:generic``; skipped when ``../shared/traces`` is absent).

Each run happens in a fresh child process, which reports

* **jobs/s**: jobs divided by the CPU time of ``simulate`` (workload generation excluded; CPU time, since on
  a shared machine wall time also counts the time other processes had the CPU; the wall time is printed too);
* **x bare**: that CPU time over the CPU time of a bare heap loop over the same arrival and completion events
  (every job arrives, is popped, pushes its completion at ``submit + duration``, which is popped), measured in
  the same process just before and just after (the mean): a cost factor that holds on a busy machine;
* **peak MiB**: the child's peak resident memory (``ru_maxrss``), interpreter, numpy and workload included;

and, per scheduler, cluster and load, the **growth** of the simulation time from the smallest to the
largest job count (linear growth from 10,000 to 100,000 jobs is 10x).

The engine runs compiled when ``make build`` compiled its hot modules (see ``engine/_native.py``), else
interpreted; ``--engine both`` (the default when it is compiled) measures every run both ways and prints the
speed-up. Children run with ``OPENBLAS_NUM_THREADS=1``: idle OpenBLAS worker threads spinning after the
workload generator's numpy calls would otherwise be counted as the simulation's CPU time.

Usage::

    .venv/bin/python -m benchmarks.engine_speed                 # full: 10k and 100k jobs (long)
    .venv/bin/python -m benchmarks.engine_speed --quick         # 1k and 10k jobs, KTH cut to 5,000 jobs
    .venv/bin/python -m benchmarks.engine_speed --jobs 100000 --loads 0.8 --gpus 1024 --schedulers fifo,sjf

Numbers depend on the machine and on what else runs on it; the ``x bare`` ratio much less so.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from engine._native import PURE_ENV

REPO = Path(__file__).resolve().parents[1]
KTH = REPO.parent / "shared" / "traces" / "swf-kth-sp2" / "KTH-SP2-1996-2.1-cln.swf"
KTH_CLUSTER = "25x4:generic"
SEED = 1


def cluster_spec(n_gpus: int) -> str:
    """The benchmark cluster with ``n_gpus`` GPUs: 8-GPU nodes of the speed-1 ``generic`` type."""
    if n_gpus % 8:
        raise SystemExit(f"--gpus: {n_gpus} is not a multiple of 8 (the benchmark uses 8-GPU nodes)")
    return f"{n_gpus // 8}x8:generic"


def bare_loop_s(jobs) -> float:
    """CPU seconds of the bare heap loop over the jobs' arrivals and completions (median of 3)."""
    times = []
    events = [(j.submit_s, 1, j.job_id, j.duration_s) for j in jobs]
    for _ in range(3):
        t0 = time.process_time()
        heap = list(events)
        heapq.heapify(heap)
        done = 0
        while heap:
            t, arrival, j, d = heapq.heappop(heap)
            if arrival:
                heapq.heappush(heap, (t + d, 0, j, d))
            else:
                done += 1
        times.append(time.process_time() - t0)
    assert done == len(jobs)
    return statistics.median(times)


def run_one(spec: dict) -> dict:
    """Child process: build the workload, time the bare loop, then the simulation (see module docstring)."""
    from engine import make_scheduler, parse_cluster, simulate
    from engine._native import compiled_modules
    from engine.sim.simulator import COMPLETED

    if spec["workload"] == "kth":
        from engine.traces import load_trace

        jobs = load_trace(KTH, format="swf", first=spec.get("first")).jobs
        cluster = parse_cluster(KTH_CLUSTER)
    else:
        from engine.traces.generator import generate

        cluster = parse_cluster(cluster_spec(spec["gpus"]))
        jobs = generate(cluster, spec["jobs"], load=spec["load"], seed=SEED)
    bare_before_s = bare_loop_s(jobs)
    scheduler = make_scheduler(spec["scheduler"])
    t0, c0 = time.perf_counter(), time.process_time()
    result = simulate(cluster, jobs, scheduler, seed=SEED)
    wall_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    bare_s = (bare_before_s + bare_loop_s(jobs)) / 2
    return {
        **spec,
        "engine": "compiled" if compiled_modules() else "interpreted",
        "jobs": len(jobs),
        "wall_s": wall_s,
        "sim_s": cpu_s,
        "bare_s": bare_s,
        "jobs_per_s": len(jobs) / cpu_s,
        "x_bare": cpu_s / bare_s,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "completed": int((result.status == COMPLETED).sum()),
        "decision_points": result.decision_points,
    }


def run_child(spec: dict, timeout_s: float) -> dict:
    cmd = [sys.executable, "-m", "benchmarks.engine_speed", "--child", json.dumps(spec)]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", PURE_ENV: "1" if spec["engine"] == "interpreted" else "0"}
    try:
        out = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {**spec, "error": f"over {timeout_s:g} s"}
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines() or ["no output"]
        return {**spec, "error": lines[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def fmt_row(r: dict) -> str:
    where = "KTH SP2, 100 GPUs" if r["workload"] == "kth" else f"{r['gpus']} GPUs, load {r['load']:g}"
    head = f"{where:<20} {r['jobs']:>7} {r['scheduler']:<14} {r['engine']:<11}"
    if "error" in r:
        return f"{head} {r['error']}"
    return (
        f"{head} {r['sim_s']:8.2f} {r['wall_s']:8.2f} {r['jobs_per_s']:9,.0f} "
        f"{r['jobs'] / r['bare_s']:11,.0f} {r['x_bare']:7.1f} {r['peak_mib']:8.0f}"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="1,000 and 10,000 jobs; KTH cut to 5,000 jobs")
    p.add_argument("--jobs", help="comma-separated job counts (default 10000,100000)")
    p.add_argument("--gpus", default="64,1024", help="comma-separated cluster sizes (default 64,1024)")
    p.add_argument("--loads", default="0.8,1.1", help="comma-separated offered loads (default 0.8,1.1)")
    p.add_argument("--schedulers", help="comma-separated scheduler names (default: every registered one)")
    p.add_argument(
        "--engine",
        choices=("both", "compiled", "interpreted"),
        help="how the engine runs (default: both when it is compiled, else interpreted)",
    )
    p.add_argument("--no-kth", action="store_true", help="skip the KTH SP2 trace")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds allowed per run (default 900)")
    p.add_argument("--json", help="write every measurement to this file")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(run_one(json.loads(args.child))))
        return 0

    from engine._native import stale_modules
    from engine.schedulers import SCHEDULERS, make_scheduler

    names = args.schedulers.split(",") if args.schedulers else list(SCHEDULERS)
    for name in names:
        make_scheduler(name)  # an unknown name fails here, in one line, before any run
    counts = [int(x) for x in (args.jobs or ("1000,10000" if args.quick else "10000,100000")).split(",")]
    sizes = [int(x) for x in args.gpus.split(",")]
    loads = [float(x) for x in args.loads.split(",")]
    for n in sizes:
        cluster_spec(n)
    compiled = not stale_modules()
    choice = args.engine or ("both" if compiled else "interpreted")
    if choice != "interpreted" and not compiled:
        raise SystemExit("--engine: the engine is not compiled from its current sources; run `make build`")
    engines = ["compiled", "interpreted"] if choice == "both" else [choice]

    specs = [
        {"workload": "synthetic", "gpus": g, "load": load, "jobs": n, "scheduler": s, "engine": e}
        for g in sizes
        for load in loads
        for s in names
        for n in counts
        for e in engines
    ]
    if args.no_kth:
        pass
    elif KTH.is_file():
        specs += [
            {"workload": "kth", "first": 5000 if args.quick else None, "scheduler": s, "engine": e}
            for s in names
            for e in engines
        ]
    else:
        print(f"(KTH SP2 trace not found at {KTH}: skipped)")

    print(
        f"{'workload':<20} {'jobs':>7} {'scheduler':<14} {'engine':<11} {'cpu s':>8} {'wall s':>8} "
        f"{'jobs/s':>9} {'bare jobs/s':>11} {'x bare':>7} {'peak MiB':>8}"
    )
    results = []
    for spec in specs:
        r = run_child(spec, args.timeout)
        results.append(r)
        print(fmt_row(r), flush=True)

    ok = [r for r in results if "error" not in r]
    if len(counts) > 1:
        lo, hi = min(counts), max(counts)
        print(f"\nGrowth of simulation CPU time from {lo:,} to {hi:,} jobs (linear: {hi / lo:g}x)")
        by_key = {
            (r["scheduler"], r["engine"], r["gpus"], r["load"], r["jobs"]): r
            for r in ok
            if r["workload"] == "synthetic"
        }
        for s in names:
            for e in engines:
                cells = []
                for g in sizes:
                    for load in loads:
                        a, b = by_key.get((s, e, g, load, lo)), by_key.get((s, e, g, load, hi))
                        growth = f"{b['sim_s'] / a['sim_s']:.1f}x" if a and b else "-"
                        cells.append(f"{g} GPUs @ {load:g}: {growth:>6}")
                print(f"  {s:<14} {e:<11} " + "   ".join(cells))
    if len(engines) > 1:
        print(
            "\nSpeed-up of the compiled engine on the same workload: interpreted CPU time / compiled CPU time, "
            "and the same ratio\nof the times relative to the bare loop (steadier when the machine's speed "
            "drifts between runs)"
        )
        runs: dict[tuple, dict] = {}
        for r in ok:
            runs.setdefault((r["workload"], r.get("gpus"), r.get("load"), r["jobs"], r["scheduler"]), {})[
                r["engine"]
            ] = r
        for key, pair in runs.items():
            if len(pair) == 2:
                workload, gpus, load, jobs, s = key
                where = "KTH SP2, 100 GPUs" if workload == "kth" else f"{gpus} GPUs, load {load:g}"
                print(
                    f"  {where:<20} {jobs:>7} {s:<14} "
                    f"{pair['interpreted']['sim_s'] / pair['compiled']['sim_s']:5.2f}x CPU time   "
                    f"{pair['interpreted']['x_bare'] / pair['compiled']['x_bare']:5.2f}x relative to bare"
                )
    print(f"\nload average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0 if len(ok) == len(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())

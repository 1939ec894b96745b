"""Deadline speed: what deadlines and admission control cost a run (issue 36's target: at most 2x the run
without; that target also counts elastic jobs, which this script leaves out).

One seeded synthetic workload (:func:`engine.traces.generator.generate`, default job mix) on 8-GPU ``generic``
nodes at offered load 0.8 is simulated three times by one scheduler (default ``edf``; on jobs without deadlines it
walks the queue in arrival order): the workload without deadlines, the same workload with ElasticFlow's deadlines
(``--law``; a ``--best-effort`` share without one) under ``accept-all``, and under ``feasible`` admission (which
declines jobs, so that run has fewer jobs to simulate). It prints the CPU time of each ``simulate`` (workload generation excluded; CPU time, since on a shared machine wall
time also counts other processes), the ratio, the jobs declined and the share of deadlines met, and whether the
engine ran compiled or interpreted.

Usage::

    .venv/bin/python -m benchmarks.deadline_speed                    # 100,000 jobs on 1,024 GPUs
    .venv/bin/python -m benchmarks.deadline_speed --quick            # 10,000 jobs on 256 GPUs
    .venv/bin/python -m benchmarks.deadline_speed --scheduler least-slack --law gavel
"""

from __future__ import annotations

import argparse
import time

from engine import make_scheduler, parse_cluster, simulate
from engine._native import compiled_modules
from engine.analysis.deadlines import summarize_deadlines
from engine.sim.options import AdmissionModel, RunOptions
from engine.traces.deadlines import DEADLINE_LAWS
from engine.traces.generator import generate

SEED = 1


def timed_run(cluster, jobs, scheduler: str, options: RunOptions):
    """``(CPU seconds, result)`` of one ``simulate``."""
    t0 = time.process_time()
    result = simulate(cluster, jobs, make_scheduler(scheduler), seed=SEED, options=options)
    return time.process_time() - t0, result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--gpus", type=int, default=1024, help="a multiple of 8 (8-GPU nodes)")
    parser.add_argument("--scheduler", default="edf")
    parser.add_argument("--law", choices=list(DEADLINE_LAWS), default="elasticflow")
    parser.add_argument("--best-effort", type=float, default=0.2, metavar="SHARE")
    parser.add_argument("--quick", action="store_true", help="10,000 jobs on 256 GPUs")
    args = parser.parse_args(argv)
    if args.quick:
        args.jobs, args.gpus = 10_000, 256
    if args.gpus % 8:
        raise SystemExit(f"--gpus: {args.gpus} is not a multiple of 8 (the benchmark uses 8-GPU nodes)")
    cluster = parse_cluster(f"{args.gpus // 8}x8:generic")
    plain = generate(cluster, args.jobs, load=0.8, seed=SEED)
    due = generate(cluster, args.jobs, load=0.8, seed=SEED, deadlines=args.law, best_effort=args.best_effort)
    off_s, _ = timed_run(cluster, plain, args.scheduler, RunOptions())
    all_s, _ = timed_run(cluster, due, args.scheduler, RunOptions())
    on_s, result = timed_run(cluster, due, args.scheduler, RunOptions(admission=AdmissionModel("feasible")))
    summary = summarize_deadlines(result)
    engine = "compiled" if compiled_modules() else "interpreted"
    print(f"{args.scheduler}, {len(plain):,} jobs on {cluster.n_gpus:,} GPUs ({engine} engine)")
    print(f"  no deadlines, accept-all:  {off_s:8.1f} s CPU")
    law = f"{args.law} deadlines ({args.best_effort:.0%} best effort)"
    print(f"  {law}, accept-all: {all_s:8.1f} s CPU")
    print(
        f"  {law}, feasible admission: {on_s:8.1f} s CPU ({summary.declined:,} declined, "
        f"{summary.deadline_ratio:.1%} of deadlines met)"
    )
    print(f"  ratios: {all_s / off_s:.2f}x accept-all, {on_s / off_s:.2f}x feasible (target <= 2x)")


if __name__ == "__main__":
    main()

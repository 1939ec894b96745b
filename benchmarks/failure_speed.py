"""Failure speed: what modelling failures costs a run (issue 34's target: at most 1.3x the run without).

One seeded synthetic workload (:func:`engine.traces.generator.generate`, default job mix) on 8-GPU ``generic``
nodes at offered load 0.8 is simulated by one scheduler twice: without failures, and with a failure model
(default the ``stress`` preset: nodes failing every 200 h on average, with lemons; a checkpoint every hour costing
60 s; ``--job-failures RATE`` adds crashing jobs, which end runs early and so can make a run cheaper, not
dearer). It prints the CPU time of each
``simulate`` (workload generation excluded; CPU time, since on a shared machine wall time also counts other
processes) and the ratio, the failures met, and whether the engine ran compiled or interpreted.

Usage::

    .venv/bin/python -m benchmarks.failure_speed                    # 100,000 jobs on 1,024 GPUs
    .venv/bin/python -m benchmarks.failure_speed --jobs 10000 --gpus 256 --failures meta-rsc1
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from benchmarks._common import SEED, timed_run
from engine import parse_cluster
from engine._native import compiled_modules
from engine.sim.options import FAILURE_PRESETS, PreemptionModel, RunOptions
from engine.traces.generator import generate

CHECKPOINT_INTERVAL_S = 3600.0
CHECKPOINT_COST_S = 60.0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--gpus", type=int, default=1024, help="a multiple of 8 (8-GPU nodes)")
    parser.add_argument("--scheduler", default="easy-backfill")
    parser.add_argument("--failures", choices=[p for p in FAILURE_PRESETS if p != "none"], default="stress")
    parser.add_argument("--job-failures", type=float, default=0.0, metavar="RATE", help="share of jobs crashing")
    args = parser.parse_args(argv)
    if args.gpus % 8:
        raise SystemExit(f"--gpus: {args.gpus} is not a multiple of 8 (the benchmark uses 8-GPU nodes)")
    cluster = parse_cluster(f"{args.gpus // 8}x8:generic")
    jobs = generate(cluster, args.jobs, load=0.8, seed=SEED)
    off = RunOptions(preemption=PreemptionModel(checkpoint_interval_s=CHECKPOINT_INTERVAL_S))
    failures = FAILURE_PRESETS[args.failures].with_job_failures(args.job_failures, "--job-failures")
    on = replace(off, failures=replace(failures, checkpoint_cost_s=CHECKPOINT_COST_S))
    off_s, _ = timed_run(cluster, jobs, args.scheduler, off)
    on_s, result = timed_run(cluster, jobs, args.scheduler, on)
    engine = "compiled" if compiled_modules() else "interpreted"
    print(f"{args.scheduler}, {len(jobs):,} jobs on {cluster.n_gpus:,} GPUs ({engine} engine)")
    print(f"  failures off: {off_s:8.1f} s CPU")
    print(
        f"  failures on:  {on_s:8.1f} s CPU ({args.failures}, job failures {args.job_failures:g}, checkpoint cost: "
        f"{result.outage_node.size:,} node failures, {int(result.interruptions.sum()):,} interruptions)"
    )
    print(f"  ratio: {on_s / off_s:.2f}x (target <= 1.3x)")


if __name__ == "__main__":
    main()

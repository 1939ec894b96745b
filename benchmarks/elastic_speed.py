"""Elastic speed: what deadlines and elastic jobs cost a run (issue 36's target: at most 2x the rigid run without
deadlines).

One seeded synthetic workload (:func:`engine.traces.generator.generate`, default job mix) on 8-GPU ``generic``
nodes at offered load 0.8 is simulated by one scheduler twice: rigid and without deadlines, and with ElasticFlow's
deadlines (arrival + U(0.5, 1.5) x duration) and a share of elastic jobs (default 30 %, curve ``resnet50-a100``)
under feasible admission control. Both workloads hold the same submit times, durations and sizes (deadlines and
elasticity are drawn last). It prints the CPU time of each ``simulate`` (workload generation excluded), the ratio,
the rescales and deadlines met, and whether the engine ran compiled or interpreted.

Usage::

    .venv/bin/python -m benchmarks.elastic_speed                    # 100,000 jobs on 1,024 GPUs, elasticflow
    .venv/bin/python -m benchmarks.elastic_speed --quick            # 10,000 jobs on 256 GPUs
    .venv/bin/python -m benchmarks.elastic_speed --scheduler edf --elastic 0.5
    .venv/bin/python -m benchmarks.elastic_speed --scheduler edf --elastic 0     # deadlines and admission alone
"""

from __future__ import annotations

import argparse

from benchmarks._common import SEED, timed_run
from engine import parse_cluster
from engine._native import compiled_modules
from engine.analysis.metrics import summarize
from engine.sim.options import AdmissionModel, RunOptions
from engine.traces.generator import generate


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--gpus", type=int, default=1024, help="a multiple of 8 (8-GPU nodes)")
    parser.add_argument("--scheduler", default="elasticflow")
    parser.add_argument("--elastic", type=float, default=0.3, metavar="SHARE", help="share of jobs made elastic")
    parser.add_argument("--quick", action="store_true", help="10,000 jobs on 256 GPUs")
    args = parser.parse_args(argv)
    if args.quick:
        args.jobs, args.gpus = 10_000, 256
    if args.gpus % 8:
        raise SystemExit(f"--gpus: {args.gpus} is not a multiple of 8 (the benchmark uses 8-GPU nodes)")
    cluster = parse_cluster(f"{args.gpus // 8}x8:generic")
    rigid = generate(cluster, args.jobs, load=0.8, seed=SEED)
    timed = generate(cluster, args.jobs, load=0.8, seed=SEED, deadlines="elasticflow", elastic=args.elastic)
    rigid_s, _ = timed_run(cluster, rigid, args.scheduler, RunOptions())
    timed_s, result = timed_run(cluster, timed, args.scheduler, RunOptions(admission=AdmissionModel("feasible")))
    summary = summarize(result).to_dict()
    engine = "compiled" if compiled_modules() else "interpreted"
    print(f"{args.scheduler}, {len(rigid):,} jobs on {cluster.n_gpus:,} GPUs ({engine} engine)")
    print(f"  rigid, no deadlines:      {rigid_s:8.1f} s CPU")
    print(
        f"  deadlines + elastic:      {timed_s:8.1f} s CPU ({summary.get('elastic_jobs', 0):,} elastic jobs, "
        f"{summary.get('rescales', 0):,} rescales, deadline ratio {summary['deadline_ratio']:.3f}, "
        f"{summary['declined']:,} declined)"
    )
    print(f"  ratio: {timed_s / rigid_s:.2f}x (target <= 2x)")


if __name__ == "__main__":
    main()

"""Teacher speed on a long queue: each teacher's run time as a ratio to fifo's on the same queue.

Every job of a seeded synthetic workload (:func:`engine.traces.generator.generate`, default job mix, whole and
fractional jobs) is submitted at once onto a small two-type cluster, so the queue starts ``n`` long and drains
one completion at a time. Each registered teacher (``engine/rl/teacher.py``, the ``mixed`` window that picks
the shortest jobs that can start now) and ``fifo`` schedule it; the table gives the CPU seconds of ``simulate``
and the **ratio** to fifo's CPU seconds on the same queue, per queue length, then the ratio's **growth** from the
shortest queue to the longest. A teacher whose work per decision point grows with the queue shows a ratio that
grows with ``n`` (issue 32: 4,000 queued jobs took 35 s where fifo took 0.02 s); one that spends at most
``n log n`` per decision point keeps it nearly flat.

Usage::

    .venv/bin/python -m benchmarks.teacher_speed                       # 1,000 and 4,000 queued jobs
    .venv/bin/python -m benchmarks.teacher_speed --quick               # 500 and 1,000
    .venv/bin/python -m benchmarks.teacher_speed --sizes 2000 --teachers short-fast,fifo-fast

Numbers depend on the machine and on what else runs on it (and on whether the engine is compiled); the ratio
to fifo much less so.
"""

from __future__ import annotations

import argparse

from benchmarks._common import SEED, timed_run
from engine import parse_cluster
from engine.rl.teacher import TEACHERS
from engine.sim.job import Job
from engine.traces.generator import generate

CLUSTER = "2x8:A100-80,4x4:V100-32"


def queued_at_once(n_jobs: int) -> tuple[Job, ...]:
    """``n_jobs`` generated jobs (load 1 on :data:`CLUSTER`), every one submitted at time 0."""
    jobs = generate(parse_cluster(CLUSTER), n_jobs, load=1.0, seed=SEED)
    return tuple(
        Job(
            j.job_id,
            0.0,
            j.duration_s,
            j.gpus,
            j.gpu_fraction,
            j.vram_gib,
            j.user,
            j.job_type,
            j.priority,
            j.allowed_types,
            j.estimate_s,
            j.name,
        )
        for j in jobs
    )


def cpu_s(scheduler: str, jobs: tuple[Job, ...]) -> float:
    """CPU seconds of one ``simulate`` of ``scheduler`` on ``jobs`` over :data:`CLUSTER`."""
    took, result = timed_run(parse_cluster(CLUSTER), jobs, scheduler)
    assert (result.status == 0).all(), f"{scheduler}: not every job completed"
    return took


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="500 and 1,000 queued jobs")
    p.add_argument("--sizes", help="comma-separated queue lengths (default 1000,4000)")
    p.add_argument("--teachers", help="comma-separated teacher names (default: every registered teacher)")
    args = p.parse_args(argv)
    sizes = [int(s) for s in (args.sizes or ("500,1000" if args.quick else "1000,4000")).split(",")]
    names = args.teachers.split(",") if args.teachers else sorted(TEACHERS)
    unknown = sorted(set(names) - set(TEACHERS))
    if unknown:
        p.error(f"unknown teacher(s) {', '.join(unknown)}; valid: {', '.join(sorted(TEACHERS))}")
    print(f"cluster {CLUSTER}, every job queued at t=0; CPU seconds of simulate, and the ratio to fifo's")
    print(f"{'scheduler':<22}" + "".join(f"{f'n={n:,}':>22}" for n in sizes) + f"{'growth':>9}")
    queues = {n: queued_at_once(n) for n in sizes}
    fifo = {n: cpu_s("fifo", queues[n]) for n in sizes}
    print(f"{'fifo':<22}" + "".join(f"{fifo[n]:>12.3f} s {'':>7}" for n in sizes))
    for name in names:
        ratios = []
        row = f"{name:<22}"
        for n in sizes:
            took = cpu_s(name, queues[n])
            ratios.append(took / fifo[n])
            row += f"{took:>12.3f} s {ratios[-1]:>6.0f}x"
        print(row + f"{ratios[-1] / ratios[0]:>8.1f}x", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The ``evaluate`` subcommand of ``python -m engine``: seeded runs, mean, 95 % CI and paired differences."""

from __future__ import annotations

import math

from engine.analysis.evaluate import SCENARIOS, describe, evaluate, parse_scenario
from engine.analysis.metrics import ALL_METRICS
from engine.errors import EngineError
from engine.sim.options import PreemptionModel

_SHOWN_DIFFS = (
    "mean_wait_s",
    "p95_wait_s",
    "mean_jct_s",
    "mean_bounded_slowdown",
    "utilization",
    "gini_user_wait",
    "comm_overhead_gpu_h",
)
#: Paired differences shown too when the runs have energy metrics.
_SHOWN_ENERGY_DIFFS = ("energy_kwh", "cost_usd", "cluster_cost_usd", "co2_kg", "cost_per_job_usd")
#: Paired differences shown too when the runs model failures.
_SHOWN_RELIABILITY_DIFFS = ("interruptions", "failure_lost_gpu_h", "ettr")


def add_arguments(parser) -> None:
    from engine.cli.common import add_plugin_argument, add_run_option_arguments, int_in, output_path

    parser.add_argument(
        "--schedulers",
        metavar="A,B,...",
        help="comma-separated scheduler names, e.g. first-fit,sjf,rl:wait-mlp "
        "(default: the schedulers of a --scenario FILE)",
    )
    parser.add_argument(
        "--scenario",
        required=True,
        metavar="NAME|FILE|SPEC",
        help=f"a named scenario ({', '.join(SCENARIOS)}) or teaching preset, a scenario JSON file "
        "(the app's download), or 'cluster=4x8:V100-32;jobs=200;load=1.5'"
        " (optionally ';trace=FILE;skip=N': blocks of a trace after its first N jobs)",
    )
    parser.add_argument(
        "--seeds",
        type=int_in(1, 10_000),
        default=10,
        metavar="N",
        help="workload seeds 0..N-1 (default 10, at most 10,000)",
    )
    parser.add_argument("--baseline", metavar="NAME", help="paired differences against this one (default: first)")
    parser.add_argument("--json", type=output_path, metavar="FILE", help="also write every number as JSON")
    add_run_option_arguments(parser)
    add_plugin_argument(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress line")


def run(args) -> int:
    import sys

    from engine.analysis.energy import sets_energy
    from engine.cli.common import (
        format_table,
        format_value,
        run_options_from,
        summary_energy,
        write_json,
    )

    if args.seeds < 1:
        raise EngineError(f"--seeds must be >= 1, got {args.seeds}")
    scenario = parse_scenario(args.scenario)
    names = [s for s in args.schedulers.split(",") if s.strip()] if args.schedulers else list(scenario.schedulers)
    total = len(names) * args.seeds
    done = [0]

    def tick(name: str, seed: int) -> None:
        done[0] += 1
        if not args.quiet and sys.stderr.isatty():
            print(f"\r{done[0]}/{total} runs", end="", file=sys.stderr, flush=True)

    options = run_options_from(args, scenario.options)  # the flags given replace the scenario's own values
    energy = summary_energy(args, options, scenario.build_cluster(trusted=True), sets_energy(scenario.options))
    ev = evaluate(names, scenario, args.seeds, baseline=args.baseline, on_run=tick, options=options, energy=energy)
    if not args.quiet and sys.stderr.isatty():
        print(file=sys.stderr)
    preemption = ev.scenario.options.preemption
    every = preemption.checkpoint_interval_s
    lost = (
        "preempted jobs lose nothing"
        if preemption == PreemptionModel()
        else f"preempted jobs {'checkpoint when preempted' if every is None else f'checkpoint every {every:g} s'}, "
        f"restart costs {preemption.restart_overhead_s:g} s"
    )
    print(
        f"scenario {ev.scenario.name or args.scenario}: {describe(ev.scenario, '')}, "
        f"seeds 0..{args.seeds - 1}; {lost}; mean +/- 95 % CI"
    )
    stats = ev.stats()
    rows = []
    for m in ev.metric_keys:
        meta = ALL_METRICS[m]
        cells = [
            f"{format_value(a, meta.unit)} +/- {format_value(b, meta.unit)}"
            if not math.isnan(b)
            else format_value(a, meta.unit)
            for a, b in (stats[m][s] for s in ev.schedulers)
        ]
        rows.append([f"{m} ({meta.better})" if meta.better else m, *cells])
    print(format_table(["metric", *ev.schedulers], rows))
    others = [s for s in ev.schedulers if s != ev.baseline]
    if others:
        print(f"\npaired difference vs {ev.baseline} (same workloads): mean +/- 95 % CI (relative)")
        paired = ev.paired()
        rows = []
        extra = (k for k in (*_SHOWN_ENERGY_DIFFS, *_SHOWN_RELIABILITY_DIFFS) if k in ev.metric_keys)
        for m in [*_SHOWN_DIFFS, *extra]:
            unit = ALL_METRICS[m].unit
            rows.append(
                [
                    m,
                    *(
                        f"{format_value(d, unit)} +/- {format_value(h, unit)} ({r:+.1%})"
                        if not math.isnan(r)
                        else f"{format_value(d, unit)} +/- {format_value(h, unit)}"
                        for d, h, r in (paired[m][s] for s in others)
                    ),
                ]
            )
        print(format_table(["metric", *others], rows))
    if args.json:
        write_json(args.json, ev.to_dict())
    return 0

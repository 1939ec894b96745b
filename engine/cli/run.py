"""The ``simulate``, ``compare`` and ``list`` subcommands of ``python -m engine``."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from engine.cli.common import (
    add_cluster_argument,
    add_plugin_argument,
    add_run_arguments,
    add_trace_arguments,
    format_table,
    format_value,
    load_trace_arg,
    metric_label,
    output_path,
    progress,
    read_input_file,
    run_options_from,
    scheduler_list,
    summary_energy,
    write_json,
)
from engine.errors import EngineError
from engine.io import atomic_open


def _describe_run(cluster, trace) -> str:
    dropped = trace.report.dropped_total
    note = (
        f", {dropped} rows dropped ({', '.join(f'{k} {v}' for k, v in trace.report.dropped.items() if v)})"
        if dropped
        else ""
    )
    return (
        f"cluster {cluster.to_shorthand()} ({cluster.n_gpus} GPUs); trace {trace.source} "
        f"({trace.format}, {len(trace.jobs):,} jobs{note})"
    )


def _run_one(name: str, cluster, jobs, args: argparse.Namespace, options):
    """Build scheduler ``name`` and simulate ``jobs`` with seed ``args.seed`` and run ``options`` (a scheduler
    that fails is one line naming it: :func:`~engine.analysis.evaluate.run_scheduler`)."""
    from engine.analysis.evaluate import run_scheduler

    with progress(name, len(jobs), quiet=args.quiet) as on_progress:
        return run_scheduler(name, cluster, jobs, args.seed, options, on_progress)


def _options(args: argparse.Namespace, cluster):
    """The run options of the flags (over the defaults) and the energy model summaries use (or ``None``)."""
    from engine.sim.options import RunOptions

    options = run_options_from(args, RunOptions())
    return options, summary_energy(args, options, cluster)


# ------------------------------------------------------------------------------------------ simulate
def add_simulate_arguments(parser: argparse.ArgumentParser) -> None:
    add_cluster_argument(parser, required=False)
    add_trace_arguments(parser, required=False)
    parser.add_argument("--scheduler", metavar="NAME", help="scheduler name (see `list`)")
    parser.add_argument(
        "--scenario",
        type=Path,
        metavar="FILE",
        help="run a scenario JSON (the app's download) instead of --cluster/--trace/--scheduler: "
        "every scheduler it names, on its cluster and workload with its seed and run options, "
        "printed like compare (--trace gives the bytes of an uploaded trace it names)",
    )
    add_run_arguments(parser)
    parser.add_argument("--json", type=output_path, metavar="FILE", help="write the summary {metric: value} as JSON")
    parser.add_argument(
        "--jobs-csv", type=output_path, metavar="FILE", help="write one row per job (wait, JCT, GPUs, ...) as CSV"
    )
    parser.add_argument(
        "--users-csv",
        type=output_path,
        metavar="FILE",
        help="write one row per user (jobs, mean wait, GPU-hours, share, ...) as CSV",
    )


def _print_never_ran(report) -> None:
    """The never-ran sentence and each reason with its count (nothing when every job ran)."""
    if report.count:
        print(report.sentence())
        for reason, n in report.by_reason:
            print(f"  {n:,} job(s): {reason}")


def run_simulate(args: argparse.Namespace) -> int:
    from engine.analysis import never_ran
    from engine.analysis.metrics import ALL_METRICS, job_frame, summarize, user_frame
    from engine.sim.cluster import parse_cluster

    if args.scenario is not None:
        return _run_scenario(args)
    missing = [f"--{k}" for k in ("cluster", "trace", "scheduler") if getattr(args, k) is None]
    if missing:
        raise EngineError(f"simulate needs {', '.join(missing)} (or --scenario FILE)")
    cluster = parse_cluster(args.cluster)
    options, energy = _options(args, cluster)
    trace = load_trace_arg(args)
    result = _run_one(args.scheduler, cluster, trace.jobs, args, options)
    values = summarize(result, energy=energy).to_dict()
    print(f"{result.scheduler}: {_describe_run(cluster, trace)}; seed {args.seed}")
    print(
        format_table(
            ["metric", "value"], [[metric_label(k), format_value(v, ALL_METRICS[k].unit)] for k, v in values.items()]
        )
    )
    _print_never_ran(never_ran.of_result(result))
    if args.json:
        write_json(args.json, values)
    if args.jobs_csv:
        with atomic_open(args.jobs_csv, "w", newline="") as f:
            job_frame(result, energy).to_csv(f, index=False)
    if args.users_csv:
        with atomic_open(args.users_csv, "w", newline="") as f:
            user_frame(result, energy).to_csv(f, index=False)
    return 0


# ------------------------------------------------------------------------------------------ compare
def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    add_cluster_argument(parser)
    add_trace_arguments(parser)
    parser.add_argument(
        "--schedulers",
        required=True,
        type=scheduler_list,
        metavar="A,B,C",
        help="comma-separated scheduler names (see `list`)",
    )
    add_run_arguments(parser)
    parser.add_argument("--json", type=output_path, metavar="FILE", help="write {scheduler: {metric: value}} as JSON")


def run_compare(args: argparse.Namespace) -> int:
    from engine.analysis.metrics import summarize
    from engine.schedulers import make_scheduler
    from engine.sim.cluster import parse_cluster

    cluster = parse_cluster(args.cluster)
    options, energy = _options(args, cluster)
    for name in args.schedulers:  # every name checked before any (possibly long) run
        make_scheduler(name)
    trace = load_trace_arg(args)
    summaries = {
        name: summarize(_run_one(name, cluster, trace.jobs, args, options), energy=energy) for name in args.schedulers
    }
    _print_comparison(summaries, cluster, trace.jobs, _describe_run(cluster, trace) + f"; seed {args.seed}")
    if args.json:
        write_json(args.json, {name: s.to_dict() for name, s in summaries.items()})
    return 0


def _print_comparison(summaries, cluster, jobs, heading: str) -> None:
    """The table of ``compare``: every metric per scheduler, the best marked, and the jobs that never ran."""
    from engine.analysis import never_ran
    from engine.analysis.metrics import ALL_METRICS, best_columns, compare

    table = compare(summaries)
    best = best_columns(table)
    rows = []
    for key in table.index:
        marked = best.get(key, ())
        rows.append(
            [metric_label(key)]
            + [
                format_value(table.loc[key, n], ALL_METRICS[key].unit) + ("*" if n in marked else " ")
                for n in table.columns
            ]
        )
    print(heading)
    print(format_table(["metric", *(f"{n} " for n in table.columns)], rows))
    print("* best value of the metric (not marked when all schedulers tie)")
    _print_never_ran(never_ran.before_run(cluster, jobs))  # the same jobs under every scheduler


def scenario_trace_bytes(workload, path: str | None) -> bytes | None:
    """The bytes of a scenario's uploaded trace (referenced by its SHA-256, as the app writes it): the file
    ``path`` (``--trace``), else the file of its name in the working directory; ``None`` for other workloads."""
    if workload.source != "trace" or not workload.trace_sha256:
        return None
    file = Path(path or workload.trace_name)
    if not file.is_file():
        raise EngineError(f"the scenario's trace {workload.trace_name!r} is an upload: give the file with --trace PATH")
    return file.read_bytes()


def _run_scenario(args: argparse.Namespace) -> int:
    """``simulate --scenario FILE``: every scheduler of the scenario, printed and written like ``compare``."""
    from engine.analysis.energy import sets_energy
    from engine.analysis.metrics import summarize
    from engine.analysis.results import metrics_json, run_scenario
    from engine.analysis.scenario import Scenario

    given = [f"--{k}" for k in ("cluster", "scheduler") if getattr(args, k) is not None]
    if given:
        raise EngineError(f"--scenario holds the cluster and the schedulers; do not also give {', '.join(given)}")
    sc = Scenario.from_json(read_input_file(args.scenario, "--scenario"), trusted=True)
    if not sc.schedulers:
        raise EngineError(f"{args.scenario}: the scenario names no scheduler")
    options = run_options_from(args, sc.options)
    sc = replace(sc, options=options)
    energy = summary_energy(args, options, sc.build_cluster(trusted=True), sets_energy(sc.options))
    trace_bytes = scenario_trace_bytes(sc.workload, args.trace)
    with progress(sc.name or "scenario", quiet=args.quiet) as on_progress:
        run = run_scenario(sc, trace_bytes, trusted=True, on_progress=on_progress)
    heading = (
        f"scenario {sc.name or args.scenario}: cluster {run.cluster.to_shorthand()} ({run.cluster.n_gpus} "
        f"GPUs); {len(run.jobs):,} jobs ({sc.workload.source}); seed {sc.seed}"
    )
    summaries = {name: summarize(r, energy=energy) for name, r in run.results.items()}
    _print_comparison(summaries, run.cluster, run.jobs, heading)
    if args.json:
        write_json(args.json, metrics_json(summaries))
    return 0


# ------------------------------------------------------------------------------------------ list
def add_list_arguments(parser: argparse.ArgumentParser) -> None:
    """``list --plugin FILE_OR_MODULE`` also lists the plug-in's schedulers; ``--json`` prints it all as JSON."""
    add_plugin_argument(parser)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print JSON: schedulers, trace formats, GPU types (power, price) and price lists",
    )


def run_list(args: argparse.Namespace) -> int:
    from engine.schedulers import PREFIXES, SCHEDULERS
    from engine.schedulers.ordering import ORDERS
    from engine.schedulers.placement import PLACEMENTS
    from engine.sim.cluster import DEFAULT_CATALOG, PRICE_LISTS
    from engine.traces import TRACE_FORMATS

    if args.json:
        print(
            json.dumps(
                {
                    "schedulers": sorted(SCHEDULERS),
                    "trace_formats": list(TRACE_FORMATS),
                    "gpu_types": [t.to_dict() for t in DEFAULT_CATALOG.values()],
                    "price_lists": {name: p.to_dict() for name, p in PRICE_LISTS.items()},
                },
                indent=2,
            )
        )
        return 0

    def section(title: str, items: list[tuple[str, str]]) -> None:
        print(title)
        width = max(len(k) for k, _ in items)
        for k, v in items:
            print(f"  {k.ljust(width)}  {v}")

    section("Schedulers:", [(name, _first_sentence(spec.summary)) for name, spec in sorted(SCHEDULERS.items())])
    combos = (
        f"also ORDER+PLACEMENT, e.g. sjf+best-fit; orders: {', '.join(ORDERS)}; placements: {', '.join(PLACEMENTS)}"
    )
    print(f"  ({combos}" + "".join(f"; {p}:<name>" for p in sorted(PREFIXES)) + ")")
    section("Trace formats:", [(name, fmt.summary) for name, fmt in TRACE_FORMATS.items()])
    section(
        "GPU types:",
        [
            (t.name, f"{t.vram_gib:g} GiB, speed {t.speed:g}, {t.board_w:g} W, ${t.price_per_h:g}/h")
            for t in DEFAULT_CATALOG.values()
        ],
    )
    return 0


def _first_sentence(text: str) -> str:
    head, dot, _ = text.partition(". ")
    return head + "." if dot else text

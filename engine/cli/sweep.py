"""The ``sweep`` and ``plan`` subcommands of ``python -m engine`` (registered in :mod:`engine.cli`).

    python -m engine sweep --cluster 4x8:A100-80 --jobs 300 --load 0.5,0.8,1.1 --schedulers fifo,sjf --seeds 5 \\
        --out results.csv --json meta.json
    python -m engine sweep --spec sweep.json --out results.csv          # a spec the app's Explore page wrote
    python -m engine plan --trace month.csv --node 8:A100-80 --scheduler fifo --scheduler sjf \\
        --target 'p95_wait_s<=1800' --json plan.json
    python -m engine plan --trace month.csv --node 8:A100-80 --node 8:H100-80 --minimize cluster_price_per_h \\
        --scheduler fifo --target 'p95_wait_s<=1800' --json plan.json    # the cheapest mix, and the runner-up

Both run on Ray: a local Ray on this machine's cores, or the cluster at ``--address`` (default ``RAY_ADDRESS``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from engine.cli.common import (
    add_cluster_argument,
    add_plugin_argument,
    add_run_option_arguments,
    add_trace_arguments,
    add_trace_options,
    format_table,
    format_value,
    load_trace_arg,
    output_path,
    progress,
    read_input_file,
    run_options_from,
    scheduler_list,
    trace_options,
    wants_energy,
    write_json,
)
from engine.errors import EngineError
from engine.io import atomic_write_files, json_bytes

#: Failed cells listed on stderr (all of them are in the --json file).
SHOWN_FAILURES = 10


def number_list(text: str) -> list[float]:
    """argparse type: comma-separated numbers > 0, each once (``0.5,0.8,1.1``)."""
    from engine.analysis.sweep import SweepError, parse_numbers

    try:
        return list(parse_numbers(text, "list"))
    except SweepError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def axis(text: str) -> tuple[str, tuple[float, ...]]:
    """argparse type: ``OPTION=V1,V2`` (:func:`~engine.analysis.sweep.parse_axis`)."""
    from engine.analysis.sweep import SweepError, parse_axis

    try:
        return parse_axis(text)
    except SweepError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def _add_ray_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--address",
        metavar="ADDR",
        help="join this Ray cluster (default: RAY_ADDRESS, else start a local Ray on this machine)",
    )
    parser.add_argument(
        "--num-cpus",
        type=positive_int,
        metavar="N",
        help="CPUs of the local Ray started when there is no address (default: all)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_plugin_argument(parser)  # imported by main here, and by every Ray worker before it builds a scheduler


# ------------------------------------------------------------------------------------------ sweep
def add_sweep_arguments(parser: argparse.ArgumentParser) -> None:
    add_cluster_argument(
        parser,
        action="append",
        required=False,
        help="a cluster of the grid (repeat for several): shorthand 4x8:A100-80,... or .json",
    )
    parser.add_argument("--trace", metavar="PATH", help="sweep this trace (the loader options below apply)")
    add_trace_options(parser, load_scale=False)
    parser.add_argument(
        "--load-scale",
        type=number_list,
        metavar="X,Y",
        help="with --trace: load scales of the grid (submit times divided by each; default 1)",
    )
    parser.add_argument("--jobs", type=positive_int, metavar="N", help="generated workloads of N jobs")
    parser.add_argument("--load", type=number_list, metavar="L1,L2", help="with --jobs: offered loads of the grid")
    parser.add_argument("--schedulers", type=scheduler_list, metavar="A,B", help="comma-separated scheduler names")
    parser.add_argument(
        "--seeds", type=positive_int, metavar="K", help="seeds 0..K-1 (workload and simulation seeds; default 1)"
    )
    parser.add_argument(
        "--grid",
        action="append",
        type=axis,
        metavar="OPTION=V1,V2",
        help="a run option as an axis of the grid (repeat for several), by its key in the scenario's options "
        "JSON, e.g. failures.mtbf_h=100,1000,10000 or preemption.checkpoint_interval_s=600,3600; each row "
        "carries its value in a column of that name",
    )
    parser.add_argument(
        "--spec",
        type=Path,
        metavar="FILE",
        help="the grid as JSON (e.g. downloaded from the app's Explore page) instead of the options, "
        "or a scenario JSON (the app's download) as the grid's base: --cluster, --load, --seeds "
        "and --schedulers then vary it; --trace gives the bytes of an uploaded trace it names",
    )
    parser.add_argument(
        "--out",
        required=True,
        type=output_path,
        metavar="FILE",
        help="results CSV: one row per cluster x load x option value x seed x scheduler, every metric (finished "
        "cells are kept in FILE.cells.jsonl until it is written: a stopped sweep run again "
        "resumes)",
    )
    parser.add_argument(
        "--json", type=output_path, metavar="FILE", help="write backend, address, cells, failures and wall time as JSON"
    )
    add_run_option_arguments(parser)
    _add_ray_arguments(parser)


def sweep_spec(args: argparse.Namespace):
    """``(spec, carried)``: the :class:`~engine.analysis.sweep.SweepSpec` of the command line, with the run-option
    flags given applied to its base's options, and whether its file sets an energy model of its own
    (:func:`~engine.analysis.energy.sets_energy`)."""
    from dataclasses import replace

    from engine.analysis.energy import sets_energy

    spec = _grid(args)
    base = replace(spec.base, options=run_options_from(args, spec.base.options))
    return replace(spec, base=base, axes=spec.axes + tuple(args.grid or ())), sets_energy(spec.base.options)


def _grid(args: argparse.Namespace):
    """The spec of ``--spec`` (a sweep spec, or a scenario file whose cluster, load, seeds and
    schedulers ``--cluster``, ``--load``/``--load-scale``, ``--seeds`` and ``--schedulers`` may replace) or of
    the grid options."""
    from dataclasses import replace

    from engine.analysis.scenario import Scenario
    from engine.analysis.sweep import SweepSpec

    grid = {
        "--cluster": args.cluster,
        "--jobs": args.jobs,
        "--load": args.load,
        "--load-scale": args.load_scale,
        "--schedulers": args.schedulers,
        "--seeds": args.seeds,
    }
    if args.spec is not None:
        given = [k for k, v in grid.items() if v is not None]
        data = json.loads(read_input_file(args.spec, "--spec"))
        if isinstance(data, dict) and ("workload" in data or "cluster" in data):  # a scenario file: the base
            sc = Scenario.from_dict(data, trusted=True)
            if args.schedulers:
                sc = replace(sc, schedulers=tuple(args.schedulers))
            return SweepSpec.of_scenario(sc, args.cluster, args.load or args.load_scale, args.seeds or 1)
        if given or args.grid:
            given += ["--grid"] if args.grid else []
            raise EngineError(f"--spec holds the whole grid; do not also give {', '.join(given)}")
        return SweepSpec.from_dict(data, trusted=True)
    missing = [k for k in ("--cluster", "--schedulers") if grid[k] is None]
    if missing:
        raise EngineError(f"sweep needs {' and '.join(missing)} (or --spec FILE)")
    if (args.trace is None) == (args.jobs is None):
        raise EngineError("sweep needs either --trace FILE or --jobs N with --load L1,L2,...")
    if args.jobs is not None and (args.load is None or args.load_scale is not None):
        raise EngineError("--jobs needs --load L1,L2,... (--load-scale is for --trace)")
    if args.trace is not None and args.load is not None:
        raise EngineError("--load is for generated workloads (--jobs); a trace takes --load-scale X,Y")
    options = {k: v for k, v in trace_options(args).items() if k != "load_scale" and v not in (None, False)}
    return SweepSpec.grid(
        tuple(args.cluster),
        tuple(args.schedulers),
        seeds=args.seeds or 1,
        jobs=args.jobs,
        loads=tuple(args.load or args.load_scale or ()),
        trace=args.trace,
        trace_options=options if args.trace is not None else None,
    )


def _uploaded_trace(spec, args: argparse.Namespace):
    """The jobs of a spec whose trace is an upload (see :func:`engine.cli.run.scenario_trace_bytes`), else None."""
    from engine.cli.run import scenario_trace_bytes

    data = scenario_trace_bytes(spec.base.workload, args.trace)
    return None if data is None else spec.base.workload.load_trace(data).jobs


def journal_path(out: Path) -> Path:
    """Where a sweep writing ``out`` keeps its finished cells until ``out`` is written."""
    return out.with_name(out.name + ".cells.jsonl")


def _inputs(spec, args: argparse.Namespace) -> dict[str, list[int]]:
    """Size and modification time of each file the cells read (trace, plug-ins): a journal kept while they
    were different is not resumed."""
    files = [args.trace, spec.base.workload.trace_path, *(p for p in args.plugin or () if p.endswith(".py"))]
    stats = {str(Path(f).resolve()): Path(f).stat() for f in files if f and Path(f).is_file()}
    return {f: [st.st_size, st.st_mtime_ns] for f, st in sorted(stats.items())}


def run_sweep(args: argparse.Namespace) -> int:
    from engine.analysis.sweep import CellJournal
    from engine.analysis.sweep import run_sweep as sweep

    spec, carried = sweep_spec(args)
    energy = wants_energy(args, carried)
    journal = CellJournal(journal_path(args.out), spec, {**_inputs(spec, args), "energy": energy})
    kept = journal.open()
    if kept:
        print(f"resuming: {len(kept):,} of {spec.cells:,} cells kept in {journal.path} by a sweep that stopped")
    try:
        with progress("sweep", spec.cells, quiet=args.quiet, unit="cell") as on_progress:
            frame = sweep(
                spec,
                trace_jobs=_uploaded_trace(spec, args),
                address=args.address,
                num_cpus=args.num_cpus,
                on_progress=on_progress,
                keep_ray=False,
                plugins=args.plugin,
                energy=energy,
                kept=kept,
                on_cell=journal.add,
            )
    finally:
        journal.close()
    meta, failures = frame.attrs["meta"], frame.attrs["failures"]
    # The CSV and the meta change together; the journal goes only once both are written (a kill before then
    # resumes, and rewrites both from the kept cells).
    files = {args.out: frame.to_csv(index=False).encode("utf-8")}
    if args.json:
        files[args.json] = json_bytes({**meta, "failures": failures})
    atomic_write_files(files)
    if not failures:  # failed cells run again when the same sweep is run again
        journal.remove()
    print(
        f"{spec.cells:,} cells ({len(spec.clusters)} cluster(s) x {len(spec.loads)} load(s) x "
        + "".join(f"{len(values)} {path} value(s) x " for path, values in spec.axes)
        + f"{spec.seeds} seed(s) x {len(spec.schedulers)} scheduler(s)) on Ray at {meta['address']} ({meta['cpus']} CPUs): "
        f"{meta['completed']:,} completed, {meta['failed']:,} failed in {meta['wall_s']:.1f} s; wrote {args.out}"
    )
    for f in failures[:SHOWN_FAILURES]:
        print(
            "failed: " + ", ".join(f"{k}={v}" for k, v in f.items() if k != "error") + f": {f['error']}",
            file=sys.stderr,
        )
    if len(failures) > SHOWN_FAILURES:
        print(f"... and {len(failures) - SHOWN_FAILURES} more failed cells (all in --json)", file=sys.stderr)
    if failures:
        print(
            f"the {meta['completed']:,} completed cells are kept in {journal.path}: the same command runs only "
            "the failed ones again",
            file=sys.stderr,
        )
    return 1 if failures else 0


# ------------------------------------------------------------------------------------------ plan
def add_plan_arguments(parser: argparse.ArgumentParser) -> None:
    add_trace_arguments(parser)
    parser.add_argument(
        "--node",
        required=True,
        action="append",
        metavar="GPUS:TYPE",
        help="the node shape to count, e.g. 8:A100-80; repeat it (with --minimize) to find the "
        "cheapest mix of several shapes",
    )
    parser.add_argument(
        "--minimize",
        choices=["cluster_price_per_h"],
        help="search mixes of the --node shapes for the cheapest cluster (USD per hour under "
        "--price-list) that meets the target, and its runner-up (default with several --node)",
    )
    parser.add_argument(
        "--scheduler",
        required=True,
        action="append",
        type=scheduler_list,
        metavar="NAME",
        help="scheduler (repeat, or A,B, to find which one needs the fewest GPUs)",
    )
    parser.add_argument(
        "--target",
        required=True,
        metavar="METRIC<=VALUE",
        help="what the run must meet: any metric of compare --json with <= or >=, e.g. 'p95_wait_s<=1800'; "
        "under a failure model also a reliability metric, e.g. 'ettr>=0.95' or 'failure_lost_gpu_h<=50'",
    )
    add_cluster_argument(
        parser,
        required=False,
        help="grow the group of --node's shape in this cluster (a node mix) instead of a cluster of that shape only",
    )
    parser.add_argument(
        "--max-nodes",
        type=positive_int,
        metavar="N",
        help="the most nodes tried (of each shape with --minimize; default 1024, 64 with --minimize)",
    )
    parser.add_argument("--seed", type=int, default=0, help="simulation seed (default 0)")
    parser.add_argument(
        "--json",
        type=output_path,
        metavar="FILE",
        help="write nodes, the metric at nodes and nodes - 1, and every probe as JSON",
    )
    add_run_option_arguments(parser)
    _add_ray_arguments(parser)


def run_plan(args: argparse.Namespace) -> int:
    from engine.analysis.plan import TARGET_METRICS, parse_target, plain_rows, plan, plan_json
    from engine.sim.options import RunOptions

    names = [n for group in args.scheduler for n in group]
    if len(set(names)) != len(names):
        raise EngineError(f"--scheduler lists a name more than once: {', '.join(names)}")
    target = parse_target(args.target)
    options = run_options_from(args, RunOptions())
    target.check_options(options)  # before the trace is read
    if args.minimize or len(args.node) > 1:
        return _run_cost_plan(args, names, target, options)
    trace = load_trace_arg(args)
    with progress("plan", quiet=args.quiet, unit="run") as on_progress:
        frame = plan(
            trace.jobs,
            args.node[0],
            names,
            target,
            cluster=args.cluster,
            max_nodes=args.max_nodes or 1024,
            seed=args.seed,
            address=args.address,
            num_cpus=args.num_cpus,
            on_progress=on_progress,
            plugins=args.plugin,
            options=options,
        )
    meta = frame.attrs["meta"]
    unit = TARGET_METRICS[target.metric].unit
    shape = meta["node"] if meta["cluster"] is None else f"{meta['node']} nodes added to {meta['cluster']}"
    print(
        f"fewest nodes of {shape} meeting {target} on {trace.source} ({len(trace.jobs):,} jobs); "
        f"{meta['runs']} runs in {meta['rounds']} rounds on Ray at {meta['address']} ({meta['cpus']} CPUs), "
        f"{meta['wall_s']:.1f} s"
    )
    answers = {r["scheduler"]: r for r in plain_rows(frame)}
    rows = [
        [
            s,
            "-" if a["nodes"] is None else str(a["nodes"]),
            "-" if a["gpus"] is None else str(a["gpus"]),
            format_value(a["value_at_nodes"], unit),
            format_value(a["value_at_nodes_minus_1"], unit),
            a["error"] or ("" if a["nodes"] is not None else f"not met with {args.max_nodes or 1024} nodes"),
        ]
        for s, a in answers.items()
    ]
    print(format_table(["scheduler", "nodes", "GPUs", f"{target.metric} at nodes", "at nodes - 1", "note"], rows))
    if len(names) > 1 and meta["fewest_gpus"] is not None:
        print(f"fewest GPUs: {meta['fewest_gpus']}")
    if args.json:
        write_json(args.json, plan_json(frame))
    return 1 if frame["error"].notna().any() else 0


def _run_cost_plan(args: argparse.Namespace, names: list[str], target, options) -> int:
    """``plan --node A --node B --minimize cluster_price_per_h``: the cheapest mix and its runner-up."""
    from engine.analysis.plan import TARGET_METRICS, plain_rows, plan_json, plan_mix

    if args.cluster is not None:
        raise EngineError("--cluster grows one shape; a plan over --minimize builds its clusters from --node only")
    trace = load_trace_arg(args)
    with progress("plan", quiet=args.quiet, unit="run") as on_progress:
        frame = plan_mix(
            trace.jobs,
            args.node,
            names,
            target,
            minimize=args.minimize or "cluster_price_per_h",
            max_nodes=args.max_nodes or 64,
            seed=args.seed,
            options=options,
            address=args.address,
            num_cpus=args.num_cpus,
            on_progress=on_progress,
            plugins=args.plugin,
        )
    meta = frame.attrs["meta"]
    unit = TARGET_METRICS[target.metric].unit
    print(
        f"cheapest mix of {', '.join(meta['shapes'])} meeting {target} on {trace.source} "
        f"({len(trace.jobs):,} jobs), prices {meta['price_list']}; {meta['runs']} runs in {meta['rounds']} rounds "
        f"on Ray at {meta['address']} ({meta['cpus']} CPUs), {meta['wall_s']:.1f} s"
    )
    answers = {r["scheduler"]: r for r in plain_rows(frame)}
    rows = [
        [
            s,
            a["cluster"] or "-",
            format_value(a["cluster_price_per_h"], "USD/h"),
            format_value(a["value"], unit),
            a["runner_up"] or "-",
            format_value(a["runner_up_price_per_h"], "USD/h"),
            a["error"] or ("" if a["cluster"] else f"not met with {args.max_nodes or 64} nodes of each shape"),
        ]
        for s, a in answers.items()
    ]
    print(format_table(["scheduler", "cluster", "USD/h", target.metric, "runner-up", "USD/h", "note"], rows))
    if args.json:
        write_json(args.json, plan_json(frame))
    return 1 if frame["error"].notna().any() else 0

"""The command line: ``python -m engine COMMAND ...`` (run ``python -m engine --help`` for the list).

Adding a subcommand
-------------------
Write two functions in any module, ``add_arguments(parser: argparse.ArgumentParser) -> None`` and
``run(args: argparse.Namespace) -> int`` (the exit code), then add one entry to :data:`COMMANDS`::

    "train": Command("train an RL agent on a scenario", "engine.rl.train:add_arguments", "engine.rl.train:run"),

Both are ``"module:function"`` strings, imported only when that command is the one being run, so heavy
imports (torch, gymnasium) in one command never slow down or break another (``python -m engine list``
imports neither). Raise :class:`~engine.errors.EngineError` (or let ``OSError``/``ValueError`` escape) for
bad input: :func:`main` prints it as one line on stderr and exits with status 2. Argument errors are one line
and status 2 too; a command whose module cannot be imported (a missing optional dependency) is one line and
status 1. ``python -m engine --traceback COMMAND ...`` shows the full traceback instead.

Helpers other commands can reuse: :func:`add_cluster_argument`, :func:`add_trace_arguments` /
:func:`load_trace_arg`, :func:`add_run_arguments` / :func:`preemption_arg`, :func:`progress`,
:func:`output_path`, :func:`write_json`, :func:`format_table`, :func:`format_value`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from .errors import EngineError, TraceError


@dataclass(frozen=True)
class Command:
    """A subcommand: its one-line help and where its two functions live (``"module:function"``)."""

    help: str
    add_arguments: str
    run: str


#: Subcommands, in the order ``--help`` lists them.
COMMANDS: dict[str, Command] = {
    "simulate": Command("run one scheduler on a trace and print its metrics",
                        "engine.cli:add_simulate_arguments", "engine.cli:run_simulate"),
    "compare": Command("run several schedulers on the same trace and compare their metrics",
                       "engine.cli:add_compare_arguments", "engine.cli:run_compare"),
    "list": Command("list schedulers, trace formats and GPU types",
                    "engine.cli:add_list_arguments", "engine.cli:run_list"),
    "generate": Command("generate a seeded synthetic workload (canonical CSV) at a target offered load",
                        "engine.traces.cli:add_generate_arguments", "engine.traces.cli:run_generate"),
    "trace": Command("trace info PATH: rows kept and dropped by reason, span, GPU-hours, users, offered load",
                     "engine.traces.cli:add_trace_arguments", "engine.traces.cli:run_trace"),
    "train": Command("train an RL scheduler (MaskablePPO) from a config file or preset",
                     "engine.rl.train:add_arguments", "engine.rl.train:run"),
    "evaluate": Command("run schedulers on seeded workloads: mean, 95 % CI and paired differences",
                        "engine.evaluate:add_arguments", "engine.evaluate:run"),
}


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line (the program name, the problem, where to look)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _resolve(target: str) -> Callable:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser for ``python -m engine``; only ``command``'s arguments are loaded (its module imported)."""
    parser = _Parser(prog="python -m engine", description="GPU-cluster scheduling playground: simulation engine.")
    parser.add_argument("--traceback", action="store_true", help="show the full traceback on errors (debugging)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name, cmd in COMMANDS.items():
        text = cmd.help.replace("%", "%%")  # argparse %-formats help strings
        p = sub.add_parser(name, help=text, description=text)
        if name == command:
            _resolve(cmd.add_arguments)(p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    try:
        parser = build_parser(command if command in COMMANDS else None)
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2), already printed
        return exc.code if isinstance(exc.code, int) else 2
    except ImportError as exc:  # a command whose optional dependencies are missing
        print(f"error: command {command!r} cannot be loaded: {_one_line(exc)}", file=sys.stderr)
        return 1
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(_resolve(COMMANDS[args.command].run)(args) or 0)
    except BrokenPipeError:  # output piped into `head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (EngineError, OSError, ValueError) as exc:
        if args.traceback:
            raise
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except ImportError as exc:
        if args.traceback:
            raise
        print(f"error: command {command!r} needs a module that cannot be loaded: {_one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}"
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


# ------------------------------------------------------------------------------------------ shared helpers
def positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    v = _float(text)
    if not v > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return v


def non_negative_float(text: str) -> float:
    """argparse type: a finite number >= 0."""
    v = _float(text)
    if not v >= 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return v


def _float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return v


def output_path(text: str) -> Path:
    """argparse type: a file to write, whose folder must exist (checked before any long run starts)."""
    path = Path(text)
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text}: folder {path.parent} does not exist")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text}: it is a folder")
    return path


def add_cluster_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", required=True, metavar="SPEC",
                        help="cluster shorthand NODESxGPUS:TYPE[,...] (e.g. 4x8:A100-80,2x4:V100-32) or a .json file")


def add_trace_arguments(parser: argparse.ArgumentParser) -> None:
    """``--trace PATH`` plus every loader option (``--format --skip-bad --time-unit --map --first --window
    --load-scale``)."""
    from .traces.cli import add_trace_options

    parser.add_argument("--trace", required=True, metavar="PATH", help="workload trace file")
    add_trace_options(parser)


def load_trace_arg(args: argparse.Namespace):
    """Load ``args.trace`` with the loader options; a trace without any job is an error."""
    from .traces import load_trace
    from .traces.cli import trace_options

    trace = load_trace(args.trace, **trace_options(args))
    if not trace.jobs:
        dropped = ", ".join(f"{k} {v}" for k, v in trace.report.dropped.items() if v) or "none"
        raise TraceError(f"no jobs to simulate ({trace.report.rows} rows; dropped: {dropped})", path=args.trace)
    return trace


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """``--seed``, the preemption model and ``--quiet``: options of every command that runs simulations."""
    parser.add_argument("--seed", type=int, default=0, help="seed for randomised schedulers (default 0)")
    add_preemption_arguments(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def add_preemption_arguments(parser: argparse.ArgumentParser) -> None:
    """``--checkpoint-interval`` and ``--restart-overhead`` (read back with :func:`preemption_arg`)."""
    parser.add_argument("--checkpoint-interval", type=positive_float, metavar="S",
                        help="preempted jobs keep work only up to their last checkpoint, taken every S seconds "
                             "(default: no work is lost)")
    parser.add_argument("--restart-overhead", type=non_negative_float, default=0.0, metavar="S",
                        help="seconds of extra work each restart after a preemption costs (default 0)")


def preemption_arg(args: argparse.Namespace):
    from .simulator import PreemptionModel

    return PreemptionModel(checkpoint_interval_s=args.checkpoint_interval, restart_overhead_s=args.restart_overhead)


@contextmanager
def progress(desc: str, total: int | None = None, *,
             quiet: bool = False) -> Iterator[Callable[[int, int], None] | None]:
    """A tqdm bar on stderr as an ``on_progress(done, total)`` callback; ``None`` when quiet or not a terminal."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    from tqdm import tqdm

    bar = tqdm(desc=desc, total=total, unit="job", file=sys.stderr, leave=False, dynamic_ncols=True)

    def update(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    try:
        yield update
    finally:
        bar.close()


def write_json(path: str | Path, data: Any) -> None:
    """Write ``data`` as indented JSON (strict: NaN and infinity are refused, write them as ``None``)."""
    Path(path).write_text(json.dumps(data, indent=2, allow_nan=False) + "\n", encoding="utf-8")


def format_value(value: float | None, unit: str) -> str:
    """A metric value for a table: counts as integers, seconds to 0.1, GPU-hours to 0.01, ratios to 0.001."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if unit in ("jobs", "count"):
        return f"{int(value):,}"
    if unit == "s":
        return f"{value:,.1f}"
    if unit == "GPU-h":
        return f"{value:,.2f}"
    return f"{value:,.3f}"


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Plain-text table: first column left-aligned, the others right-aligned, two spaces apart."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        parts = [str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return "  ".join(parts).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def _label(key: str) -> str:
    from .metrics import METRICS

    m = METRICS[key]
    return m.label if m.unit in ("jobs", "count", "ratio") else f"{m.label} ({m.unit})"


def _describe_run(cluster, trace) -> str:
    dropped = trace.report.dropped_total
    note = f", {dropped} rows dropped ({', '.join(f'{k} {v}' for k, v in trace.report.dropped.items() if v)})" \
        if dropped else ""
    return (f"cluster {cluster.to_shorthand()} ({cluster.n_gpus} GPUs); trace {trace.source} "
            f"({trace.format}, {len(trace.jobs):,} jobs{note})")


def _run_one(name: str, cluster, jobs, args: argparse.Namespace):
    """Build scheduler ``name`` and simulate ``jobs`` with the run options of ``args``."""
    from .schedulers import make_scheduler
    from .simulator import simulate

    scheduler = make_scheduler(name)
    with progress(name, len(jobs), quiet=args.quiet) as on_progress:
        return simulate(cluster, jobs, scheduler, seed=args.seed, preemption=preemption_arg(args),
                        on_progress=on_progress)


# ------------------------------------------------------------------------------------------ simulate
def add_simulate_arguments(parser: argparse.ArgumentParser) -> None:
    add_cluster_argument(parser)
    add_trace_arguments(parser)
    parser.add_argument("--scheduler", required=True, metavar="NAME", help="scheduler name (see `list`)")
    add_run_arguments(parser)
    parser.add_argument("--json", type=output_path, metavar="FILE", help="write the summary {metric: value} as JSON")
    parser.add_argument("--jobs-csv", type=output_path, metavar="FILE",
                        help="write one row per job (wait, JCT, GPUs, ...) as CSV")
    parser.add_argument("--users-csv", type=output_path, metavar="FILE",
                        help="write one row per user (jobs, mean wait, GPU-hours, share, ...) as CSV")


def run_simulate(args: argparse.Namespace) -> int:
    from .cluster import parse_cluster
    from .metrics import METRICS, job_frame, summarize, user_frame

    cluster = parse_cluster(args.cluster)
    trace = load_trace_arg(args)
    result = _run_one(args.scheduler, cluster, trace.jobs, args)
    summary = summarize(result)
    values = summary.to_dict()
    print(f"{result.scheduler}: {_describe_run(cluster, trace)}; seed {args.seed}")
    print(format_table(["metric", "value"], [[_label(k), format_value(values[k], m.unit)]
                                             for k, m in METRICS.items()]))
    if result.unschedulable_reasons:
        j, reason = next(iter(sorted(result.unschedulable_reasons.items())))
        print(f"{len(result.unschedulable_reasons)} job(s) can never run on this cluster, e.g. job {j}: {reason}")
    if args.json:
        write_json(args.json, values)
    if args.jobs_csv:
        job_frame(result).to_csv(args.jobs_csv, index=False)
    if args.users_csv:
        user_frame(result).to_csv(args.users_csv, index=False)
    return 0


# ------------------------------------------------------------------------------------------ compare
def scheduler_list(text: str) -> list[str]:
    """argparse type: comma-separated scheduler names, each once."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected comma-separated scheduler names, e.g. fifo,sjf,easy-backfill")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise argparse.ArgumentTypeError(f"scheduler {repeated[0]!r} is listed more than once")
    return names


def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    add_cluster_argument(parser)
    add_trace_arguments(parser)
    parser.add_argument("--schedulers", required=True, type=scheduler_list, metavar="A,B,C",
                        help="comma-separated scheduler names (see `list`)")
    add_run_arguments(parser)
    parser.add_argument("--json", type=output_path, metavar="FILE", help="write {scheduler: {metric: value}} as JSON")


def run_compare(args: argparse.Namespace) -> int:
    from .cluster import parse_cluster
    from .metrics import METRICS, best_columns, compare, summarize
    from .schedulers import make_scheduler

    cluster = parse_cluster(args.cluster)
    for name in args.schedulers:  # every name checked before any (possibly long) run
        make_scheduler(name)
    trace = load_trace_arg(args)
    summaries = {name: summarize(_run_one(name, cluster, trace.jobs, args)) for name in args.schedulers}
    table = compare(summaries)
    best = best_columns(table)
    rows = []
    for key, metric in METRICS.items():
        marked = best.get(key, ())
        rows.append([_label(key)] + [format_value(table.loc[key, n], metric.unit) + ("*" if n in marked else " ")
                                     for n in table.columns])
    print(_describe_run(cluster, trace) + f"; seed {args.seed}")
    print(format_table(["metric", *(f"{n} " for n in table.columns)], rows))
    print("* best value of the metric (not marked when all schedulers tie)")
    if args.json:
        write_json(args.json, {name: s.to_dict() for name, s in summaries.items()})
    return 0


# ------------------------------------------------------------------------------------------ list
def add_list_arguments(parser: argparse.ArgumentParser) -> None:
    """``list`` takes no options."""


def run_list(args: argparse.Namespace) -> int:
    from .cluster import DEFAULT_CATALOG
    from .schedulers import PREFIXES, SCHEDULERS
    from .schedulers.ordering import ORDERS
    from .schedulers.placement import PLACEMENTS
    from .traces import TRACE_FORMATS

    def section(title: str, items: list[tuple[str, str]]) -> None:
        print(title)
        width = max(len(k) for k, _ in items)
        for k, v in items:
            print(f"  {k.ljust(width)}  {v}")

    section("Schedulers:", [(name, _first_sentence(spec.summary)) for name, spec in sorted(SCHEDULERS.items())])
    combos = (f"also ORDER+PLACEMENT, e.g. sjf+best-fit; orders: {', '.join(ORDERS)}; "
              f"placements: {', '.join(PLACEMENTS)}")
    print(f"  ({combos}" + "".join(f"; {p}:<name>" for p in sorted(PREFIXES)) + ")")
    section("Trace formats:", [(name, fmt.summary) for name, fmt in TRACE_FORMATS.items()])
    section("GPU types:", [(t.name, f"{t.vram_gib:g} GiB, speed {t.speed:g}") for t in DEFAULT_CATALOG.values()])
    return 0


def _first_sentence(text: str) -> str:
    head, dot, _ = text.partition(". ")
    return head + "." if dot else text

"""Argument types, options and output helpers shared by the subcommands of ``python -m engine``."""

from __future__ import annotations

import argparse
import math
import os
import stat
import sys
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

from engine.errors import ClusterSpecError, EngineError, TraceError, quote
from engine.io import atomic_write_json

if TYPE_CHECKING:  # (imported where used: `list` and `--help` stay light)
    from engine.sim.cluster import Cluster
    from engine.sim.options import CarbonSeries, EnergyModel, RunOptions


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    v = _float(text)
    if not v > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {quote(text, 40)}")
    return v


def non_negative_float(text: str) -> float:
    """argparse type: a finite number >= 0."""
    v = _float(text)
    if not v >= 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {quote(text, 40)}")
    return v


def share(text: str) -> float:
    """argparse type: a share from 0 to 1."""
    v = _float(text)
    if not 0 <= v <= 1:
        raise argparse.ArgumentTypeError(f"expected a share from 0 to 1, got {quote(text, 40)}")
    return v


def _float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {quote(text, 40)}") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {quote(text, 40)}")
    return v


def int_in(low: int, high: int) -> Callable[[str], int]:
    """argparse type: an integer from ``low`` to ``high`` (the usage error states the range)."""

    def parse(text: str) -> int:
        try:
            v = int(text) if len(text) <= 30 else None
        except ValueError:
            v = None
        if v is None or not low <= v <= high:
            raise argparse.ArgumentTypeError(f"expected an integer from {low:,} to {high:,}, got {quote(text, 40)}")
        return v

    parse.__name__ = "integer"  # argparse names the type in some messages
    return parse


#: Seeds: what NumPy's generators take, bounded so that a seed prints on one line.
SEED = int_in(0, 2**63 - 1)


def output_path(text: str) -> Path:
    """argparse type: a file to write, whose folder must exist (checked before any long run starts)."""
    path = Path(text)
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text}: folder {path.parent} does not exist")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text}: it is a folder")
    return path


#: Arguments that may name a file a command reads (``--cluster``, ``--scenario``, ``--config`` and ``--plugin``
#: only when they name one), checked by :func:`refuse_special_files` before any is opened.
INPUT_ARGUMENTS = ("cluster", "trace", "path", "spec", "scenario", "config", "plugin")
#: The most bytes a spec or scenario file given on the command line may hold (:func:`read_input_file`).
MAX_INPUT_FILE_BYTES = 16 * 2**20


def refuse_special_files(args: argparse.Namespace) -> None:
    """``EngineError`` naming the argument when one of :data:`INPUT_ARGUMENTS` names something that exists but is
    not a regular file: a FIFO would block the command forever and a device (``/dev/zero``) never ends. Only
    ``os.stat`` looks at it; nothing is opened. Values that name no file (a cluster shorthand, a shipped config's
    name, a module) pass, for the command to read as it does."""
    for key in INPUT_ARGUMENTS:
        values = getattr(args, key, None)
        for value in values if isinstance(values, list) else [values]:
            if not isinstance(value, (str, os.PathLike)):
                continue
            try:
                mode = os.stat(value).st_mode
            except (OSError, ValueError):  # no such file (or not a path at all)
                continue
            if not stat.S_ISREG(mode):
                what = "a folder" if stat.S_ISDIR(mode) else "a FIFO, a device or a socket"
                name = "PATH" if key == "path" else f"--{key}"
                raise EngineError(f"{name} {quote(str(value))}: not a regular file ({what}); refused")


def read_input_file(path: str | os.PathLike[str], what: str, limit: int = MAX_INPUT_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (``what`` names it in errors), refused past ``limit`` bytes."""
    with open(path, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise EngineError(f"{what} {quote(str(path))}: not a regular file; refused")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise EngineError(f"{what} {quote(str(path))}: larger than the limit of {limit:,} bytes")
    return data


def add_cluster_argument(parser: argparse.ArgumentParser, **overrides: Any) -> None:
    """``--cluster SPEC``; ``overrides`` replace ``add_argument`` settings (e.g. ``action="append"``)."""
    settings = {
        "required": True,
        "metavar": "SPEC",
        "help": "cluster shorthand NODESxGPUS:TYPE[,...] (e.g. 4x8:A100-80,2x4:V100-32) or a .json file",
    }
    parser.add_argument("--cluster", **{**settings, **overrides})


def _window(text: str) -> tuple[float, float]:
    """argparse type: ``START:END`` in seconds after the first arrival (either side may be empty)."""
    start, colon, end = text.partition(":")
    try:
        lo = float(start) if start.strip() else 0.0
        hi = float(end) if end.strip() else math.inf
    except ValueError:
        lo = hi = math.nan
    if not colon or math.isnan(lo) or math.isnan(hi) or lo > hi or lo < 0:
        raise argparse.ArgumentTypeError(
            f"--window {quote(text, 40)}: expected START:END seconds with 0 <= START <= END"
        )
    return lo, hi


def _column_map(text: str) -> dict[str, str]:
    from engine.traces.mapped import parse_map

    try:
        return parse_map(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_trace_options(parser: argparse.ArgumentParser, *, load_scale: bool = True) -> None:
    """The loader's options (``--format --skip-bad --time-unit --map --first --window --load-scale``), for any
    command that reads a trace; :func:`trace_options` turns them into ``load_trace`` keyword arguments.
    ``load_scale=False`` leaves ``--load-scale`` to the command (``sweep`` takes a list)."""
    from engine.traces import TRACE_FORMATS

    parser.add_argument("--format", choices=list(TRACE_FORMATS), help="trace format (default: detected)")
    parser.add_argument("--skip-bad", action="store_true", help="skip malformed rows (counted) instead of failing")
    parser.add_argument("--time-unit", choices=["s", "ms"], help="time unit of tiresias and mapped traces")
    parser.add_argument(
        "--map",
        type=_column_map,
        metavar="KEY=COL,...",
        help="column map (implies --format mapped), e.g. submit=creation_time,duration=run_s,gpus=n_gpu",
    )
    parser.add_argument("--first", type=int_in(0, 2**53), metavar="N", help="keep only the first N jobs")
    parser.add_argument(
        "--window",
        type=_window,
        metavar="START:END",
        help="keep jobs submitted START..END seconds after the first arrival",
    )
    if load_scale:
        parser.add_argument(
            "--load-scale",
            type=positive_float,
            metavar="X",
            help="divide submit times by X (X > 1 compresses arrivals: more load)",
        )


def trace_options(args: argparse.Namespace) -> dict:
    """``load_trace`` keyword arguments from the options of :func:`add_trace_options`."""
    return {
        "format": args.format or ("mapped" if args.map else None),
        "skip_bad": args.skip_bad,
        "time_unit": args.time_unit,
        "column_map": args.map,
        "first": args.first,
        "window": args.window,
        "load_scale": args.load_scale,
    }


def add_trace_arguments(parser: argparse.ArgumentParser, required: bool = True) -> None:
    """``--trace PATH`` plus every loader option (``--format --skip-bad --time-unit --map --first --window
    --load-scale``)."""
    parser.add_argument("--trace", required=required, metavar="PATH", help="workload trace file")
    add_trace_options(parser)


def load_trace_arg(args: argparse.Namespace):
    """Load ``args.trace`` with the loader options; a trace without any job is an error."""
    from engine.traces import load_trace

    trace = load_trace(args.trace, **trace_options(args))
    if not trace.jobs:
        dropped = ", ".join(f"{k} {v}" for k, v in trace.report.dropped.items() if v) or "none"
        raise TraceError(f"no jobs to simulate ({trace.report.rows} rows; dropped: {dropped})", path=args.trace)
    if trace.report.unit_warning:
        print(f"warning: {args.trace}: {cli_unit_hint(trace.report.unit_warning)}", file=sys.stderr)
    return trace


def cli_unit_hint(warning: str) -> str:
    """A trace's unit warning with the command-line switch it suggests."""
    return warning.replace("choose the time unit ms.", "add --time-unit ms.")


def add_plugin_argument(parser: argparse.ArgumentParser) -> None:
    """``--plugin FILE_OR_MODULE`` (repeatable): imported by :func:`engine.cli.main` before the command runs,
    so the schedulers it registers can be named (see :mod:`engine.plugins`)."""
    parser.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="FILE_OR_MODULE",
        help="import a .py file or module that registers schedulers (repeatable)",
    )


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """``--seed``, the run options (:func:`add_run_option_arguments`), ``--plugin`` and ``--quiet``: options of
    every command that runs simulations one by one."""
    parser.add_argument("--seed", type=SEED, default=0, help="seed for randomised schedulers (default 0)")
    add_run_option_arguments(parser)
    add_plugin_argument(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def _pue(text: str) -> float:
    v = _float(text)
    if not v >= 1:
        raise argparse.ArgumentTypeError(f"expected a power usage effectiveness >= 1, got {quote(text, 40)}")
    return v


def _carbon(text: str) -> float | CarbonSeries:
    """argparse type: gCO2 per kWh (a number >= 0) or a ``timestamp,carbon_intensity`` CSV file."""
    from engine.traces.carbon import load_carbon_csv

    try:
        v = float(text)
    except ValueError:
        try:
            return load_carbon_csv(text)
        except (EngineError, OSError, ValueError) as exc:
            detail = f"{exc.filename}: {exc.strerror}" if isinstance(exc, OSError) and exc.strerror else exc
            raise argparse.ArgumentTypeError(
                f"expected gCO2/kWh (a number >= 0) or a timestamp,carbon_intensity CSV: {detail}"
            ) from None
    if not (math.isfinite(v) and v >= 0):
        raise argparse.ArgumentTypeError(f"expected gCO2/kWh as a number >= 0 or a CSV file, got {quote(text, 40)}")
    return v


@dataclass(frozen=True)
class RunOptionFlags:
    """The command-line flags of one field of :class:`~engine.sim.options.RunOptions`.

    ``add(group)`` declares them, each with default ``None`` so that a flag not given is seen as such;
    ``apply(args, model)`` returns ``model`` (the field's current value) with the flags that were given applied,
    ``model`` itself when none was."""

    add: Callable[[Any], None]
    apply: Callable[[argparse.Namespace, Any], Any]


def _given(args: argparse.Namespace, fields: Mapping[str, str]) -> dict[str, Any]:
    """``{field: value}`` of the flags among ``fields`` (argparse dest -> the option record's field) that were
    given."""
    return {f: getattr(args, k) for k, f in fields.items() if getattr(args, k, None) is not None}


def _add_preemption_flags(group: Any) -> None:
    group.add_argument(
        "--checkpoint-interval",
        type=positive_float,
        metavar="S",
        help="preempted jobs keep work only up to their last checkpoint, taken every S seconds "
        "(default: no work is lost)",
    )
    group.add_argument(
        "--restart-overhead",
        type=non_negative_float,
        metavar="S",
        help="seconds of extra work each restart after a preemption costs (default 0)",
    )


def _apply_preemption_flags(args: argparse.Namespace, model):
    given = _given(args, {"checkpoint_interval": "checkpoint_interval_s", "restart_overhead": "restart_overhead_s"})
    return replace(model, **given)


def _add_energy_flags(group: Any) -> None:
    from engine.sim.cluster import CATALOG_PRICES, PRICE_LISTS
    from engine.sim.options import DEFAULT_CARBON_G_PER_KWH, DEFAULT_PUE

    group.add_argument(
        "--pue",
        type=_pue,
        metavar="X",
        help=f"power usage effectiveness of the facility, >= 1 (default {DEFAULT_PUE:g}); any "
        "energy flag adds energy, cost and carbon to the summaries",
    )
    group.add_argument(
        "--carbon",
        type=_carbon,
        metavar="G_PER_KWH_OR_CSV",
        help="grid carbon intensity: gCO2/kWh, or an hourly timestamp,carbon_intensity CSV "
        f"(e.g. sample_traces/carbon/daily.csv; default {DEFAULT_CARBON_G_PER_KWH:g})",
    )
    group.add_argument(
        "--price-list",
        choices=[CATALOG_PRICES, *PRICE_LISTS],
        help="prices per GPU-hour: each GPU type's own (catalog, the default) or a named list",
    )
    group.add_argument(
        "--count-energy",
        action="store_const",
        const=True,
        help="add energy, cost and carbon to the summaries at the default model (as any energy flag does)",
    )


def _apply_energy_flags(args: argparse.Namespace, model):
    fields = {"pue": "pue", "carbon": "carbon_g_per_kwh", "price_list": "price_list", "count_energy": "count"}
    return replace(model, **_given(args, fields))


def _add_power_down_flags(group: Any) -> None:
    from engine.sim.options import DEFAULT_WAKE_S

    group.add_argument(
        "--power-down-after",
        type=non_negative_float,
        metavar="S",
        help="a node no job has held for S seconds powers down; a job started on it waits --wake-delay first "
        "(default: nodes never power down); any power-down flag adds energy, cost and carbon to the summaries",
    )
    group.add_argument(
        "--wake-delay",
        type=non_negative_float,
        metavar="S",
        help=f"seconds a powered-down node takes to wake (default {DEFAULT_WAKE_S:g}, an estimate)",
    )
    group.add_argument(
        "--sleep-w",
        type=non_negative_float,
        metavar="W",
        help="watts each GPU of a powered-down node draws (default 0, an estimate)",
    )


def _apply_power_down_flags(args: argparse.Namespace, model):
    given = _given(args, {"power_down_after": "idle_timeout_s", "wake_delay": "wake_s", "sleep_w": "sleep_w"})
    if given and "idle_timeout_s" not in given and not model.active:
        raise EngineError("--wake-delay and --sleep-w need --power-down-after S (nodes never power down without it)")
    return replace(model, **given)


def _failure_preset(text: str) -> str:
    from engine.sim.options import FAILURE_PRESETS

    if text not in FAILURE_PRESETS:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(FAILURE_PRESETS)}, got {quote(text, 40)}")
    return text


def _job_failures(text: str) -> str | float:
    """argparse type: a job-failure preset's name or a share from 0 to 1."""
    from engine.sim.options import JOB_FAILURE_PRESETS

    if text in JOB_FAILURE_PRESETS:
        return text
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not 0 <= v <= 1:  # NaN fails too
        raise argparse.ArgumentTypeError(
            f"expected one of {', '.join(JOB_FAILURE_PRESETS)} or a share from 0 to 1, got {quote(text, 40)}"
        )
    return v


def _add_failure_flags(group: Any) -> None:
    from engine.sim.options import FAILURE_PRESETS

    group.add_argument(
        "--failures",
        type=_failure_preset,
        metavar="PRESET",
        help=f"node failures of a preset ({', '.join(FAILURE_PRESETS)}; default none); the flags "
        "below change it; any failure flag adds reliability metrics (ettr, lost work, ...)",
    )
    group.add_argument(
        "--node-mtbf-h",
        type=positive_float,
        metavar="H",
        help="each node fails every H hours on average (exponential); its jobs stop and restart "
        "from their last checkpoint (--checkpoint-interval)",
    )
    group.add_argument(
        "--repair-h",
        type=non_negative_float,
        metavar="H",
        help="hours a failed node is down (default 2, or the preset's)",
    )
    group.add_argument(
        "--checkpoint-cost",
        type=non_negative_float,
        metavar="S",
        help="seconds of work each checkpoint costs (needs --checkpoint-interval)",
    )
    group.add_argument(
        "--job-failures",
        type=_job_failures,
        metavar="PRESET_OR_RATE",
        help="share of jobs that crash by themselves: philly, helios, acme or a number from 0 to 1",
    )


def _apply_failure_flags(args: argparse.Namespace, model):
    from engine.sim.options import failure_preset

    names = ("failures", "node_mtbf_h", "repair_h", "job_failures")
    given = _given(args, {**{k: k for k in names}, "checkpoint_cost": "checkpoint_cost_s"})
    if "failures" in given:
        model = failure_preset(given.pop("failures"), "--failures")
    if "job_failures" in given:
        model = model.with_job_failures(given.pop("job_failures"), "--job-failures")
    if "node_mtbf_h" in given:  # per node, whatever the preset counted it by
        model = replace(model, mtbf_h=given.pop("node_mtbf_h"), mtbf_per="node")
    return replace(model, **given)


def _add_admission_flags(group: Any) -> None:
    from engine.sim.options import ADMISSION_POLICIES

    group.add_argument(
        "--admission",
        choices=list(ADMISSION_POLICIES),
        help="which arriving jobs enter the queue (default accept-all): "
        + "; ".join(f"{k}: {v}" for k, v in ADMISSION_POLICIES.items()),
    )


def _apply_admission_flags(args: argparse.Namespace, model):
    return replace(model, **_given(args, {"admission": "policy"}))


def _add_elastic_flags(group: Any) -> None:
    from engine.sim.options import MAX_RESCALE_S, POLLUX_RESCALE_S

    group.add_argument(
        "--rescale-s",
        type=non_negative_float,
        metavar="S",
        help=f"seconds an elastic job stalls each time a scheduler resizes it (default {POLLUX_RESCALE_S:g}, "
        f"Pollux's; at most {MAX_RESCALE_S:g})",
    )


def _apply_elastic_flags(args: argparse.Namespace, model):
    return replace(model, **_given(args, {"rescale_s": "rescale_s"}))


#: The flags of every field of :class:`~engine.sim.options.RunOptions`, by field name: every command that runs
#: simulations takes them all (:func:`add_run_option_arguments`) and reads them with :func:`run_options_from`.
#: A new run option joins here with one entry.
RUN_OPTION_FLAGS: dict[str, RunOptionFlags] = {
    "preemption": RunOptionFlags(_add_preemption_flags, _apply_preemption_flags),
    "failures": RunOptionFlags(_add_failure_flags, _apply_failure_flags),
    "energy": RunOptionFlags(_add_energy_flags, _apply_energy_flags),
    "admission": RunOptionFlags(_add_admission_flags, _apply_admission_flags),
    "elastic": RunOptionFlags(_add_elastic_flags, _apply_elastic_flags),
    "power_down": RunOptionFlags(_add_power_down_flags, _apply_power_down_flags),
}
#: The argparse dests of the flags that add energy, cost and carbon to the summaries (:func:`wants_energy`): the
#: energy flags, and the power-down ones (what powering down saves is energy).
ENERGY_FLAGS = ("pue", "carbon", "price_list", "count_energy", "power_down_after", "wake_delay", "sleep_w")


def add_run_option_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of every run option (:data:`RUN_OPTION_FLAGS`), one argument group per option."""
    for name, flags in RUN_OPTION_FLAGS.items():
        flags.add(parser.add_argument_group(f"run options: {name}"))


def run_options_from(args: argparse.Namespace, base: RunOptions) -> RunOptions:
    """``base`` (a :class:`~engine.sim.options.RunOptions`: the defaults, or a scenario's own) with the run-option
    flags that were given applied; the flags not given leave ``base``'s values. ``EngineError`` names
    ``--checkpoint-cost`` when checkpoints would cost something without an interval (the one check across two
    options' flags)."""
    fields = {name: flags.apply(args, getattr(base, name)) for name, flags in RUN_OPTION_FLAGS.items()}
    if fields["failures"].checkpoint_cost_s and fields["preemption"].checkpoint_interval_s is None:
        raise EngineError(
            "--checkpoint-cost needs --checkpoint-interval S (without an interval a job checkpoints "
            "only when stopped, at no cost)"
        )
    return replace(base, **fields)


def wants_energy(args: argparse.Namespace, carried: bool = False) -> bool:
    """Whether summaries add energy, cost and carbon: an energy or power-down flag was given, or the scenario read
    ``carried`` an energy model of its own (:func:`engine.analysis.energy.sets_energy`)."""
    return carried or any(getattr(args, k, None) is not None for k in ENERGY_FLAGS)


def summary_energy(
    args: argparse.Namespace, options: RunOptions, cluster: Cluster, carried: bool = False
) -> EnergyModel | None:
    """The energy model summaries use (``options.energy``) when :func:`wants_energy`, else ``None``; checked
    against ``cluster`` before any run (``ClusterSpecError`` names a GPU type without power or price figures)."""
    if not wants_energy(args, carried):
        return None
    from engine.analysis.energy import cluster_price_per_h, gpu_power_w

    gpu_power_w(cluster)
    try:
        cluster_price_per_h(cluster, options.energy.price_list)
    except ClusterSpecError as exc:
        raise ClusterSpecError(f"{exc} (choose another --price-list)") from None
    return options.energy


@contextmanager
def progress(
    desc: str, total: int | None = None, *, quiet: bool = False, unit: str = "job"
) -> Iterator[Callable[[int, int], None] | None]:
    """A tqdm bar on stderr as an ``on_progress(done, total)`` callback; ``None`` when quiet or not a terminal."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    from tqdm import tqdm

    bar = tqdm(desc=desc, total=total, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True)

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
    atomic_write_json(path, data)


def format_value(value: float | None, unit: str) -> str:
    """A metric value for a table: counts as integers, seconds to 0.1, GPU-hours and dollars to 0.01, others (ratios,
    kWh, kg) to 0.001."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if unit in ("jobs", "count"):
        return f"{int(value):,}"
    if unit == "s":
        return f"{value:,.1f}"
    if unit in ("GPU-h", "USD", "USD/h"):
        return f"{value:,.2f}"
    return f"{value:,.3f}"


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Plain-text table: first column left-aligned, the others right-aligned, two spaces apart."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        parts = [str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return "  ".join(parts).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def metric_label(key: str) -> str:
    """A metric's label for a table, with its unit unless it is a count or a ratio."""
    from engine.analysis.metrics import ALL_METRICS

    m = ALL_METRICS[key]
    return m.label if m.unit in ("jobs", "count", "ratio") else f"{m.label} ({m.unit})"


def scheduler_list(text: str) -> list[str]:
    """argparse type: comma-separated scheduler names, each once."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected comma-separated scheduler names, e.g. fifo,sjf,easy-backfill")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise argparse.ArgumentTypeError(f"scheduler {repeated[0]!r} is listed more than once")
    return names

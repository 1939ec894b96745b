"""The command line: ``python -m engine COMMAND ...`` (run ``python -m engine --help`` for the list).

Adding a subcommand
-------------------
Write two functions in any module, ``add_arguments(parser: argparse.ArgumentParser) -> None`` and
``run(args: argparse.Namespace) -> int`` (the exit code), then add one entry to :data:`COMMANDS`::

    "train": Command("train an RL agent on a scenario", "engine.cli.train:add_arguments", "engine.cli.train:run"),

Both are ``"module:function"`` strings, imported only when that command is the one being run, so heavy
imports (torch, gymnasium) in one command never slow down or break another (``python -m engine list``
imports neither). Raise :class:`~engine.errors.EngineError` (or let ``OSError``/``ValueError`` escape) for
bad input: :func:`main` prints it as one line on stderr and exits with status 2. Argument errors are one line
and status 2 too; a command whose module cannot be imported (a missing optional dependency) is one line and
status 1. ``python -m engine --traceback COMMAND ...`` shows the full traceback instead.

Helpers other commands can reuse (in :mod:`engine.cli.common`): :func:`add_cluster_argument`, :func:`add_trace_arguments` /
:func:`load_trace_arg`, :func:`add_run_arguments` / :func:`add_run_option_arguments` / :func:`run_options_from`
(every run option's flags, :data:`~engine.cli.common.RUN_OPTION_FLAGS`), :func:`progress`,
:func:`output_path`, :func:`write_json`, :func:`format_table`, :func:`format_value`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from dataclasses import dataclass
from typing import Callable, Sequence

from engine.cli.common import refuse_special_files
from engine.errors import EngineError
from engine.plugins import load_plugin


@dataclass(frozen=True)
class Command:
    """A subcommand: its one-line help and where its two functions live (``"module:function"``)."""

    help: str
    add_arguments: str
    run: str


#: Subcommands, in the order ``--help`` lists them.
COMMANDS: dict[str, Command] = {
    "simulate": Command(
        "run one scheduler on a trace, or every scheduler of a scenario file, and print the metrics",
        "engine.cli.run:add_simulate_arguments",
        "engine.cli.run:run_simulate",
    ),
    "compare": Command(
        "run several schedulers on the same trace and compare their metrics",
        "engine.cli.run:add_compare_arguments",
        "engine.cli.run:run_compare",
    ),
    "list": Command(
        "list schedulers, trace formats and GPU types", "engine.cli.run:add_list_arguments", "engine.cli.run:run_list"
    ),
    "generate": Command(
        "generate a seeded synthetic workload (canonical CSV) at a target offered load",
        "engine.cli.traces:add_generate_arguments",
        "engine.cli.traces:run_generate",
    ),
    "trace": Command(
        "trace info PATH: rows kept and dropped by reason, span, GPU-hours, users, offered load",
        "engine.cli.traces:add_trace_arguments",
        "engine.cli.traces:run_trace",
    ),
    "train": Command(
        "train an RL scheduler (MaskablePPO) from a training config (a file or a shipped config's name)",
        "engine.cli.train:add_arguments",
        "engine.cli.train:run",
    ),
    "cards": Command(
        "evaluate trained models against every hand-written policy and write their model cards",
        "engine.cli.cards:add_arguments",
        "engine.cli.cards:run",
    ),
    "evaluate": Command(
        "run schedulers on seeded workloads: mean, 95 % CI and paired differences",
        "engine.cli.evaluate:add_arguments",
        "engine.cli.evaluate:run",
    ),
    "sweep": Command(
        "run a grid of clusters x loads x seeds x schedulers on Ray: one CSV row per cell",
        "engine.cli.sweep:add_sweep_arguments",
        "engine.cli.sweep:run_sweep",
    ),
    "plan": Command(
        "capacity plan on Ray: the fewest nodes of a shape for which a trace meets a target",
        "engine.cli.sweep:add_plan_arguments",
        "engine.cli.sweep:run_plan",
    ),
    "serve": Command(
        "serve the HTTP API (runs, uploads, results; OpenAPI at /docs) on 127.0.0.1 by default",
        "engine.cli.serve:add_arguments",
        "engine.cli.serve:run",
    ),
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
        refuse_special_files(args)  # before anything opens them (a plug-in is opened just below)
        for plugin in getattr(args, "plugin", None) or ():
            load_plugin(plugin)
        return int(_resolve(COMMANDS[args.command].run)(args) or 0)
    except BrokenPipeError:  # output piped into `head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (EngineError, OSError, ValueError, OverflowError, MemoryError, RecursionError) as exc:
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

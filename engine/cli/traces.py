"""The ``generate`` and ``trace`` subcommands of ``python -m engine`` (registered in :mod:`engine.cli`).

python -m engine generate --cluster 4x8:A100-80 --jobs 1000 --load 0.8 --seed 1 --out jobs.csv
python -m engine generate --cluster 4x8:A100-80 --jobs 1000 --load 1.2 --deadlines elasticflow --best-effort 0.2 --out d.csv
python -m engine generate --cluster 4x8:A100-80 --jobs 1000 --load 1.2 --elastic 0.3 --scaling resnet50-a100 --out e.csv
python -m engine trace info philly.csv --cluster 8x8:V100-32 --json info.json
"""

from __future__ import annotations

import argparse
import math

from engine.cli.common import (
    SEED,
    add_trace_options,
    cli_unit_hint,
    int_in,
    output_path,
    positive_float,
    share,
    trace_options,
    write_json,
)

#: What ``generate`` makes at most: jobs (about 1 KiB of memory each while generating) and users.
MAX_GENERATED_JOBS = 5_000_000
MAX_USERS = 1_000_000


# ------------------------------------------------------------------------------------------ generate
def _mix(text: str) -> dict[str, float]:
    """argparse type: ``training=0.5,inference=0.5``."""
    out = {}
    for part in text.split(","):
        name, eq, share = part.partition("=")
        try:
            out[name.strip()] = float(share)
        except ValueError:
            raise argparse.ArgumentTypeError(f"--mix part {part!r}: expected TYPE=SHARE, e.g. training=0.5") from None
        if not eq or not name.strip():
            raise argparse.ArgumentTypeError(f"--mix part {part!r}: expected TYPE=SHARE, e.g. training=0.5")
    return out


def add_generate_arguments(parser: argparse.ArgumentParser) -> None:
    from engine.sim.scaling import SCALING_CURVES
    from engine.traces.deadlines import DEADLINE_LAWS, NO_DEADLINES
    from engine.traces.generator import ARRIVALS, DEFAULT_MIX, DEFAULT_SCALING, ELASTIC_GROWTH

    parser.add_argument(
        "--cluster",
        required=True,
        metavar="SPEC",
        help="the cluster the load is computed for: shorthand (4x8:A100-80,...), .json or openb:PATH",
    )
    parser.add_argument(
        "--jobs",
        required=True,
        type=int_in(1, MAX_GENERATED_JOBS),
        metavar="N",
        help=f"number of jobs (at most {MAX_GENERATED_JOBS:,})",
    )
    parser.add_argument(
        "--load",
        type=positive_float,
        default=0.8,
        help="offered load: arrival rate x mean GPU-seconds per job / cluster GPUs (default 0.8)",
    )
    parser.add_argument("--seed", type=SEED, default=0, help="random seed (default 0); same arguments, same file")
    parser.add_argument("--out", required=True, type=output_path, metavar="FILE", help="canonical CSV to write")
    parser.add_argument(
        "--mix",
        type=_mix,
        metavar="T=S,...",
        help="job type shares (default " + ",".join(f"{k}={v:g}" for k, v in DEFAULT_MIX.items()) + ")",
    )
    parser.add_argument("--arrival", choices=ARRIVALS, default="poisson", help="arrival process (default poisson)")
    parser.add_argument(
        "--users", type=int_in(1, MAX_USERS), default=10, help=f"number of users (default 10, at most {MAX_USERS:,})"
    )
    parser.add_argument("--user-skew", type=float, default=1.2, help="Zipf skew of user activity (default 1.2)")
    parser.add_argument(
        "--estimate-error",
        type=float,
        default=0.4,
        help="sigma of the log-normal run-time estimate error (default 0.4; 0 = no noise)",
    )
    parser.add_argument(
        "--overestimate",
        type=positive_float,
        default=2.0,
        help="median factor by which users over-estimate run time (default 2)",
    )
    parser.add_argument(
        "--allowed-share", type=float, default=0.0, help="share of jobs pinned to one GPU type (default 0)"
    )
    parser.add_argument(
        "--deadlines",
        choices=[NO_DEADLINES, *DEADLINE_LAWS],
        default=NO_DEADLINES,
        help="deadline law (default none): "
        + "; ".join(f"{k}: {law.description} ({law.source})" for k, law in DEADLINE_LAWS.items())
        + "; the CSV gains a deadline_s column",
    )
    parser.add_argument(
        "--best-effort",
        type=share,
        default=0.0,
        metavar="SHARE",
        help="share of jobs the deadline law leaves without a deadline (default 0)",
    )
    parser.add_argument(
        "--elastic",
        type=share,
        default=0.0,
        metavar="SHARE",
        help=f"share of jobs made elastic (whole-GPU ones: 1 to {ELASTIC_GROWTH}x their GPUs; default 0); the CSV "
        "gains min_gpus, max_gpus and scaling columns",
    )
    parser.add_argument(
        "--scaling",
        choices=list(SCALING_CURVES),
        default=DEFAULT_SCALING,
        metavar="CURVE",
        help=f"scaling curve of the elastic jobs: {', '.join(SCALING_CURVES)} (default {DEFAULT_SCALING})",
    )


def run_generate(args: argparse.Namespace) -> int:
    from engine.sim.cluster import parse_cluster
    from engine.traces.csv import write_csv
    from engine.traces.generator import generate
    from engine.traces.report import make_report

    cluster = parse_cluster(args.cluster)
    jobs = generate(
        cluster,
        args.jobs,
        args.load,
        args.seed,
        mix=args.mix,
        users=args.users,
        user_skew=args.user_skew,
        arrival=args.arrival,
        estimate_error=args.estimate_error,
        overestimate=args.overestimate,
        allowed_share=args.allowed_share,
        deadlines=args.deadlines,
        best_effort=args.best_effort,
        elastic=args.elastic,
        scaling=args.scaling,
    )
    write_csv(jobs, args.out)
    rep = make_report(jobs, rows=len(jobs), dropped={})
    print(
        f"wrote {args.out}: {rep.jobs:,} jobs over {rep.span_s / 3600:,.1f} h, {rep.gpu_hours:,.1f} GPU-h, "
        f"{rep.users} users; offered load {rep.offered_load(cluster.n_gpus):.3f} on {cluster.n_gpus} GPUs"
    )
    return 0


# ------------------------------------------------------------------------------------------ trace info
def add_trace_arguments(parser: argparse.ArgumentParser) -> None:
    """``trace ACTION PATH`` and its options (only the ``info`` action for now)."""
    parser.add_argument("action", choices=["info"], help="info: what the loader kept and dropped, and why")
    parser.add_argument("path", metavar="PATH", help="trace file (.gz read transparently)")
    add_trace_options(parser)
    parser.add_argument("--cluster", metavar="SPEC", help="also report the offered load on this cluster")
    parser.add_argument("--json", type=output_path, metavar="FILE", help="write the report as JSON")


def run_trace(args: argparse.Namespace) -> int:
    from engine.traces import load_trace

    cluster = None
    if args.cluster:
        from engine.sim.cluster import parse_cluster

        cluster = parse_cluster(args.cluster)
    trace = load_trace(args.path, **trace_options(args))
    info = {"source": trace.source, "format": trace.format, **trace.report.to_dict()}
    if cluster is not None:
        load = trace.report.offered_load(cluster.n_gpus)
        info["cluster"] = args.cluster
        info["cluster_gpus"] = cluster.n_gpus
        info["offered_load"] = load if math.isfinite(load) else None
    print(format_info(info))
    if args.json:
        write_json(args.json, info)
    return 0


def format_info(info: dict) -> str:
    """The human-readable form of ``trace info``'s report."""
    dropped = info["dropped"]
    lines = [
        f"{info['source']} ({info['format']})",
        f"  rows read      {info['rows']:,}",
        f"  jobs kept      {info['jobs']:,}",
        f"  rows dropped   {sum(dropped.values()):,}"
        + (" (" + ", ".join(f"{k}: {v:,}" for k, v in dropped.items()) + ")" if dropped else ""),
    ]
    if info["trimmed"]:
        lines.append(f"  trimmed        {info['trimmed']:,} (--first/--window)")
    lines += [
        f"  time span      {info['span_s']:,.0f} s ({info['span_s'] / 86400:,.2f} days)",
        f"  GPU-hours      {info['gpu_hours']:,.1f}",
        f"  users          {info['users']:,}",
        "  GPUs per job   " + ", ".join(f"{k}: {v:,}" for k, v in info["gpu_histogram"].items()),
    ]
    if "offered_load" in info:
        load = info["offered_load"]
        lines.append(
            f"  offered load   {'inf (all jobs arrive at once)' if load is None else f'{load:.3f}'} "
            f"on {info['cluster']} ({info['cluster_gpus']} GPUs)"
        )
    lines += [f"  skipped: {e}" for e in info["examples"]]
    if info.get("unit_warning"):
        lines.append(f"  warning: {cli_unit_hint(info['unit_warning'])}")
    return "\n".join(lines)

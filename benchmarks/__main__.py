"""Run every benchmark script in this folder, one after the other: ``python -m benchmarks [--quick]``.

A script is any ``benchmarks/<name>.py`` not starting with ``_``; each runs as ``python -m benchmarks.<name>``
in its own process. ``--quick`` is passed on to the scripts that accept it. ``--only a,b`` runs only those.
The exit code is 1 when any script failed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def scripts() -> list[str]:
    """Names of the benchmark scripts, sorted."""
    return sorted(p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="pass --quick to the scripts that accept it")
    p.add_argument("--only", help="comma-separated script names (default: all of " + ", ".join(scripts()) + ")")
    args = p.parse_args(argv)
    names = args.only.split(",") if args.only else scripts()
    unknown = sorted(set(names) - set(scripts()))
    if unknown:
        print(f"unknown benchmark(s) {', '.join(unknown)}; valid: {', '.join(scripts())}", file=sys.stderr)
        return 2
    failed = []
    for name in names:
        cmd = [sys.executable, "-m", f"benchmarks.{name}"]
        if args.quick and "--quick" in (HERE / f"{name}.py").read_text():
            cmd.append("--quick")
        print(f"=== {' '.join(cmd[1:])}", flush=True)
        if subprocess.run(cmd, cwd=HERE.parent).returncode != 0:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

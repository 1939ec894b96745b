"""The HTTP API's cost: a small run through the API against the same run called directly, and ``GET /v1/health``
while 100 runs wait.

Starts ``python -m engine serve`` on a free port with a fresh store, then:

1. times ``--runs`` small scenarios (25 jobs, one scheduler, each its own seed) called directly in this process,
   through ``POST /v1/simulate``, and through ``POST /v1/runs`` followed until done; prints the medians and the
   API's overhead per run (the issue's bound: 50 ms);
2. posts 100 long runs (2 run, 98 wait), times 50 health checks (bound: 50 ms), and cancels them.

Usage: ``.venv/bin/python -m benchmarks.api_overhead [--quick] [--runs 20]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from engine.analysis.results import metrics_json, run_scenario
from engine.analysis.scenario import Scenario, WorkloadSpec
from tests.api.live_server import start_server

LONG = Scenario(cluster="16x8:A100-80", workload=WorkloadSpec(n_jobs=100_000, load=1.0), schedulers=("fifo",))


def small(seed: int) -> Scenario:
    return Scenario(cluster="1x4:V100-32", workload=WorkloadSpec(n_jobs=25, seed=seed), schedulers=("fifo",))


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run_and_wait(client: httpx.Client, sc: Scenario) -> None:
    run_id = client.post("/v1/runs", content=sc.to_json()).json()["id"]
    while client.get(f"/v1/runs/{run_id}").json()["state"] not in ("done", "failed"):
        time.sleep(0.005)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="5 runs")
    args = parser.parse_args(argv)
    n = 5 if args.quick else args.runs
    with tempfile.TemporaryDirectory() as tmp:
        server = start_server(Path(tmp) / "store.sqlite")
        try:
            with httpx.Client(base_url=server.url, timeout=300) as client:
                client.post("/v1/simulate", content=small(0).to_json())  # the forkserver's first start
                metrics_json(run_scenario(small(0)).results)
                direct = [timed(lambda s=s: metrics_json(run_scenario(small(s)).results)) for s in range(1, n + 1)]
                sync = [
                    timed(lambda s=s: client.post("/v1/simulate", content=small(s).to_json())) for s in range(1, n + 1)
                ]
                queued = [timed(lambda s=s: run_and_wait(client, small(s))) for s in range(1, n + 1)]
                d, s_, q = (statistics.median(x) * 1000 for x in (direct, sync, queued))
                print(
                    f"{n} small runs, median ms: direct {d:.1f}, POST /v1/simulate {s_:.1f} "
                    f"(overhead {s_ - d:+.1f}, ratio {s_ / d:.2f}), POST /v1/runs until done {q:.1f} "
                    f"(overhead {q - d:+.1f}, ratio {q / d:.2f}); bound: overhead <= 50 ms"
                )
                ids = [client.post("/v1/runs", content=LONG.to_json()).json()["id"] for _ in range(100)]
                health = sorted(timed(lambda: client.get("/v1/health")) * 1000 for _ in range(50))
                print(
                    f"GET /v1/health with 100 runs posted: median {health[25]:.1f} ms, max {health[-1]:.1f} ms; "
                    "bound: 50 ms"
                )
                for run_id in ids:
                    client.delete(f"/v1/runs/{run_id}")
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

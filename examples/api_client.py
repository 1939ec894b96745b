"""The HTTP API from another program: submit a scenario, follow its progress, load its results into pandas.

Start a server first (``make serve``, or ``python -m engine serve --port 8000``), then:

    .venv/bin/python examples/api_client.py --url http://127.0.0.1:8000 [--scenario FILE]

Without ``--scenario`` it posts a small built-in scenario; ``FILE`` may be the app's "Scenario (JSON)" download.
A server that needs a token reads it from ``PLAYGROUND_API_TOKEN``. Only httpx and pandas are needed here.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys

import httpx
import pandas as pd

SCENARIO = {
    "cluster": "2x4:V100-32",
    "workload": {"source": "generate", "n_jobs": 200, "load": 1.2, "seed": 7},
    "schedulers": ["fifo", "easy-backfill", "tiresias"],
    "seed": 0,
    "name": "api client example",
}


def follow(client: httpx.Client, run_id: str) -> dict:
    """Print the run's progress from its event stream (Server-Sent Events) until it ends; its last state."""
    event, last = "", {}
    with client.stream("GET", f"/v1/runs/{run_id}/events", timeout=None) as stream:
        for line in stream.iter_lines():
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: "):
                last = json.loads(line.removeprefix("data: "))
                print(f"  {last['state']:<8} {last['progress']:6.1%}", file=sys.stderr)
                if event == "end":
                    break
    return last


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the server's base URL")
    parser.add_argument("--scenario", help="a scenario JSON file (default: a small built-in one)")
    args = parser.parse_args()
    body = open(args.scenario, "rb").read() if args.scenario else json.dumps(SCENARIO).encode()
    token = os.environ.get("PLAYGROUND_API_TOKEN")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=args.url, headers=headers, timeout=60) as client:
        answer = client.post("/v1/runs", content=body, headers={"Content-Type": "application/json"})
        if answer.status_code != 202:
            print(f"error: {answer.json()['error']}", file=sys.stderr)
            return 1
        run_id = answer.json()["id"]
        print(f"run {run_id} ({answer.headers['Location']})", file=sys.stderr)
        final = follow(client, run_id)
        if final.get("state") != "done":
            print(f"error: the run ended {final.get('state')}: {final.get('error')}", file=sys.stderr)
            return 1
        # The metrics table: one row per scheduler (JSON is {scheduler: {metric: value}}; CSV loads directly).
        metrics = pd.read_csv(io.StringIO(client.get(f"/v1/runs/{run_id}/results.csv").text), index_col="scheduler")
        print(metrics[["completed", "mean_wait_s", "p95_wait_s", "utilization"]].round(3).to_string())
        # Per-job records of every scheduler: the five longest waits.
        jobs = pd.read_csv(io.StringIO(client.get(f"/v1/runs/{run_id}/results/jobs.csv").text))
        print(jobs.nlargest(5, "wait_s")[["scheduler", "job_id", "user", "gpus", "wait_s"]].to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())

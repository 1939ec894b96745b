"""The HTTP API against a live server (``python -m engine serve`` in its own process group): every endpoint, bad
inputs answered with one line and a 4xx, 20 clients at once, a server killed mid-run and restarted on the same
store, and results equal to ``python -m engine simulate --scenario FILE --json`` on the same file."""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time

import httpx
import pandas as pd
import pytest

from engine.analysis.scenario import Scenario, WorkloadSpec
from engine.cli import main
from tests.analysis.test_scenario import EARLY_APP_SCENARIO
from tests.api.live_server import REPO, client_from, start_server

pytestmark = pytest.mark.timeout(300)
SMALL = Scenario(
    cluster="1x4:V100-32",
    workload=WorkloadSpec(n_jobs=40, load=1.4, seed=3),
    schedulers=("fifo", "sjf"),
    seed=1,
    name="small",
)
#: A run that takes minutes here: long enough to be running when it is cancelled or its server is killed.
LONG = Scenario(cluster="16x8:A100-80", workload=WorkloadSpec(n_jobs=100_000, load=1.0), schedulers=("fifo",))
CANONICAL = REPO / "sample_traces" / "canonical.csv"


def cli_json(tmp_path, scenario_file, *extra: str) -> dict:
    out = tmp_path / "cli.json"
    assert main(["simulate", "--scenario", str(scenario_file), "--quiet", "--json", str(out), *extra]) == 0
    return json.loads(out.read_text())


def post_run(client: httpx.Client, scenario: Scenario | str) -> str:
    body = scenario if isinstance(scenario, str) else scenario.to_json()
    answer = client.post("/v1/runs", content=body)
    assert answer.status_code == 202, answer.text
    assert answer.headers["Location"] == f"/v1/runs/{answer.json()['id']}"
    return answer.json()["id"]


def events(client: httpx.Client, run_id: str) -> list[tuple[str, dict]]:
    """The run's Server-Sent Events until the stream ends: ``[(event, data), ...]``."""
    out, event = [], ""
    with client.stream("GET", f"/v1/runs/{run_id}/events") as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        for line in stream.iter_lines():
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: "):
                out.append((event, json.loads(line.removeprefix("data: "))))
    return out


def wait_state(client: httpx.Client, run_id: str, states: tuple[str, ...], timeout_s: float = 60) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = client.get(f"/v1/runs/{run_id}").json()
        if run["state"] in states:
            return run
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} never reached {states}: {run}")


def assert_one_line_error(answer: httpx.Response, status: int) -> str:
    assert answer.status_code == status, (answer.status_code, answer.text)
    assert answer.headers["content-type"] == "application/json"
    message = answer.json()["error"]
    assert message and "\n" not in message and "Traceback" not in message
    return message


# ---------------------------------------------------------------------------------------------- lists
def test_the_lists_and_the_schema(client):
    assert client.get("/v1/health").json()["status"] == "ok"
    names = {s["name"] for s in client.get("/v1/schedulers").json()["schedulers"]}
    assert {"fifo", "sjf", "easy-backfill", "tiresias"} <= names
    agents = client.get("/v1/agents").json()
    assert agents and all(a["name"].startswith("rl:") and a["verdict"] for a in agents)
    presets = client.get("/v1/presets").json()
    assert "heavy-user" in {p["name"] for p in presets}
    assert all(Scenario.from_dict(p["scenario"]) for p in presets)  # each a runnable, untrusted scenario
    assert "V100-32" in {t["name"] for t in client.get("/v1/gpu-types").json()["gpu_types"]}
    paths = client.get("/openapi.json").json()["paths"]
    routes = {"/v1/runs", "/v1/runs/{run_id}/results", "/v1/traces", "/v1/simulate", "/v1/sweeps", "/v1/plans"}
    assert routes <= set(paths)
    assert client.get("/docs").status_code == 200


# ---------------------------------------------------------------------------------------------- runs
def test_a_run_streams_its_progress_and_its_results_equal_the_cli(client, tmp_path):
    path = tmp_path / "scenario.json"
    path.write_text(SMALL.to_json())
    run_id = post_run(client, path.read_text())
    stream = events(client, run_id)
    assert stream[-1] == ("end", {"id": run_id, "state": "done", "progress": 1.0, "error": None})
    assert all(e == "progress" for e, _ in stream[:-1])
    run = client.get(f"/v1/runs/{run_id}").json()
    assert run["state"] == "done" and Scenario.from_dict(run["scenario"]) == SMALL
    metrics = client.get(f"/v1/runs/{run_id}/results").json()
    assert metrics == cli_json(tmp_path, path)
    assert client.get(f"/v1/runs/{run_id}/results.json").json() == metrics
    # The same table as CSV (by suffix or Accept) and Parquet: one row per scheduler.
    by_suffix = client.get(f"/v1/runs/{run_id}/results.csv")
    by_accept = client.get(f"/v1/runs/{run_id}/results", headers={"Accept": "text/csv"})
    assert by_suffix.headers["content-type"].startswith("text/csv") and by_suffix.text == by_accept.text
    table = pd.read_csv(io.StringIO(by_suffix.text), index_col="scheduler")
    assert list(table.index) == ["fifo", "sjf"]
    assert table.loc["sjf", "mean_wait_s"] == pytest.approx(metrics["sjf"]["mean_wait_s"], rel=1e-12)
    parquet = pd.read_parquet(io.BytesIO(client.get(f"/v1/runs/{run_id}/results.parquet").content))
    assert list(parquet["scheduler"]) == ["fifo", "sjf"]
    jobs = client.get(f"/v1/runs/{run_id}/results/jobs").json()
    assert [len(jobs[n]) for n in ("fifo", "sjf")] == [40, 40]
    jobs_csv = pd.read_csv(io.StringIO(client.get(f"/v1/runs/{run_id}/results/jobs.csv").text))
    assert len(jobs_csv) == 80 and set(jobs_csv["scheduler"]) == {"fifo", "sjf"}
    timeline = client.get(f"/v1/runs/{run_id}/results/timeline").json()
    assert set(timeline["fifo"]) == {"t_s", "queue", "running", "busy_gpus"}
    assert any(r["id"] == run_id for r in client.get("/v1/runs").json())
    assert_one_line_error(client.delete(f"/v1/runs/{run_id}"), 409)  # a finished run stays finished


def test_an_uploaded_trace_runs_like_the_cli_with_the_file(client, tmp_path):
    data = CANONICAL.read_bytes()
    answer = client.post("/v1/traces", params={"name": "canonical.csv", "first": 120}, content=data)
    assert answer.status_code == 201, answer.text
    upload = answer.json()
    assert upload["sha256"] == hashlib.sha256(data).hexdigest() and upload["jobs"] == 120
    assert upload["report"]["rows"] == 500 and "unit_warning" in upload["report"]
    scenario = Scenario(
        cluster="2x4:V100-32",
        schedulers=("fifo", "easy-backfill"),
        workload=WorkloadSpec(source="trace", trace_sha256=upload["sha256"], trace_name="canonical.csv", first=100),
    )
    path = tmp_path / "trace-scenario.json"
    path.write_text(scenario.to_json())
    run_id = post_run(client, scenario)
    assert wait_state(client, run_id, ("done", "failed"))["state"] == "done"
    assert client.get(f"/v1/runs/{run_id}/results").json() == cli_json(tmp_path, path, "--trace", str(CANONICAL))
    # The synchronous answer is the same table.
    assert client.post("/v1/simulate", content=path.read_text()).json() == cli_json(
        tmp_path, path, "--trace", str(CANONICAL)
    )


def test_results_wait_for_the_run_whose_events_show_progress_and_a_cancel_kills_it(client, server):
    run_id = post_run(client, LONG)
    wait_state(client, run_id, ("running",))
    assert "results come when it is done" in assert_one_line_error(client.get(f"/v1/runs/{run_id}/results"), 409)
    seen: list[tuple[str, dict]] = []
    with httpx.Client(base_url=server.url, timeout=60) as other, other.stream("GET", f"/v1/runs/{run_id}/events") as s:
        event = ""
        for line in s.iter_lines():
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: "):
                seen.append((event, json.loads(line.removeprefix("data: "))))
                if len(seen) == 1:  # the stream is live: cancel the run from another connection
                    assert client.delete(f"/v1/runs/{run_id}").json()["state"] == "cancelled"
    assert seen[0][0] == "progress" and seen[0][1]["state"] == "running"
    assert seen[-1][0] == "end" and seen[-1][1]["state"] == "cancelled"
    assert "cancelled" in assert_one_line_error(client.get(f"/v1/runs/{run_id}/results"), 410)
    deadline = time.monotonic() + 10
    while client.get("/v1/health").json()["runs_in_flight"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert client.get("/v1/health").json()["runs_in_flight"] == 0  # the worker is gone


def test_a_scenario_file_the_app_wrote_before_run_options_runs_like_the_cli(client, tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps(EARLY_APP_SCENARIO))  # tests/analysis/test_scenario.py: it still loads
    run_id = post_run(client, path.read_text())
    assert wait_state(client, run_id, ("done", "failed"))["state"] == "done"
    assert client.get(f"/v1/runs/{run_id}/results").json() == cli_json(tmp_path, path)


def test_a_failed_run_answers_410_with_its_one_line_error(client):
    upload = client.post("/v1/traces", params={"name": "canonical.csv"}, content=CANONICAL.read_bytes()).json()
    too_far = Scenario(
        cluster="2x4:V100-32",
        schedulers=("fifo",),
        seed=0,
        workload=WorkloadSpec(
            source="trace", trace_sha256=upload["sha256"], trace_name="canonical.csv", block=100, seed=9
        ),
    )
    run_id = post_run(client, too_far)
    run = wait_state(client, run_id, ("failed", "done"))
    assert (
        run["state"] == "failed" and run["error"] == "trace has 500 jobs: not enough for seed 9 with 100 jobs per seed"
    )
    assert assert_one_line_error(client.get(f"/v1/runs/{run_id}/results"), 410) == run["error"]


# ---------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "method, path, body, status, says",
    [
        ("POST", "/v1/runs", b"", 422, "not valid JSON"),
        ("POST", "/v1/runs", b"\xff\xfe", 422, "scenario JSON"),
        ("POST", "/v1/runs", b"[1, 2]", 422, "must be a JSON object"),
        ("POST", "/v1/runs", b'{"cluster": "zz"}', 422, "expected NODESxGPUS:TYPE"),
        ("POST", "/v1/runs", b'{"schedulers": ["no-such-policy"]}', 422, "unknown scheduler 'no-such-policy'"),
        ("POST", "/v1/runs", b'{"schedulers": []}', 422, "scenario.schedulers is empty"),
        ("POST", "/v1/runs", b'{"workload": {"n_jobs": 1e9}}', 422, "scenario.workload.n_jobs must be an integer"),
        (
            "POST",
            "/v1/runs",
            b'{"workload": {"source": "trace", "trace_path": "/etc/passwd"}}',
            422,
            "trace_sha256 only",
        ),
        (
            "POST",
            "/v1/runs",
            b'{"workload": {"source": "trace", "trace_sha256": "' + b"a" * 64 + b'"}}',
            422,
            "not on this server: upload it with POST /v1/traces",
        ),
        ("POST", "/v1/runs", b'{"bogus": 1}', 422, "unknown keys ['bogus']"),
        ("POST", "/v1/runs", b"[" * 100_000, 422, "scenario JSON"),
        ("POST", "/v1/runs", b" " * 300_000, 413, "limit of 262,144 bytes"),
        (
            "POST",
            "/v1/simulate",
            b'{"workload": {"n_jobs": 20000}, "schedulers": ["fifo", "sjf"]}',
            422,
            "at most 20,000 jobs x schedulers",
        ),
        ("POST", "/v1/traces?name=../../etc/x.csv", b"a,b\n", 422, "name must be a file name, not a path"),
        ("POST", "/v1/traces?name=t.csv", b"", 422, "the body is empty"),
        ("POST", "/v1/traces?name=t.csv", b"garbage,,\n1,2,3\n", 422, "t.csv, line 1"),
        ("POST", "/v1/traces?name=t.csv&first=-1", b"a\n", 422, "first must be an integer"),
        ("POST", "/v1/traces?name=t.csv&format=nope", b"a\n", 422, "format 'nope': expected one of"),
        ("GET", "/v1/runs/not-a-run", None, 404, "no run 'not-a-run'"),
        ("GET", "/v1/runs/" + "0" * 32 + "/results", None, 404, "no run"),
        ("DELETE", "/v1/runs/" + "0" * 32, None, 404, "no run"),
        ("POST", "/v1/runs/" + "0" * 32 + "/restart", None, 404, "no run"),
        ("GET", "/v1/runs?limit=lots", None, 422, "limit"),
        ("GET", "/v1/nowhere", None, 404, "Not Found"),
        ("PUT", "/v1/health", None, 405, "Method Not Allowed"),
    ],
)
def test_bad_input_is_a_4xx_with_one_line(client, method, path, body, status, says):
    message = assert_one_line_error(client.request(method, path, content=body), status)
    assert says in message


def test_20_clients_at_once_all_get_their_results(client, server):
    def one(seed: int, out: dict) -> None:
        with client_from(server, f"127.0.0.{seed + 2}", timeout_s=120) as c:  # twenty clients: twenty addresses
            sc = Scenario(cluster="1x4:V100-32", workload=WorkloadSpec(n_jobs=25, seed=seed), schedulers=("fifo",))
            run_id = post_run(c, sc)
            wait_state(c, run_id, ("done", "failed"), timeout_s=120)
            out[seed] = (c.get(f"/v1/runs/{run_id}/results").json(), c.post("/v1/simulate", content=sc.to_json()))

    out: dict = {}
    threads = [threading.Thread(target=one, args=(seed, out)) for seed in range(20)]
    for t in threads:
        t.start()
    start = time.monotonic()
    health_s = []
    while any(t.is_alive() for t in threads) and time.monotonic() - start < 120:
        t0 = time.monotonic()
        assert client.get("/v1/health").status_code == 200
        health_s.append(time.monotonic() - t0)
        time.sleep(0.05)
    for t in threads:
        t.join()
    assert sorted(out) == list(range(20))
    assert all(sync.status_code == 200 and sync.json() == queued for queued, sync in out.values())
    assert len({json.dumps(queued) for queued, _ in out.values()}) == 20  # twenty different workloads
    assert sorted(health_s)[len(health_s) // 2] < 0.05  # the server never blocks on the runs


# ---------------------------------------------------------------------------------------------- lifecycle
def test_a_killed_server_keeps_finished_runs_and_marks_the_one_in_flight_interrupted(tmp_path):
    store = tmp_path / "runs" / "store.sqlite"
    first = start_server(store)
    try:
        with httpx.Client(base_url=first.url, timeout=60) as c:
            done_id = post_run(c, SMALL)
            wait_state(c, done_id, ("done",))
            results = c.get(f"/v1/runs/{done_id}/results").json()
            long_id = post_run(c, LONG)
            wait_state(c, long_id, ("running",))
    finally:
        first.stop(signal.SIGKILL)  # no shutdown handler runs: as a crash or a power cut of the process
    second = start_server(store)
    try:
        with httpx.Client(base_url=second.url, timeout=60) as c:
            assert c.get(f"/v1/runs/{done_id}/results").json() == results
            assert c.get(f"/v1/runs/{long_id}").json()["state"] == "interrupted"
            assert "interrupted" in assert_one_line_error(c.get(f"/v1/runs/{long_id}/results"), 409)
            restarted = c.post(f"/v1/runs/{long_id}/restart")
            assert restarted.status_code == 202 and restarted.headers["Location"] == f"/v1/runs/{long_id}"
            wait_state(c, long_id, ("running",))
            assert_one_line_error(c.post(f"/v1/runs/{long_id}/restart"), 409)
            assert c.delete(f"/v1/runs/{long_id}").json()["state"] == "cancelled"
    finally:
        second.stop()


def test_a_token_guards_every_route_but_health_and_bodies_are_bounded(tmp_path):
    token = "s3cret-token-of-the-test"
    srv = start_server(tmp_path / "store.sqlite", PLAYGROUND_API_TOKEN=token, PLAYGROUND_API_UPLOAD_MB="1")
    try:
        with httpx.Client(base_url=srv.url, timeout=60) as c:
            assert c.get("/v1/health").status_code == 200
            assert "Authorization: Bearer" in assert_one_line_error(c.get("/v1/schedulers"), 401)
            assert_one_line_error(c.get("/v1/schedulers", headers={"Authorization": "Bearer wrong"}), 401)
            good = {"Authorization": f"Bearer {token}"}
            assert c.get("/v1/schedulers", headers=good).status_code == 200
            big = c.post("/v1/traces", params={"name": "big.csv"}, content=b"x" * (2 * 2**20), headers=good)
            assert "limit of 1,048,576 bytes" in assert_one_line_error(big, 413)
    finally:
        srv.stop()


def test_binding_beyond_localhost_needs_a_token():
    proc = subprocess.run(
        [sys.executable, "-m", "engine", "serve", "--host", "0.0.0.0", "--port", "1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "PLAYGROUND_API_TOKEN"},
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "set PLAYGROUND_API_TOKEN" in proc.stderr


def test_the_example_client_drives_a_run_end_to_end(server):
    proc = subprocess.run(
        [sys.executable, "examples/api_client.py", "--url", server.url],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "done" in proc.stderr and "easy-backfill" in proc.stdout and "mean_wait_s" in proc.stdout

"""Sweeps and capacity plans as API runs, against a live server that drives them on Ray: posted like a run (202,
``Location``), followed by state and events, cancelled by DELETE, results as JSON and tables equal to the same
sweep or plan run here in-process; bad specs answered with one line. The server's first sweep starts its local
Ray (about 10-20 s on a loaded 2-core machine), so these are slow."""

from __future__ import annotations

import io
import time
from dataclasses import replace

import pandas as pd
import pytest

from engine.analysis.plan import PlanSpec, plan_json, run_plan_spec
from engine.analysis.results import sweep_json
from engine.analysis.scenario import Scenario, WorkloadSpec
from engine.analysis.sweep import SweepSpec, run_sweep
from engine.runner.store import RunStore
from tests.api.live_server import start_server
from tests.api.test_server import assert_one_line_error, events, wait_state

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
BASE = Scenario(cluster="1x4:V100-32", workload=WorkloadSpec(n_jobs=30, load=1.2), schedulers=("fifo", "sjf"))
#: Two cells: one cluster, one load, one seed, two schedulers.
SWEEP = SweepSpec(base=BASE, clusters=("1x4:V100-32",), loads=(1.2,), seeds=1)
PLAN = PlanSpec(base=replace(BASE, schedulers=("fifo",)), nodes=("4:V100-32",), target="p95_wait_s<=600", max_nodes=8)
#: Cells that take minutes here: running when they are cancelled.
# Cells of seconds each even compiled (an agent on 20,000 jobs: 3.5 s on the 2-core machine), so a cancel finds
# them running: fifo and sjf cells ended before the DELETE in CI.
LONG_SWEEP = SweepSpec(
    base=Scenario(cluster="4x8:A100-80", workload=WorkloadSpec(n_jobs=20_000), schedulers=("rl:wait-mlp",)),
    clusters=("4x8:A100-80",),
    seeds=8,
)
MAX_CELLS = 40


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = start_server(tmp_path_factory.mktemp("api") / "store.sqlite", PLAYGROUND_SWEEP_CELLS=str(MAX_CELLS))
    yield srv
    srv.stop()


def post(client, path: str, body: str) -> str:
    answer = client.post(path, content=body)
    assert answer.status_code == 202, answer.text
    run_id = answer.json()["id"]
    assert answer.headers["Location"] == f"/v1/runs/{run_id}"
    return run_id


def test_a_posted_sweep_runs_on_ray_with_the_rows_of_the_same_sweep_run_here(client):
    run_id = post(client, "/v1/sweeps", SWEEP.to_json())
    seen = events(client, run_id)
    assert seen[-1] == ("end", {"id": run_id, "state": "done", "progress": 1.0, "error": None})
    run = client.get(f"/v1/runs/{run_id}").json()
    assert run["kind"] == "sweep" and SweepSpec.from_dict(run["spec"]) == SWEEP
    here = run_sweep(SWEEP, backend="serial")
    results = client.get(f"/v1/runs/{run_id}/results").json()
    assert results["rows"] == sweep_json(here)["rows"] and len(results["rows"]) == 2
    assert results["failures"] == [] and results["meta"]["backend"] == "ray" and results["meta"]["cells"] == 2
    assert client.get(f"/v1/runs/{run_id}/results.csv").text == here.to_csv(index=False)  # sweep --out's CSV
    parquet = client.get(f"/v1/runs/{run_id}/results", headers={"Accept": "application/vnd.apache.parquet"})
    pd.testing.assert_frame_equal(pd.read_parquet(io.BytesIO(parquet.content)), here)
    assert "GET /v1/runs/" in assert_one_line_error(client.get(f"/v1/runs/{run_id}/results/jobs"), 404)
    assert any(r["id"] == run_id and r["kind"] == "sweep" for r in client.get("/v1/runs").json())


def test_a_posted_plan_runs_on_ray_and_answers_what_plan_json_writes(client):
    run_id = post(client, "/v1/plans", PLAN.to_json())
    run = wait_state(client, run_id, ("done", "failed", "cancelled"), timeout_s=120)
    assert run["state"] == "done" and run["kind"] == "plan" and PlanSpec.from_dict(run["spec"]) == PLAN
    results = client.get(f"/v1/runs/{run_id}/results").json()
    here = plan_json(run_plan_spec(PLAN, PLAN.base.build_jobs(PLAN.base.build_cluster()), backend="serial"))
    assert results["schedulers"] == here["schedulers"] and results["nodes"] == here["nodes"] == 2
    assert results["backend"] == "ray" and results["target"] == "p95_wait_s<=600"
    table = pd.read_csv(io.StringIO(client.get(f"/v1/runs/{run_id}/results.csv").text))
    assert table[["scheduler", "nodes", "gpus"]].values.tolist() == [["fifo", 2, 8]]


def test_an_interrupted_sweep_restarts_as_a_sweep(client, server):
    # As a server killed mid-sweep leaves it (tests/api/test_server.py kills one for a scenario run).
    store = RunStore(server.store, runs=False)
    run_id = store.create_run(SWEEP.to_json(), kind="sweep").id
    assert store.set_state(run_id, "interrupted")
    restarted = client.post(f"/v1/runs/{run_id}/restart")
    assert restarted.status_code == 202 and restarted.headers["Location"] == f"/v1/runs/{run_id}"
    assert wait_state(client, run_id, ("done", "failed"), timeout_s=120)["state"] == "done"
    rows = client.get(f"/v1/runs/{run_id}/results").json()["rows"]
    assert rows == sweep_json(run_sweep(SWEEP, backend="serial"))["rows"]


def test_a_cancelled_sweep_stops_its_cells(client):
    run_id = post(client, "/v1/sweeps", LONG_SWEEP.to_json())
    wait_state(client, run_id, ("running",))
    time.sleep(1)  # its workloads are generated and its cells sent to Ray
    assert client.delete(f"/v1/runs/{run_id}").json()["state"] == "cancelled"
    assert "cancelled" in assert_one_line_error(client.get(f"/v1/runs/{run_id}/results"), 410)
    deadline = time.monotonic() + 30
    while client.get("/v1/health").json()["runs_in_flight"] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert client.get("/v1/health").json()["runs_in_flight"] == 0  # the sweep's thread let go of its cells
    assert client.get(f"/v1/runs/{run_id}").json()["state"] == "cancelled"


@pytest.mark.parametrize(
    "path, body, says",
    [
        ("/v1/sweeps", "[" * 100_000, "not valid JSON"),
        ("/v1/sweeps", '{"base": {}, "bogus": 1}', "unknown keys ['bogus']"),
        ("/v1/sweeps", replace(SWEEP, clusters=("/etc/cluster.json",)).to_json(), "expected NODESxGPUS:TYPE"),
        ("/v1/sweeps", replace(SWEEP, seeds=MAX_CELLS).to_json(), f"at most {MAX_CELLS} in one sweep"),
        ("/v1/sweeps", replace(SWEEP, base=replace(BASE, schedulers=("nope",))).to_json(), "unknown scheduler"),
        (
            "/v1/sweeps",
            replace(SWEEP, base=replace(BASE, workload=WorkloadSpec(source="trace", trace_sha256="a" * 64))).to_json(),
            "not on this server",
        ),
        ("/v1/plans", '{"base": {}, "nodes": ["8:A100-80"]}', "missing target"),
        ("/v1/plans", '{"base": {}, "nodes": "8:A100-80", "target": "wait<5"}', "expected METRIC<=VALUE"),
        ("/v1/plans", '{"base": {}, "nodes": ["8:Z999"], "target": "p95_wait_s<=60"}', "node shape '8:Z999'"),
        ("/v1/plans", '{"base": {}, "nodes": [], "target": "p95_wait_s<=60"}', "1 to 8 distinct shapes"),
        ("/v1/plans", '{"base": {}, "nodes": null, "target": "p95_wait_s<=60"}', "expected a list of GPUS:TYPE"),
        ("/v1/plans", '{"base": {}, "nodes": 1.5, "target": "p95_wait_s<=60"}', "expected a list of GPUS:TYPE"),
        (
            "/v1/plans",
            '{"base": {}, "nodes": ["8:A100-80"], "target": "p95_wait_s<=60", "max_nodes": 1e9}',
            "max_nodes",
        ),
        (
            "/v1/plans",
            '{"base": {"workload": {"trace_path": "/etc/passwd"}}, "nodes": ["8:A100-80"], "target": "p95_wait_s<=60"}',
            "plan base",
        ),
        (
            "/v1/plans",
            '{"base": {}, "nodes": ["8:A100-80", "8:H100-80"], "target": "p95_wait_s<=60", "grow": true}',
            "grow",
        ),
    ],
)
def test_a_bad_spec_is_a_422_with_one_line(client, path, body, says):
    assert says in assert_one_line_error(client.post(path, content=body), 422)

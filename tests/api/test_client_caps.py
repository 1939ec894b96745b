"""No client can take the whole server: against a live server whose clients may have 2 runs in flight, a client past
its cap (runs, sweeps and plans alike; synchronous requests) gets 429 with ``Retry-After`` and the setting's name,
while a client from another address is still served, and the first client's runs go on; a cancelled or finished run
no longer counts. A client is its connecting address: ``X-Forwarded-For`` does not make a new one."""

from __future__ import annotations

import signal
import threading
import time
from dataclasses import replace

import pytest

from engine.analysis.plan import PlanSpec
from engine.analysis.scenario import WorkloadSpec
from engine.analysis.sweep import SweepSpec
from tests.api.live_server import client_from, start_server
from tests.api.test_server import CANONICAL, LONG, SMALL, assert_one_line_error, post_run, wait_state

pytestmark = pytest.mark.timeout(300)
#: Runs one client may have queued or running on this module's server.
CAP = 2
#: Seconds a synchronous request may take here: SLOW holds its slot that long, then fails.
SYNC_TIMEOUT_S = 8
#: A synchronous run of minutes (an agent on 100,000 jobs; fifo on them takes 3 s here).
SLOW = replace(LONG, schedulers=("rl:wait-mlp",))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = start_server(
        tmp_path_factory.mktemp("api") / "store.sqlite",
        PLAYGROUND_API_MAX_RUNS_PER_CLIENT=str(CAP),
        PLAYGROUND_API_SYNC_TIMEOUT_S=str(SYNC_TIMEOUT_S),
        PLAYGROUND_API_SYNC_MAX_JOB_RUNS=str(LONG.workload.n_jobs),  # SLOW may be posted to /v1/simulate
        PLAYGROUND_API_TRACE_STORE_MB_PER_CLIENT="1",  # two uploads of big_trace()
    )
    yield srv
    srv.stop()


def big_trace(tag: str) -> bytes:
    """A trace of 0.6 MiB: the canonical sample 16 times over, its job names tagged (each tag other bytes)."""
    header, *rows = CANONICAL.read_text().splitlines()
    out = [header]
    for k in range(16):
        for row in rows:
            job_id, name, rest = row.split(",", 2)
            out.append(f"{k * len(rows) + int(job_id)},{tag}-{name},{rest}")
    return ("\n".join(out) + "\n").encode()


def upload(client, data: bytes, name: str) -> dict:
    answer = client.post("/v1/traces", params={"name": name}, content=data)
    assert answer.status_code == 201, answer.text
    return answer.json()


def simulate_on(client, upload: dict):
    workload = WorkloadSpec(source="trace", trace_sha256=upload["sha256"], trace_name=upload["name"], first=50)
    return client.post("/v1/simulate", content=replace(SMALL, workload=workload).to_json())


def assert_refused(answer, setting: str) -> None:
    assert setting in assert_one_line_error(answer, 429)
    assert answer.headers["Retry-After"] == "10"


def test_a_client_over_its_run_cap_gets_429_while_another_client_gets_202(client, server):
    mine = [post_run(client, LONG) for _ in range(CAP)]
    stored = {r["id"] for r in client.get("/v1/runs").json()}
    assert_refused(client.post("/v1/runs", content=SMALL.to_json()), "PLAYGROUND_API_MAX_RUNS_PER_CLIENT")
    # Sweeps and plans are runs too (refused before their Ray starts).
    sweep = SweepSpec(base=SMALL, clusters=(SMALL.cluster,), seeds=1)
    assert_refused(client.post("/v1/sweeps", content=sweep.to_json()), "PLAYGROUND_API_MAX_RUNS_PER_CLIENT")
    plan = PlanSpec(base=replace(SMALL, schedulers=("fifo",)), nodes=("4:V100-32",), target="p95_wait_s<=600")
    assert_refused(client.post("/v1/plans", content=plan.to_json()), "PLAYGROUND_API_MAX_RUNS_PER_CLIENT")
    # Naming another address in X-Forwarded-For makes no new client.
    spoofed = client.post("/v1/runs", content=SMALL.to_json(), headers={"X-Forwarded-For": "10.9.8.7"})
    assert_refused(spoofed, "PLAYGROUND_API_MAX_RUNS_PER_CLIENT")
    assert {r["id"] for r in client.get("/v1/runs").json()} == stored  # a refused run is not stored
    with client_from(server, "127.0.0.2") as other:
        theirs = post_run(other, SMALL)
    # Nothing of the first client's runs was lost.
    assert all(client.get(f"/v1/runs/{r}").json()["state"] in ("queued", "running") for r in mine)
    # A cancelled run no longer counts: the client may post again at once; so does a finished one.
    assert client.delete(f"/v1/runs/{mine[0]}").json()["state"] == "cancelled"
    again = post_run(client, SMALL)
    assert_refused(client.post("/v1/runs", content=SMALL.to_json()), "PLAYGROUND_API_MAX_RUNS_PER_CLIENT")
    assert wait_state(client, again, ("done", "failed"), timeout_s=120)["state"] == "done"
    assert wait_state(client, theirs, ("done", "failed"), timeout_s=120)["state"] == "done"
    last = post_run(client, SMALL)
    assert client.get(f"/v1/runs/{mine[1]}").json()["state"] == "running"
    for run_id in (mine[1], last):
        client.delete(f"/v1/runs/{run_id}")


def test_a_client_has_one_synchronous_request_at_once_while_another_client_is_answered(client, server):
    answers: dict = {}
    slow = threading.Thread(target=lambda: answers.update(slow=client.post("/v1/simulate", content=SLOW.to_json())))
    slow.start()
    try:
        time.sleep(2)  # the slow request reaches its worker
        refused = None
        while slow.is_alive() and refused is None:
            answer = client.post("/v1/simulate", content=SMALL.to_json())
            if answer.status_code == 429:
                refused = answer
        assert refused is not None, "the slow synchronous run ended before a second one was refused"
        assert_refused(refused, "PLAYGROUND_API_SYNC_PER_CLIENT")
        upload = client.post("/v1/traces", params={"name": "canonical.csv"}, content=CANONICAL.read_bytes())
        assert_refused(upload, "PLAYGROUND_API_SYNC_PER_CLIENT")  # an upload being loaded is one too
        with client_from(server, "127.0.0.3") as other:
            assert other.post("/v1/simulate", content=SMALL.to_json()).status_code == 200
        assert slow.is_alive()
    finally:
        slow.join()
    assert "stopped after" in assert_one_line_error(answers["slow"], 422)  # the synchronous time limit
    assert client.post("/v1/simulate", content=SMALL.to_json()).status_code == 200


def test_a_client_past_its_share_of_uploads_evicts_its_own_not_another_clients(client, server):
    with client_from(server, "127.0.0.4") as other:
        theirs = upload(other, big_trace("theirs"), "theirs.csv")
        first = upload(client, big_trace("first"), "first.csv")
        second = upload(client, big_trace("second"), "second.csv")  # 1.2 MiB of this client's: past its 1 MiB
        assert [t["name"] for t in second["evicted"]] == ["first.csv"]  # its own, though theirs.csv is older
        assert "PLAYGROUND_API_TRACE_STORE_MB_PER_CLIENT" in second["message"]
        assert simulate_on(other, theirs).status_code == 200
    assert simulate_on(client, second).status_code == 200
    assert "not on this server" in assert_one_line_error(simulate_on(client, first), 422)


def test_a_restart_over_the_cap_is_refused_and_the_run_stays_interrupted(tmp_path):
    store = tmp_path / "store.sqlite"
    first = start_server(store)
    try:
        with client_from(first, "127.0.0.1") as c:
            interrupted = post_run(c, LONG)
            wait_state(c, interrupted, ("running",))
    finally:
        first.stop(signal.SIGKILL)
    second = start_server(store, PLAYGROUND_API_MAX_RUNS_PER_CLIENT="1")
    try:
        with client_from(second, "127.0.0.1") as c:
            running = post_run(c, LONG)
            assert_refused(c.post(f"/v1/runs/{interrupted}/restart"), "PLAYGROUND_API_MAX_RUNS_PER_CLIENT")
            assert c.get(f"/v1/runs/{interrupted}").json()["state"] == "interrupted"  # still restartable
            c.delete(f"/v1/runs/{running}")
            assert c.post(f"/v1/runs/{interrupted}/restart").status_code == 202
            c.delete(f"/v1/runs/{interrupted}")
    finally:
        second.stop()

"""Uploads and heavy work cannot be turned against the server: a bounded store per session that drops failed
uploads, a host-set job limit per run, and worker processes with a time and a memory bound."""

from __future__ import annotations

import os
import re
import time

import pytest
from streamlit.testing.v1 import AppTest

from app_pages.lib import uploads, workers
from engine.errors import ClusterSpecError
from engine.sim.cluster import parse_cluster
from engine.traces import write_csv
from engine.traces.generator import generate
from tests.app.test_pages import APP


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1)) / 1024


def csv_bytes(tmp_path, n: int, seed: int = 0) -> bytes:
    return write_csv(generate("2x4:V100-32", n, load=0.9, seed=seed), tmp_path / f"t{n}-{seed}.csv").read_bytes()


def errors(at: AppTest) -> list[str]:
    return [re.sub(r"\\(.)", r"\1", e.value) for e in at.error]


def workload_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["cluster"] = "2x4:V100-32"
    at.run()
    at.switch_page("app_pages/workload.py").run()
    return at


def upload(at: AppTest, name: str, data: bytes) -> None:
    """Choose the file and press "Load trace" (one rerun: the page has had a file before, so it is enabled)."""
    at.file_uploader(key="trace_upload").upload(name, data)
    at.button(key="load_trace").click().run()
    assert not at.exception, [e.value for e in at.exception]


def test_store_counts_bytes_and_evicts_the_least_recently_used():
    store = uploads.UploadStore(limit_bytes=100)
    a, b, c = store.put(b"a" * 40), store.put(b"b" * 40), None
    assert store.get(a) == b"a" * 40  # a is now the most recently used
    c = store.put(b"c" * 40)  # 120 > 100: b goes, not a
    assert store.get(b) is None and store.get(a) and store.get(c) and store.total_bytes == 80
    store.put(b"a" * 40)  # the same bytes again are not counted twice
    assert store.total_bytes == 80 and len(store) == 2
    with pytest.raises(uploads.UploadLimitError, match="keeps at most 0 MiB"):
        store.put(b"x" * 101)
    store.drop(a)
    assert store.total_bytes == 40


def test_the_host_sets_the_limits(monkeypatch):
    monkeypatch.setenv("PLAYGROUND_UPLOAD_STORE_MB", "3")
    monkeypatch.setenv("PLAYGROUND_MAX_JOBS", "1234")
    assert uploads.store_limit_bytes() == 3 * 2**20 and uploads.max_jobs_per_run() == 1234
    monkeypatch.setenv("PLAYGROUND_MAX_JOBS", "lots")
    with pytest.raises(uploads.UploadLimitError, match="PLAYGROUND_MAX_JOBS must be a positive integer"):
        uploads.max_jobs_per_run()


#: Uploads in one session (the suite's default keeps it quick; TRUST_UPLOADS=20 is the measurement in the report).
UPLOADS = int(os.environ.get("TRUST_UPLOADS", "8"))


def test_many_uploads_keep_the_session_store_bounded_and_drop_failures(tmp_path, monkeypatch):
    monkeypatch.setattr(uploads, "store_limit_bytes", lambda: 40_000)  # small files keep the test quick
    at = workload_page()
    good = [csv_bytes(tmp_path, 200, seed) for seed in range(UPLOADS)]  # about 15 kB each
    bad = [g[:2000] + b"\nx,y,z\n" for g in good]
    at.file_uploader(key="trace_upload").upload("first.csv", good[0])
    at.run()  # the first file enables the button
    before = rss_mib()
    for i in range(UPLOADS):
        upload(at, f"up{i}.csv", bad[i] if i % 2 else good[i])
        store = at.session_state["_upload_store"]
        assert store.total_bytes <= 40_000, store.total_bytes
        assert all(store.get(uploads.content_hash(b)) is None for b in bad[: i + 1])  # failures are never kept
        assert (errors(at) != []) == bool(i % 2)
    kept = [i for i in range(0, UPLOADS, 2) if store.get(uploads.content_hash(good[i])) is not None]
    assert kept == list(range(0, UPLOADS, 2))[-2:], kept  # two uploads fit in 40 kB: the older ones were evicted
    assert store.total_bytes == sum(len(good[i]) for i in kept)
    print(f"RSS of the test process: {before:.0f} MiB before, {rss_mib():.0f} MiB after {UPLOADS} uploads")


def test_a_trace_larger_than_the_job_limit_is_refused_with_how_to_window_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PLAYGROUND_MAX_JOBS", "50")
    at = workload_page()
    at.file_uploader(key="trace_upload").upload("sixty.csv", csv_bytes(tmp_path, 60))
    at.run()  # the first file enables the button
    upload(at, "sixty.csv", csv_bytes(tmp_path, 60))
    assert any(
        "gives 60 jobs; this server simulates at most 50 per run: set 'Keep the first N jobs' to 50" in e
        for e in errors(at)
    ), errors(at)
    assert at.session_state["_upload_store"].total_bytes == 0  # dropped
    at.number_input(key="up_first").set_value(50).run()
    upload(at, "sixty.csv", csv_bytes(tmp_path, 60))
    assert not errors(at) and any("Loaded 50 jobs" in s.value.replace("\\", "") for s in at.success)
    # Far more lines than a run may hold: refused before parsing, with the command that cuts the file.
    upload(at, "long.csv", csv_bytes(tmp_path, 400))
    assert any("has more than 250 lines" in e and "head -n 250" in e for e in errors(at)), errors(at)


def test_worker_bounds_stop_a_run_with_a_message(monkeypatch):
    monkeypatch.setenv("PLAYGROUND_RUN_TIMEOUT_S", "2")
    start = time.monotonic()
    with pytest.raises(workers.RunLimitError, match="stopped after 2 s, this server's time limit per run"):
        workers.call(time.sleep, 60, what="sleeping")
    assert time.monotonic() - start < 30
    monkeypatch.setenv("PLAYGROUND_RUN_MEMORY_MB", "1024")
    with pytest.raises(workers.RunLimitError, match="more than 1,024 MiB, this server's memory limit per run"):
        workers.call(bytearray, 2**31, what="allocating")
    with pytest.raises(workers.WorkerError, match="expected NODESxGPUS:TYPE") as err:
        workers.call(parse_cluster, "nope", what="parsing")
    assert not isinstance(err.value, ClusterSpecError)  # the message crosses, the type is the worker's
    assert workers.call(parse_cluster, "2x4:T4", what="parsing").n_gpus == 8


def test_a_comparison_past_the_time_bound_stops_with_a_message(monkeypatch):
    monkeypatch.setenv("PLAYGROUND_RUN_TIMEOUT_S", "1")
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in {"cluster": "8x8:A100-80", "sched": "fifo", "w.n_jobs": "100000", "w.seed": "7"}.items():
        at.query_params[k] = v
    at.run()
    at.switch_page("app_pages/compare.py").run()
    at.button(key="compare_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("stopped after 1 s, this server's time limit per run" in e for e in errors(at)), errors(at)

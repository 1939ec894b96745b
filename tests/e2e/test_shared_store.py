"""A link to a run on an uploaded trace opens with its results in a new browser session after a server restart:
the upload lives in the run store the app shares with the HTTP API, not only in the session that uploaded it."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from benchmarks.app_compare import serve_app
from engine.runner.store import RunStore
from engine.traces import write_csv
from engine.traces.generator import generate
from tests.e2e.test_playground import SLOW_MS, _upload

pytestmark = pytest.mark.e2e


def test_a_link_on_an_uploaded_trace_runs_in_a_new_session_after_a_restart(
    browser: Browser, tmp_path: Path, monkeypatch
):
    store = tmp_path / "runs" / "playground.sqlite"
    monkeypatch.setenv("PLAYGROUND_STORE", str(store))
    trace = write_csv(generate("2x4:V100-32", 60, load=0.9, seed=12), tmp_path / "shared_trace.csv")
    with serve_app() as url:
        context = browser.new_context()
        page = context.new_page()
        page.goto(f"{url}/workload?cluster=2x4:V100-32")
        _upload(page, trace)
        page.get_by_role("button", name="Load trace").click()
        expect(page.get_by_text("Loaded 60 jobs from shared_trace.csv")).to_be_visible(timeout=SLOW_MS)
        query = page.url.split("?", 1)[1]
        context.close()
    digest = next(p.split("=", 1)[1] for p in query.split("&") if p.startswith("w.trace_sha256="))
    assert RunStore(store, runs=False).trace_info(digest).name == "shared_trace.csv"
    with serve_app() as url:  # a restarted server: no session and no cache holds the trace
        context = browser.new_context()
        page = context.new_page()
        page.goto(f"{url}/compare?{query}&sched=fifo,sjf")
        page.get_by_role("button", name="Run comparison").click()
        expect(page.get_by_text("Key metrics")).to_be_visible(timeout=SLOW_MS)
        expect(page.get_by_text("upload it again")).to_have_count(0)
        context.close()

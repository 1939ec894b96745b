"""The run store on a real SQLite file: states, atomic results, recovery after a killed server, the trace LRU."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading

import pytest

from engine.runner.store import RunStore, StoreError

PARTS = {"metrics": {"fifo": {"mean_wait_s": 1.5}}, "jobs": {"fifo": [{"job_id": 0}]}, "timeline": {"fifo": {}}}
RESULTS = {part: json.dumps(value) for part, value in PARTS.items()}


def test_a_run_goes_from_queued_to_done_with_its_results(tmp_path):
    store = RunStore(tmp_path / "s.sqlite")
    run = store.create_run('{"seed": 1}')
    assert store.get_run(run.id).state == "queued"
    assert store.results(run.id) is None
    assert store.set_state(run.id, "running")
    store.set_progress(run.id, 0.5)
    assert store.get_run(run.id).progress == 0.5
    assert store.finish(run.id, RESULTS)
    done = store.get_run(run.id)
    assert (done.state, done.progress, done.scenario) == ("done", 1.0, '{"seed": 1}')
    assert store.results(run.id) == PARTS["metrics"]
    assert store.results(run.id, "jobs") == PARTS["jobs"]
    assert store.results_json(run.id, "timeline") == RESULTS["timeline"]
    assert store.get_run("nope") is None


def test_a_finished_run_never_changes_state(tmp_path):
    store = RunStore(tmp_path / "s.sqlite")
    run = store.create_run("{}")
    assert store.set_state(run.id, "cancelled")
    assert not store.set_state(run.id, "running")
    assert not store.finish(run.id, RESULTS)  # a cancelled run that then ends keeps no results
    assert store.get_run(run.id).state == "cancelled"
    assert store.results(run.id) is None
    with pytest.raises(ValueError, match="unknown run state"):
        store.set_state(run.id, "exploded")


def test_results_that_are_not_json_text_leave_the_run_running(tmp_path):
    store = RunStore(tmp_path / "s.sqlite")
    run = store.create_run("{}")
    store.set_state(run.id, "running")
    with pytest.raises(ValueError):
        store.finish(run.id, {**RESULTS, "metrics": "{not json"})
    assert store.get_run(run.id).state == "running"


def test_reopening_marks_unfinished_runs_interrupted_and_keeps_finished_ones(tmp_path):
    path = tmp_path / "runs" / "s.sqlite"
    store = RunStore(path)
    done, running, queued = (store.create_run(str(i)) for i in range(3))
    store.set_state(done.id, "running")
    store.finish(done.id, RESULTS)
    store.set_state(running.id, "running")
    again = RunStore(path)  # as a restarted server opens it
    assert sorted(again.interrupted) == sorted([running.id, queued.id])
    assert [again.get_run(r.id).state for r in (done, running, queued)] == ["done", "interrupted", "interrupted"]
    assert again.results(done.id) == PARTS["metrics"]
    assert again.requeue(running.id) and again.get_run(running.id).state == "queued"
    assert not again.requeue(done.id)
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_traces_are_content_addressed_and_the_least_recently_used_go_first(tmp_path):
    store = RunStore(tmp_path / "s.sqlite", trace_limit_bytes=25)
    a, b, c = b"a" * 10, b"b" * 10, b"c" * 10
    sha_a, evicted = store.put_trace(a, "a.csv", {"jobs": 1})
    assert sha_a == hashlib.sha256(a).hexdigest() and evicted == []
    store.put_trace(b, "b.csv", {"jobs": 2})
    assert store.get_trace(sha_a) == a  # a is now more recently used than b
    _, evicted = store.put_trace(c, "c.csv", {"jobs": 3})
    assert [(t.name, t.size_bytes, t.report) for t in evicted] == [("b.csv", 10, {"jobs": 2})]
    assert store.get_trace(hashlib.sha256(b).hexdigest()) is None
    assert store.trace_info(sha_a).name == "a.csv"
    _, evicted = store.put_trace(a, "a.csv", {"jobs": 1})  # the same bytes again: nothing to evict
    assert evicted == []
    with pytest.raises(StoreError, match="at most 0 MiB of uploaded traces"):
        store.put_trace(b"x" * 26, "big.csv", {})


def test_a_client_past_its_share_of_traces_evicts_its_own_least_recently_used_not_the_others(tmp_path):
    store = RunStore(tmp_path / "s.sqlite", trace_limit_bytes=100, client_trace_limit_bytes=25)
    theirs, _ = store.put_trace(b"o" * 10, "theirs.csv", {}, client="10.0.0.2")
    app, _ = store.put_trace(b"p" * 10, "app.csv", {})  # the app's: no share per client
    store.put_trace(b"a" * 10, "a.csv", {}, client="10.0.0.1")
    mine, _ = store.put_trace(b"b" * 10, "b.csv", {}, client="10.0.0.1")
    _, evicted = store.put_trace(b"c" * 10, "c.csv", {}, client="10.0.0.1")
    assert [t.name for t in evicted] == ["a.csv"]  # not theirs.csv nor app.csv, used less recently
    assert all(store.trace_info(sha) for sha in (theirs, app, mine))
    with pytest.raises(StoreError, match="at most 0 MiB of one client's uploaded traces"):
        store.put_trace(b"x" * 26, "big.csv", {}, client="10.0.0.1")


def test_many_threads_write_without_losing_a_run(tmp_path):
    store = RunStore(tmp_path / "s.sqlite")
    ids: list[str] = []

    def work():
        for _ in range(10):
            run = store.create_run("{}")
            store.set_state(run.id, "running")
            store.finish(run.id, RESULTS)
            ids.append(run.id)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == 80
    assert {r.state for r in store.list_runs(limit=1000)} == {"done"}


def test_a_store_written_before_sweeps_opens_with_its_runs_as_scenario_runs_and_its_traces_no_clients(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:  # the schema of the first API version: no kind column, no traces' client
        db.executescript(
            "CREATE TABLE runs (id TEXT PRIMARY KEY, scenario TEXT NOT NULL, state TEXT NOT NULL, progress REAL NOT "
            "NULL DEFAULT 0, error TEXT NOT NULL DEFAULT '', created_s REAL NOT NULL, updated_s REAL NOT NULL);"
            "INSERT INTO runs VALUES ('" + "a" * 32 + "', '{}', 'done', 1, '', 1, 1);"
            "CREATE TABLE traces (sha256 TEXT PRIMARY KEY, name TEXT NOT NULL, data BLOB NOT NULL, size_bytes INTEGER "
            "NOT NULL, report TEXT NOT NULL, created_s REAL NOT NULL, used_s REAL NOT NULL);"
            "INSERT INTO traces VALUES ('" + "b" * 64 + "', 'old.csv', X'6f6c64', 3, '{}', 1, 1);"
        )
    store = RunStore(path, client_trace_limit_bytes=3)
    _, evicted = store.put_trace(b"new", "new.csv", {}, client="10.0.0.1")
    assert evicted == [] and store.get_trace("b" * 64) == b"old"  # an old upload is no client's
    old = store.get_run("a" * 32)
    assert (old.kind, old.state) == ("scenario", "done")
    sweep = store.create_run('{"base": {}}', kind="sweep")
    assert RunStore(path).get_run(sweep.id).kind == "sweep"  # the kind survives a restart
    assert [r.kind for r in store.list_runs()] == ["sweep", "scenario"]
    with pytest.raises(ValueError, match="unknown run kind"):
        store.create_run("{}", kind="nope")

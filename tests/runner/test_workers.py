"""Bounded worker processes: progress crosses back, a cancel kills the work, bounds stop it with one line."""

from __future__ import annotations

import threading
import time

import pytest

from engine.analysis.results import scenario_results
from engine.analysis.scenario import Scenario, WorkloadSpec
from engine.errors import RunCancelled
from engine.runner.workers import RunLimitError, WorkerError, call

SCENARIO = Scenario(cluster="1x4:V100-32", workload=WorkloadSpec(n_jobs=200, load=1.2), schedulers=("fifo", "sjf"))


def test_progress_crosses_from_the_worker_and_the_answer_is_the_direct_one():
    seen = []
    got = call(
        scenario_results,
        SCENARIO,
        what="a run",
        limit_s=120,
        memory_mb=4096,
        on_progress=lambda done, total: seen.append((done, total)),
    )
    assert got == scenario_results(SCENARIO)
    assert seen and seen[-1] == (400, 400)


def test_a_cancel_kills_the_work_at_once():
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    start = time.monotonic()
    with pytest.raises(RunCancelled, match="sleeping was cancelled"):
        call(time.sleep, 60, what="sleeping", limit_s=120, memory_mb=1024, cancel=cancel)
    assert time.monotonic() - start < 10


def test_bounds_and_bad_input_are_one_line_errors():
    with pytest.raises(RunLimitError, match="stopped after 0.5 s"):
        call(time.sleep, 60, what="sleeping", limit_s=0.5, memory_mb=1024)
    with pytest.raises(WorkerError, match="names no scheduler"):
        call(scenario_results, SCENARIO.with_schedulers(()), what="a run", limit_s=60, memory_mb=4096)
    slots = threading.BoundedSemaphore(1)
    slots.acquire()
    with pytest.raises(RunLimitError, match="every worker of this server stayed busy"):
        call(time.sleep, 0, what="sleeping", limit_s=0.2, memory_mb=1024, slots=slots)


def test_every_call_runs_in_a_process_of_its_own_started_before_the_call():
    import os

    from engine.runner import workers

    first = call(os.getpid, what="pid", limit_s=60, memory_mb=1024)
    deadline = time.monotonic() + 30
    while workers._spare is None and time.monotonic() < deadline:  # started in the background after a call
        time.sleep(0.01)
    spare_pid = workers._spare[0].pid
    second = call(os.getpid, what="pid", limit_s=60, memory_mb=1024)
    assert second == spare_pid and second != first != os.getpid()  # the spare, which ran this call only
    with pytest.raises(TypeError):  # work that does not pickle is the caller's error, and no worker waits for it
        call(os.getpid, threading.Lock(), what="pid", limit_s=60, memory_mb=1024)
    assert call(os.getpid, what="pid", limit_s=60, memory_mb=1024) not in (first, second)


def test_a_cancel_ends_the_wait_for_a_busy_server_at_once():
    # A run its session stopped while it waited for a worker held its session's place for the whole wait
    # (the soak benchmark: Run pressed three times, the third refused as the session's third piece of work).
    slots = threading.BoundedSemaphore(1)
    slots.acquire()
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    start = time.monotonic()
    with pytest.raises(RunCancelled, match="sleeping was cancelled"):
        call(time.sleep, 0, what="sleeping", limit_s=60, memory_mb=1024, slots=slots, cancel=cancel)
    assert time.monotonic() - start < 5

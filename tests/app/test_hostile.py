"""What any visitor of a shared server can send does not crash a page, exhaust the server or inject markup:
ragged CSV previews, gzip bombs, Markdown in file names and headers (issue 32)."""

from __future__ import annotations

import gc
import gzip
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engine.traces import limits
from engine.traces.limits import UploadLimitError
from tests.app.test_pages import APP
from tests.app.test_uploads import errors, workload_page


def test_a_csv_whose_rows_are_narrower_or_wider_than_its_header_previews_padded_with_a_note():
    at = workload_page()
    data = b"submit,runtime,gpus,who\n0,10,1\n5,20,2,alice,extra,more\n9,30,4,bob\n"
    at.file_uploader(key="trace_upload").upload("ragged.csv", data)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    frame = next(d.value for d in at.dataframe if list(d.value.columns) == ["submit", "runtime", "gpus", "who"])
    assert frame.iloc[0].tolist() == ["0", "10", "1", ""] and frame.iloc[1].tolist() == ["5", "20", "2", "alice"]
    assert any("2 of the first 3 rows" in c.value.replace("\\", "") for c in at.caption), [c.value for c in at.caption]


def test_a_csv_with_repeated_column_names_previews():
    at = workload_page()
    at.file_uploader(key="trace_upload").upload("twice.csv", b"t,t,dur\n0,1,10\n")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(list(d.value.columns) == ["t", "t (2)", "dur"] for d in at.dataframe)


def test_an_uncaught_error_shows_one_line_with_no_traceback_or_server_paths(monkeypatch):
    """The server's config (``.streamlit/config.toml``) shows a page's uncaught error as its type alone."""
    import tomllib

    from streamlit import config

    from app_pages.lib import common
    from engine.traces import mapped

    shown = tomllib.loads((common.REPO / ".streamlit" / "config.toml").read_text())["client"].get("showErrorDetails")
    monkeypatch.setattr(
        config,
        "get_option",
        lambda key, get=config.get_option: (shown or "full") if key == "client.showErrorDetails" else get(key),
    )
    monkeypatch.setattr(mapped, "preview", lambda data: 1 / 0)
    at = workload_page()
    at.file_uploader(key="trace_upload").upload("any.csv", b"a,b\n1,2\n")
    at.run()
    (exc,) = at.exception
    assert not exc.stack_trace and "/" not in exc.message and "\n" not in exc.message, (exc.message, exc.stack_trace)


def gzip_bomb(expanded_mib: int) -> bytes:
    """``expanded_mib`` MiB of zero bytes (no line ends), gzipped (members of 64 MiB each, one after the
    other): about 1,000 times smaller."""
    return gzip.compress(bytes(64 * 2**20)) * (expanded_mib // 64)


def test_a_gzip_bomb_is_refused_in_the_server_thread_within_a_fixed_budget():
    bomb = gzip_bomb(1024)  # 1 MiB that expands to 1 GiB
    start = time.monotonic()
    with pytest.raises(UploadLimitError, match=r"bomb.csv.gz expands to more than 100 MiB"):
        limits.check_trace_size(bomb, "bomb.csv.gz", max_jobs=100_000)
    assert time.monotonic() - start < 5
    limits.check_trace_size(gzip.compress(b"submit,duration\n" + b"0,10\n" * 10_000), "fine.csv.gz", 100_000)


def test_an_uploaded_gzip_bomb_is_one_error_line():
    at = workload_page()
    bomb = gzip_bomb(512)
    at.file_uploader(key="trace_upload").upload("bomb.csv.gz", bomb)
    at.run()
    at.button(key="load_trace").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("bomb.csv.gz expands to more than" in e for e in errors(at)), errors(at)


EVIL = "[x](http://evil.example/a)"


def markdown_bodies(at) -> list[str]:
    return [
        e.value
        for kind in ("markdown", "caption", "info", "error", "warning", "success", "subheader")
        for e in getattr(at, kind)
    ]


def test_a_file_name_and_csv_header_from_an_upload_show_as_text_never_as_links():
    at = workload_page()
    at.file_uploader(key="trace_upload").upload(f"{EVIL}.csv", f"{EVIL},`dur`\n0,10\n5,20\n".encode())
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    shown = markdown_bodies(at)
    assert any("evil" in body for body in shown), shown  # the name and the header are on the page...
    assert not [body for body in shown if "](http" in body], shown  # ...as text
    at.selectbox(key="up_format").set_value("mapped")
    at.file_uploader(key="trace_upload").upload(f"{EVIL}.csv", b"\x00\x01 not text at all")
    at.run()
    assert not [body for body in markdown_bodies(at) if "](http" in body], markdown_bodies(at)
    at.selectbox(key="up_format").set_value("auto-detect")
    at.file_uploader(key="trace_upload").upload(f"{EVIL}.csv", b"submit,duration\nx,y\n")
    at.run()
    at.button(key="load_trace").click().run()  # does not load: the page says why
    assert any("evil" in body for body in markdown_bodies(at)), markdown_bodies(at)
    assert not [body for body in markdown_bodies(at) if "](http" in body], markdown_bodies(at)


def test_more_clusters_past_the_scenario_limit_are_refused_before_any_run():
    from tests.app.test_explore import explore

    at = explore()
    at.text_area(key="sweep_clusters").set_value("4x8:A100-80\n100000x8:A100-80")
    at.button(key="FormSubmitter:sweep_form-▶ Run sweep").click().run()
    assert not at.exception and "explore_sweep" not in at.session_state
    assert any("100,000 nodes and 800,000 GPUs; the playground's limit is" in e for e in errors(at)), errors(at)


def sleeper() -> subprocess.Popen:
    return subprocess.Popen(["sleep", "60"], start_new_session=True)


def test_trainings_are_capped_per_server_bounded_in_memory_and_time_and_end_with_their_session(monkeypatch):
    from app_pages.lib import trainings

    monkeypatch.setenv("PLAYGROUND_TRAININGS", "1")
    monkeypatch.setenv("PLAYGROUND_TRAIN_MEMORY_MB", "2048")
    monkeypatch.setenv("PLAYGROUND_TRAIN_TIMEOUT_S", "1")
    monkeypatch.setattr(trainings, "GRACE_S", 1)
    stops = []
    proc = trainings.start(sleeper, lambda: stops.append(1))
    limits_text = Path(f"/proc/{proc.pid}/limits").read_text()
    assert re.search(r"Max address space\s+2147483648\s+2147483648", limits_text), limits_text
    with pytest.raises(trainings.RunLimitError, match="this server runs at most 1 trainings at once"):
        trainings.start(sleeper, lambda: None)
    proc.wait(timeout=10)  # asked to stop after 1 s, killed 1 s later
    assert stops == [1] and proc.returncode == -9
    monkeypatch.setenv("PLAYGROUND_TRAIN_TIMEOUT_S", "600")
    session = trainings._SessionTrainings()
    session.procs.append(late := trainings.start(sleeper, lambda: None))
    del session  # the session ended: its state is dropped
    gc.collect()
    assert late.wait(timeout=10) == -9


def _a_session_starting_two_trainings():
    import subprocess

    import streamlit as st

    from app_pages.lib import trainings

    first = trainings.start(lambda: subprocess.Popen(["sleep", "60"], start_new_session=True), lambda: None)
    try:
        trainings.start(lambda: subprocess.Popen(["sleep", "60"], start_new_session=True), lambda: None)
        st.session_state["second"] = "started"
    except trainings.RunLimitError as exc:
        st.session_state["second"] = str(exc)
    finally:
        first.kill()


def test_one_session_runs_at_most_the_hosts_trainings_per_session(monkeypatch):
    monkeypatch.setenv("PLAYGROUND_TRAININGS", "4")  # the server would run four
    at = AppTest.from_function(_a_session_starting_two_trainings, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["second"] == (
        "a session runs at most 1 training(s) at once on this server; start another when yours has ended"
    )


def test_visitors_train_at_most_the_hosts_steps_and_sessions_get_their_own_default_model_names(monkeypatch):
    monkeypatch.setenv("PLAYGROUND_TRAIN_MAX_STEPS", "5000")
    names = []
    for _ in range(2):
        at = AppTest.from_file(APP, default_timeout=120)
        at.run()
        at.switch_page("app_pages/train.py").run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.number_input(key="train_steps").max == 5000
        names.append(at.text_input(key="train_name").value)
    assert names[0] != names[1], names


def test_the_servers_results_are_bounded_in_bytes_and_the_least_recently_used_go_first(monkeypatch):
    from app_pages.lib import results
    from engine import make_scheduler, simulate
    from engine.sim.cluster import parse_cluster
    from engine.traces.generator import generate

    cluster = parse_cluster("2x4:V100-32")
    runs = {
        n: simulate(cluster, generate("2x4:V100-32", n, load=0.9, seed=0), make_scheduler("fifo"), seed=0)
        for n in (100, 200, 400)
    }
    sizes = {n: results.result_bytes(r) for n, r in runs.items()}
    assert sizes[400] > sizes[200] > sizes[100] >= 100 * 8 * 5  # at least five float arrays per job
    cache = results.ResultCache(limit_bytes=sizes[100] + sizes[200] + 10)
    calls = []

    def run(n):
        calls.append(n)
        return runs[n]

    for n in (100, 200, 100):
        assert cache.get_or_run(n, lambda n=n: run(n)) is runs[n]
    assert calls == [100, 200] and cache.total_bytes == sizes[100] + sizes[200]
    cache.get_or_run(400, lambda: run(400))  # larger than the whole cache: answered, not kept
    assert 400 not in cache and len(cache) == 2
    cache.limit_bytes = sizes[100] + sizes[200]
    cache.get_or_run(("again", 200), lambda: run(200))  # 200 is the least recently used: it goes
    assert 200 not in cache and 100 in cache and cache.total_bytes <= cache.limit_bytes
    monkeypatch.setenv("PLAYGROUND_RESULT_CACHE_MB", "3")
    assert results.limit_bytes() == 3 * 2**20


def test_the_host_caps_the_cells_of_a_sweep(monkeypatch):
    from tests.app.test_explore import explore

    monkeypatch.setenv("PLAYGROUND_SWEEP_CELLS", "4")
    at = explore()
    at.button(key="FormSubmitter:sweep_form-▶ Run sweep").click().run()
    assert not at.exception and "explore_sweep" not in at.session_state
    assert any("the app runs at most 4 cells" in e for e in errors(at)), errors(at)


def test_every_cell_of_a_sweep_and_a_plan_runs_within_the_hosts_time_per_run(monkeypatch, ray_local):
    from tests.app.test_explore import explore

    monkeypatch.setenv("PLAYGROUND_RUN_TIMEOUT_S", "1")
    # an agent's network at each of 5,000 jobs' decision points: about 5 s even compiled (measured: 20,000 jobs
    # take 19.6 s with make build's engine)
    at = explore({"cluster": "1x8:V100-32", "sched": "rl:wait-mlp", "w.n_jobs": "5000", "w.load": "2"})
    at.text_input(key="sweep_loads").set_value("2")
    at.number_input(key="sweep_seeds").set_value(1)
    start = time.monotonic()
    at.button(key="FormSubmitter:sweep_form-▶ Run sweep").click().run()
    assert not at.exception, [e.value for e in at.exception]
    frame = at.session_state["explore_sweep"]["frame"]
    assert frame.empty and [f["error"] for f in frame.attrs["failures"]] == [
        "RunLimitError: this cell stopped after 1 s, this server's time limit per run: make it smaller "
        "(fewer jobs, a smaller cluster, fewer schedulers at once)"
    ]
    assert any("1 cell(s) failed" in w.value for w in at.warning)
    at.button(key="FormSubmitter:plan_form-▶ Find the fewest nodes").click().run()
    assert not at.exception, [e.value for e in at.exception]
    answer = at.session_state["explore_plan"]["answer"]
    assert answer.nodes.isna().all() and "stopped after 1 s" in answer.error[0]
    assert time.monotonic() - start < 60


def _one_session_with_two_runs_in_flight():
    """A page whose session has two runs in flight (runs stopped in the browser go on in their workers, and
    fragments run in parallel) asks for a third; then another session asks for one."""
    import dataclasses
    import threading
    import time

    import streamlit as st
    from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

    from app_pages.lib import workers

    ctx = get_script_run_ctx()
    answers = []

    def run(seconds: float) -> None:
        try:
            answers.append(workers.call(time.sleep, seconds, what="a run"))
        except workers.RunLimitError as exc:
            answers.append(str(exc))

    stale = [threading.Thread(target=run, args=(3,)) for _ in range(2)]
    for thread in stale:
        add_script_run_ctx(thread, ctx)
        thread.start()
    time.sleep(1)  # both hold their session's slots
    start = time.monotonic()
    try:
        workers.call(time.sleep, 0, what="the third run")
    except workers.RunLimitError as exc:
        st.session_state["refused"] = (str(exc), time.monotonic() - start)
    other = threading.Thread(target=run, args=(0,))
    add_script_run_ctx(other, dataclasses.replace(ctx, session_id="another session"))
    other.start()
    other.join()
    st.session_state["other"] = answers[0]
    for thread in stale:
        thread.join()
    st.session_state["after"] = workers.call(abs, -7, what="a run after both ended")


def test_one_session_has_at_most_the_hosts_pieces_of_work_at_once_and_others_still_run(monkeypatch):
    from app_pages.lib import workers

    monkeypatch.setattr(workers, "_slots", threading.BoundedSemaphore(4))  # the server could run four
    at = AppTest.from_function(_one_session_with_two_runs_in_flight, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    message, waited_s = at.session_state["refused"]
    assert message == (
        "the third run: this session already has 2 piece(s) of work running or waiting, this server's limit per "
        "session; wait for one to end (a run stopped in the browser ends within the time limit)"
    )
    assert waited_s < 0.5  # refused at once, not queued behind the two
    assert at.session_state["other"] is None  # another session's run went on meanwhile
    assert at.session_state["after"] == 7


def _a_run_told_to_stop_while_its_call_works():
    """A script run (in a thread, as a run replaced by a newer one goes on in its own) asks for a minute's work,
    then is told to stop (the session ended, Stop was pressed or a rerun replaced it)."""
    import dataclasses
    import threading
    import time

    import streamlit as st
    from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx
    from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequests

    from app_pages.lib import workers
    from engine.errors import RunCancelled

    requests = ScriptRequests()
    outcome = []

    def run() -> None:
        start = time.monotonic()
        try:
            workers.call(time.sleep, 60, what="a long run")
        except RunCancelled as exc:
            outcome.append((str(exc), time.monotonic() - start))

    thread = threading.Thread(target=run)
    add_script_run_ctx(thread, dataclasses.replace(get_script_run_ctx(), script_requests=requests))
    thread.start()
    time.sleep(1)
    requests.request_stop()
    thread.join(30)
    st.session_state["outcome"] = outcome


def test_a_call_stops_when_the_script_run_that_asked_for_it_is_told_to_stop():
    at = AppTest.from_function(_a_run_told_to_stop_while_its_call_works, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    [(message, took_s)] = at.session_state["outcome"]
    assert message == "a long run was cancelled" and took_s < 10  # not the minute it asked for

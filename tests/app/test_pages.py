"""Every page of the playground under Streamlit's AppTest: no exception, widgets change results, errors inline."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import Mapping

import pytest
from streamlit.testing.v1 import AppTest

import app_pages.lib.common as common
from app_pages.lib import workers
from engine.analysis.metrics import Metric, metric_name, summarize
from engine.analysis.scenario import content_hash
from engine.rl import launch
from engine.sim.options import EnergyModel
from engine.traces import write_csv
from engine.traces.generator import generate
from engine.units import human_value

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "app.py")
PAGES = [
    "app_pages/home.py",
    "app_pages/cluster.py",
    "app_pages/workload.py",
    "app_pages/compare.py",
    "app_pages/train.py",
    "app_pages/learn.py",
]
#: A small scenario so that every test runs in well under a second of simulation.
SMALL = {"cluster": "2x4:V100-32,1x4:T4", "sched": "fifo,first-fit", "w.n_jobs": "80"}


def app(page_path: str | None = None, query: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in (SMALL if query is None else query).items():
        at.query_params[k] = v
    at.run()
    if page_path:
        at.switch_page(page_path).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def errors(at: AppTest) -> list[str]:
    """The page's error lines as a reader sees them (user text in them is Markdown-escaped)."""
    return [re.sub(r"\\(.)", r"\1", e.value) for e in at.error]


def run_compare(query: dict) -> AppTest:
    """The Compare page of the link ``query`` after its Run button, checked to show no exception and no error."""
    compare = app("app_pages/compare.py", query=query)
    compare.button(key="compare_run").click().run()
    assert not compare.exception and not errors(compare), errors(compare)
    return compare


def assert_kpi_rows(compare: AppTest, metrics: Mapping[str, Metric], energy: EnergyModel | None = None) -> dict:
    """Check that each row of ``metrics`` in Compare's key-metrics table is every run's own figure (summarised
    under ``energy``) in its human unit; the runs' summaries by scheduler."""
    kpi = compare.dataframe[0].value.set_index("metric")
    summaries = {}
    for name, result in compare.session_state["results"]["results"].items():
        summaries[name] = summary = summarize(result, energy=energy)
        for key, m in metrics.items():
            assert kpi.loc[metric_name(key), name] == human_value(summary.value(key), m.unit), (name, key)
    return summaries


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def charts_of(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def csv_trace(n: int = 60) -> bytes:
    """A canonical-CSV trace written by the engine itself."""
    path = REPO / "runs" / "test_app_trace.csv"
    path.parent.mkdir(exist_ok=True)
    write_csv(generate("2x4:V100-32", n, load=0.9, seed=5), path)
    data = path.read_bytes()
    path.unlink()
    return data


@pytest.mark.parametrize("page_path", PAGES)
def test_every_page_renders_without_exception_or_error(page_path):
    at = app(page_path)
    assert not errors(at)
    assert at.title, f"{page_path} shows no title"


def test_link_reproduces_the_scenario_and_bad_links_fall_back():
    at = app()
    # The shared sidebar shows the scenario from the link. (AppTest drops the sidebar, which the main script
    # draws, after switch_page; the browser test checks it on every page.)
    assert any("12 GPUs" in m.value for m in at.sidebar.markdown)
    at.switch_page("app_pages/workload.py").run()
    assert metric(at, "Jobs") == "80"
    assert at.query_params["cluster"] == SMALL["cluster"]
    at = app(query={"cluster": "not a cluster"})
    assert errors(at) or at.warning  # an invalid cluster is reported inline, never as a traceback


def test_cluster_preset_and_text_spec_change_the_totals():
    at = app("app_pages/cluster.py")
    assert metric(at, "GPUs") == "12" and metric(at, "Racks") == "1"
    at.selectbox(key="cluster_preset").select("64 × A100 (8 nodes × 8)").run()
    at.button(key="cluster_use_preset").click().run()
    assert metric(at, "GPUs") == "64" and metric(at, "Racks") == "2"
    text = next(t for t in at.text_area if t.label == "Cluster spec")
    text.set_value("3x2:T4").run()
    at.button(key="cluster_text_apply").click().run()
    assert metric(at, "GPUs") == "6" and at.query_params["cluster"] == "3x2:T4"
    picture = charts_of(at)[0]
    assert [t["name"] for t in picture["data"]] == ["T4"]


def test_cluster_bad_spec_is_an_inline_error():
    at = app("app_pages/cluster.py")
    next(t for t in at.text_area if t.label == "Cluster spec").set_value("4x8:NOPE-GPU").run()
    at.button(key="cluster_text_apply").click().run()
    assert not at.exception
    assert any("unknown GPU type 'NOPE-GPU'" in e for e in errors(at))
    assert metric(at, "GPUs") == "12"  # the scenario is unchanged


def test_workload_generate_form_changes_the_jobs():
    at = app("app_pages/workload.py")
    at.number_input(key="gen_n_jobs").set_value(150)
    at.selectbox(key="gen_arrival").select("bursty")
    at.button(key="FormSubmitter:generate_form-Generate").click().run()
    assert not at.exception and not errors(at)
    assert metric(at, "Jobs") == "150"
    assert at.query_params["w.arrival"] == "bursty"
    titles = {c["layout"]["title"]["text"] for c in charts_of(at)}
    assert {"arrivals over time", "GPUs per job", "job durations", "volume per user"} <= titles


def test_upload_of_a_canonical_csv_trace_shows_its_report():
    at = app("app_pages/workload.py")
    at.file_uploader(key="trace_upload").upload("mine.csv", csv_trace(60), "text/csv")
    at.run()
    at.button(key="load_trace").click().run()
    assert not at.exception and not errors(at), errors(at)
    assert metric(at, "Jobs kept") == "60" and metric(at, "Rows dropped") == "0"
    assert len(at.query_params["w.trace_sha256"]) == 64
    # The uploaded trace drives the comparison too.
    at.switch_page("app_pages/compare.py").run()
    at.button(key="compare_run").click().run()
    assert not errors(at) and at.dataframe


def test_upload_of_a_real_swf_trace(traces_dir):
    data = (traces_dir / "swf-kth-sp2" / "KTH-SP2-1996-2.1-cln.swf").read_bytes()
    at = app("app_pages/workload.py")
    at.number_input(key="up_first").set_value(300)
    at.checkbox(key="up_skip_bad").check()
    at.file_uploader(key="trace_upload").upload("KTH-SP2-1996-2.1-cln.swf", data)
    at.run()
    at.button(key="load_trace").click().run()
    assert not at.exception and not errors(at), errors(at)
    assert metric(at, "Jobs kept") == "300"
    assert int(metric(at, "Rows read").replace(",", "")) >= 300


def test_upload_through_the_column_mapping_form_with_a_time_unit():
    data = b"t0,run,n_gpu,team\n0,60000,1,a\n30000,120000,2,b\n90000,60000,1,a\n"
    at = app("app_pages/workload.py")
    at.selectbox(key="up_format").select("mapped").run()
    at.file_uploader(key="trace_upload").upload("other.csv", data)
    at.run()
    # The file's columns, a preview and a guessed map; durations of 17 h to 33 h read as seconds are plausible.
    assert any("t0, run, n\\_gpu, team" in m.value for m in at.markdown)  # as text: never Markdown
    assert list(at.dataframe[0].value.columns) == ["t0", "run", "n_gpu", "team"]
    assert [at.selectbox(key=f"map_{f}").value for f in ("submit", "duration", "end", "gpus", "user")] == [
        "t0",
        "run",
        "(none)",
        "n_gpu",
        "team",
    ]
    at.selectbox(key="up_unit").select("ms")
    at.button(key="load_trace").click().run()
    assert not at.exception and not errors(at), errors(at)
    assert metric(at, "Jobs kept") == "3" and metric(at, "Users") == "2"
    assert metric(at, "Span") == "90 s"  # 90,000 ms
    assert at.query_params["w.column_map"] == "duration:run,gpus:n_gpu,submit:t0,user:team"


def test_a_link_to_a_trace_this_server_does_not_hold_asks_for_the_upload():
    query = {**SMALL, "w.source": "trace", "w.trace_sha256": "ab" * 32, "w.trace_name": "gone.csv"}
    at = app("app_pages/compare.py", query=query)
    at.button(key="compare_run").click().run()
    assert not at.exception
    assert any("gone.csv is not available: upload it again" in e for e in errors(at)), errors(at)


def test_sidebar_opens_a_scenario_json():
    from engine.analysis.scenario import Scenario, WorkloadSpec

    wanted = Scenario(cluster="1x8:H100-80", workload=WorkloadSpec(n_jobs=40), schedulers=("sjf",))
    at = app()
    at.sidebar.file_uploader[0].upload("scenario.json", wanted.to_json().encode())
    at.run()
    assert not at.exception
    assert at.query_params["cluster"] == "1x8:H100-80" and at.query_params["sched"] == "sjf"
    assert any("8 GPUs" in m.value for m in at.sidebar.markdown)
    at.sidebar.file_uploader[0].upload("bad.json", b'{"cluster": "1x8:H100-80", "colour": 1}')
    at.run()
    assert any("unknown keys ['colour']" in e for e in errors(at))


@pytest.mark.parametrize(
    "name, data, words",
    [
        ("garbage.csv", b"\x00\x01\x02 not a trace at all", "garbage.csv"),
        ("bad_row.csv", b"submit_s,duration_s,gpus\n0,10,1\n5,ten,1\n", "line 3"),
    ],
)
def test_bad_upload_shows_an_inline_error(name, data, words):
    at = app("app_pages/workload.py")
    at.file_uploader(key="trace_upload").upload(name, data)
    at.run()
    at.button(key="load_trace").click().run()
    assert not at.exception
    assert any(words in e for e in errors(at)), errors(at)
    assert not any("--" in e or "/tmp" in e or "trace." in e for e in errors(at)), errors(at)  # no flags, no paths
    assert "w.trace_sha256" not in at.query_params  # the scenario did not change
    assert common.trace_bytes(content_hash(data)) is None  # and the server did not keep the bytes


def test_a_file_of_no_known_format_gets_one_plain_sentence_naming_it_once():
    """Issue 33: the loader's error crosses the worker with its parts, so the page words it (no file name twice,
    no list of formats, no flags)."""
    at = app("app_pages/workload.py")
    at.file_uploader(key="trace_upload").upload("broken.trace", b"ResNet-50\tcmd\t--n\n")
    at.run()
    at.button(key="load_trace").click().run()
    (message,) = [e for e in errors(at) if "broken.trace" in e]
    assert "cannot tell this file's format from its first line" in message, message
    assert message.count("broken.trace") == 1 and "tiresias" not in message, message


def test_too_large_upload_is_refused_by_the_stated_limit(monkeypatch):
    monkeypatch.setattr(common, "MAX_UPLOAD_MB", 0.001)
    at = app("app_pages/workload.py")
    at.file_uploader(key="trace_upload").upload("big.csv", csv_trace(60))
    at.run()
    at.button(key="load_trace").click().run()
    assert any("the limit is 0.001 MiB" in e for e in errors(at))
    config = (REPO / ".streamlit" / "config.toml").read_text()
    assert "maxUploadSize = 50" in config and common.MAX_UPLOAD_MB == 0.001


def test_compare_produces_kpis_charts_and_downloads():
    at = app("app_pages/compare.py")
    at.button(key="compare_run").click().run()
    assert not at.exception and not errors(at)
    kpi = at.dataframe[0].value
    assert list(kpi.columns) == ["metric", "fifo", "first-fit"] and "Mean wait ↓" in set(kpi["metric"])
    never = kpi[kpi["metric"] == "Never ran (cannot fit the cluster)"]
    assert list(never.iloc[0])[1:] == ["0", "0"] and not at.warning
    assert all(
        v == "–" or v.endswith((" s", " min", " h", " d")) for v in kpi[kpi["metric"] == "Mean wait ↓"].iloc[0][1:]
    )
    specs = charts_of(at)
    timeline = specs[0]
    assert timeline["layout"]["meta"]["mode"] == "bars" and len(timeline["frames"]) == 200
    assert timeline["layout"]["updatemenus"][0]["buttons"][0]["method"] == "animate"
    assert [a["text"] for a in timeline["layout"]["annotations"][:2]] == ["fifo", "first-fit"]
    titles = [s["layout"].get("title", {}).get("text") for s in specs]
    panels = [a["text"] for s in specs for a in s["layout"].get("annotations", [])]
    assert "wait per user" in titles and {"wait CDF", "JCT CDF"} <= set(panels)
    # The drawing can be chosen; each choice changes the timeline's traces.
    for drawing, mode, trace_type in (("bars (WebGL)", "webgl", "scattergl"), ("raster", "raster", "heatmap")):
        at.selectbox(key="compare_drawing").select(drawing).run()
        spec = charts_of(at)[0]
        assert spec["layout"]["meta"]["mode"] == mode and any(t["type"] == trace_type for t in spec["data"])
    downloads = {d.proto.label for d in at.get("download_button")}
    assert {"Results (CSV, one row per job)", "Results (JSON, metrics)", "Scenario (JSON)"} <= downloads


def test_results_persist_and_unchanged_runs_are_reused(monkeypatch):
    calls = []
    real = workers.call

    def counting(fn, *args, what):  # every run goes through a worker process
        if fn is workers.simulate_named:
            calls.append(args[2])
        return real(fn, *args, what=what)

    monkeypatch.setattr(workers, "call", counting)
    common.results_cache().clear()
    at = app("app_pages/compare.py")
    at.button(key="compare_run").click().run()
    assert sorted(calls) == ["fifo", "first-fit"]
    # A widget change keeps the results on screen without rerunning anything.
    at.radio(key="compare_color_by").set_value("job_type").run()
    assert at.dataframe and len(calls) == 2
    legend = {t["name"] for t in charts_of(at)[0]["data"] if t.get("showlegend")}
    assert legend <= {"training", "inference", "batch", "interactive"}
    # Adding a scheduler simulates only the new one.
    at.multiselect(key="compare_schedulers").select("sjf").run()
    at.button(key="compare_run").click().run()
    assert sorted(calls) == ["fifo", "first-fit", "sjf"]
    assert list(at.dataframe[0].value.columns) == ["metric", "fifo", "first-fit", "sjf"]


def test_learn_worked_example_runs_for_every_registered_scheduler():
    from engine import SCHEDULERS

    at = app("app_pages/learn.py")
    agents = common.trained_agents()
    assert at.selectbox(key="learn_scheduler").options == list(SCHEDULERS) + agents
    for name in SCHEDULERS:
        at.selectbox(key="learn_scheduler").select(name).run()
        assert not at.exception and not errors(at), (name, errors(at))
        assert at.info[0].value == SCHEDULERS[name].summary
    # Every trained agent is explained (its card's description and one-line verdict) and runs the example too.
    if agents:
        table = next(t.value for t in at.table if t.value.index.name == "agent")
        assert list(table.index) == agents
        assert all(v.startswith(("Beats", "Does not beat")) for v in table["against the hand-written schedulers"])
        at.selectbox(key="learn_scheduler").select(agents[0]).run()
        assert not at.exception and not errors(at), errors(at)
        assert at.info[0].value == common.agent_description(agents[0])


def test_learn_worked_example_follows_the_chosen_scheduler():
    at = app("app_pages/learn.py")
    before = charts_of(at)[0]["layout"]["annotations"][1]["text"]
    at.selectbox(key="learn_scheduler").select("sjf").run()
    assert not at.exception
    assert before != "sjf" and charts_of(at)[0]["layout"]["annotations"][1]["text"] == "sjf"
    metric_table = next(t.value for t in at.table if "definition" in t.value.columns)
    assert {"mean_wait_s", "deadline_ratio", "mean_tardiness_s", "rescales"} <= set(metric_table["key"])
    # Durations for people, never 3.95e+03 s.
    jobs, kpis = at.dataframe[0].value, at.dataframe[-1].value
    assert list(jobs.columns) == ["job", "submitted at", "runs for", "GPUs", "user", "job type"]
    assert all(v.endswith((" s", " min", " h")) for v in jobs["runs for"])
    assert kpis.iloc[0, 0] == "Mean wait ↓" and all(v.endswith((" s", " min", " h")) for v in kpis.iloc[0, 1:])
    assert "e+" not in kpis.to_string()


def _wait_for(at: AppTest, done, timeout_s: float = 180.0) -> None:
    """Rerun the page (as its 2 s refresh does) until ``done(at)`` holds."""
    deadline = time.monotonic() + timeout_s
    while not done(at):
        assert time.monotonic() < deadline, "training made no progress in time"
        time.sleep(1.0)
        at.run()
        assert not at.exception, [e.value for e in at.exception]


def _curve_points(at: AppTest) -> int:
    specs = [c for c in charts_of(at) if c["layout"].get("annotations", [{}])[0].get("text") == "return"]
    return sum(len(t.get("x", [])) for s in specs for t in s["data"])


@pytest.mark.slow  # trains an agent: about 30 s
def test_train_page_trains_stops_resumes_and_the_agent_runs_on_compare(tmp_path, monkeypatch):
    """A real (tiny) training: curves appear while it runs, Stop keeps a usable agent, Resume continues it and
    counts every step, and the agent is offered and run on Compare. Nothing is written to models/."""
    monkeypatch.setenv("ENGINE_USER_MODELS", str(tmp_path))
    shipped = sorted(p.name for p in common.MODELS_DIR.iterdir())
    at = app("app_pages/train.py")
    at.text_input(key="train_name").set_value("apptest-tiny")
    at.number_input(key="train_steps").set_value(100_000)  # far more than the test waits for: it is stopped
    at.button(key="train_start").click().run()
    assert not errors(at), errors(at)
    job = at.session_state["training_job"]
    try:
        _wait_for(at, lambda a: _curve_points(a) >= 2)
        at.button(key="train_stop").click().run()
        _wait_for(at, lambda a: job["proc"].poll() is not None)
        card = json.loads((tmp_path / "apptest-tiny.json").read_text())
        first = card["training"]["timesteps"]
        assert job["proc"].returncode == 0 and 0 < first < 100_000 and card["training"]["stopped_at"] == first
        assert any("Saved as `rl:apptest-tiny`" in s.value for s in at.success)
        assert not at.button(key="train_resume").disabled
        at.button(key="train_resume").click().run()
        job = at.session_state["training_job"]
        _wait_for(at, lambda a: (launch.curves(job["cfg"])["step"].max() or 0) > first)
        at.button(key="train_stop").click().run()
        _wait_for(at, lambda a: job["proc"].poll() is not None)
        card = json.loads((tmp_path / "apptest-tiny.json").read_text())
        assert card["training"]["timesteps"] > first and card["training"]["init_from"]["model"] == "apptest-tiny"
    finally:
        if job["proc"].poll() is None:
            job["proc"].kill()
        shutil.rmtree(launch.run_dir(job["cfg"]), ignore_errors=True)
    assert sorted(p.name for p in common.MODELS_DIR.iterdir()) == shipped
    at.switch_page("app_pages/compare.py").run()
    assert "rl:apptest-tiny" in at.multiselect(key="compare_schedulers").options
    at.multiselect(key="compare_schedulers").set_value(["fifo", "rl:apptest-tiny"]).run()
    at.button(key="compare_run").click().run()
    assert not errors(at), errors(at)
    kpi = at.dataframe[0].value
    assert list(kpi.columns) == ["metric", "fifo", "rl:apptest-tiny"]
    assert kpi[kpi["metric"] == "Completed ↑"].iloc[0]["rl:apptest-tiny"] == "80"


def test_train_page_refuses_a_shipped_model_name():
    agents = common.trained_agents()
    if not agents:
        pytest.skip("no trained agents in models/")
    at = app("app_pages/train.py")
    at.text_input(key="train_name").set_value(agents[0].removeprefix("rl:"))
    at.button(key="train_start").click().run()
    assert any("is a shipped agent" in e for e in errors(at)) and "training_job" not in at.session_state


def test_home_preset_opens_compare_ready_to_run():
    from engine.analysis.presets import PRESETS

    name = next(iter(PRESETS))
    at = app()
    at.button(key=f"preset_{name}").click().run()
    assert not at.exception and not errors(at)
    assert at.title[0].value == "Compare schedulers"
    assert at.query_params["w.preset"] == name and at.query_params["sched"] == ",".join(PRESETS[name].schedulers)
    at.button(key="compare_run").click().run()
    assert not errors(at) and list(at.dataframe[0].value.columns)[1:] == list(PRESETS[name].schedulers)


def test_compare_runs_a_trained_agent_next_to_a_heuristic():
    agents = common.trained_agents()
    if not agents:
        pytest.skip("no trained agents in models/")
    at = app("app_pages/compare.py", query={**SMALL, "sched": f"fifo,{agents[0]}"})
    assert agents[0] in at.multiselect(key="compare_schedulers").options
    at.button(key="compare_run").click().run()
    assert not at.exception and not errors(at), errors(at)
    assert list(at.dataframe[0].value.columns) == ["metric", "fifo", agents[0]]
    # Its card's verdict against the best hand-written policy is shown next to the results, as plain text.
    verdict = common.agent_verdict(agents[0])
    shown = at.success if verdict.beats else at.warning
    card = json.loads((common.MODELS_DIR / f"{agents[0][3:]}.json").read_text())
    n = card["evaluation"]["summary"]["settings"]
    # One line (the counts of settings), the card's full sentence behind an expander.
    assert [w.value.replace("\\", "") for w in shown] == [f"**{agents[0]}**: {verdict.line.replace(chr(92), '')}"]
    assert f"of {n} test settings" in shown[0].value and "\n" not in shown[0].value
    assert at.expander[0].markdown[0].value.replace("\\", "") == card["verdict"]


#: A cluster of 8 T4s with a workload whose widest jobs ask for 16: they can never run there.
NARROW = {"cluster": "2x4:T4", "sched": "fifo,sjf", "w.n_jobs": "60"}


def _wide_trace() -> bytes:
    rows = ["submit_s,duration_s,gpus,user"] + [
        f"{10 * i},{300 + i},{16 if i % 10 == 3 else 1 + i % 4},u{i % 3}" for i in range(60)
    ]
    return ("\n".join(rows) + "\n").encode()


def test_never_ran_jobs_are_stated_on_workload_before_a_run_and_on_compare():
    at = app("app_pages/workload.py", query=NARROW)
    at.file_uploader(key="trace_upload").upload("wide.csv", _wide_trace(), "text/csv")
    at.run()
    at.button(key="load_trace").click().run()
    assert not at.exception and not errors(at), errors(at)
    sentence = (
        "6 of 60 jobs (10.0 %) can never run on this cluster: the widest (job 3) needs 16 GPUs of one type; "
        "the most any allowed type has is 8 (T4). Wait, JCT and utilisation count only the jobs that ran."
    )
    assert [w.value for w in at.warning] == [sentence]
    reasons = next(d.value for d in at.dataframe if "why the job can never run" in d.value.columns)
    assert reasons["jobs"].tolist() == [6]
    at.switch_page("app_pages/compare.py").run()
    at.button(key="compare_run").click().run()
    assert not errors(at) and [w.value for w in at.warning] == [sentence]
    kpi = at.dataframe[0].value
    assert kpi[kpi["metric"] == "Never ran (cannot fit the cluster)"].iloc[0].tolist() == [
        "Never ran (cannot fit the cluster)",
        "6",
        "6",
    ]
    assert kpi[kpi["metric"] == "Completed ↑"].iloc[0].tolist()[1:] == ["54", "54"]


def test_an_unknown_csv_gets_its_columns_mapped_end_times_become_durations_and_ms_is_flagged():
    data = b"id,created,finished,ngpu,owner\n1,1000,61000,1,a\n2,31000,151000,2,b\n3,91000,151000,1,a\n"
    at = app("app_pages/workload.py")
    at.file_uploader(key="trace_upload").upload("mine.csv", data, "text/csv")
    at.run()
    assert any("not those of a trace format the playground knows" in i.value for i in at.info)
    assert [at.selectbox(key=f"map_{f}").value for f in ("submit", "duration", "end", "gpus", "user")] == [
        "created",
        "(none)",
        "finished",
        "ngpu",
        "owner",
    ]
    assert any("duration will be finished − created" in c.value for c in at.caption)
    assert not any("look like milliseconds" in w.value for w in at.warning)  # 17 h to 33 h jobs: plausible
    at.button(key="load_trace").click().run()
    assert not errors(at) and metric(at, "Jobs kept") == "3" and metric(at, "Span") == "25 h"
    # Epoch milliseconds read as seconds: jobs of months to years are flagged, and ms is suggested.
    big = b"start,end,gpus\n1700000000000,1700000600000,1\n1700003600000,1700090000000,1\n"
    at.file_uploader(key="trace_upload").upload("epoch_ms.csv", big, "text/csv")
    at.run()
    note = next(w.value for w in at.warning if "look like milliseconds" in w.value)
    assert note.startswith("If these times are seconds, the median job would run")
    at.selectbox(key="up_unit").select("ms").run()
    assert not any("look like milliseconds" in w.value for w in at.warning)
    at.button(key="load_trace").click().run()
    assert not errors(at) and metric(at, "Jobs kept") == "2" and metric(at, "Span") == "60 min"


def test_a_csv_without_what_a_run_needs_says_so_and_cannot_load():
    at = app("app_pages/workload.py")
    at.file_uploader(key="trace_upload").upload("counts.csv", b"host,ngpu\na,1\nb,2\n", "text/csv")
    at.run()
    assert any(w.value.startswith("A run needs each job's submit time") for w in at.warning)
    assert at.button(key="load_trace").disabled
    assert not any("--" in e for e in errors(at) + [w.value for w in at.warning])  # no CLI flags


def test_a_failed_upload_is_stated_where_the_old_workload_is_still_used():
    at = app("app_pages/workload.py")
    at.file_uploader(key="trace_upload").upload("bad.csv", b"submit_s,duration_s,gpus\n0,10,1\n5,ten,1\n")
    at.run()
    at.button(key="load_trace").click().run()
    assert any("bad.csv" in e for e in errors(at))
    at.switch_page("app_pages/compare.py").run()
    at.button(key="compare_run").click().run()
    assert any("Your last upload (bad.csv) did not load" in w.value.replace("\\", "") for w in at.warning)


def test_a_reload_shows_the_cached_results_of_the_scenario_in_its_link():
    query = {**SMALL, "sched": "fifo,sjf", "w.seed": "4242"}  # a scenario no other test ran
    at = app("app_pages/compare.py", query=query)
    assert any("press **Run comparison**" in i.value for i in at.info)  # nothing ran yet
    at.button(key="compare_run").click().run()
    before = at.dataframe[0].value
    again = app("app_pages/compare.py", query=query)  # a new session with the same link: a reload
    assert not errors(again) and again.dataframe, "the reloaded page shows no results"
    assert again.dataframe[0].value.equals(before)
    assert any("computed earlier on this server" in c.value for c in again.caption)


def test_streamlit_file_watcher_is_off():
    assert 'fileWatcherType = "none"' in (REPO / ".streamlit" / "config.toml").read_text()


def test_compare_over_several_workload_seeds_gives_confidence_intervals_and_explains_a_job():
    at = app("app_pages/compare.py", query={**SMALL, "w.n_jobs": "40"})
    at.number_input(key="compare_seeds").set_value(3)
    at.button(key="compare_run").click().run()
    assert not errors(at), errors(at)
    assert any(h.value == "Over 3 workload seeds: mean ± 95 % confidence interval" for h in at.subheader)
    table = next(
        d.value
        for d in at.dataframe
        if "metric" in d.value.columns and d.value.shape[0] > 5 and any("±" in str(v) for v in d.value["fifo"])
    )
    assert list(table.columns) == ["metric", "fifo", "first-fit"]
    # The interval is the one engine.analysis.evaluate computes over the same three workloads.
    from engine.analysis.evaluate import mean_ci
    from engine.analysis.metrics import summarize
    from engine.analysis.scenario import Scenario
    from engine.units import human_value

    base = Scenario.from_query({**SMALL, "w.n_jobs": "40"})
    means = [summarize(common.run_one(v, "fifo")).mean_wait_s for v in seeds_of(base)]
    mean, half = mean_ci(means)
    row = table[table["metric"] == "Mean wait ↓"].iloc[0]
    assert row["fifo"] == f"{human_value(mean, 's')} ± {human_value(half, 's')}"
    # The per-job view explains the job that waited longest.
    stories = [t.value for t in at.text]
    assert len(stories) == 2 and stories[0].startswith("fifo: Job ") and "arrived at" in stories[0]
    # It is called by its id in the trace (the generator names jobs TYPE-INDEX), and one is picked by that id.
    picked = at.text_input(key="compare_job").value
    assert stories[0].startswith(f"fifo: Job {picked} (") and "-" in picked
    at.text_input(key="compare_job").set_value("batch-1").run()
    assert [t.value for t in at.text][0].startswith("fifo: Job batch-1 (")
    at.text_input(key="compare_job").set_value("no-such-job").run()
    assert not at.text and any("no job has this id" in e for e in errors(at))


def seeds_of(sc):
    from engine.analysis.seeds import seed_variants

    return seed_variants(sc, 3)

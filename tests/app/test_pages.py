"""Every page of the playground under Streamlit's AppTest: no exception, widgets change results, errors inline."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import app_pages.common as common
from app_pages import workers
from engine.analysis.scenario import content_hash
from engine.traces import write_csv
from engine.traces.generator import generate

REPO = Path(__file__).resolve().parents[2]
APP = str(REPO / "app.py")
PAGES = ["app_pages/home.py", "app_pages/cluster.py", "app_pages/workload.py", "app_pages/compare.py",
         "app_pages/train.py", "app_pages/learn.py"]
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
    at.selectbox(key="up_unit").select("ms")
    for field, column in (("submit", "t0"), ("duration", "run"), ("gpus", "n_gpu"), ("user", "team")):
        at.text_input(key=f"map_{field}").input(column)
    at.file_uploader(key="trace_upload").upload("other.csv", data)
    at.run()
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


@pytest.mark.parametrize("name, data, words", [
    ("garbage.csv", b"\x00\x01\x02 not a trace at all", "garbage.csv"),
    ("bad_row.csv", b"submit_s,duration_s,gpus\n0,10,1\n5,ten,1\n", "line 3"),
])
def test_bad_upload_shows_an_inline_error(name, data, words):
    at = app("app_pages/workload.py")
    at.file_uploader(key="trace_upload").upload(name, data)
    at.run()
    at.button(key="load_trace").click().run()
    assert not at.exception
    assert any(words in e for e in errors(at)), errors(at)
    assert "w.trace_sha256" not in at.query_params  # the scenario did not change
    assert common.trace_bytes(content_hash(data)) is None  # and the server did not keep the bytes


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
    assert list(kpi.columns) == ["fifo", "first-fit"] and any("Mean wait (s)" in i for i in kpi.index)
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
    common._run.clear()
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
    assert list(at.dataframe[0].value.columns) == ["fifo", "first-fit", "sjf"]


def test_learn_worked_example_runs_for_every_registered_scheduler():
    from engine import SCHEDULERS

    at = app("app_pages/learn.py")
    assert at.selectbox(key="learn_scheduler").options == list(SCHEDULERS)
    for name in SCHEDULERS:
        at.selectbox(key="learn_scheduler").select(name).run()
        assert not at.exception and not errors(at), (name, errors(at))
        assert at.info[0].value == SCHEDULERS[name].summary


def test_learn_worked_example_follows_the_chosen_scheduler():
    at = app("app_pages/learn.py")
    before = charts_of(at)[0]["layout"]["annotations"][1]["text"]
    at.selectbox(key="learn_scheduler").select("sjf").run()
    assert not at.exception
    assert before != "sjf" and charts_of(at)[0]["layout"]["annotations"][1]["text"] == "sjf"
    metric_table = next(d.value for d in at.dataframe if "definition" in d.value.columns)
    assert "mean_wait_s" in set(metric_table["key"])


def test_train_page_starts_and_stops_a_training_process(tmp_path, monkeypatch):
    monkeypatch.setattr(common, "MODELS_DIR", tmp_path)
    at = app("app_pages/train.py")
    at.text_input(key="train_name").set_value("apptest-stop")
    at.button(key="train_start").click().run()
    assert not at.exception and not errors(at)
    job = at.session_state["training_job"]
    assert job["proc"].poll() is None and (job["run_dir"] / "app_config.json").is_file()
    at.button(key="train_stop").click().run()
    assert job["proc"].poll() is not None
    shutil.rmtree(job["run_dir"])


def test_home_preset_opens_compare_ready_to_run():
    from engine.analysis.presets import PRESETS

    name = next(iter(PRESETS))
    at = app()
    at.button(key=f"preset_{name}").click().run()
    assert not at.exception and not errors(at)
    assert at.title[0].value == "Compare schedulers"
    assert at.query_params["w.preset"] == name and at.query_params["sched"] == ",".join(PRESETS[name].schedulers)
    at.button(key="compare_run").click().run()
    assert not errors(at) and list(at.dataframe[0].value.columns) == list(PRESETS[name].schedulers)


def test_compare_runs_a_trained_agent_next_to_a_heuristic():
    agents = common.trained_agents()
    if not agents:
        pytest.skip("no trained agents in models/")
    at = app("app_pages/compare.py", query={**SMALL, "sched": f"fifo,{agents[0]}"})
    assert agents[0] in at.multiselect(key="compare_schedulers").options
    at.button(key="compare_run").click().run()
    assert not at.exception and not errors(at), errors(at)
    assert list(at.dataframe[0].value.columns) == ["fifo", agents[0]]

"""Elastic jobs in the app: the Workload page's Generate form makes a share of the jobs elastic with a scaling
curve, the rescale cost is a run option in the link, and Compare shows the elastic rows and the resizes."""

from __future__ import annotations

from engine.analysis.metrics import ELASTIC_METRICS, metric_name
from engine.analysis.scenario import Scenario
from engine.viz.timeline import resize_points
from tests.app.test_links import warning_of
from tests.app.test_pages import app, assert_kpi_rows, errors, run_compare

QUERY = {"cluster": "2x4:V100-32", "sched": "elasticflow,edf", "w.n_jobs": "60", "w.load": "1.2"}


def elastic_and_whole(sc: Scenario) -> tuple[int, int]:
    """How many of the scenario's jobs are elastic, and how many use whole GPUs."""
    jobs = sc.build_jobs(sc.build_cluster())
    return sum(j.elastic for j in jobs), sum(j.gpu_fraction == 1.0 for j in jobs)


def test_workload_page_sets_the_elastic_share_curve_and_rescale_cost_and_compare_shows_the_elastic_rows():
    at = app("app_pages/workload.py", query={**QUERY, "w.deadlines": "elasticflow"})
    at.number_input(key="gen_elastic").set_value(0.5)
    at.selectbox(key="gen_scaling").select("linear")
    at.button(key="FormSubmitter:generate_form-Generate").click().run()
    assert not at.exception and not errors(at), errors(at)
    w = at.session_state["scenario"].workload
    assert (w.elastic, w.scaling) == (0.5, "linear")
    assert at.query_params["w.elastic"] == "0.5" and at.query_params["w.scaling"] == "linear"
    at.number_input(key="wl_rescale_30.0").set_value(60.0).run()
    assert not at.exception and not errors(at), errors(at)
    assert at.session_state["scenario"].options.elastic.rescale_s == 60.0
    assert at.query_params["o.elastic.rescale_s"] == "60.0"
    n, whole = elastic_and_whole(at.session_state["scenario"])
    line = f"{n} of 60 jobs (50% of the jobs asked, drawn among the {whole} whole-GPU jobs)"
    assert f"**Elastic** · {line}; linear, rescale cost 60 s" in [m.value for m in at.sidebar.markdown]

    compare = run_compare(dict(at.query_params))  # the link the page wrote
    assert_kpi_rows(compare, ELASTIC_METRICS)
    results = compare.session_state["results"]["results"]
    assert results["elasticflow"].rescales.sum() > 0 == results["edf"].rescales.sum()  # edf never resizes
    assert len(resize_points(results["elasticflow"])) == results["elasticflow"].rescales.sum()
    assert any("elastic job resized" in chart.proto.spec for chart in compare.get("plotly_chart"))  # the timeline
    caption = next(c.value for c in compare.caption if c.value.startswith("One row per GPU"))
    assert "green if it met its deadline, red if it missed it" in caption and "each resize of an elastic job" in caption


def test_the_elastic_share_is_told_as_what_it_is_a_share_of_all_jobs_drawn_among_whole_gpu_ones():
    """An elastic share of 1 read "100% of the jobs" although a fractional job is never elastic: the sidebar and
    the Workload page say how many jobs are elastic, of how many, and among how many whole-GPU jobs."""
    at = app("app_pages/workload.py", query={**QUERY, "w.elastic": "1"})
    n, whole = elastic_and_whole(at.session_state["scenario"])
    assert n == whole < 60  # some jobs are fractional: "100% of the jobs" was wrong
    line = f"{n} of 60 jobs (100% of the jobs asked, drawn among the {whole} whole-GPU jobs)"
    assert any(m.value.startswith(f"**Elastic** · {line}") for m in at.sidebar.markdown)
    assert f"Elastic: {line}. A fractional job cannot resize." in [c.value for c in at.caption]


def test_compare_says_when_no_scheduler_of_it_resizes_the_elastic_jobs():
    """Found using the app as a stranger: elastic jobs compared under the default schedulers showed Rescales 0
    everywhere with no word on why; the Learn page's table had no column saying which schedulers resize."""
    hint = "No scheduler here resizes elastic jobs, so each ran at its requested GPUs: optimus and elasticflow do."
    for sched, shown in (("fifo,edf", True), ("fifo,optimus", False)):
        compare = app("app_pages/compare.py", query={**QUERY, "sched": sched, "w.elastic": "0.5"})
        compare.button(key="compare_run").click().run()
        assert not compare.exception and not errors(compare), errors(compare)
        caption = next(c.value for c in compare.caption if c.value.startswith("Best value per metric"))
        assert (hint in caption) == shown, (sched, caption)
    learn = app("app_pages/learn.py", query=QUERY)
    table = learn.table[0].value
    assert set(table.index[table["resizes elastic jobs"] == "yes"]) == {"optimus", "elasticflow"}


def test_the_default_curve_and_a_workload_without_elastic_jobs_stay_out_of_the_link():
    at = app("app_pages/workload.py", query=QUERY)
    at.button(key="FormSubmitter:generate_form-Generate").click().run()
    assert not at.exception and not errors(at), errors(at)
    assert "w.elastic" not in at.query_params and "w.scaling" not in at.query_params
    assert not any(m.value.startswith("**Elastic**") for m in at.sidebar.markdown)
    compare = run_compare(dict(at.query_params))
    kpi = compare.dataframe[0].value
    assert not set(metric_name(k) for k in ELASTIC_METRICS) & set(kpi["metric"])
    caption = next(c.value for c in compare.caption if c.value.startswith("One row per GPU"))
    assert "tick" not in caption and "triangle" not in caption  # today's timeline, told as before


def test_several_workload_seeds_judge_the_elastic_and_deadline_rows_too():
    query = {**QUERY, "w.deadlines": "elasticflow", "w.elastic": "0.5", "w.n_jobs": "30"}
    compare = app("app_pages/compare.py", query=query)
    compare.number_input(key="compare_seeds").set_value(2)
    compare.button(key="compare_run").click().run()
    assert not compare.exception and not errors(compare), errors(compare)
    table = compare.dataframe[1].value  # the several-seeds table, under the key metrics
    assert table["elasticflow"].str.contains("±").any()
    shown = set(table["metric"])
    assert {metric_name("deadline_ratio"), metric_name("elastic_gpu_efficiency")} <= shown
    assert metric_name("rescales") not in shown  # a count with no better side: not judged


def test_a_link_with_a_bad_rescale_cost_or_curve_is_one_line_naming_it():
    for key, value, words in (
        ("o.elastic.rescale_s", "-1", "options.elastic.rescale_s must be"),
        ("w.scaling", "magic", "workload.scaling 'magic': expected one of"),
    ):
        warning = warning_of(app(query={**QUERY, "w.elastic": "0.5", key: value}))
        assert words in warning and "\n" not in warning

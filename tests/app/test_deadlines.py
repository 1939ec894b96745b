"""Deadlines in the app: the Workload page's Generate form draws deadlines by a law with a best-effort share,
the admission policy is a run option in the link, and Compare runs with both and shows the deadline rows."""

from __future__ import annotations

from engine.analysis.metrics import DEADLINE_METRICS, metric_name, summarize
from engine.units import human_value
from tests.app.test_pages import app, errors

QUERY = {"cluster": "2x4:V100-32", "sched": "fifo,edf", "w.n_jobs": "60", "w.load": "1.2"}


def test_workload_page_sets_deadlines_and_admission_and_compare_shows_the_deadline_rows():
    at = app("app_pages/workload.py", query=QUERY)
    at.selectbox(key="gen_deadlines").select("elasticflow")
    at.number_input(key="gen_best_effort").set_value(0.2)
    at.button(key="FormSubmitter:generate_form-Generate").click().run()
    assert not at.exception and not errors(at), errors(at)
    w = at.session_state["scenario"].workload
    assert (w.deadlines, w.best_effort) == ("elasticflow", 0.2)
    assert at.query_params["w.deadlines"] == "elasticflow" and at.query_params["w.best_effort"] == "0.2"
    at.selectbox(key="wl_admission_accept-all").select("feasible").run()
    assert not at.exception and not errors(at), errors(at)
    assert at.session_state["scenario"].options.admission.policy == "feasible"
    assert at.query_params["o.admission.policy"] == '"feasible"'

    query = dict(at.query_params)  # the link the page wrote
    compare = app("app_pages/compare.py", query=query)
    compare.button(key="compare_run").click().run()
    assert not compare.exception and not errors(compare), errors(compare)
    results = compare.session_state["results"]["results"]
    kpi = compare.dataframe[0].value.set_index("metric")
    for name, result in results.items():
        summary = summarize(result)
        assert summary.deadlines is not None and summary.deadlines.declined > 0  # admission ran
        for key, metric in DEADLINE_METRICS.items():
            assert kpi.loc[metric_name(key), name] == human_value(summary.value(key), metric.unit)


def test_the_sidebar_names_the_deadline_law_and_the_admission_policy():
    at = app(query={**QUERY, "w.deadlines": "gavel", "w.best_effort": "0.25", "o.admission.policy": '"feasible"'})
    assert "**Deadlines** · gavel, 25% best effort; admission feasible" in [m.value for m in at.sidebar.markdown]

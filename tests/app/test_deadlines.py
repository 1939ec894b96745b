"""Deadlines in the app: the Workload page's Generate form draws deadlines by a law with a best-effort share,
the admission policy is a run option in the link, and Compare runs with both and shows the deadline rows."""

from __future__ import annotations

import pytest

from engine.analysis.metrics import DEADLINE_METRICS, summarize
from tests.app.test_pages import app, assert_kpi_rows, errors, run_compare

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

    summaries = assert_kpi_rows(run_compare(dict(at.query_params)), DEADLINE_METRICS)  # the link the page wrote
    assert all(s.deadlines is not None and s.deadlines.declined > 0 for s in summaries.values())  # admission ran


def test_the_sidebar_names_the_deadline_law_and_the_admission_policy():
    at = app(query={**QUERY, "w.deadlines": "gavel", "w.best_effort": "0.25", "o.admission.policy": '"feasible"'})
    assert "**Deadlines** · gavel, 25% best effort; admission feasible" in [m.value for m in at.sidebar.markdown]


@pytest.mark.timeout(300)
def test_explore_plans_for_a_deadline_ratio_and_sweeps_carry_the_deadline_columns(ray_local):
    from engine import make_scheduler, simulate
    from engine.analysis.plan import grown_cluster
    from engine.analysis.scenario import Scenario
    from tests.app.test_explore import explore, find_fewest_nodes

    query = {**QUERY, "sched": "edf", "w.deadlines": "gavel", "o.admission.policy": '"feasible"'}
    at = explore(query)
    find_fewest_nodes(at, "4:V100-32", "deadline_ratio", "0.9", op=">=", max_nodes=6)
    answer = at.session_state["explore_plan"]["answer"]
    sc = Scenario.from_query(query)
    n = int(answer.nodes[0])
    cluster = grown_cluster((4, "V100-32"), n, sc.build_cluster())
    run = simulate(cluster, sc.build_jobs(sc.build_cluster()), make_scheduler("edf"), seed=sc.seed, options=sc.options)
    assert answer.value_at_nodes[0] == summarize(run).deadlines.deadline_ratio >= 0.9  # under feasible admission

    at.text_input(key="sweep_loads").set_value("0.5,1.0")
    at.number_input(key="sweep_seeds").set_value(1)
    at.button(key="FormSubmitter:sweep_form-▶ Run sweep").click().run()
    assert not at.exception and not errors(at), errors(at)
    frame = at.session_state["explore_sweep"]["frame"]
    assert set(DEADLINE_METRICS) <= set(frame.columns) and frame["deadline_ratio"].between(0, 1).all()
    assert "Deadlines met" in at.selectbox(key="sweep_metric").options

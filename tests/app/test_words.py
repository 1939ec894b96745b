"""Words on the pages: counts that are right and in the right number, reasons in words, presets that point to
what the page shows."""

from __future__ import annotations

from app_pages.lib import common
from engine import SCHEDULERS
from engine.analysis.presets import PRESETS
from tests.app.test_pages import app, charts_of, errors


def test_home_counts_the_heuristics_and_the_agents():
    at = app("app_pages/home.py")
    agents = common.trained_agents()
    text = " ".join(m.value for m in at.markdown)
    want = f"{len(SCHEDULERS)} heuristics" + (f" and {len(agents)} trained RL agent" if agents else "")
    assert want in text, text


def test_one_gpu_is_singular_in_the_sidebar():
    at = app("app_pages/cluster.py", query={"cluster": "1x1:T4", "sched": "fifo", "w.n_jobs": "10"})
    assert any("1 node, 1 GPU" in m.value for m in at.sidebar.markdown), [m.value for m in at.sidebar.markdown]


def test_drop_reasons_are_shown_in_words():
    at = app("app_pages/workload.py")
    rows = "submit_s,duration_s,gpus,user\n0,100,1,a\n10,0,1,b\n20,50,1,a\n"
    at.file_uploader(key="trace_upload").upload("drops.csv", rows.encode(), "text/csv")
    at.run()
    at.button(key="load_trace").click().run()
    assert not at.exception and not errors(at), errors(at)
    table = at.table[0].value
    assert list(table.iloc[:, 0]) == ["run time is zero or negative (or -1 = unknown)"]


def test_the_heavy_user_preset_points_to_a_chart_compare_draws():
    look_at = PRESETS["heavy-user"].look_at
    assert "table" not in look_at.split(":")[0]
    at = app()
    at.button(key="preset_heavy-user").click().run()
    at.button(key="compare_run").click().run()
    titles = [c["layout"].get("title", {}).get("text", "") for c in charts_of(at)]
    assert "wait per user" in titles and look_at.startswith("The chart of wait per user"), titles


def test_a_verdict_line_counts_the_settings():
    assert common.verdict_line({"beats_best_baseline": False, "settings": 20, "better": 1, "worse": 7}) == (
        "Does not beat the best hand-written policy: better in 1 of 20 test settings, worse in 7, no clear "
        "difference in 12."
    )
    assert common.verdict_line({"beats_best_baseline": True, "settings": 4, "better": 4, "worse": 0}) == (
        "Beats the best hand-written policy in all 4 test settings."
    )

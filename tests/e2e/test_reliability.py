"""Failures in a real browser: the Cluster page sets a failure preset and its knobs into the link, and bad input is
one line; Compare runs with them and shows the reliability rows."""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Page, expect

from benchmarks.app_compare import CHARTS_DRAWN, wait_idle

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
SLOW_MS = 120_000
OUTAGE_FILL = "fill: rgb(214, 39, 40)"  # the down nodes' bands (engine.viz.timeline.OUTAGE_COLOUR)


def test_cluster_page_sets_a_failure_preset_and_knobs_into_the_link(page: Page, app_url: str, shot):
    page.goto(f"{app_url}/cluster?cluster=2x4%3AT4")
    expect(page.get_by_role("heading", name="Reliability", exact=True)).to_be_visible(timeout=SLOW_MS)
    wait_idle(page)
    box = page.get_by_role("combobox", name="Failure preset")
    box.click()
    box.press_sequentially("stress")
    page.keyboard.press("Enter")
    page.get_by_role("button", name="Use failure preset").click()
    expect(page).to_have_url(re.compile(r"o\.failures\.mtbf_h=200\.0"), timeout=SLOW_MS)
    wait_idle(page)
    mtbf = page.get_by_role("textbox", name="Node MTBF (empty: never fails)")
    expect(mtbf).to_have_value("200 h")
    mtbf.fill("often")
    page.get_by_role("button", name="Apply reliability").click()
    expect(page.get_by_text("reliability: node MTBF: duration 'often'")).to_be_visible(timeout=SLOW_MS)
    mtbf.fill("100 h")
    page.get_by_role("textbox", name="Checkpoint every (empty: when stopped)").fill("30 min")
    page.get_by_role("textbox", name="Job failures (preset or share)").fill("helios")
    page.get_by_role("button", name="Apply reliability").click()
    expect(page).to_have_url(re.compile(r"o\.failures\.mtbf_h=100\.0"), timeout=SLOW_MS)
    expect(page).to_have_url(re.compile(r"o\.preemption\.checkpoint_interval_s=1800\.0"))
    expect(page).to_have_url(re.compile(r"o\.failures\.job_failure_rate=0\.155"))
    expect(page.get_by_text(re.compile(r"Each node fails every 4\.17 d on average"))).to_be_visible()
    shot(page, "reliability")


FAILING = {
    "cluster": "2x4:T4",
    "sched": "fifo,first-fit",
    "w.n_jobs": 40,
    "o.failures.mtbf_h": 20.0,
    "o.failures.job_failure_rate": 0.3,
    "o.preemption.checkpoint_interval_s": 1800.0,
}


def test_compare_shows_the_reliability_rows_when_failures_are_modelled(page: Page, app_url: str):
    page.goto(f"{app_url}/compare?{urlencode(FAILING)}")
    expect(page.get_by_role("heading", name="Compare schedulers", exact=True)).to_be_visible(timeout=SLOW_MS)
    page.get_by_role("button", name="Run comparison").click()
    expect(page.get_by_role("heading", name="Key metrics", exact=True)).to_be_visible(timeout=SLOW_MS)
    wait_idle(page)
    kpi = page.locator('[data-testid="stDataFrame"]').first
    for row in (
        "Node failures",
        "Jobs stopped by failures",
        "Failed jobs",
        "Work lost to failures",
        "ETTR",
        "GPU availability",
    ):
        expect(kpi).to_contain_text(row)
    # The timeline marks the jobs a failure stopped (its legend names the crosses) and shades the nodes down.
    page.wait_for_function(CHARTS_DRAWN, arg=1, timeout=SLOW_MS)
    expect(page.get_by_text("stopped by a node failure").first).to_be_visible(timeout=SLOW_MS)
    assert page.locator(f'.js-plotly-plot path[style*="{OUTAGE_FILL}"]').count() > 0
    job = page.get_by_role("textbox", name="Job (its id in the trace)")
    job.fill("training-9")  # a job node failures stop under fifo in this scenario (tests/app/test_reliability.py)
    job.press("Enter")
    expect(page.get_by_text(re.compile(r"^fifo: .*a node failure stopped it \d+ time\(s\)"))).to_be_visible(
        timeout=SLOW_MS
    )


def test_the_capacity_plan_says_its_target_holds_under_the_failures(page: Page, app_url: str):
    page.goto(f"{app_url}/explore?{urlencode({**FAILING, 'sched': 'fifo'})}")
    expect(page.get_by_role("heading", name="Explore", exact=True)).to_be_visible(timeout=SLOW_MS)
    page.get_by_role("tab", name="Capacity plan").click()
    expect(page.get_by_text(re.compile(r"Every run of the plan meets the scenario.s failures"))).to_be_visible()
    page.get_by_role("textbox", name="Node shape (GPUS:TYPE)").fill("4:T4")
    page.get_by_role("spinbutton", name="At most nodes").fill("6")
    page.get_by_role("textbox", name="Target value").fill("2 h")
    page.get_by_role("button", name="Find the fewest nodes").click()
    expect(page.locator('[data-testid="stMetric"]').first).to_contain_text(re.compile(r"node|not met"), timeout=240_000)


def test_a_sweep_under_failures_shows_the_reliability_columns(page: Page, app_url: str):
    page.goto(f"{app_url}/explore?{urlencode({**FAILING, 'sched': 'fifo'})}")
    expect(page.get_by_role("heading", name="Explore", exact=True)).to_be_visible(timeout=SLOW_MS)
    page.get_by_role("textbox", name="Offered loads").fill("0.5,1")
    page.get_by_role("spinbutton", name="Seeds").fill("1")
    page.get_by_role("button", name="Run sweep").click()
    expect(page.get_by_text("2 of 2 cells completed on Ray")).to_be_visible(timeout=240_000)
    wait_idle(page)
    box = page.get_by_role("combobox", name="Metric")  # a reliability metric, drawn against load
    box.click()
    box.press_sequentially("ETTR")
    page.keyboard.press("Enter")
    expect(page.locator(".js-plotly-plot").first).to_contain_text("ETTR", timeout=SLOW_MS)


def test_a_sweep_draws_each_scheduler_beside_itself_without_failures(page: Page, app_url: str):
    page.goto(f"{app_url}/explore?{urlencode({**FAILING, 'sched': 'fifo'})}")
    expect(page.get_by_role("heading", name="Explore", exact=True)).to_be_visible(timeout=SLOW_MS)
    page.get_by_role("textbox", name="Offered loads").fill("0.5,1")
    page.get_by_role("spinbutton", name="Seeds").fill("1")
    page.get_by_text("Also every cell without failures").click()
    page.get_by_role("button", name="Run sweep").click()
    expect(page.get_by_text("4 of 4 cells completed on Ray")).to_be_visible(timeout=240_000)
    expect(page.locator(".js-plotly-plot").first).to_contain_text("fifo · no failures", timeout=SLOW_MS)


def test_a_sweep_draws_each_scheduler_at_each_node_mtbf(page: Page, app_url: str):
    page.goto(f"{app_url}/explore?{urlencode({**FAILING, 'sched': 'fifo'})}")
    expect(page.get_by_role("heading", name="Explore", exact=True)).to_be_visible(timeout=SLOW_MS)
    page.get_by_role("textbox", name="Offered loads").fill("0.5,1")
    page.get_by_role("spinbutton", name="Seeds").fill("1")
    page.get_by_role("textbox", name="Node MTBFs to compare, hours (empty: the scenario's failures)").fill("5,500")
    page.get_by_role("button", name="Run sweep").click()
    expect(page.get_by_text("4 of 4 cells completed on Ray")).to_be_visible(timeout=240_000)
    curves = page.locator(".js-plotly-plot").first
    expect(curves).to_contain_text("fifo · MTBF 5 h", timeout=SLOW_MS)
    expect(curves).to_contain_text("fifo · MTBF 500 h")

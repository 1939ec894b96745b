"""Deadlines in a real browser: the Workload page's Generate form draws deadlines by a law with a best-effort
share and the admission picker sets the run option, both into the link; Compare shows the deadline rows and a
tick on the timeline where each job was due."""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Locator, Page, expect

from benchmarks.app_compare import CHARTS_DRAWN, wait_idle

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
SLOW_MS = 120_000


def pick(page: Page, label: str, text: str) -> None:
    box = page.get_by_role("combobox", name=label)
    box.click()
    box.press_sequentially(text)
    page.keyboard.press("Enter")


def compare_the_link(page: Page) -> Locator:
    """Open Compare with the link the Workload page wrote, run it and wait until its key metrics and its timeline
    are drawn; the key-metrics table."""
    page.goto(page.url.replace("/workload?", "/compare?"))
    expect(page.get_by_role("heading", name="Compare schedulers", exact=True)).to_be_visible(timeout=SLOW_MS)
    page.get_by_role("button", name="Run comparison").click()
    expect(page.get_by_role("heading", name="Key metrics", exact=True)).to_be_visible(timeout=SLOW_MS)
    wait_idle(page)
    page.wait_for_function(CHARTS_DRAWN, arg=1, timeout=SLOW_MS)
    return page.locator('[data-testid="stDataFrame"]').first


def test_deadlines_and_admission_from_the_workload_page_to_compare(page: Page, app_url: str, shot):
    page.goto(f"{app_url}/workload?{urlencode({'cluster': '2x4:V100-32', 'sched': 'fifo,edf', 'w.n_jobs': 60})}")
    expect(page.get_by_role("heading", name="Workload", exact=True)).to_be_visible(timeout=SLOW_MS)
    wait_idle(page)
    pick(page, "Deadlines", "elasticflow")
    page.get_by_role("spinbutton", name="Best-effort share").fill("0.2")
    page.get_by_role("button", name="Generate").click()
    expect(page).to_have_url(re.compile(r"w\.deadlines=elasticflow"), timeout=SLOW_MS)
    expect(page).to_have_url(re.compile(r"w\.best_effort=0\.2"))
    wait_idle(page)
    pick(page, "Admission control", "feasible")
    expect(page).to_have_url(re.compile(r"o\.admission\.policy=%22feasible%22"), timeout=SLOW_MS)
    wait_idle(page)
    expect(page.get_by_role("combobox", name="Admission control")).to_have_count(1)  # one picker, showing feasible
    expect(page.get_by_text("Deadlines · elasticflow, 20% best effort; admission feasible")).to_be_visible()
    shot(page, "workload")

    kpi = compare_the_link(page)
    for row in ("Deadlines met", "Deadlines missed", "Declined", "Mean tardiness", "p95 tardiness"):
        expect(kpi).to_contain_text(row)
    expect(page.get_by_text("deadline met").first).to_be_visible(timeout=SLOW_MS)
    expect(page.get_by_text("deadline missed").first).to_be_visible(timeout=SLOW_MS)
    shot(page, "compare")

"""Several browser sessions run comparisons at once against one server: every one finishes, because the runs
happen in worker processes (app_pages/lib/workers.py), not in the sessions' script threads. And a link's Markdown
reaches the page as text: no link is drawn from it."""

from __future__ import annotations

import os
import time

import pytest
from playwright.sync_api import Browser, expect

from benchmarks.app_compare import CHARTS_DRAWN, COMPARE_CHARTS, scenario_url

pytestmark = pytest.mark.e2e
#: Sessions at once (E2E_SESSIONS=8 for the issue's full check; the suite's default stays quick on 2 cores).
SESSIONS = int(os.environ.get("E2E_SESSIONS", "4"))
SLOW_MS = 240_000


def test_concurrent_sessions_all_finish_their_comparisons(browser: Browser, app_url: str):
    contexts = [browser.new_context(viewport={"width": 1200, "height": 900}) for _ in range(SESSIONS)]
    try:
        pages = [c.new_page() for c in contexts]
        for i, page in enumerate(pages):  # a seed of its own each: no session reuses another's cached runs
            page.goto(
                scenario_url(
                    app_url, "compare", 300, seed=100 + i, cluster="4x8:A100-80", schedulers=("fifo", "first-fit")
                )
            )
        for page in pages:
            expect(page.get_by_role("button", name="Run comparison")).to_be_enabled(timeout=SLOW_MS)
        start = time.perf_counter()
        for page in pages:
            page.get_by_role("button", name="Run comparison").click()
        finished = []
        for page in pages:
            expect(page.get_by_text("Key metrics")).to_be_visible(timeout=SLOW_MS)
            page.wait_for_function(CHARTS_DRAWN, arg=COMPARE_CHARTS, timeout=SLOW_MS)
            finished.append(time.perf_counter() - start)
            expect(page.locator('[data-testid="stException"]')).to_have_count(0)
        print(f"{SESSIONS} sessions: all charts drawn after " + ", ".join(f"{t:.1f}" for t in finished) + " s")
    finally:
        for c in contexts:
            c.close()


def test_markdown_in_a_link_draws_no_link(browser: Browser, app_url: str):
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"{app_url}/?cluster=2x4:T4&name=%5Bclick%20me%5D(https:evil.example)%20**bold**")
        sidebar = page.locator('[data-testid="stSidebar"]')
        expect(sidebar.get_by_text("[click me](https:evil.example) **bold**")).to_be_visible(timeout=SLOW_MS)
        assert sidebar.locator("a[href*='evil']").count() == 0  # the brackets and asterisks show as typed
    finally:
        context.close()

"""The Cluster page in a real browser: edits typed quickly into the node table all reach the scenario on Apply."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from benchmarks.app_compare import wait_idle

pytestmark = pytest.mark.e2e
SLOW_MS = 120_000
#: The node table's header and rows are drawn 35 px tall (Streamlit's data editor).
ROW_PX = 35
#: A quick typist's pause between keys (the cell's editor opens on the first key; the page reruns for far longer).
KEY_GAP_MS = 150


def test_quick_edits_in_the_node_table_all_reach_the_scenario(page: Page, app_url: str, shot):
    page.goto(f"{app_url}/cluster?cluster=2x4%3AT4%2C1x8%3AA100-80")
    expect(page.get_by_role("heading", name="Node groups", exact=True)).to_be_visible(timeout=SLOW_MS)
    wait_idle(page)
    grid = page.locator('[data-testid="stDataFrame"]').first.bounding_box()

    # Select the first row's GPU type, step right to its node count, type two edits quickly, then apply them.
    page.mouse.click(grid["x"] + 80, grid["y"] + ROW_PX * 1.5)
    page.wait_for_timeout(KEY_GAP_MS)
    page.keyboard.press("ArrowRight")
    page.wait_for_timeout(KEY_GAP_MS)
    for digit in "35":
        page.keyboard.type(digit)  # opens the cell's editor with the digit in it
        # Under load the editor can open after the key: wait until it holds the digit before saving it.
        expect(page.locator("#portal input, #portal textarea").first).to_have_value(digit)
        page.wait_for_timeout(KEY_GAP_MS)
        page.keyboard.press("Enter")  # saves it and moves to the next row's node count
        page.wait_for_timeout(KEY_GAP_MS)
    expect(page.get_by_text("3 nodes, 16 GPUs")).to_be_visible()  # nothing changes before Apply
    page.get_by_role("button", name="Apply node groups").click()

    expect(page).to_have_url(re.compile(r"cluster=3x4%3AT4%2C5x8%3AA100-80(&|$)"), timeout=SLOW_MS)
    wait_idle(page)
    expect(page.get_by_text("8 nodes, 52 GPUs")).to_be_visible()  # the sidebar follows
    shot(page, "edited")

    # Both edits survive a visit to another page and back.
    page.get_by_role("link", name="Workload").click()
    expect(page.get_by_role("heading", name="Workload", exact=True)).to_be_visible(timeout=SLOW_MS)
    page.get_by_role("link", name="Cluster").click()
    expect(page.get_by_role("heading", name="Node groups", exact=True)).to_be_visible(timeout=SLOW_MS)
    expect(page).to_have_url(re.compile(r"cluster=3x4%3AT4%2C5x8%3AA100-80(&|$)"))
    expect(page.get_by_text("8 nodes, 52 GPUs")).to_be_visible()

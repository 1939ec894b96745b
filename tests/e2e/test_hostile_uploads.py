"""In a real browser, hostile uploads leave the Workload page working: a ragged CSV with Markdown in its name and
header previews with a note and draws no link; a gzip bomb is one error line, soon (issue 32)."""

from __future__ import annotations

import gzip
import time
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.e2e.test_playground import SLOW_MS, _upload

EVIL = "[x](evil.example)"  # a file name holds no slash; a relative link is a link too


def _workload(page: Page, app_url: str) -> None:
    page.goto(f"{app_url}/workload")
    expect(page.get_by_role("heading", name="Workload", exact=True)).to_be_visible(timeout=SLOW_MS)


def test_a_ragged_csv_with_markdown_in_its_name_and_header_previews_as_text(
    page: Page, app_url: str, tmp_path: Path, shot
):
    trace = tmp_path / f"{EVIL}.csv"
    trace.write_text(f"submit,{EVIL},gpus\n0,10\n5,20,2,extra\n9,30,4\n")
    _workload(page, app_url)
    _upload(page, trace)
    expect(page.get_by_text("2 of the first 3 rows have more or fewer fields")).to_be_visible(timeout=SLOW_MS)
    expect(page.get_by_text(f"Columns in {EVIL}.csv")).to_be_visible()  # the characters, as text
    assert page.locator('a[href*="evil.example"]').count() == 0
    assert page.locator('[data-testid="stException"]').count() == 0
    shot(page, "ragged")


def test_a_gzip_bomb_is_one_error_line_within_seconds(page: Page, app_url: str, tmp_path: Path, shot):
    bomb = tmp_path / "bomb.csv.gz"
    bomb.write_bytes(gzip.compress(bytes(64 * 2**20)) * 16)  # 1 MiB that expands to 1 GiB with no line end
    _workload(page, app_url)
    _upload(page, bomb)
    start = time.monotonic()
    page.get_by_role("button", name="Load trace").click()
    expect(page.get_by_text("bomb.csv.gz expands to more than")).to_be_visible(timeout=SLOW_MS)
    assert time.monotonic() - start < 30
    assert page.locator('[data-testid="stException"]').count() == 0
    shot(page, "bomb")

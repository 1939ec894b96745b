"""The Explore page in a real browser: define a sweep on the linked scenario, run it on the server's local Ray,
see the curves and the heatmap, download the rows (CSV) and the spec (JSON the CLI takes back), then make a
capacity plan on the same Ray."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Page, expect

from benchmarks.app_compare import CHARTS_DRAWN, wait_idle
from engine.analysis.metrics import METRICS
from engine.analysis.sweep import SweepSpec

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
#: The server starts its own local Ray on the first sweep: tens of seconds on a busy 2-core machine.
RAY_MS = 240_000


def test_sweep_runs_on_ray_and_downloads_rows_and_spec(page: Page, app_url: str, tmp_path: Path):
    query = urlencode({"cluster": "2x4:V100-32", "sched": "fifo,sjf", "w.n_jobs": 40})
    page.goto(f"{app_url}/explore?{query}")
    expect(page.get_by_role("heading", name="Explore", exact=True)).to_be_visible(timeout=120_000)
    page.get_by_role("textbox", name="Offered loads").fill("0.6,1.2")
    page.get_by_role("spinbutton", name="Seeds").fill("2")
    page.get_by_role("button", name="Run sweep").click()
    expect(page.get_by_text("8 of 8 cells completed on Ray")).to_be_visible(timeout=RAY_MS)
    page.wait_for_function(CHARTS_DRAWN, arg=2, timeout=60_000)
    wait_idle(page)
    curves = page.locator('[data-testid="stPlotlyChart"]').first
    names = curves.evaluate(
        "el => el.querySelector('.js-plotly-plot').data.filter(t => t.mode === 'lines+markers').map(t => t.name)"
    )
    assert names == ["fifo", "sjf"]
    expect(page.get_by_text(re.compile(r"p95 wait \((s|min|h|d)\) against offered load"))).to_be_visible()

    with page.expect_download(timeout=60_000) as info:
        page.get_by_role("button", name="Results (CSV, one row per cell)").click()
    info.value.save_as(tmp_path / "sweep.csv")
    with open(tmp_path / "sweep.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 8 and list(rows[0]) == ["cluster", "load", "seed", "scheduler", *METRICS]
    cells = {(load, s) for load in ("0.6", "1.2") for s in ("fifo", "sjf")}
    assert {(r["load"], r["scheduler"]) for r in rows} == cells

    with page.expect_download(timeout=60_000) as info:
        page.get_by_role("button", name="Sweep spec (JSON").click()
    info.value.save_as(tmp_path / "sweep.json")
    spec = SweepSpec.from_json((tmp_path / "sweep.json").read_bytes())
    assert (spec.clusters, spec.schedulers, spec.seeds, spec.loads) == (
        ("2x4:V100-32",),
        ("fifo", "sjf"),
        2,
        (0.6, 1.2),
    )
    assert spec.base.workload.n_jobs == 40 and spec.base.workload.users == 6
    assert json.loads((tmp_path / "sweep.json").read_text())["loads"] == [0.6, 1.2]

    # A second use of the server's Ray, after the run that started it has ended: a capacity plan.
    page.get_by_role("tab", name="Capacity plan").click()
    page.get_by_role("textbox", name="Node shape (GPUS:TYPE)").fill("4:V100-32")
    page.get_by_role("button", name="Find the fewest nodes").click()
    expect(page.get_by_text("against nodes (★ fewest nodes meeting the target)")).to_be_visible(timeout=RAY_MS)
    expect(page.get_by_text("Fewest GPUs:")).to_be_visible()

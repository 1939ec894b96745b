"""Deadlines, admission and elastic jobs in a real browser: a link carrying ElasticFlow deadlines and feasible
admission opens the Workload page, whose Generate form makes half the jobs elastic and whose rescale cost is set by
hand, all into the link; Compare (fifo, edf, elasticflow) shows the deadline and elastic rows, and its timeline
has a tick where each job was due (as many met and missed as the engine counts) and a triangle at each resize."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlparse

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from benchmarks.app_compare import wait_idle
from engine.analysis.scenario import Scenario
from engine.viz.timeline import deadline_points, resize_points, segments_frame
from tests.e2e.test_deadlines import SLOW_MS, compare_the_link, pick

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]
LINK = {
    "cluster": "2x4:V100-32",
    "sched": "fifo,edf,elasticflow",
    "w.n_jobs": 60,
    "w.load": 1.2,
    "w.deadlines": "elasticflow",
    "o.admission.policy": '"feasible"',
}
#: Per run (in column order), how many ticks of a trace the timeline draws.
COUNTS = "(el, name) => el.querySelector('.js-plotly-plot')._fullData.filter(t => t.name === name).map(t => t.x.length)"


def test_deadlines_admission_and_elastic_jobs_from_a_link_to_compare(page: Page, app_url: str, shot):
    page.goto(f"{app_url}/workload?{urlencode(LINK)}")
    expect(page.get_by_role("heading", name="Workload", exact=True)).to_be_visible(timeout=SLOW_MS)
    wait_idle(page)
    page.get_by_role("spinbutton", name="Elastic share").fill("0.5")
    pick(page, "Scaling curve of elastic jobs", "linear")
    page.get_by_role("button", name="Generate").click()
    expect(page).to_have_url(re.compile(r"w\.elastic=0\.5"), timeout=SLOW_MS)
    expect(page).to_have_url(re.compile(r"w\.scaling=linear"))
    expect(page).to_have_url(re.compile(r"w\.deadlines=elasticflow"))
    wait_idle(page)
    rescale = page.get_by_role("spinbutton", name="Rescale cost (s)")
    rescale.fill("60")
    rescale.press("Enter")
    expect(page).to_have_url(re.compile(r"o\.elastic\.rescale_s=60\.0"), timeout=SLOW_MS)
    wait_idle(page)
    sc = Scenario.from_query(dict(parse_qsl(urlparse(page.url).query)))
    jobs = sc.build_jobs(sc.build_cluster())
    n, whole = sum(j.elastic for j in jobs), sum(j.gpu_fraction == 1.0 for j in jobs)
    line = f"{n} of 60 jobs (50% of the jobs asked, drawn among the {whole} whole-GPU jobs)"
    expect(page.get_by_text(f"Elastic · {line}; linear, rescale cost 60 s")).to_be_visible()
    shot(page, "workload")

    kpi = compare_the_link(page)
    for row in ("Deadlines met", "Declined", "Mean tardiness", "p95 tardiness", "Rescales", "Elastic GPU efficiency"):
        expect(kpi).to_contain_text(row)
    for legend in ("deadline met", "deadline missed", "elastic job resized"):
        expect(page.get_by_text(legend).first).to_be_visible(timeout=SLOW_MS)
    shot(page, "compare")

    # What the browser drew equals what the engine computes for the link's scenario.
    results = Scenario.from_query(dict(parse_qsl(urlparse(page.url).query))).run()
    timeline = page.locator('[data-testid="stPlotlyChart"]').first
    met, missed, resized = ([] for _ in range(3))
    for r in results.values():
        due = deadline_points(segments_frame(r), r)["met"].to_numpy()
        met.append(int(np.sum(due)))
        missed.append(int(np.sum(~due)))
        resized.append(len(resize_points(r)))
    assert timeline.evaluate(COUNTS, "deadline met") == met
    assert timeline.evaluate(COUNTS, "deadline missed") == missed
    assert timeline.evaluate(COUNTS, "elastic job resized") == [n for n in resized if n]  # runs that resized
    assert min(missed) > 0 and resized[-1] > 0 == resized[0]  # elasticflow resizes, fifo does not

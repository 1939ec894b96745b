"""Browser benchmark of the Compare page: click "Run comparison" -> every chart drawn.

Starts ``streamlit run app.py`` on a free local port, drives Debian's chromium with Playwright (never a
downloaded browser) and measures, for 5 schedulers on 2,000 generated jobs and 64 GPUs:

* ``cold``: a fresh server; the click generates the jobs, runs the 5 simulations and draws the charts;
* ``warm``: the same click again on a new page of the same server (runs come from the cache);
* ``widget``: after a widget change (colour by job type), the time until the charts are redrawn, and
  whether the results were kept (no rerun needed).

Usage: ``.venv/bin/python -m benchmarks.app_compare [--jobs 2000] [--repeat 3]``. Prints one line per
measurement and a JSON summary. The target is under 3 s from click to all charts drawn.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
#: Flags for Debian's chromium in a container (no sandbox, no GPU, no background traffic).
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCHEDULERS = ("fifo", "first-fit", "best-fit", "sjf", "easy-backfill")
#: Charts the Compare page draws after a run: timeline, queue/utilisation, wait CDF, JCT CDF, per-user box.
COMPARE_CHARTS = 5


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_app(timeout_s: float = 90.0) -> Iterator[str]:
    """Run ``streamlit run app.py`` on a free port; yields its base URL once its health check answers."""
    port = free_port()
    (REPO / "runs").mkdir(exist_ok=True)  # git-ignored; the server's log goes there for post-mortems
    log = open(REPO / "runs" / f"streamlit-{port}.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.headless", "true",
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with code {proc.returncode} before answering")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"streamlit did not answer on {url} within {timeout_s:.0f} s")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def compare_url(base: str, n_jobs: int, cluster: str = "8x8:A100-80", schedulers=SCHEDULERS) -> str:
    """The Compare page with a scenario in its query parameters (what a shared link carries)."""
    return f"{base}/compare?" + urlencode({"cluster": cluster, "sched": ",".join(schedulers), "w.n_jobs": n_jobs})


#: True once ``n`` Plotly charts exist and Plotly has finished laying each out (``_fullLayout``).
CHARTS_DRAWN = """n => {
  const plots = document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot');
  return plots.length >= n && Array.from(plots).every(p => p._fullLayout && p.querySelector('.main-svg'));
}"""


def wait_idle(page, timeout_ms: int = 120_000) -> None:
    """Wait until Streamlit has finished its rerun (the "running" indicator is gone)."""
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')",
                           timeout=timeout_ms)


def time_run(page, timeout_ms: int = 120_000) -> float:
    """Click "Run comparison" and return seconds until every Compare chart is drawn."""
    page.get_by_role("button", name="Run comparison").wait_for(timeout=timeout_ms)
    t0 = time.perf_counter()
    page.get_by_role("button", name="Run comparison").click()
    page.wait_for_selector("text=Key metrics", timeout=timeout_ms)
    page.wait_for_function(CHARTS_DRAWN, arg=COMPARE_CHARTS, timeout=timeout_ms)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=2000)
    p.add_argument("--repeat", type=int, default=3, help="warm repetitions")
    args = p.parse_args(argv)
    from playwright.sync_api import sync_playwright

    out: dict = {"jobs": args.jobs, "gpus": 64, "schedulers": list(SCHEDULERS)}
    with serve_app() as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(compare_url(base, args.jobs))
        out["cold_s"] = time_run(page)
        print(f"cold: click -> {COMPARE_CHARTS} charts drawn in {out['cold_s']:.2f} s")
        warm = []
        for _ in range(args.repeat):
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(compare_url(base, args.jobs))
            warm.append(time_run(page))
            print(f"warm: click -> charts drawn in {warm[-1]:.2f} s")
            page.close()
        out["warm_s"] = warm
        out["warm_median_s"] = statistics.median(warm)
        # Results survive a widget change: switch the colouring and check the KPI table stays without a rerun.
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(compare_url(base, args.jobs))
        time_run(page)
        t0 = time.perf_counter()
        page.get_by_text("job type", exact=True).click()
        wait_idle(page)
        page.wait_for_function(CHARTS_DRAWN, arg=COMPARE_CHARTS)
        out["widget_change_s"] = time.perf_counter() - t0
        out["results_kept_after_widget_change"] = (page.get_by_text("Key metrics").count() == 1
                                                   and page.get_by_text("press **Run comparison**").count() == 0)
        print(f"widget change: charts redrawn in {out['widget_change_s']:.2f} s; "
              f"results kept: {out['results_kept_after_widget_change']}")
        browser.close()
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

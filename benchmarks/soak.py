"""Soak: browser sessions do hostile things to one server at once, round after round; its memory stays bounded and
every session still works at the end (issue 32).

Starts ``streamlit run app.py`` on a free local port and drives Debian's chromium with Playwright (async: every
session acts at once, one browser). Session ``i`` plays ``ROLES[i % len(ROLES)]`` in every round:

* ``bomb``: uploads a gzip bomb (1 MiB that expands to 1 GiB with no line end) and presses Load trace: one
  error line naming the file;
* ``huge``: opens links asking for a billion jobs and for 100,000 nodes of 8 GPUs: refused in one line each;
* ``badlink``: opens links with an inline cluster whose co-location slowdown is 1e308 and an unknown scheduler
  with markup in its name (refused in one line each, never a traceback), and one with Markdown and HTML in the
  scenario's name (shown as text, no link);
* ``repeat``: presses Run comparison three times in a row on a Compare link of a seed of its own;
* ``sweep`` (not with ``--quick``): runs a 24-cell sweep on the Explore page (a local Ray on the server);
* ``honest``: runs a comparison of a seed of its own: the key metrics show.

After the rounds (as many as fit in ``--minutes``, at least ``--rounds``) every session opens a Compare link of a
seed of its own and runs it: each must finish. The server's RSS (the streamlit process) and that of its process
tree (its worker processes and a Ray it started included) are sampled after every round. The run fails (exit 1)
when a page showed an exception, an action did not get its answer, a session's last comparison did not finish,
the server's RSS passed ``--max-rss-mib``, or its RSS after the last round is more than ``--growth-mib`` above
its RSS after the first (memory that grows round after round).

Usage: ``.venv/bin/python -m benchmarks.soak [--sessions 8] [--minutes 10] [--quick]``. Prints one line per
round and a JSON summary.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

from benchmarks.app_compare import CHARTS_DRAWN, CHROMIUM, CHROMIUM_ARGS, scenario_url, serve_app
from benchmarks.upload_memory import rss_mib, server_pid

ROLES = ("bomb", "huge", "badlink", "repeat", "sweep", "honest", "bomb", "repeat")
#: ``--quick``'s sessions (the smoke test's): one of each hostile kind that needs no Ray.
QUICK_ROLES = ("bomb", "badlink", "repeat")
#: How long one action may take before it counts as not answered, ms (the machine may be loaded).
ACTION_MS = 240_000
#: The page's answer to a link it cannot read (then it goes on with the default scenario).
REFUSED = "The link's scenario could not be read"
EXCEPTION = '[data-testid="stException"]'


def tree_rss_mib(pid: int) -> float:
    """RSS of ``pid`` and every process below it, MiB."""
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += rss_mib(p)
        todo.extend(children.get(p, ()))
    return total


@dataclass
class Session:
    """One browser session (its own context: its own cookies, so its own Streamlit session) and what went wrong."""

    index: int
    role: str
    page: object
    problems: list[str] = field(default_factory=list)
    actions: int = 0


async def _no_exception(s: Session, what: str) -> None:
    if await s.page.locator(EXCEPTION).count():
        s.problems.append(f"session {s.index} ({s.role}): {what} showed an exception")


async def _refused(s: Session, url: str, what: str) -> None:
    """Open ``url``: the page says in one line that it cannot read the link, and shows no exception."""
    await s.page.goto(url)
    try:
        await s.page.get_by_text(REFUSED).first.wait_for(timeout=ACTION_MS)
    except Exception:  # noqa: BLE001 -- a timeout: recorded, the soak goes on
        s.problems.append(f"session {s.index} ({s.role}): {what}: not refused in one line")
    await _no_exception(s, what)


async def _compare(s: Session, base: str, seed: int, clicks: int = 1) -> float:
    """A comparison of fifo and sjf on 300 jobs of workload seed ``seed``, Run pressed ``clicks`` times; seconds
    until the key metrics show (``inf`` when they do not)."""
    page = s.page
    await page.goto(scenario_url(base, "compare", 300, seed=seed, cluster="2x8:A100-80", schedulers=("fifo", "sjf")))
    button = page.get_by_role("button", name="Run comparison")
    start = time.perf_counter()
    try:
        await button.wait_for(timeout=ACTION_MS)
        for _ in range(clicks):
            await button.click(timeout=ACTION_MS)
            await page.wait_for_timeout(300)
        await page.get_by_text("Key metrics").first.wait_for(timeout=ACTION_MS)
    except Exception:  # noqa: BLE001 -- a timeout: recorded, the soak goes on
        s.problems.append(f"session {s.index} ({s.role}): comparison of seed {seed} did not finish")
        return float("inf")
    await _no_exception(s, f"comparison of seed {seed}")
    return time.perf_counter() - start


async def _bomb(s: Session, base: str, bomb: Path) -> None:
    page = s.page
    await page.goto(f"{base}/workload")
    try:
        await page.wait_for_function(CHARTS_DRAWN, arg=5, timeout=ACTION_MS)
        await page.get_by_role("tab", name="Upload a trace").click()
        uploader = page.locator('[data-testid="stFileUploader"]').filter(has_text="Trace file")
        await uploader.locator('input[type="file"]').set_input_files(str(bomb))
        await page.get_by_text(f"Ready to load: {bomb.name}").wait_for(timeout=ACTION_MS)
        await page.get_by_role("button", name="Load trace").click()
        await page.get_by_text(f"{bomb.name} expands to more than").first.wait_for(timeout=ACTION_MS)
    except Exception:  # noqa: BLE001 -- a timeout: recorded, the soak goes on
        s.problems.append(f"session {s.index} (bomb): the bomb got no error line")
    await _no_exception(s, "the bomb")


async def _sweep(s: Session, base: str, seed: int) -> None:
    page = s.page
    query = {"cluster": "2x4:V100-32", "sched": "fifo,sjf", "w.n_jobs": 200, "w.seed": seed}
    await page.goto(f"{base}/explore?" + urlencode(query))
    try:
        await page.get_by_role("button", name="▶ Run sweep").click(timeout=ACTION_MS)
        await page.get_by_text("cells completed on Ray").first.wait_for(timeout=ACTION_MS)
    except Exception:  # noqa: BLE001 -- a timeout: recorded, the soak goes on
        s.problems.append(f"session {s.index} (sweep): the sweep did not finish")
    await _no_exception(s, "the sweep")


#: Links a stranger may send: a cluster whose co-location slowdown is 1e308, an unknown scheduler with markup in
#: its name, a billion jobs, 100,000 nodes.
_COLOCATION = json.dumps(
    {"groups": [{"gpu_type": "A100-80", "nodes": 1, "gpus_per_node": 8}], "colocation_slowdown": 1e308}
)
BAD_LINKS = {
    "colocation 1e308": {"cluster": _COLOCATION, "sched": "fifo", "w.n_jobs": 50},
    "unknown scheduler": {"cluster": "2x4:T4", "sched": "no-such-scheduler<script>"},
    "a billion jobs": {"cluster": "2x4:T4", "sched": "fifo", "w.n_jobs": 10**9},
    "100,000 nodes": {"cluster": "100000x8:A100-80", "sched": "fifo"},
}


async def act(s: Session, base: str, round_no: int, bomb: Path) -> None:
    """Session ``s``'s action of round ``round_no`` (its role's)."""
    seed = 1000 * (s.index + 1) + round_no
    if s.role == "bomb":
        await _bomb(s, base, bomb)
    elif s.role in ("huge", "badlink"):
        names = ("a billion jobs", "100,000 nodes") if s.role == "huge" else ("colocation 1e308", "unknown scheduler")
        for name in names:
            await _refused(s, f"{base}/compare?" + urlencode(BAD_LINKS[name]), name)
        if s.role == "badlink":  # Markdown and HTML in the name show as typed, never a link
            await s.page.goto(f"{base}/?cluster=2x4:T4&name=" + "%5Bx%5D(https:evil.example)%3Cb%3Ey%3C/b%3E")
            try:
                await s.page.get_by_text("[x](https:evil.example)<b>y</b>").first.wait_for(timeout=ACTION_MS)
            except Exception:  # noqa: BLE001 -- a timeout: recorded, the soak goes on
                s.problems.append(f"session {s.index} (badlink): the name was not shown as typed")
            if await s.page.locator("a[href*='evil']").count():
                s.problems.append(f"session {s.index} (badlink): the name drew a link")
    elif s.role == "repeat":
        await _compare(s, base, seed, clicks=3)
    elif s.role == "sweep":
        await _sweep(s, base, seed)
    else:
        await _compare(s, base, seed)
    s.actions += 1


async def soak(sessions: int, minutes: float, rounds: int, quick: bool) -> dict:
    """Run the soak (see the module); returns its measurements and problems."""
    from playwright.async_api import async_playwright

    roles = QUICK_ROLES if quick else ROLES
    with tempfile.TemporaryDirectory() as tmp, serve_app() as url:
        bomb = Path(tmp) / "bomb.csv.gz"
        bomb.write_bytes(gzip.compress(bytes(64 * 2**20)) * 16)
        pid = server_pid(url.rsplit(":", 1)[1])
        samples = [{"round": 0, "server_mib": rss_mib(pid), "tree_mib": tree_rss_mib(pid), "s": 0.0}]
        start = time.perf_counter()
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            contexts = [await browser.new_context(viewport={"width": 1200, "height": 900}) for _ in range(sessions)]
            people = [Session(i, roles[i % len(roles)], await c.new_page()) for i, c in enumerate(contexts)]
            for page in (p.page for p in people):
                page.set_default_timeout(ACTION_MS)
            n = 0
            while n < rounds or time.perf_counter() - start < 60 * minutes:
                n += 1
                await asyncio.gather(*(act(p, url, n, bomb) for p in people))
                samples.append(
                    {
                        "round": n,
                        "server_mib": rss_mib(pid),
                        "tree_mib": tree_rss_mib(pid),
                        "s": time.perf_counter() - start,
                    }
                )
                print(
                    f"round {n}: server RSS {samples[-1]['server_mib']:.0f} MiB, its tree "
                    f"{samples[-1]['tree_mib']:.0f} MiB, {samples[-1]['s']:.0f} s",
                    flush=True,
                )
            finals = await asyncio.gather(*(_compare(p, url, 900_000 + p.index) for p in people))
            await browser.close()
    return {
        "sessions": sessions,
        "roles": [p.role for p in people],
        "rounds": n,
        "actions": sum(p.actions for p in people),
        "samples": samples,
        "final_comparison_s": finals,
        "problems": [x for p in people for x in p.problems],
        "wall_s": time.perf_counter() - start,
        "loadavg": os.getloadavg(),
    }


def verdict(report: dict, max_rss_mib: float, growth_mib: float) -> list[str]:
    """What the soak found wrong: the sessions' problems and the server's memory past its bounds."""
    server = [s["server_mib"] for s in report["samples"]]
    found = list(report["problems"])
    if max(server) > max_rss_mib:
        found.append(f"server RSS reached {max(server):.0f} MiB (bound {max_rss_mib:.0f})")
    if len(server) > 2 and server[-1] - server[1] > growth_mib:
        found.append(f"server RSS grew {server[-1] - server[1]:.0f} MiB from the first round to the last")
    if not all(t < float("inf") for t in report["final_comparison_s"]):
        found.append("a session's last comparison did not finish")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--minutes", type=float, default=10.0, help="keep starting rounds until this much time passed")
    parser.add_argument("--rounds", type=int, default=1, help="at least this many rounds")
    parser.add_argument("--max-rss-mib", type=float, default=3072.0, help="bound on the server process's RSS")
    parser.add_argument("--growth-mib", type=float, default=512.0, help="bound on its growth, first to last round")
    parser.add_argument("--quick", action="store_true", help="3 sessions, one round, no sweep (under a minute)")
    args = parser.parse_args(argv)
    if args.quick:
        args.sessions, args.minutes = min(args.sessions, len(QUICK_ROLES)), 0.0
    report = asyncio.run(soak(args.sessions, args.minutes, args.rounds, args.quick))
    found = verdict(report, args.max_rss_mib, args.growth_mib)
    print(json.dumps({**report, "found": found}, indent=1))
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())

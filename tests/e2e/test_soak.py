"""The soak benchmark's smoke run (``python -m benchmarks.soak --quick``): hostile sessions at once against one
server (a gzip bomb, links it must refuse, Markdown in a name, Run pressed three times in a row), then every
session still runs a comparison, and the server's memory stays bounded (issue 32)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest

from benchmarks.soak import QUICK_ROLES, soak, verdict

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def test_hostile_sessions_leave_the_server_bounded_and_every_session_working():
    # In a thread of its own: the browser tests before it leave Playwright's event loop running in this one.
    with ThreadPoolExecutor(1) as pool:
        report = pool.submit(asyncio.run, soak(len(QUICK_ROLES), minutes=0, rounds=1, quick=True)).result()
    assert report["problems"] == [] and report["actions"] == len(QUICK_ROLES)
    assert all(s < 240 for s in report["final_comparison_s"])  # every session's comparison finished
    # The bomb expands to 1 GiB: the server never holds it (its RSS measured at 219 MiB after a round).
    assert max(s["server_mib"] for s in report["samples"]) < 1024
    assert verdict(report, max_rss_mib=1024, growth_mib=512) == []

"""A server's limits on uploaded traces: lines counted before parsing (through gzip), jobs per run, settings."""

from __future__ import annotations

import gzip

import pytest

from engine.traces.limits import UploadLimitError, check_job_limit, check_trace_size, count_lines, host_setting


def test_lines_are_counted_through_gzip_and_stop_past_the_limit():
    text = b"a,b\n" * 1000
    assert count_lines(text, 10) == 1000
    assert count_lines(gzip.compress(text), 10_000) == 1000
    assert 10 < count_lines(gzip.compress(b"\n" * 50_000_000), 10, block_bytes=1024) <= 1034  # stops early
    check_trace_size(text, "t.csv", max_jobs=200)
    with pytest.raises(UploadLimitError, match="t.csv has more than 500 lines.*head -n 500"):
        check_trace_size(gzip.compress(text), "t.csv", max_jobs=100)


def test_a_trace_over_the_job_limit_names_the_setting_that_cuts_it():
    check_job_limit(100, "t.csv", 100, "workload.first")
    with pytest.raises(
        UploadLimitError,
        match="gives 101 jobs; this server simulates at most 100 per run: set workload.first to 100 or less",
    ):
        check_job_limit(101, "t.csv", 100, "workload.first")


def test_host_settings_come_from_the_environment_then_the_fallback(monkeypatch):
    monkeypatch.delenv("PLAYGROUND_TEST_LIMIT", raising=False)
    assert host_setting("PLAYGROUND_TEST_LIMIT", 7) == 7
    assert host_setting("PLAYGROUND_TEST_LIMIT", 7, lambda: "9") == 9
    monkeypatch.setenv("PLAYGROUND_TEST_LIMIT", "0")
    with pytest.raises(UploadLimitError, match="PLAYGROUND_TEST_LIMIT must be a positive integer, got 0"):
        host_setting("PLAYGROUND_TEST_LIMIT", 7)

"""Inspecting an unknown CSV: columns, preview, guessed map, what a run lacks, and suspicious time units."""

from __future__ import annotations

import gzip

import pytest

from engine.errors import TraceError
from engine.traces import mapped


def test_preview_lists_columns_first_rows_and_guesses_the_map():
    pv = mapped.preview(b"Job ID,Submit Time,Run-Time,Num GPUs,User\n1,0,60,2,a\n2,5,30,1,b\n")
    assert pv.header == ("Job ID", "Submit Time", "Run-Time", "Num GPUs", "User")
    assert pv.rows == (("1", "0", "60", "2", "a"), ("2", "5", "30", "1", "b"))
    assert dict(pv.guess) == {
        "submit": "Submit Time",
        "duration": "Run-Time",
        "gpus": "Num GPUs",
        "user": "User",
        "name": "Job ID",
    }
    assert mapped.needs_map(pv)
    assert not mapped.needs_map(mapped.preview(b"submit_s,duration_s,gpus\n0,1,1\n"))


@pytest.mark.parametrize("mtime", [0, 1_700_000_000, 1_764_800_000])
def test_a_gzipped_csv_previews_as_its_text_and_a_gzip_bomb_as_no_csv(mtime):
    # The bytes of a gzip file depend on its time stamp: read as text, some had a comma in their "header" and the
    # Workload page asked to map the columns of the compressed bytes, with Load disabled (a flaky upload test).
    text = b"Job ID,Submit Time,Run-Time,Num GPUs,User\n1,0,60,2,a\n2,5,30,1,b\n"
    assert mapped.preview(gzip.compress(text, mtime=mtime)) == mapped.preview(text)
    with pytest.raises(TraceError, match="not valid CSV"):  # zeros without a line end
        mapped.preview(gzip.compress(bytes(64 * 2**20), mtime=mtime) * 16)
    with pytest.raises(TraceError, match="not a valid gzip file"):
        mapped.preview(b"\x1f\x8b" + bytes(range(40)))


def test_pollux_and_alibaba_2025_columns_are_guessed():
    pollux = ["name", "time", "application", "num_replicas", "batch_size"]
    assert mapped.guess_map(pollux) == {
        "submit": "time",
        "gpus": "num_replicas",
        "job_type": "application",
        "name": "name",
    }
    alibaba = ["job_name", "app_name", "creation_time", "deletion_time", "gpu_request"]
    assert mapped.guess_map(alibaba) == {
        "submit": "creation_time",
        "end": "deletion_time",
        "gpus": "gpu_request",
        "user": "app_name",
        "name": "job_name",
    }


def test_an_end_column_is_guessed_only_without_a_duration():
    assert mapped.guess_map(["start_time", "end_time"]) == {"submit": "start_time", "end": "end_time"}
    assert "end" not in mapped.guess_map(["submit", "duration", "end"])


@pytest.mark.parametrize(
    "cmap, words",
    [({}, "submit time"), ({"submit": "t"}, "duration (run time) column"), ({"submit": "t", "end": "e"}, "")],
)
def test_missing_for_run_names_what_is_lacking(cmap, words):
    sentence = mapped.missing_for_run(cmap)
    assert (words in sentence) if words else sentence == ""


def test_time_unit_note_flags_milliseconds_and_is_silent_when_plausible():
    rows = "\n".join(f"{i * 60_000},{3_600_000 + i}" for i in range(100))
    pv = mapped.preview(("t,d\n" + rows + "\n").encode())
    cmap = {"submit": "t", "duration": "d"}
    unit, note = mapped.time_unit_note(pv, cmap, "s")
    assert unit == "ms" and "the median job would run 41.7 d" in note and "choose the time unit ms" in note
    assert mapped.time_unit_note(pv, cmap, "ms") == ("ms", "")


@pytest.mark.parametrize("data, words", [(b"", "empty"), (b"just one column\n1\n", "at least a submit time")])
def test_preview_refuses_what_is_not_a_csv_trace(data, words):
    with pytest.raises(TraceError, match=words):
        mapped.preview(data)

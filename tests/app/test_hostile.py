"""What any visitor of a shared server can send does not crash a page, exhaust the server or inject markup:
ragged CSV previews, gzip bombs, Markdown in file names and headers (issue 32)."""

from __future__ import annotations

import gzip
import re

from tests.app.test_uploads import errors, workload_page


def test_a_csv_whose_rows_are_narrower_or_wider_than_its_header_previews_padded_with_a_note():
    at = workload_page()
    data = b"submit,runtime,gpus,who\n0,10,1\n5,20,2,alice,extra,more\n9,30,4,bob\n"
    at.file_uploader(key="trace_upload").upload("ragged.csv", data)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    frame = next(d.value for d in at.dataframe if list(d.value.columns) == ["submit", "runtime", "gpus", "who"])
    assert frame.iloc[0].tolist() == ["0", "10", "1", ""] and frame.iloc[1].tolist() == ["5", "20", "2", "alice"]
    assert any("2 of the first 3 rows" in c.value.replace("\\", "") for c in at.caption), [c.value for c in at.caption]


def test_a_csv_with_repeated_column_names_previews():
    at = workload_page()
    at.file_uploader(key="trace_upload").upload("twice.csv", b"t,t,dur\n0,1,10\n")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(list(d.value.columns) == ["t", "t (2)", "dur"] for d in at.dataframe)


def test_an_uncaught_error_shows_one_line_with_no_traceback_or_server_paths(monkeypatch):
    """The server's config (``.streamlit/config.toml``) shows a page's uncaught error as its type alone."""
    import tomllib

    from streamlit import config

    from app_pages.lib import common
    from engine.traces import mapped

    shown = tomllib.loads((common.REPO / ".streamlit" / "config.toml").read_text())["client"].get("showErrorDetails")
    monkeypatch.setattr(config, "get_option", lambda key, get=config.get_option: (
        shown or "full") if key == "client.showErrorDetails" else get(key))
    monkeypatch.setattr(mapped, "preview", lambda data: 1 / 0)
    at = workload_page()
    at.file_uploader(key="trace_upload").upload("any.csv", b"a,b\n1,2\n")
    at.run()
    (exc,) = at.exception
    assert not exc.stack_trace and "/" not in exc.message and "\n" not in exc.message, (exc.message, exc.stack_trace)

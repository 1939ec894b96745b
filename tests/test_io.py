"""Atomic writes: a file changes all at once or not at all, and a failed write leaves nothing behind."""

from __future__ import annotations

import os

import pytest

from engine.io import atomic_open, atomic_write_bytes, atomic_write_json


def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "out.csv"
    path.write_text("old\n")
    with pytest.raises(RuntimeError):
        with atomic_open(path, "w") as f:
            f.write("new, half written")
            raise RuntimeError("killed")
    assert path.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]
    atomic_write_bytes(path, b"new\n")
    assert path.read_bytes() == b"new\n" and sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_a_file_gets_the_mode_a_plain_write_gives_it(tmp_path):
    (tmp_path / "plain").write_text("x")
    atomic_write_json(tmp_path / "atomic.json", {"a": 1})
    assert os.stat(tmp_path / "atomic.json").st_mode == os.stat(tmp_path / "plain").st_mode
    assert (tmp_path / "atomic.json").read_text() == '{\n  "a": 1\n}\n'


def test_json_refuses_nan_unless_asked(tmp_path):
    with pytest.raises(ValueError):
        atomic_write_json(tmp_path / "x.json", {"a": float("nan")})
    assert not list(tmp_path.iterdir())

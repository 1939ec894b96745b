"""Joining a Ray cluster, without one: where the token comes from, and the one-line errors that come before Ray
is asked (a real head: tests/analysis/test_ray_cluster.py)."""

from __future__ import annotations

import socket
import time

import pytest

from engine.analysis.ray_join import RayJoinError, head_answers, join_cluster, token_source
from engine.errors import EngineError

pytest.importorskip("ray")


@pytest.fixture
def no_token(monkeypatch, tmp_path):
    """No token anywhere Ray looks: no variables, a HOME without ~/.ray/auth_token."""
    for name in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # a join here must not switch this process to token mode
    return tmp_path


def test_the_token_is_found_where_ray_looks_in_ray_order(no_token, monkeypatch):
    assert token_source() is None
    (no_token / ".ray").mkdir()
    (no_token / ".ray" / "auth_token").write_text("from-the-default-file\n")
    assert token_source() == str(no_token / ".ray" / "auth_token")
    named = no_token / "token.txt"
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(named))
    with pytest.raises(RayJoinError, match="RAY_AUTH_TOKEN_PATH names .*token.txt, which is missing"):
        token_source()  # as Ray: a named file that is not there is an error, not a fall back to the default
    named.write_text("abc")
    assert token_source() == f"RAY_AUTH_TOKEN_PATH ({named})"
    monkeypatch.setenv("RAY_AUTH_TOKEN", "")
    assert token_source() == f"RAY_AUTH_TOKEN_PATH ({named})"  # empty: as if unset
    monkeypatch.setenv("RAY_AUTH_TOKEN", "xyz")
    assert token_source() == "RAY_AUTH_TOKEN"
    monkeypatch.setenv("RAY_AUTH_TOKEN", "  ")
    assert token_source() is None  # blank: Ray looks no further and has no token


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_nothing_listening_is_one_line_naming_the_address_within_seconds(no_token):
    address = f"127.0.0.1:{free_port()}"
    t0 = time.monotonic()
    with pytest.raises(RayJoinError, match="no Ray head answers at") as caught:
        join_cluster(address)
    assert time.monotonic() - t0 < 5 and isinstance(caught.value, EngineError)
    assert address.split(":")[1] in str(caught.value) and "\n" not in str(caught.value)
    assert not head_answers(address)


@pytest.mark.parametrize("address", ["nowhere", "host:port", "10.0.0.1:"])
def test_an_address_that_is_not_host_and_port_is_named(no_token, address):
    with pytest.raises(RayJoinError, match="expected HOST:PORT"):
        join_cluster(address)

"""Fixtures: one live API server per test module (see :mod:`tests.api.live_server`) and a client of it."""

from __future__ import annotations

import httpx
import pytest

from tests.api.live_server import start_server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = start_server(tmp_path_factory.mktemp("api") / "runs" / "store.sqlite")
    yield srv
    srv.stop()


@pytest.fixture
def client(server):
    with httpx.Client(base_url=server.url, timeout=60) as c:
        yield c

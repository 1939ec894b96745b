"""The server's cache of finished runs, bounded in bytes: the least recently used results go first.

Whoever hosts the app sets the bound by environment variable (or ``.streamlit/secrets.toml``, as in
:mod:`app_pages.lib.uploads`): ``PLAYGROUND_RESULT_CACHE_MB`` (``result_cache_mb``), MiB of results the server
keeps (default 1,024). A result's bytes are estimated from its arrays (:func:`result_bytes`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Hashable

import numpy as np

from app_pages.lib.uploads import host_setting
from engine import Result

__all__ = ["ResultCache", "limit_bytes", "result_bytes"]
#: Bytes counted per entry of a tuple or dict field of a result (a job's GPU ids, an unschedulable reason).
ENTRY_BYTES = 64


def limit_bytes() -> int:
    return host_setting("PLAYGROUND_RESULT_CACHE_MB", "result_cache_mb", 1024) * 2**20


def result_bytes(result: Result) -> int:
    """About how many bytes ``result`` holds beyond its inputs: its arrays' bytes, and :data:`ENTRY_BYTES` per
    entry of its tuples and dicts (the cluster and jobs it ran on are shared, not counted)."""
    total = 0
    for name, value in vars(result).items():
        if name in ("cluster", "jobs"):
            continue
        if isinstance(value, np.ndarray):
            total += value.nbytes
        elif isinstance(value, (tuple, list, dict)):
            total += ENTRY_BYTES * len(value)
    return total


class ResultCache:
    """Results by key, at most ``limit_bytes`` (estimated by ``size``) in all; the least recently used go first.
    A result larger than the whole cache is returned and not kept."""

    def __init__(self, limit_bytes: int, size: Callable[[Result], int] = result_bytes) -> None:
        self.limit_bytes = limit_bytes
        self._size = size
        self._items: OrderedDict[Hashable, tuple[Result, int]] = OrderedDict()
        self._lock = threading.Lock()  # sessions run at once
        self.total_bytes = 0

    def get_or_run(self, key: Hashable, run: Callable[[], Result]) -> Result:
        """The result kept under ``key``, else ``run()`` (kept when it fits)."""
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit[0]
        result = run()
        nbytes = self._size(result)
        with self._lock:
            if key not in self._items and nbytes <= self.limit_bytes:
                while self._items and self.total_bytes + nbytes > self.limit_bytes:
                    _, (_, old) = self._items.popitem(last=False)
                    self.total_bytes -= old
                self._items[key] = (result, nbytes)
                self.total_bytes += nbytes
        return result

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.total_bytes = 0

"""Files the project writes, written so that a kill at any moment leaves the old file or the new one, never a
torn one: the bytes go to a temporary name in the same folder, are flushed to disk, and the temporary file is
renamed over the target (``os.replace``, atomic within one file system).

Every writer of the project goes through :func:`atomic_open` or the helpers built on it. A kill leaves at most a
hidden ``.NAME.*.tmp`` beside the target, never read by anything.
"""

from __future__ import annotations

import json
import os
import secrets
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator


def temporary_beside(path: str | os.PathLike[str]) -> Path:
    """A fresh hidden name in ``path``'s folder (same file system, so renaming it over ``path`` is atomic)."""
    p = Path(path)
    return p.with_name(f".{p.name}.{secrets.token_hex(6)}.tmp")


@contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """``open(path, mode)`` for writing (``"w"`` or ``"wb"``, ``kwargs`` as for :func:`open`), except that
    ``path`` changes only when the block ends without an exception, all at once; on an exception the target is
    untouched and the temporary file removed. The file gets the mode a plain ``open`` would give it."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open writes whole files: mode 'w' or 'wb', got {mode!r}")
    tmp = temporary_beside(path)
    try:
        with open(tmp, mode.replace("w", "x"), **kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see the module docstring)."""
    with atomic_open(path, "wb") as f:
        f.write(data)


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically (see the module docstring)."""
    with atomic_open(path, "w", encoding=encoding) as f:
        f.write(text)


def atomic_write_json(path: str | os.PathLike[str], data: Any, *, indent: int | None = 2,
                      allow_nan: bool = False) -> None:
    """Write ``data`` as JSON (then a newline) to ``path`` atomically; NaN and infinities refused unless
    ``allow_nan``."""
    atomic_write_text(path, json.dumps(data, indent=indent, allow_nan=allow_nan) + "\n")

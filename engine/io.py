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
from typing import IO, Any, Iterator, Mapping


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


def atomic_write_files(files: Mapping[str | os.PathLike[str], bytes]) -> None:
    """Write several files (path -> bytes) that belong together: every temporary is written and flushed
    first, then each is renamed over its target, one right after the other. A kill leaves each file whole, old
    or new; only one between two renames (microseconds) leaves the first ones new and the rest old."""
    written: list[tuple[Path, str | os.PathLike[str]]] = []
    try:
        for path, data in files.items():
            written.append((temporary_beside(path), path))
            with open(written[-1][0], "xb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        for tmp, path in written:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in written:
            tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see the module docstring)."""
    atomic_write_files({path: data})


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically (see the module docstring)."""
    with atomic_open(path, "w", encoding=encoding) as f:
        f.write(text)


def json_bytes(data: Any, *, indent: int | None = 2, allow_nan: bool = False) -> bytes:
    """``data`` as the JSON file the project writes: UTF-8, then a newline; NaN and infinities refused unless
    ``allow_nan``."""
    return (json.dumps(data, indent=indent, allow_nan=allow_nan) + "\n").encode("utf-8")


def atomic_write_json(
    path: str | os.PathLike[str], data: Any, *, indent: int | None = 2, allow_nan: bool = False
) -> None:
    """Write ``data`` as JSON (:func:`json_bytes`) to ``path`` atomically."""
    atomic_write_bytes(path, json_bytes(data, indent=indent, allow_nan=allow_nan))

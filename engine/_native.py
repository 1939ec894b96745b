"""Compiled twins of the engine's hot modules, used only while they match their sources.

``make build`` (``setup.py``) compiles :data:`NATIVE_MODULES` with mypyc into extension modules beside their
sources and records the SHA-256 of every source it compiled in ``engine/_compiled.json``. The compiled form
runs the same code, with the same floating-point operations in the same order, so results are identical bit
for bit; it is only faster (``benchmarks/engine_speed.py`` prints by how much).

Python prefers an extension module over a source file of the same name, so a source edited after the build
would silently not run. :func:`install` (called first thing by ``engine/__init__.py``) therefore adds an
import hook that loads every module of the list from its source when any of their extensions is missing or
was built from other source text (all or none: compiled modules call each other's compiled code directly),
or when the environment variable ``ENGINE_PURE_PYTHON`` is set to anything but ``0``. Without a compiler
nothing is built and everything runs interpreted, unchanged.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = Path(__file__).resolve().parent / "_compiled.json"

#: The modules ``make build`` compiles: the event loop, occupancy and every registered scheduler's hot path.
NATIVE_MODULES = (
    "engine.sim.agenda",
    "engine.sim.job",
    "engine.sim.checks",
    "engine.sim.failures",
    "engine.sim.record",
    "engine.sim.simulator",
    "engine.sim.state",
    "engine.sim.occupancy",
    "engine.schedulers.base",
    "engine.schedulers.ordering",
    "engine.schedulers.placement",
    "engine.schedulers.backfill_index",
    "engine.schedulers.backfill",
    "engine.schedulers.tiresias_index",
    "engine.schedulers.tiresias",
    "engine.schedulers.drf",
    "engine.schedulers.fgd",
    "engine.schedulers.topo",
)

PURE_ENV = "ENGINE_PURE_PYTHON"


def source_of(module: str) -> Path:
    """The source file of ``module`` (one of :data:`NATIVE_MODULES`)."""
    return ROOT.joinpath(*module.split(".")).with_suffix(".py")


def source_sha256(module: str) -> str:
    return hashlib.sha256(source_of(module).read_bytes()).hexdigest()


def read_manifest() -> dict[str, str]:
    """``module -> SHA-256 of the source it was compiled from``; empty when nothing was built."""
    try:
        manifest = json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        return {}
    return manifest if isinstance(manifest, dict) else {}


def _has_extension(module: str) -> bool:
    base = source_of(module).with_suffix("")
    return any(Path(f"{base}{suffix}").is_file() for suffix in importlib.machinery.EXTENSION_SUFFIXES)


def stale_modules() -> list[str]:
    """The modules of the list that must run from source: never compiled, or compiled from other text."""
    manifest = read_manifest()
    return [m for m in NATIVE_MODULES if not _has_extension(m) or manifest.get(m) != source_sha256(m)]


class _FromSource(importlib.abc.MetaPathFinder):
    """Finds the listed modules as source files, ahead of the extension modules beside them."""

    def __init__(self, modules: frozenset[str]) -> None:
        self.modules = modules

    def find_spec(self, fullname: str, path=None, target: ModuleType | None = None):
        if fullname not in self.modules:
            return None
        return importlib.util.spec_from_file_location(fullname, source_of(fullname))


def install() -> None:
    """Load the listed modules from source unless all of them are compiled from their current source."""
    if any(isinstance(f, _FromSource) for f in sys.meta_path):
        return
    if os.environ.get(PURE_ENV, "") not in ("", "0") or stale_modules():
        sys.meta_path.insert(0, _FromSource(frozenset(NATIVE_MODULES)))


def compiled_modules() -> list[str]:
    """The listed modules that are loaded and running compiled (imports them)."""
    out = []
    for name in NATIVE_MODULES:
        module = importlib.import_module(name)
        if not str(getattr(module, "__file__", "")).endswith(".py"):
            out.append(name)
    return out

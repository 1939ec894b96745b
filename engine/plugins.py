"""Schedulers from outside the repository: a user's file or module, or an installed package.

A plug-in is ordinary Python that registers schedulers when it is imported::

    from engine.schedulers import ListScheduler, SchedulerSpec, StaticKeyOrder, best_fit, register

    register(SchedulerSpec("widest-first", lambda: ListScheduler("widest-first",
                           StaticKeyOrder(lambda job: -job.gpus), best_fit), "Widest jobs first, packed tightly."))

It reaches the engine in one of two ways:

- ``python -m engine simulate|compare|evaluate --plugin FILE_OR_MODULE`` imports it (:func:`load_plugin`) before
  the command runs; ``--plugin`` may be given several times.
- An installed package names it in the entry-point group :data:`ENTRY_POINT_GROUP` (in its ``pyproject.toml``:
  ``[project.entry-points."gpu_scheduling_playground.schedulers"] mine = "my_package.schedulers"``); ``import
  engine`` loads every such entry point (:func:`load_entry_points`), so its schedulers appear in the CLI and the
  app. An entry point that names a callable instead of a module is called with no arguments.

A plug-in runs with the rights of whoever starts the engine: it is code, chosen by the operator, never by a link
or an upload.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import sys
import warnings
from pathlib import Path
from types import ModuleType

from engine.errors import EngineError

#: The entry-point group whose entries ``import engine`` loads.
ENTRY_POINT_GROUP = "gpu_scheduling_playground.schedulers"


class PluginError(EngineError):
    """A plug-in could not be found or failed while it was imported."""


def load_plugin(spec: str) -> ModuleType:
    """Import the plug-in ``spec``: a ``.py`` file (by path) or a module name importable from ``sys.path``.

    Loading the same file or module twice imports it once. Raises :class:`PluginError` naming ``spec`` when it
    does not exist or raises while it is imported (for example by registering a name that is already taken).
    """
    spec = spec.strip()
    if spec.endswith(".py") or "/" in spec or "\\" in spec:
        path = Path(spec).resolve()
        if not path.is_file():
            raise PluginError(f"plug-in {spec}: no such file")
        # One module name per file, so a file loaded twice is not imported (and registered) twice.
        name = "engine_plugin_" + hashlib.sha256(str(path).encode()).hexdigest()[:16]
        if name in sys.modules:
            return sys.modules[name]
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise PluginError(f"plug-in {spec}: not a Python file")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        try:
            module_spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[name]
            raise PluginError(f"plug-in {spec} failed while loading: {type(exc).__name__}: {exc}") from exc
        return module
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as exc:
        if exc.name is not None and spec.startswith(exc.name):
            raise PluginError(f"plug-in {spec}: no such module (nor a .py file)") from None
        raise PluginError(f"plug-in {spec} failed while loading: {exc}") from exc
    except Exception as exc:
        raise PluginError(f"plug-in {spec} failed while loading: {type(exc).__name__}: {exc}") from exc


def load_entry_points(group: str = ENTRY_POINT_GROUP) -> list[str]:
    """Load every installed entry point of ``group``; returns the names loaded.

    A broken entry point is reported as a warning and skipped: one bad package must not stop the engine.
    """
    loaded = []
    for entry in importlib.metadata.entry_points(group=group):
        try:
            target = entry.load()
            if callable(target) and not isinstance(target, ModuleType):
                target()
        except Exception as exc:  # a third party's code: report it, keep going
            warnings.warn(
                f"scheduler plug-in {entry.name!r} ({entry.value}) failed to load: {type(exc).__name__}: {exc}",
                RuntimeWarning,
                stacklevel=2,
            )
            continue
        loaded.append(entry.name)
    return loaded

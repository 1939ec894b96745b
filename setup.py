"""Compile the engine's hot modules with mypyc: optional, the engine runs the same sources interpreted.

    .venv/bin/python setup.py build_ext --inplace        (what ``make build`` runs)

Writes one extension module beside each source listed in ``engine/_native.py`` and ``engine/_compiled.json``,
the SHA-256 of each source as compiled; ``engine`` uses the extensions only while every source still has it.
"""

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from pathlib import Path

from mypyc.build import mypycify
from setuptools import setup

ROOT = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("_native", ROOT / "engine" / "_native.py")
native = importlib.util.module_from_spec(spec)
spec.loader.exec_module(native)  # the module list, without importing the engine itself

sources = [native.source_of(m) for m in native.NATIVE_MODULES]
hashes = {m: hashlib.sha256(p.read_bytes()).hexdigest() for m, p in zip(native.NATIVE_MODULES, sources)}
# No fused multiply-add: the compiled arithmetic must round exactly like the interpreter's.
os.environ["CFLAGS"] = (os.environ.get("CFLAGS", "") + " -ffp-contract=off").strip()
native.MANIFEST.unlink(missing_ok=True)
# Extensions of modules no longer in the list would still be imported (and fail to find their compiled code in
# the new group library): remove every old extension first; a failed build then leaves the engine interpreted.
for suffix in importlib.machinery.EXTENSION_SUFFIXES:
    for old in (ROOT / "engine").rglob(f"*{suffix}"):
        old.unlink()
setup(
    name="gpu-scheduling-playground-native",
    packages=[],
    py_modules=[],
    ext_modules=mypycify(
        ["--follow-imports=silent", *(str(p.relative_to(ROOT)) for p in sources)],
        opt_level="3",
        group_name="engine_native",
    ),
)
if "build_ext" in sys.argv:
    native.MANIFEST.write_text(json.dumps(hashes, indent=2) + "\n")

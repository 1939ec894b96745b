"""Scenario presets: a cluster, a workload, the schedulers to compare, what to look at, and the lesson.

Each preset is one JSON file in ``presets/`` at the repository root::

    {
      "title": "...",
      "cluster": "4x4:T4,2x4:A100-80",                  # any spec parse_cluster reads
      "workload": {"generate": {"n_jobs": 300, "load": 0.9, "mix": {...}, "types": {...}}},
                  # or {"trace": "sample_traces/x.csv", "format": "csv"} (path relative to the repository)
      "schedulers": ["first-fit", "least-loaded"],
      "look_at": "what to watch in the charts",
      "lesson": "what the comparison teaches",
      "expect": {"metric": "mean_wait_s", "winners": ["first-fit"], "loser": "least-loaded",
                 "factor": 2.0, "exclude_users": []}
    }

``expect`` makes the lesson checkable: on the preset's workload, every winner's ``metric`` is better than
the loser's by at least ``factor`` (``loser >= factor x winner`` for lower-is-better metrics,
``winner >= factor x loser`` for higher-is-better ones; see :data:`engine.analysis.metrics.METRICS`). With
``exclude_users``, the metric (``mean_wait_s`` or ``mean_jct_s``) is computed over the jobs of the other
users only, e.g. the light users a heavy one crowds out. A test checks every preset on three seeds.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from engine.errors import EngineError, UnknownNameError, reject_unknown_keys
from engine.sim.cluster import Cluster, parse_cluster
from engine.sim.job import Job

#: The folder of the preset JSON files, and the folder relative trace paths start from.
REPO_ROOT = Path(__file__).resolve().parents[2]
PRESET_DIR = REPO_ROOT / "presets"
#: Metrics an ``exclude_users`` expectation can use, with the per-job column they average.
USER_SCOPED_METRICS = {"mean_wait_s": "wait_s", "mean_jct_s": "jct_s"}


class PresetError(EngineError, ValueError):
    """A preset file is invalid; the message names the file and the field."""


@dataclass(frozen=True)
class Expectation:
    """The checkable part of a lesson (see the module docstring)."""

    metric: str
    winners: tuple[str, ...]
    loser: str
    factor: float = 1.0
    exclude_users: tuple[str, ...] = ()


@dataclass(frozen=True)
class Preset:
    """A teaching scenario (fields as in the JSON file; ``name`` is the file's stem)."""

    name: str
    title: str
    cluster: str | Mapping[str, Any]
    workload: Mapping[str, Any]
    schedulers: tuple[str, ...]
    look_at: str
    lesson: str
    expect: Expectation
    seed: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)

    def build_cluster(self) -> Cluster:
        return parse_cluster(self.cluster)

    def build_jobs(self, seed: int | None = None) -> tuple[Job, ...]:
        """The workload's jobs; ``seed`` replaces the generator's seed (a trace ignores it)."""
        if "generate" in self.workload:
            from engine.traces.generator import generate

            args = dict(self.workload["generate"])
            n_jobs = args.pop("n_jobs")
            load = args.pop("load", 0.8)
            return generate(self.build_cluster(), n_jobs, load, self.seed if seed is None else seed, **args)
        from engine.traces import load_trace

        path = Path(self.workload["trace"])
        return load_trace(path if path.is_absolute() else REPO_ROOT / path, self.workload.get("format")).jobs

    def run(self, seed: int | None = None) -> dict[str, Any]:
        """Simulate every scheduler of the preset on its workload: ``{scheduler: Result}``."""
        from engine.schedulers import make_scheduler
        from engine.sim.simulator import simulate

        cluster, jobs = self.build_cluster(), self.build_jobs(seed)
        run_seed = self.seed if seed is None else seed
        return {name: simulate(cluster, jobs, make_scheduler(name), seed=run_seed) for name in self.schedulers}

    def measure(self, results: Mapping[str, Any]) -> dict[str, float]:
        """The expectation's metric for each scheduler's result."""
        from engine.analysis.metrics import job_frame, summarize

        exp = self.expect
        out = {}
        for name, result in results.items():
            if exp.exclude_users:
                frame = job_frame(result)
                frame = frame[~frame["user"].isin(exp.exclude_users)]
                out[name] = float(frame[USER_SCOPED_METRICS[exp.metric]].mean())
            else:
                out[name] = float(summarize(result).to_dict()[exp.metric])
        return out

    def lesson_holds(self, values: Mapping[str, float]) -> bool:
        """Whether measured ``values`` (from :meth:`measure`) show the expected lesson."""
        from engine.analysis.metrics import METRICS

        exp = self.expect
        loser = values[exp.loser]
        for w in exp.winners:
            win = values[w]
            if not (math.isfinite(win) and math.isfinite(loser)):
                return False
            ok = loser >= exp.factor * win if METRICS[exp.metric].better == "lower" else win >= exp.factor * loser
            if not ok or win == loser:
                return False
        return True


_KEYS = {"title", "cluster", "workload", "schedulers", "look_at", "lesson", "expect", "seed"}


def preset_from_dict(name: str, data: Mapping[str, Any], where: str = "preset") -> Preset:
    """Build and check a :class:`Preset` from its JSON structure."""
    from engine.analysis.metrics import METRICS

    if not isinstance(data, Mapping):
        raise PresetError(f"{where}: expected a JSON object")
    missing = sorted({"title", "cluster", "workload", "schedulers", "look_at", "lesson", "expect"} - set(data))
    if missing:
        raise PresetError(f"{where}: missing key {missing[0]!r}")
    reject_unknown_keys(data, _KEYS, where, PresetError)
    workload = data["workload"]
    if not isinstance(workload, Mapping) or len({"generate", "trace"} & set(workload)) != 1:
        raise PresetError(f"{where}: 'workload' needs exactly one of 'generate' (generator arguments) or 'trace'")
    if "generate" in workload and "n_jobs" not in workload["generate"]:
        raise PresetError(f"{where}: workload.generate needs 'n_jobs'")
    schedulers = data["schedulers"]
    if not isinstance(schedulers, list) or len(schedulers) < 2:
        raise PresetError(f"{where}: 'schedulers' must list at least two scheduler names")
    e = data["expect"]
    try:
        expect = Expectation(metric=str(e["metric"]), winners=tuple(e["winners"]), loser=str(e["loser"]),
                             factor=float(e.get("factor", 1.0)), exclude_users=tuple(e.get("exclude_users", ())))
    except (KeyError, TypeError, ValueError) as exc:
        raise PresetError(f"{where}: 'expect' needs metric, winners (list) and loser ({exc})") from None
    if expect.metric not in METRICS or METRICS[expect.metric].better is None:
        raise PresetError(f"{where}: expect.metric {expect.metric!r} is not a metric with a direction")
    if expect.exclude_users and expect.metric not in USER_SCOPED_METRICS:
        raise PresetError(f"{where}: exclude_users works with {', '.join(USER_SCOPED_METRICS)} only")
    for s in (*expect.winners, expect.loser):
        if s not in schedulers:
            raise PresetError(f"{where}: expect names {s!r}, which is not in 'schedulers'")
    return Preset(name=name, title=str(data["title"]), cluster=data["cluster"], workload=workload,
                  schedulers=tuple(schedulers), look_at=str(data["look_at"]), lesson=str(data["lesson"]),
                  expect=expect, seed=int(data.get("seed", 0)))


def read_preset(path: str | Path) -> Preset:
    """Read one preset JSON file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PresetError(f"preset file {path}: cannot read it as JSON ({exc})") from None
    return preset_from_dict(path.stem, data, where=f"preset file {path}")


def _load_all() -> dict[str, Preset]:
    return {p.stem: read_preset(p) for p in sorted(PRESET_DIR.glob("*.json"))}


#: Every preset in ``presets/``, by name.
PRESETS: dict[str, Preset] = _load_all()


def load_preset(name: str) -> Preset:
    """The preset called ``name``; ``UnknownNameError`` lists the valid names."""
    preset = PRESETS.get(name)
    if preset is None:
        raise UnknownNameError(f"unknown preset {name!r}; valid: {', '.join(PRESETS) or '(none found)'}")
    return preset

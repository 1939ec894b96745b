"""Teaching presets: a scenario and a lesson (what to look at, what the comparison teaches, and how to check it).

Each preset is one JSON file in ``presets/`` at the repository root::

    {
      "title": "...",
      "cluster": "4x4:T4,2x4:A100-80",                  # any spec parse_cluster reads
      "workload": {"generate": {"n_jobs": 300, "load": 0.9, "mix": {...}, "types": {...}}},
                  # or {"trace": "sample_traces/x.csv", "format": "csv"} (path relative to the repository),
                  # or a scenario workload ({"source": "generate", ...}; see engine.analysis.scenario)
      "schedulers": ["first-fit", "least-loaded"],
      "look_at": "what to watch in the charts",
      "lesson": "what the comparison teaches",
      "expect": {"metric": "mean_wait_s", "winners": ["first-fit"], "loser": "least-loaded",
                 "factor": 2.0, "exclude_users": []},
      "options": {"energy": {"pue": 1.2}},              # optional run options (engine.sim.options.RunOptions)
      "variants": {"NAME": {"preemption": {...}}, ...}  # optional: compare run options instead of schedulers
    }

``cluster``, ``workload``, ``schedulers``, ``seed`` and ``options`` are the preset's
:class:`~engine.analysis.scenario.Scenario`
(read by :func:`engine.analysis.scenario.preset_scenario_from_dict`); the rest is its :class:`Lesson`.
``expect`` makes the lesson checkable: on the preset's workload, every winner's ``metric`` is better than
the loser's by at least ``factor`` (``loser >= factor x winner`` for lower-is-better metrics,
``winner >= factor x loser`` for higher-is-better ones; any metric of :data:`engine.analysis.metrics.ALL_METRICS`
with a direction: an energy, cost or carbon metric is measured under the preset's ``options.energy``). With
``exclude_users``, the metric (``mean_wait_s`` or ``mean_jct_s``) is computed over the jobs of the other
users only, e.g. the light users a heavy one crowds out. ``loser`` may be a list: each of them is beaten by every
winner (a lesson with two sides, e.g. an interval too short and one too long).

**Variants.** A preset with ``variants`` compares named variants of its run options instead of schedulers: each
variant is a change to ``options`` (per model, the keys it gives replace the preset's), ``schedulers`` names the
one scheduler every variant runs, and ``expect`` names variants (e.g. checkpoint intervals under failures). Its
scenario (what Compare opens and the model cards evaluate) is the preset with its own ``options``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from engine.analysis.metrics import ALL_METRICS, ENERGY_METRICS, job_frame, summarize
from engine.analysis.scenario import PRESET_DIR, Scenario, ScenarioError, preset_scenario_from_dict
from engine.errors import EngineError, UnknownNameError, reject_unknown_keys
from engine.sim.cluster import Cluster
from engine.sim.job import Job
from engine.sim.options import RunOptions

#: Metrics an ``exclude_users`` expectation can use, with the per-job column they average.
USER_SCOPED_METRICS = {"mean_wait_s": "wait_s", "mean_jct_s": "jct_s"}


class PresetError(EngineError, ValueError):
    """A preset file is invalid; the message names the file and the field."""


@dataclass(frozen=True)
class Expectation:
    """The checkable part of a lesson (see the module docstring)."""

    metric: str
    winners: tuple[str, ...]
    losers: tuple[str, ...]
    factor: float = 1.0
    exclude_users: tuple[str, ...] = ()


@dataclass(frozen=True)
class Lesson:
    """What a preset teaches: its title, what to look at, the lesson, and the expectation that checks it."""

    title: str
    look_at: str
    lesson: str
    expect: Expectation


@dataclass(frozen=True)
class Preset:
    """A teaching scenario: a :class:`~engine.analysis.scenario.Scenario` and a :class:`Lesson` (``name`` is the
    file's stem), and the variants of its run options it compares, if any (name -> options)."""

    name: str
    scenario: Scenario
    teaches: Lesson
    variants: Mapping[str, RunOptions] = field(default_factory=dict)

    title = property(lambda self: self.teaches.title)
    look_at = property(lambda self: self.teaches.look_at)
    lesson = property(lambda self: self.teaches.lesson)
    expect = property(lambda self: self.teaches.expect)
    schedulers = property(lambda self: self.scenario.schedulers)
    seed = property(lambda self: self.scenario.seed)

    @property
    def compared(self) -> tuple[str, ...]:
        """What the lesson compares: the variants' names, or else the schedulers."""
        return tuple(self.variants) or self.schedulers

    def build_cluster(self) -> Cluster:
        return self.scenario.build_cluster()

    def build_jobs(self, seed: int | None = None) -> tuple[Job, ...]:
        """The workload's jobs; ``seed`` replaces the workload's seed (a trace ignores it)."""
        return self.scenario.workload.build_jobs(self.build_cluster(), seed)

    def run(self, seed: int | None = None) -> dict[str, Any]:
        """Simulate what the preset compares on its workload (``seed``: workload and simulation seed, default the
        preset's): ``{scheduler: Result}``, or with variants ``{variant: Result}`` (its scheduler under each)."""
        sc = self.scenario if seed is None else self.scenario.with_seed(seed)
        if not self.variants:
            return sc.run()
        cluster = sc.build_cluster()
        jobs = sc.build_jobs(cluster)
        scheduler = sc.schedulers[0]
        return {name: replace(sc, options=o).run(cluster, jobs)[scheduler] for name, o in self.variants.items()}

    def measure(self, results: Mapping[str, Any]) -> dict[str, float]:
        """The expectation's metric for each scheduler's result (an energy metric under the preset's energy
        model)."""
        exp = self.expect
        energy = self.scenario.options.energy if exp.metric in ENERGY_METRICS else None
        out = {}
        for name, result in results.items():
            if exp.exclude_users:
                frame = job_frame(result)
                frame = frame[~frame["user"].isin(exp.exclude_users)]
                out[name] = float(frame[USER_SCOPED_METRICS[exp.metric]].mean())
            else:
                out[name] = float(summarize(result, energy=energy).value(exp.metric))
        return out

    def lesson_holds(self, values: Mapping[str, float]) -> bool:
        """Whether measured ``values`` (from :meth:`measure`) show the expected lesson."""
        exp = self.expect
        for loser in (values[name] for name in exp.losers):
            for w in exp.winners:
                win = values[w]
                if not (math.isfinite(win) and math.isfinite(loser)):
                    return False
                lower = ALL_METRICS[exp.metric].better == "lower"
                ok = loser >= exp.factor * win if lower else win >= exp.factor * loser
                if not ok or win == loser:
                    return False
        return True


_KEYS = {"title", "cluster", "workload", "schedulers", "look_at", "lesson", "expect", "seed", "options", "variants"}
#: Most variants one preset compares.
MAX_VARIANTS = 8


def preset_from_dict(name: str, data: Mapping[str, Any], where: str = "preset") -> Preset:
    """Build and check a :class:`Preset` from its JSON structure."""
    if not isinstance(data, Mapping):
        raise PresetError(f"{where}: expected a JSON object")
    missing = sorted({"title", "cluster", "workload", "schedulers", "look_at", "lesson", "expect"} - set(data))
    if missing:
        raise PresetError(f"{where}: missing key {missing[0]!r}")
    reject_unknown_keys(data, _KEYS, where, PresetError)
    schedulers = data["schedulers"]
    if "variants" in data:
        if not isinstance(schedulers, list) or len(schedulers) != 1:
            raise PresetError(f"{where}: a preset with 'variants' lists the one scheduler they run in 'schedulers'")
    elif not isinstance(schedulers, list) or len(schedulers) < 2:
        raise PresetError(f"{where}: 'schedulers' must list at least two scheduler names")
    try:
        scenario = preset_scenario_from_dict(name, data, where)
    except ScenarioError as exc:
        raise PresetError(str(exc) if str(exc).startswith(where) else f"{where}: {exc}") from None
    variants = _variants(data.get("variants"), scenario.options, where) if "variants" in data else {}
    compared = tuple(variants) or tuple(schedulers)
    e = data["expect"]
    try:
        losers = e["loser"]
        expect = Expectation(
            metric=str(e["metric"]),
            winners=tuple(e["winners"]),
            losers=tuple(str(x) for x in losers) if isinstance(losers, list) else (str(losers),),
            factor=float(e.get("factor", 1.0)),
            exclude_users=tuple(e.get("exclude_users", ())),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise PresetError(
            f"{where}: 'expect' needs metric, winners (list) and loser (a name or a list) ({exc})"
        ) from None
    if expect.metric not in ALL_METRICS or ALL_METRICS[expect.metric].better is None:
        raise PresetError(f"{where}: expect.metric {expect.metric!r} is not a metric with a direction")
    if expect.exclude_users and expect.metric not in USER_SCOPED_METRICS:
        raise PresetError(f"{where}: exclude_users works with {', '.join(USER_SCOPED_METRICS)} only")
    for s in (*expect.winners, *expect.losers):
        if s not in compared:
            raise PresetError(
                f"{where}: expect names {s!r}, which is not in '{'variants' if variants else 'schedulers'}'"
            )
    lesson = Lesson(title=str(data["title"]), look_at=str(data["look_at"]), lesson=str(data["lesson"]), expect=expect)
    return Preset(name=name, scenario=scenario, teaches=lesson, variants=variants)


def _variants(data: Any, options: RunOptions, where: str) -> dict[str, RunOptions]:
    """The run options of each variant of ``data`` (``{name: {model: {key: value}}}``): ``options`` with the keys
    each variant gives replaced, model by model; a bad one raises :class:`PresetError` naming it."""
    if not isinstance(data, Mapping) or not 2 <= len(data) <= MAX_VARIANTS:
        raise PresetError(f"{where}: 'variants' must be an object of 2 to {MAX_VARIANTS} named run-option changes")
    base = options.to_dict()
    out: dict[str, RunOptions] = {}
    for name, change in data.items():
        if not (isinstance(name, str) and 0 < len(name) <= 40) or not isinstance(change, Mapping):
            raise PresetError(
                f"{where}: variants.{str(name)[:40]}: expected a name of 1 to 40 characters and an object"
            )
        merged = {
            k: {**v, **change[k]} if isinstance(change.get(k), Mapping) else change.get(k, v) for k, v in base.items()
        }
        try:
            out[name] = RunOptions.from_dict({**change, **merged}, f"variants.{name}")
        except EngineError as exc:
            raise PresetError(f"{where}: {exc}") from None
    return out


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

"""Run options: what a run needs besides the cluster, the workload, the scheduler and the seed.

:class:`RunOptions` is the one record of them, read by :class:`~engine.sim.simulator.Simulation` (its
``options``) and carried whole by a scenario file, so that the file reproduces the run. Today it holds the
preemption model and the energy model (power, price, carbon: read by the metrics, never by the simulation); the
failure and deadline models join it next, each the same way:

1. a frozen record with ``to_dict()`` and ``from_dict(data, where)`` (like :class:`PreemptionModel`), whose
   bounds live in one table of checks used by both its constructor and ``from_dict``;
2. one field of :class:`RunOptions`, its default and its parser: ``field(default=..., metadata={"parse":
   Model.from_dict})``; ``to_dict``, ``from_dict`` and the unknown-key check follow from the fields;
3. its consumer in the engine, which reads ``sim.options.<field>``.

Bad input is refused with :class:`OptionsError`, one line naming the key (``options.preemption.restart_overhead_s
must be a number >= 0, got -1``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from numbers import Real
from typing import Any

from engine.errors import EngineError, quote, reject_unknown_keys
from engine.sim.cluster import CATALOG_PRICES, PRICE_LISTS


class OptionsError(EngineError, ValueError):
    """Run options are invalid; the message names the key."""


def _is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)


#: The bounds of :class:`PreemptionModel`'s fields: ``name -> (holds(value), what the value must be)``.
_PREEMPTION_BOUNDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "checkpoint_interval_s": (lambda v: v is None or (_is_number(v) and v > 0), "a number > 0 or null"),
    "restart_overhead_s": (lambda v: _is_number(v) and v >= 0, "a number >= 0"),
}


def _check_bounds(
    values: Mapping[str, Any], bounds: Mapping[str, tuple[Callable[[Any], bool], str]], where: str
) -> None:
    """Raise :class:`OptionsError` naming ``where.key`` for the first value of ``values`` out of its bounds."""
    for key, (holds, must_be) in bounds.items():
        if key in values and not holds(values[key]):
            raise OptionsError(f"{where}.{key} must be {must_be}, got {quote(values[key])}")


@dataclass(frozen=True)
class PreemptionModel:
    """What a preempted job loses.

    Attributes:
        checkpoint_interval_s: the job checkpoints every this many seconds of reference work; on preemption
            it keeps only the work up to its last checkpoint. ``None`` means it checkpoints at the moment it is
            preempted and loses nothing.
        restart_overhead_s: seconds of extra reference work each restart after a preemption costs (reloading
            data and model state).
    """

    checkpoint_interval_s: float | None = None
    restart_overhead_s: float = 0.0

    def __post_init__(self) -> None:
        _check_bounds(self.to_dict(), _PREEMPTION_BOUNDS, "preemption")

    def to_dict(self) -> dict[str, Any]:
        return {"checkpoint_interval_s": self.checkpoint_interval_s, "restart_overhead_s": self.restart_overhead_s}

    @classmethod
    def from_dict(cls, data: Any, where: str = "preemption") -> PreemptionModel:
        """The model of JSON object ``data`` (missing keys take their defaults); ``where`` names it in errors."""
        if not isinstance(data, Mapping):
            raise OptionsError(f"{where} must be an object with {', '.join(_PREEMPTION_BOUNDS)}")
        reject_unknown_keys(data, set(_PREEMPTION_BOUNDS), where, OptionsError)
        _check_bounds(data, _PREEMPTION_BOUNDS, where)
        return cls(**data)


#: Power usage effectiveness by default: the industry's average annual PUE, 1.58 in 2023 (Uptime Institute Global
#: Data Center Survey 2023, via secondary summaries; hyperscale sites reach 1.1-1.2).
DEFAULT_PUE = 1.58
#: Grid carbon intensity by default, gCO2 per kWh: about the world average of electricity generation in 2023
#: (Ember, Global Electricity Review 2024: about 480; secondary, an estimate).
DEFAULT_CARBON_G_PER_KWH = 480.0
#: Most rows a carbon series may have (ten years of hourly values fit).
MAX_CARBON_ROWS = 100_000

_CARBON_SERIES_BOUNDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "step_s": (lambda v: _is_number(v) and v > 0, "a number > 0"),
    "g_per_kwh": (lambda v: isinstance(v, (list, tuple)) and 0 < len(v) <= MAX_CARBON_ROWS
                  and all(_is_number(x) and x >= 0 for x in v),
                  f"a list of 1 to {MAX_CARBON_ROWS:,} numbers >= 0"),
    "start": (lambda v: isinstance(v, str) and len(v) <= 64, "a text of at most 64 characters"),
}


@dataclass(frozen=True)
class CarbonSeries:
    """Grid carbon intensity over simulated time, evenly spaced (an hourly ``timestamp,carbon_intensity`` file
    read by :func:`engine.traces.carbon.load_carbon_csv`).

    ``g_per_kwh[i]`` (gCO2/kWh) holds from ``i x step_s`` to ``(i + 1) x step_s`` seconds of simulated time:
    simulated time 0 is the first row (``start``, its timestamp, kept for display). After the last row the
    series repeats from the first, so a one-day file describes every day of a longer run.
    """

    step_s: float
    g_per_kwh: tuple[float, ...]
    start: str = ""

    def __post_init__(self) -> None:
        _check_bounds(self.to_dict(), _CARBON_SERIES_BOUNDS, "carbon series")

    def to_dict(self) -> dict[str, Any]:
        return {"step_s": self.step_s, "g_per_kwh": list(self.g_per_kwh), "start": self.start}

    @classmethod
    def from_dict(cls, data: Any, where: str = "carbon series") -> CarbonSeries:
        if not isinstance(data, Mapping):
            raise OptionsError(f"{where} must be a number or an object with {', '.join(_CARBON_SERIES_BOUNDS)}")
        reject_unknown_keys(data, set(_CARBON_SERIES_BOUNDS), where, OptionsError)
        for key in ("step_s", "g_per_kwh"):
            if key not in data:
                raise OptionsError(f"{where}.{key} is missing")
        _check_bounds(data, _CARBON_SERIES_BOUNDS, where)
        return cls(float(data["step_s"]), tuple(float(x) for x in data["g_per_kwh"]), data.get("start", ""))


_PRICE_LIST_NAMES = (CATALOG_PRICES, *PRICE_LISTS)
_ENERGY_BOUNDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "pue": (lambda v: _is_number(v) and v >= 1, "a number >= 1"),
    "carbon_g_per_kwh": (lambda v: isinstance(v, CarbonSeries) or (_is_number(v) and v >= 0),
                         "a number >= 0 (gCO2/kWh) or a carbon series"),
    "price_list": (lambda v: v in _PRICE_LIST_NAMES, f"one of {', '.join(_PRICE_LIST_NAMES)}"),
}


@dataclass(frozen=True)
class EnergyModel:
    """What the GPUs draw, what they cost and what their electricity emits; read by
    :mod:`engine.analysis.energy`, never by the simulation (so it changes no simulated number).

    Each GPU draws ``idle_w + (busy_w - idle_w) x u`` (its type's catalog fields), ``u`` the share of it that jobs
    hold; the facility draws ``pue`` times the GPUs' draw.

    Attributes:
        pue: power usage effectiveness of the facility, >= 1 (default :data:`DEFAULT_PUE`).
        carbon_g_per_kwh: grid intensity, gCO2 per kWh: a constant (default :data:`DEFAULT_CARBON_G_PER_KWH`)
            or a :class:`CarbonSeries`.
        price_list: the prices per GPU-hour: ``"catalog"`` (each GPU type's ``price_per_h``) or a name in
            :data:`engine.sim.cluster.PRICE_LISTS`.
    """

    pue: float = DEFAULT_PUE
    carbon_g_per_kwh: float | CarbonSeries = DEFAULT_CARBON_G_PER_KWH
    price_list: str = CATALOG_PRICES

    def __post_init__(self) -> None:
        _check_bounds({"pue": self.pue, "carbon_g_per_kwh": self.carbon_g_per_kwh, "price_list": self.price_list},
                      _ENERGY_BOUNDS, "energy")

    def to_dict(self) -> dict[str, Any]:
        carbon = self.carbon_g_per_kwh
        return {"pue": self.pue, "carbon_g_per_kwh": carbon.to_dict() if isinstance(carbon, CarbonSeries) else carbon,
                "price_list": self.price_list}

    @classmethod
    def from_dict(cls, data: Any, where: str = "energy") -> EnergyModel:
        """The model of JSON object ``data`` (missing keys take their defaults); ``where`` names it in errors."""
        if not isinstance(data, Mapping):
            raise OptionsError(f"{where} must be an object with {', '.join(_ENERGY_BOUNDS)}")
        reject_unknown_keys(data, set(_ENERGY_BOUNDS), where, OptionsError)
        values = dict(data)
        if isinstance(values.get("carbon_g_per_kwh"), Mapping):
            values["carbon_g_per_kwh"] = CarbonSeries.from_dict(values["carbon_g_per_kwh"],
                                                                f"{where}.carbon_g_per_kwh")
        _check_bounds(values, _ENERGY_BOUNDS, where)
        return cls(**values)


@dataclass(frozen=True)
class RunOptions:
    """Everything about a run besides cluster, workload, scheduler and seed (see the module's docstring for how
    a new model joins).

    Attributes:
        preemption: what a preempted job loses (default: nothing).
        energy: power, prices and carbon, for the energy and cost metrics (no effect on the simulation).
    """

    preemption: PreemptionModel = field(default=PreemptionModel(), metadata={"parse": PreemptionModel.from_dict})
    energy: EnergyModel = field(default=EnergyModel(), metadata={"parse": EnergyModel.from_dict})

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``{field: its to_dict()}``, read back by :meth:`from_dict`."""
        return {f.name: getattr(self, f.name).to_dict() for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Any, where: str = "options") -> RunOptions:
        """The options of JSON object ``data`` (missing keys take their defaults); unknown keys and values out of
        bounds raise :class:`OptionsError` naming ``where`` and the key."""
        if not isinstance(data, Mapping):
            raise OptionsError(f"{where} must be an object (keys: {', '.join(f.name for f in fields(cls))})")
        reject_unknown_keys(data, {f.name for f in fields(cls)}, where, OptionsError)
        return cls(
            **{f.name: f.metadata["parse"](data[f.name], f"{where}.{f.name}") for f in fields(cls) if f.name in data}
        )

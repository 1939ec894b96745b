"""Run options: what a run needs besides the cluster, the workload, the scheduler and the seed.

:class:`RunOptions` is the one record of them, read by :class:`~engine.sim.simulator.Simulation` (its
``options``) and carried whole by a scenario file, so that the file reproduces the run. Today it holds the
preemption model; the failure, power, price and deadline models join it next, each the same way:

1. a frozen record with ``to_dict()`` and ``from_dict(data, where)`` (like :class:`PreemptionModel`), whose
   bounds live in one table of checks used by both its constructor and ``from_dict``;
2. one field of :class:`RunOptions` declared with :func:`_option` (its default and its parser): ``to_dict``,
   ``from_dict`` and the unknown-key check follow from the fields, nothing else to edit here;
3. its consumer in the engine, which reads ``sim.options.<field>``.

Bad input is refused with :class:`OptionsError`, one line naming the key (``options.preemption.restart_overhead_s
must be a number >= 0, got -1``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from numbers import Real
from typing import Any, Callable, Mapping

from engine.errors import EngineError, quote, reject_unknown_keys


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


def _option(default: Any, parse: Callable[[Any, str], Any]) -> Any:
    """A field of :class:`RunOptions`: its default and ``parse(data, where)``, which reads its JSON form."""
    return field(default=default, metadata={"parse": parse})


@dataclass(frozen=True)
class RunOptions:
    """Everything about a run besides cluster, workload, scheduler and seed (see the module's docstring for how
    a new model joins).

    Attributes:
        preemption: what a preempted job loses (default: nothing).
    """

    preemption: PreemptionModel = _option(PreemptionModel(), PreemptionModel.from_dict)

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

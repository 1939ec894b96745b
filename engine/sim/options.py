"""Run options: everything besides the cluster, the jobs and the scheduler that decides how a run unfolds.

Today that is the preemption model (what a preempted job loses); further models (failures, power, prices,
deadlines) join this record, so a scenario file that carries it carries everything needed to reproduce a run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from engine.errors import EngineError, reject_unknown_keys
from engine.sim.simulator import PreemptionModel


@dataclass(frozen=True)
class RunOptions:
    """How a run unfolds besides its inputs.

    Attributes:
        preemption: what a preempted job loses (default: nothing).
    """

    preemption: PreemptionModel = field(default_factory=PreemptionModel)

    def to_dict(self) -> dict[str, Any]:
        p = self.preemption
        return {"preemption": {"checkpoint_interval_s": p.checkpoint_interval_s,
                               "restart_overhead_s": p.restart_overhead_s}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "options") -> "RunOptions":
        """The options of a JSON object (missing keys take their defaults); one-line errors name the key."""
        if not isinstance(data, Mapping):
            raise EngineError(f"{where} must be an object")
        reject_unknown_keys(data, {"preemption"}, where)
        p = data.get("preemption", {})
        if not isinstance(p, Mapping):
            raise EngineError(f"{where}.preemption must be an object with checkpoint_interval_s, restart_overhead_s")
        reject_unknown_keys(p, {"checkpoint_interval_s", "restart_overhead_s"}, f"{where}.preemption")
        try:
            return cls(PreemptionModel(**p))
        except (TypeError, ValueError) as exc:
            raise EngineError(f"{where}.preemption: {exc}") from None

"""Run options: what a run needs besides the cluster, the workload, the scheduler and the seed.

:class:`RunOptions` is the one record of them, read by :class:`~engine.sim.simulator.Simulation` (its
``options``) and carried whole by a scenario file, so that the file reproduces the run. Today it holds the
preemption model, the failure model (nodes that break, jobs that crash) and the energy model (power, price,
carbon: read by the metrics, never by the simulation), the admission policy (which arriving jobs the queue
takes: :mod:`engine.sim.admission`), what resizing an elastic job costs (:mod:`engine.sim.elastic`) and idle
nodes' power-down (:mod:`engine.sim.power`); a new model joins it the same way:

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
from dataclasses import dataclass, field, fields, replace
from numbers import Real
from typing import Any

import numpy as np

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
    """What a stopped job loses, whether a scheduler preempted it or a failure stopped it (what its checkpoints
    cost is the failure model's ``checkpoint_cost_s``: :class:`FailureModel`).

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


#: Hours in a day, for rates quoted per node-day.
_H_PER_DAY = 24.0
#: Repair times of AIReSim's defaults (karthikp-ubc/airesim, ``airesim/params.py``): an automatic repair takes
#: 2 h; 80 % of them do not work and a manual repair takes 2 days.
AIRESIM_AUTO_REPAIR_H = 2.0
AIRESIM_MANUAL_REPAIR_H = 48.0
AIRESIM_MANUAL_SHARE = 0.80
#: When in its run a failing job fails: at ``U ** skew`` of it (``U`` uniform), so most fail early. Skew 3 puts the
#: mean at 1/4 of the run: an estimate, fitted loosely to failed jobs holding far less GPU time than their share of
#: jobs (Acme Seren: 42.9 % of jobs, 12.4 % of GPU time, a ratio of 0.29; Helios: 15.5 % and 9.3 %, 0.6; from the
#: AcmeTrace and HeliosArtifact summary CSVs).
DEFAULT_JOB_FAILURE_SKEW = 3.0

_REPAIR_LAWS = ("fixed", "exponential")
_MTBF_PER = ("node", "gpu")
_share = (lambda v: _is_number(v) and 0 <= v <= 1, "a number from 0 to 1")
_FAILURE_BOUNDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "mtbf_h": (lambda v: v is None or (_is_number(v) and v > 0), "a number of hours > 0 or null (nodes never fail)"),
    "mtbf_per": (lambda v: v in _MTBF_PER, f"one of {', '.join(_MTBF_PER)}"),
    "weibull_shape": (lambda v: _is_number(v) and 0.1 <= v <= 10, "a number from 0.1 to 10 (1: exponential)"),
    "repair_h": (lambda v: _is_number(v) and v >= 0, "a number of hours >= 0"),
    "repair_law": (lambda v: v in _REPAIR_LAWS, f"one of {', '.join(_REPAIR_LAWS)}"),
    "manual_repair_share": _share,
    "manual_repair_h": (lambda v: _is_number(v) and v >= 0, "a number of hours >= 0"),
    "lemon_share": _share,
    "lemon_factor": (lambda v: _is_number(v) and v >= 1, "a number >= 1"),
    "job_failure_rate": _share,
    "job_failure_skew": (lambda v: _is_number(v) and 0.1 <= v <= 100, "a number from 0.1 to 100 (1: uniform)"),
    "job_retries": (
        lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 100,
        "an integer from 0 to 100",
    ),
    "checkpoint_cost_s": (lambda v: _is_number(v) and v >= 0, "a number of seconds >= 0"),
}


@dataclass(frozen=True)
class FailureModel:
    """Nodes that break and jobs that crash (:mod:`engine.sim.failures` draws them; default: neither).

    Node failures: each node is up for a time drawn from a law of mean ``mtbf_h`` (exponential, or Weibull of
    shape ``weibull_shape``), then down for a repair time; while down its GPUs take no job, and every job with a
    GPU on it stops as a whole gang, keeps its work up to its last checkpoint, pays the restart overhead (the run's
    :class:`PreemptionModel`) and returns to the queue. Each node's sequence is drawn from the run's seed and the
    node alone, so every scheduler meets the same failures.

    Job failures: each job's run fails by itself (its code, not the hardware) with probability
    ``job_failure_rate``, at ``U ** job_failure_skew`` of the work it has left (``U`` uniform: early, mostly);
    it then retries through the same path, each retry failing anew with the same probability, up to
    ``job_retries`` times, after which it ends failed.

    Attributes:
        mtbf_h: mean hours between failures of a node (``None``: nodes never fail).
        mtbf_per: ``"node"``, or ``"gpu"``: ``mtbf_h`` is per GPU and a node of ``k`` GPUs fails ``k`` times as
            often (a per-GPU rate scaled to the node).
        weibull_shape: shape of the up-time law; 1 is exponential (memoryless), > 1 wear-out, < 1 infant
            mortality.
        repair_h: hours a repair takes, fixed or the mean of an exponential (``repair_law``).
        manual_repair_share: share of repairs that need a slower manual one, of ``manual_repair_h`` hours.
        lemon_share: share of nodes that are "lemons", failing ``lemon_factor`` times as often as the others
            (whose mean stays ``mtbf_h``).
        job_failure_rate, job_failure_skew, job_retries: the job failures above.
        checkpoint_cost_s: seconds of reference work each checkpoint costs (writing it), every
            ``preemption.checkpoint_interval_s`` of work, so the interval is a trade-off: frequent checkpoints cost
            progress, rare ones lose more to each stop (Young/Daly's best interval is about ``sqrt(2 x
            checkpoint_cost_s x MTBF)``). It needs that interval (:class:`RunOptions` checks). It lives here, not
            in :class:`PreemptionModel` beside the interval, so that the preemption model's JSON form (in RL
            configs and model cards) stays as it was.
    """

    mtbf_h: float | None = None
    mtbf_per: str = "node"
    weibull_shape: float = 1.0
    repair_h: float = AIRESIM_AUTO_REPAIR_H
    repair_law: str = "fixed"
    manual_repair_share: float = 0.0
    manual_repair_h: float = AIRESIM_MANUAL_REPAIR_H
    lemon_share: float = 0.0
    lemon_factor: float = 1.0
    job_failure_rate: float = 0.0
    job_failure_skew: float = DEFAULT_JOB_FAILURE_SKEW
    job_retries: int = 0
    checkpoint_cost_s: float = 0.0

    def __post_init__(self) -> None:
        _check_bounds(self.to_dict(), _FAILURE_BOUNDS, "failures")

    @property
    def nodes_fail(self) -> bool:
        return self.mtbf_h is not None

    @property
    def jobs_fail(self) -> bool:
        return self.job_failure_rate > 0

    @property
    def active(self) -> bool:
        """Whether anything fails or checkpoints cost anything (off: the run is the run without the model, bit for
        bit)."""
        return self.nodes_fail or self.jobs_fail or self.checkpoint_cost_s > 0

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Any, where: str = "failures") -> FailureModel:
        """The model of JSON object ``data`` (missing keys take their defaults) or of a preset's name (one of
        :data:`FAILURE_PRESETS`); ``where`` names it in errors."""
        if isinstance(data, str):
            return failure_preset(data, where)
        if not isinstance(data, Mapping):
            raise OptionsError(
                f"{where} must be a preset name ({', '.join(FAILURE_PRESETS)}) or an object with "
                f"{', '.join(_FAILURE_BOUNDS)}"
            )
        reject_unknown_keys(data, set(_FAILURE_BOUNDS), where, OptionsError)
        _check_bounds(data, _FAILURE_BOUNDS, where)
        return cls(**data)

    def with_job_failures(self, preset_or_rate: str | float, where: str = "job failures") -> FailureModel:
        """This model with the job-failure rate of ``preset_or_rate``: a name of :data:`JOB_FAILURE_PRESETS` or a
        share from 0 to 1."""
        rate = JOB_FAILURE_PRESETS.get(preset_or_rate) if isinstance(preset_or_rate, str) else preset_or_rate
        if rate is None or not _share[0](rate):
            raise OptionsError(
                f"{where} must be one of {', '.join(JOB_FAILURE_PRESETS)} or a share from 0 to 1, "
                f"got {quote(preset_or_rate)}"
            )
        return replace(self, job_failure_rate=float(rate))


#: Node-failure presets (``mtbf_h`` per node unless said otherwise):
#:
#: * ``none``: nodes never fail (the default).
#: * ``meta-rsc1``, ``meta-rsc2``: 6.50 and 2.34 failures per 1,000 node-days on Meta's two A100 research clusters
#:   ("Revisiting Reliability in Large-Scale ML Research Clusters", HPCA'25; the rates via a secondary note):
#:   MTBF 1000 / 6.50 x 24 = 3,692 h and 1000 / 2.34 x 24 = 10,256 h. Repairs as AIReSim's defaults (the paper's
#:   repair times are not in our sources): automatic 2 h, 80 % of them followed by a 2-day manual one.
#: * ``llama3``: Llama 3 405B pre-training, 419 unexpected interruptions in 54 days on 16,384 H100s (the Llama 3
#:   paper, via press summaries): one per 16,384 x 54 x 24 / 419 = 50,677 GPU-hours, a per-GPU rate scaled to each
#:   node; repairs as above.
#: * ``stress``: for teaching, not measured: a node fails every 200 h on average and is back 4 h later
#:   (exponential), 15 % of nodes lemons failing 5 times as often (AIReSim's share and factor of "bad" servers).
FAILURE_PRESETS: dict[str, FailureModel] = {
    "none": FailureModel(),
    "meta-rsc1": FailureModel(mtbf_h=1000 / 6.50 * _H_PER_DAY, manual_repair_share=AIRESIM_MANUAL_SHARE),
    "meta-rsc2": FailureModel(mtbf_h=1000 / 2.34 * _H_PER_DAY, manual_repair_share=AIRESIM_MANUAL_SHARE),
    "llama3": FailureModel(
        mtbf_h=16_384 * 54 * _H_PER_DAY / 419, mtbf_per="gpu", manual_repair_share=AIRESIM_MANUAL_SHARE
    ),
    "stress": FailureModel(mtbf_h=200.0, repair_h=4.0, repair_law="exponential", lemon_share=0.15, lemon_factor=5.0),
}

#: Shares of GPU jobs that end failed in real traces (summary CSVs of the AcmeTrace and HeliosArtifact
#: repositories): Philly 30.5 %, Helios 15.5 %, Acme 40 % (Seren 42.9 %, Kalos 39.7 %).
JOB_FAILURE_PRESETS: dict[str, float] = {"none": 0.0, "philly": 0.305, "helios": 0.155, "acme": 0.40}


def failure_preset(name: Any, where: str = "failures") -> FailureModel:
    """The :class:`FailureModel` of preset ``name`` (:data:`FAILURE_PRESETS`), or an error naming ``where``."""
    model = FAILURE_PRESETS.get(name) if isinstance(name, str) else None
    if model is None:
        raise OptionsError(f"{where} must be one of {', '.join(FAILURE_PRESETS)} or an object, got {quote(name)}")
    return model


#: Power usage effectiveness by default: the industry's average annual PUE, 1.58 in 2023 (Uptime Institute Global
#: Data Center Survey 2023, via secondary summaries; hyperscale sites reach 1.1-1.2).
DEFAULT_PUE = 1.58
#: Grid carbon intensity by default, gCO2 per kWh: about the world average of electricity generation in 2023
#: (Ember, Global Electricity Review 2024: about 480; secondary, an estimate).
DEFAULT_CARBON_G_PER_KWH = 480.0
#: Bounds of the energy model's numbers: no facility reports a PUE near 10 (the survey above: 1.58 on average, the
#: least efficient a few above 2; estimate), and no grid emits near 5,000 gCO2/kWh (coal generation is about 820 to
#: 1,000 over its life cycle, IPCC AR5 WG3 Annex III; estimate): past them a number is a typo.
MAX_PUE, MAX_G_PER_KWH = 10.0, 5_000.0
#: Most rows a carbon series may have (ten years of hourly values fit).
MAX_CARBON_ROWS = 100_000

_CARBON_SERIES_BOUNDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "step_s": (lambda v: _is_number(v) and v > 0, "a number > 0"),
    "g_per_kwh": (
        lambda v: (
            isinstance(v, (list, tuple))
            and 0 < len(v) <= MAX_CARBON_ROWS
            and all(_is_number(x) and 0 <= x <= MAX_G_PER_KWH for x in v)
        ),
        f"a list of 1 to {MAX_CARBON_ROWS:,} numbers from 0 to {MAX_G_PER_KWH:,g}",
    ),
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


def carbon_integral(carbon: float | CarbonSeries, t_s: np.ndarray) -> np.ndarray:
    """``C(t) = integral_0^t c(tau) d tau`` in gCO2/kWh x seconds, at each time of ``t_s``: ``c x t`` for a
    constant; for a series, the sum of whole steps before ``t`` plus the part of its step, the series repeating
    after its last step (negative times count backwards the same way)."""
    t = np.asarray(t_s, dtype=float)
    if not isinstance(carbon, CarbonSeries):
        return float(carbon) * t
    values = np.asarray(carbon.g_per_kwh, dtype=float)
    step = carbon.step_s
    cum = np.concatenate([[0.0], np.cumsum(values) * step])  # C at each step boundary of one period
    period = values.size * step
    cycles = np.floor(t / period)
    within = t - cycles * period
    k = np.clip((within // step).astype(np.int64), 0, values.size - 1)  # float rounding at the period's ends
    return cycles * cum[-1] + cum[k] + values[k] * (within - k * step)


_PRICE_LIST_NAMES = (CATALOG_PRICES, *PRICE_LISTS)
_ENERGY_BOUNDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "pue": (lambda v: _is_number(v) and 1 <= v <= MAX_PUE, f"a number from 1 to {MAX_PUE:g}"),
    "carbon_g_per_kwh": (
        lambda v: isinstance(v, CarbonSeries) or (_is_number(v) and 0 <= v <= MAX_G_PER_KWH),
        f"a number from 0 to {MAX_G_PER_KWH:,g} (gCO2/kWh) or a carbon series",
    ),
    "price_list": (lambda v: v in _PRICE_LIST_NAMES, f"one of {', '.join(_PRICE_LIST_NAMES)}"),
    "count": (lambda v: v is True or v is False, "true or false"),
}


@dataclass(frozen=True)
class EnergyModel:
    """What the GPUs draw, what they cost and what their electricity emits; read by
    :mod:`engine.analysis.energy`, never by the simulation (so it changes no simulated number); schedulers see its
    carbon intensity (``ClusterState.carbon_g_per_kwh``), the forecast a carbon-aware one plans with.

    Each GPU draws ``idle_w + (busy_w - idle_w) x u`` (its type's catalog fields), ``u`` the share of it that jobs
    hold; the facility draws ``pue`` times the GPUs' draw.

    Attributes:
        pue: power usage effectiveness of the facility, >= 1 (default :data:`DEFAULT_PUE`).
        carbon_g_per_kwh: grid intensity, gCO2 per kWh: a constant (default :data:`DEFAULT_CARBON_G_PER_KWH`)
            or a :class:`CarbonSeries`.
        price_list: the prices per GPU-hour: ``"catalog"`` (each GPU type's ``price_per_h``) or a name in
            :data:`engine.sim.cluster.PRICE_LISTS`.
        count: count energy, cost and carbon in the results even when every other field is at its default (a
            model that differs from the defaults is counted anyway: :func:`engine.analysis.energy.sets_energy`).
    """

    pue: float = DEFAULT_PUE
    carbon_g_per_kwh: float | CarbonSeries = DEFAULT_CARBON_G_PER_KWH
    price_list: str = CATALOG_PRICES
    count: bool = False

    def __post_init__(self) -> None:
        _check_bounds(
            {
                "pue": self.pue,
                "carbon_g_per_kwh": self.carbon_g_per_kwh,
                "price_list": self.price_list,
                "count": self.count,
            },
            _ENERGY_BOUNDS,
            "energy",
        )

    def to_dict(self) -> dict[str, Any]:
        carbon = self.carbon_g_per_kwh
        return {
            "pue": self.pue,
            "carbon_g_per_kwh": carbon.to_dict() if isinstance(carbon, CarbonSeries) else carbon,
            "price_list": self.price_list,
            "count": self.count,
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "energy") -> EnergyModel:
        """The model of JSON object ``data`` (missing keys take their defaults); ``where`` names it in errors."""
        if not isinstance(data, Mapping):
            raise OptionsError(f"{where} must be an object with {', '.join(_ENERGY_BOUNDS)}")
        reject_unknown_keys(data, set(_ENERGY_BOUNDS), where, OptionsError)
        values = dict(data)
        if isinstance(values.get("carbon_g_per_kwh"), Mapping):
            values["carbon_g_per_kwh"] = CarbonSeries.from_dict(values["carbon_g_per_kwh"], f"{where}.carbon_g_per_kwh")
        _check_bounds(values, _ENERGY_BOUNDS, where)
        return cls(**values)


#: Seconds a powered-down node takes to be ready again (power-on self-test, OS boot, GPU driver and health checks):
#: an estimate, no datasheet states it; servers commonly take a few minutes from power-on to ready.
DEFAULT_WAKE_S = 300.0
_POWER_DOWN_BOUNDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "idle_timeout_s": (lambda v: v is None or (_is_number(v) and v >= 0), "a number >= 0 or null (off)"),
    "wake_s": (lambda v: _is_number(v) and v >= 0, "a number >= 0"),
    "sleep_w": (lambda v: _is_number(v) and v >= 0, "a number >= 0 (watts per GPU)"),
}


@dataclass(frozen=True)
class PowerDownModel:
    """Idle nodes power down (:mod:`engine.sim.power` applies it, for every scheduler alike).

    A node no job has held for ``idle_timeout_s`` seconds powers down; a job started on a powered-down node waits
    ``wake_s`` seconds for it, holding its GPUs, before its work begins (it pays the delay as a restart overhead,
    ``Result.wake_gpu_s``, and the metrics count it as wait). While a node is down each of its GPUs draws ``sleep_w`` instead of its idle power
    (:mod:`engine.analysis.energy`).

    Attributes:
        idle_timeout_s: idle seconds before a node powers down; ``None`` (the default) never: the run is the run
            without the model, bit for bit.
        wake_s: seconds a powered-down node takes to wake (default :data:`DEFAULT_WAKE_S`).
        sleep_w: watts each GPU of a powered-down node draws; default 0, an estimate: the GPUs of a node that is
            off draw nothing (its management controller's few watts are not GPU power, all the model counts).
    """

    idle_timeout_s: float | None = None
    wake_s: float = DEFAULT_WAKE_S
    sleep_w: float = 0.0

    def __post_init__(self) -> None:
        _check_bounds(self.to_dict(), _POWER_DOWN_BOUNDS, "power_down")

    @property
    def active(self) -> bool:
        """Whether nodes ever power down."""
        return self.idle_timeout_s is not None

    def to_dict(self) -> dict[str, Any]:
        return {"idle_timeout_s": self.idle_timeout_s, "wake_s": self.wake_s, "sleep_w": self.sleep_w}

    @classmethod
    def from_dict(cls, data: Any, where: str = "power_down") -> PowerDownModel:
        """The model of JSON object ``data`` (missing keys take their defaults); ``where`` names it in errors."""
        if not isinstance(data, Mapping):
            raise OptionsError(f"{where} must be an object with {', '.join(_POWER_DOWN_BOUNDS)}")
        reject_unknown_keys(data, set(_POWER_DOWN_BOUNDS), where, OptionsError)
        _check_bounds(data, _POWER_DOWN_BOUNDS, where)
        return cls(**data)


#: Admission policies (:mod:`engine.sim.admission` applies them): name -> what it does.
ADMISSION_POLICIES: dict[str, str] = {
    "accept-all": "every job that fits the cluster enters the queue",
    "feasible": "decline a job with a deadline it could not meet even if it started now on its fastest GPUs",
}


@dataclass(frozen=True)
class AdmissionModel:
    """Which arriving jobs enter the queue: the stage before it (:mod:`engine.sim.admission`).

    Attributes:
        policy: a key of :data:`ADMISSION_POLICIES`; ``accept-all`` (the default) admits every job, and the run is
            the run without the stage, bit for bit.
    """

    policy: str = "accept-all"

    def __post_init__(self) -> None:
        _check_policy(self.policy, "admission")

    @property
    def active(self) -> bool:
        """Whether the stage may decline a job."""
        return self.policy != "accept-all"

    def to_dict(self) -> dict[str, Any]:
        return {"policy": self.policy}

    @classmethod
    def from_dict(cls, data: Any, where: str = "admission") -> AdmissionModel:
        """The model of JSON object ``data`` (``{"policy": NAME}``; missing: accept-all); ``where`` names it in
        errors."""
        if not isinstance(data, Mapping):
            raise OptionsError(f"{where} must be an object with policy")
        reject_unknown_keys(data, {"policy"}, where, OptionsError)
        policy = data.get("policy", "accept-all")
        _check_policy(policy, where)
        return cls(policy)


def _check_policy(policy: Any, where: str) -> None:
    if not (isinstance(policy, str) and policy in ADMISSION_POLICIES):
        raise OptionsError(f"{where}.policy must be one of {', '.join(ADMISSION_POLICIES)}, got {quote(policy)}")


#: Seconds an elastic job makes no progress each time its allocation changes: Pollux's simulator charges 30 s per
#: reallocation (petuum/adaptdl, osdi21-artifact; /work/shared/REFERENCES.md, "Elastic jobs").
POLLUX_RESCALE_S = 30.0
#: Largest rescale cost accepted: a day (no checkpoint-restart takes longer; keeps times finite).
MAX_RESCALE_S = 86_400.0

_ELASTIC_BOUNDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "rescale_s": (
        lambda v: _is_number(v) and 0 <= v <= MAX_RESCALE_S,
        f"a number of seconds from 0 to {MAX_RESCALE_S:g}",
    ),
}


@dataclass(frozen=True)
class ElasticModel:
    """What resizing an elastic job costs (:mod:`engine.sim.elastic`; rigid jobs never pay it).

    Attributes:
        rescale_s: seconds the job makes no progress each time a scheduler changes its GPUs (a ``Resize``):
            it checkpoints and restarts on its new GPUs. Default :data:`POLLUX_RESCALE_S`.
    """

    rescale_s: float = POLLUX_RESCALE_S

    def __post_init__(self) -> None:
        _check_bounds(self.to_dict(), _ELASTIC_BOUNDS, "elastic")

    def to_dict(self) -> dict[str, Any]:
        return {"rescale_s": self.rescale_s}

    @classmethod
    def from_dict(cls, data: Any, where: str = "elastic") -> ElasticModel:
        """The model of JSON object ``data`` (missing keys take their defaults); ``where`` names it in errors."""
        if not isinstance(data, Mapping):
            raise OptionsError(f"{where} must be an object with {', '.join(_ELASTIC_BOUNDS)}")
        reject_unknown_keys(data, set(_ELASTIC_BOUNDS), where, OptionsError)
        _check_bounds(data, _ELASTIC_BOUNDS, where)
        return cls(**data)


@dataclass(frozen=True)
class RunOptions:
    """Everything about a run besides cluster, workload, scheduler and seed (see the module's docstring for how
    a new model joins).

    Attributes:
        preemption: what a preempted job loses (default: nothing).
        failures: nodes that break, jobs that crash and what checkpoints cost (default: none of them).
        energy: power, prices and carbon, for the energy and cost metrics (no effect on the simulation).
        admission: which arriving jobs enter the queue (default: all).
        elastic: what resizing an elastic job costs (default: Pollux's 30 s).
        power_down: idle nodes that power down and wake for a job (default: none do).
    """

    preemption: PreemptionModel = field(default=PreemptionModel(), metadata={"parse": PreemptionModel.from_dict})
    failures: FailureModel = field(default=FailureModel(), metadata={"parse": FailureModel.from_dict})
    energy: EnergyModel = field(default=EnergyModel(), metadata={"parse": EnergyModel.from_dict})
    admission: AdmissionModel = field(default=AdmissionModel(), metadata={"parse": AdmissionModel.from_dict})
    elastic: ElasticModel = field(default=ElasticModel(), metadata={"parse": ElasticModel.from_dict})
    power_down: PowerDownModel = field(default=PowerDownModel(), metadata={"parse": PowerDownModel.from_dict})

    def __post_init__(self) -> None:
        if self.failures.checkpoint_cost_s and self.preemption.checkpoint_interval_s is None:
            raise OptionsError(
                "options.failures.checkpoint_cost_s needs options.preemption.checkpoint_interval_s "
                "(without an interval a job checkpoints only when stopped, at no cost)"
            )

    @property
    def checkpoint_period_s(self) -> float | None:
        """Reference work from one checkpoint to the next, the checkpoint's own cost included (``None``: no
        interval)."""
        interval = self.preemption.checkpoint_interval_s
        return None if interval is None else interval + self.failures.checkpoint_cost_s

    def work_s(self, durations_s: list[float]) -> list[float]:
        """Reference work of jobs of ``durations_s`` seconds with their checkpoints' cost: each duration ``d`` plus
        ``checkpoint_cost_s`` per checkpoint it writes, ``ceil(d / checkpoint_interval_s) - 1`` (none after its last
        piece of work); a copy of ``durations_s`` when checkpoints are free."""
        interval, cost = self.preemption.checkpoint_interval_s, self.failures.checkpoint_cost_s
        if interval is None or not cost:
            return list(durations_s)
        return [d + cost * max(math.ceil(d / interval) - 1, 0) for d in durations_s]

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

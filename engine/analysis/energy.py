"""What a run cost: energy, money and carbon, from a :class:`~engine.sim.simulator.Result` and an
:class:`~engine.sim.options.EnergyModel`. Every formula is written here; the simulation itself knows none of it.

Power model (OpenDC's linear model): GPU ``g`` of type ``k`` draws ``idle_w[k] + (busy_w[k] - idle_w[k]) x u_g(t)``
watts, where ``u_g(t)`` is the share of it jobs hold at ``t`` (a half-GPU job holds 0.5; the catalog's fields,
:class:`~engine.sim.cluster.GpuType`); the facility draws ``pue`` times the sum over GPUs. Over a window
``[start_s, end_s]`` of length ``T`` (the run's makespan in the summary), with ``h_e`` the GPU-seconds held by
entry ``e`` (one GPU of one run segment: its overlap with the window x its GPU share):

* ``energy_kwh`` = ``pue x (sum_g idle_w[g] x T + sum_e (busy_w - idle_w)[e] x h_e) / 3.6e6``: the integral of
  the facility's power over the window.
* ``idle_energy_kwh`` = ``pue x sum_g idle_w[g] x (T - held_s[g]) / 3.6e6``: what the capacity no job held drew
  (``held_s[g]`` = GPU-seconds held on ``g``). The rest, ``pue x sum_e busy_w[e] x h_e``, is what jobs drew
  (a job pays for the idle draw of the share it holds); it is split per job by :func:`job_energy`.
* ``cost_usd`` = ``sum_e price[e] x h_e / 3600``: allocated GPU-hours x price per GPU-hour (work later lost to a
  preemption is paid for too). Prices come from the model's price list (:func:`~engine.sim.cluster.gpu_prices`).
* ``cluster_price_per_h`` = ``sum_g price[g]``: what the whole cluster costs an hour, busy or not.
* ``cluster_cost_usd`` = ``cluster_price_per_h x T / 3600``.
* ``energy_per_job_kwh`` = ``energy_kwh / completed`` and ``cost_per_job_usd`` = ``cost_usd / completed``, over the
  jobs that completed (status ``COMPLETED``): what one finished job took, the idle capacity's draw, failed jobs'
  runs and work lost to stops included (lost work is paid for). NaN when no job completed.
* ``energy_per_useful_gpu_h_kwh`` = ``energy_kwh / useful_gpu_h`` and ``cost_per_useful_gpu_h_usd`` =
  ``cost_usd / useful_gpu_h``, where ``useful_gpu_h`` = the GPU-hours held that did work the jobs kept
  (:func:`~engine.analysis.reliability.useful_gpu_s`, the numerator of ETTR: held time less what preemptions,
  failures, crashes and restarts lost, and nothing of a failed job). NaN when nothing useful ran.
* Powered-down nodes (``options.power_down``, :mod:`engine.sim.power`): while node ``n`` is down, each of its GPUs
  draws ``sleep_w`` instead of ``idle_w``, so each interval ``[a, b]`` it was down (clipped to the window) takes
  ``pue x sum_{g on n} (idle_w[g] - sleep_w) x (b - a)`` off ``energy_kwh`` and ``idle_energy_kwh`` (no job held
  those GPUs), and the same power times ``C(b) - C(a)`` off the carbon.
* ``co2_kg`` = the integral of the facility's power times the grid intensity ``c(t)`` (gCO2/kWh), / 3.6e6 / 1000.
  With ``C(t) = integral_0^t c`` (exact for the model's constant or its stepwise, repeating
  :class:`~engine.sim.options.CarbonSeries`), an entry held from ``a`` to ``b`` adds its power x ``(C(b) - C(a))``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from engine.analysis.reliability import useful_gpu_s
from engine.errors import ClusterSpecError
from engine.sim.cluster import Cluster, gpu_prices
from engine.sim.options import EnergyModel, RunOptions, carbon_integral
from engine.sim.simulator import COMPLETED, Result

J_PER_KWH = 3.6e6


@dataclass(frozen=True)
class EnergySummary:
    """The run-level energy, cost and carbon metrics (formulas in the module docstring)."""

    energy_kwh: float
    idle_energy_kwh: float
    cost_usd: float
    cluster_cost_usd: float
    co2_kg: float
    cluster_price_per_h: float
    energy_per_job_kwh: float
    cost_per_job_usd: float
    energy_per_useful_gpu_h_kwh: float
    cost_per_useful_gpu_h_usd: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def gpu_power_w(cluster: Cluster) -> tuple[np.ndarray, np.ndarray]:
    """``(idle_w, busy_w)`` of every GPU (index = GPU id); ``ClusterSpecError`` names a type without them."""
    lay = cluster.layout
    idle, busy = [], []
    for name in lay.type_names:
        t = cluster.catalog[name]
        if t.idle_w is None or t.busy_w is None:
            raise ClusterSpecError(
                f"GPU type {name} has no power figures: give board_w (or idle_w and busy_w) in "
                "the cluster JSON's gpu_types"
            )
        idle.append(t.idle_w)
        busy.append(t.busy_w)
    return np.array(idle, dtype=float)[lay.gpu_type], np.array(busy, dtype=float)[lay.gpu_type]


def gpu_price_per_h(cluster: Cluster, price_list: str) -> np.ndarray:
    """USD per hour of every GPU (index = GPU id) under ``price_list``."""
    prices = gpu_prices(cluster, price_list)
    lay = cluster.layout
    return np.array([prices[t] for t in lay.type_names], dtype=float)[lay.gpu_type]


def cluster_price_per_h(cluster: Cluster, price_list: str) -> float:
    """What the whole cluster costs an hour under ``price_list``: the sum of its GPUs' prices."""
    return float(gpu_price_per_h(cluster, price_list).sum())


def per_unit(total: float, units: float) -> float:
    """``total / units``; NaN when there are no units (nothing to share the total)."""
    return total / units if units > 0 else math.nan


@dataclass(frozen=True)
class _Entries:
    """One row per (run segment, GPU): its GPU, job, share, and its start and end."""

    gpu: np.ndarray
    job: np.ndarray
    fraction: np.ndarray
    start_s: np.ndarray
    end_s: np.ndarray


def _entries(result: Result) -> _Entries:
    counts = np.diff(result.seg_gpu_ptr)
    return _Entries(
        result.seg_gpu_ids,
        np.repeat(result.seg_job, counts),
        np.repeat(result.seg_fraction, counts),
        np.repeat(result.seg_start_s, counts),
        np.repeat(result.seg_end_s, counts),
    )


@dataclass(frozen=True)
class _Sleep:
    """One row per interval a node was powered down: the watts it saved (``sum (idle_w - sleep_w)`` over its GPUs)
    and the interval (its end ``inf`` when it stayed down)."""

    saved_w: np.ndarray
    start_s: np.ndarray
    end_s: np.ndarray


def _sleep(result: Result, idle_w: np.ndarray) -> _Sleep:
    lay = result.cluster.layout
    node_idle_w = np.bincount(lay.gpu_node, weights=idle_w, minlength=lay.n_nodes)
    node_saved_w = node_idle_w - result.options.power_down.sleep_w * np.bincount(lay.gpu_node, minlength=lay.n_nodes)
    return _Sleep(node_saved_w[result.sleep_node], result.sleep_start_s, result.sleep_end_s)


def summarize_energy(result: Result, model: EnergyModel, start_s: float, end_s: float) -> EnergySummary:
    """Energy, cost and carbon of ``result`` over the window ``[start_s, end_s]`` (the module docstring's
    formulas; run segments are clipped to the window). ``ClusterSpecError`` names a GPU type without power or
    price figures."""
    if not (math.isfinite(start_s) and math.isfinite(end_s) and end_s >= start_s):
        raise ValueError(f"the window must be finite with end_s >= start_s, got [{start_s}, {end_s}]")
    cluster = result.cluster
    idle_w, busy_w = gpu_power_w(cluster)
    price = gpu_price_per_h(cluster, model.price_list)
    e = _entries(result)
    lo = np.clip(e.start_s, start_s, end_s)
    hi = np.clip(e.end_s, start_s, end_s)
    held = (hi - lo) * e.fraction  # GPU-seconds each entry held inside the window
    held_per_gpu = np.bincount(e.gpu, weights=held, minlength=cluster.n_gpus)
    span = end_s - start_s
    extra_w = (busy_w - idle_w)[e.gpu]
    sleep = _sleep(result, idle_w)
    sleep_lo = np.clip(sleep.start_s, start_s, end_s)
    sleep_hi = np.clip(sleep.end_s, start_s, end_s)
    saved_j = model.pue * float(np.dot(sleep.saved_w, sleep_hi - sleep_lo))
    energy_j = model.pue * (float(idle_w.sum()) * span + float(np.dot(extra_w, held))) - saved_j
    idle_j = model.pue * float(np.dot(idle_w, span - held_per_gpu)) - saved_j
    c = model.carbon_g_per_kwh
    window_c = carbon_integral(c, np.array([start_s, end_s]))
    held_c = (carbon_integral(c, hi) - carbon_integral(c, lo)) * e.fraction
    saved_c = float(np.dot(sleep.saved_w, carbon_integral(c, sleep_hi) - carbon_integral(c, sleep_lo)))
    co2_g = model.pue * (
        float(idle_w.sum()) * float(window_c[1] - window_c[0]) + float(np.dot(extra_w, held_c)) - saved_c
    )
    price_per_h = float(price.sum())
    energy_kwh = energy_j / J_PER_KWH
    cost_usd = float(np.dot(price[e.gpu], held)) / 3600.0
    completed = float((result.status == COMPLETED).sum())
    job_held_gpu_s = np.bincount(e.job, weights=(e.end_s - e.start_s) * e.fraction, minlength=result.n_jobs)
    useful_gpu_h = float(useful_gpu_s(result, job_held_gpu_s[: result.n_jobs]).sum()) / 3600.0
    return EnergySummary(
        energy_kwh=energy_kwh,
        idle_energy_kwh=idle_j / J_PER_KWH,
        cost_usd=cost_usd,
        cluster_cost_usd=price_per_h * span / 3600.0,
        co2_kg=co2_g / J_PER_KWH / 1000.0,
        cluster_price_per_h=price_per_h,
        energy_per_job_kwh=per_unit(energy_kwh, completed),
        cost_per_job_usd=per_unit(cost_usd, completed),
        energy_per_useful_gpu_h_kwh=per_unit(energy_kwh, useful_gpu_h),
        cost_per_useful_gpu_h_usd=per_unit(cost_usd, useful_gpu_h),
    )


def job_energy(result: Result, model: EnergyModel) -> dict[str, np.ndarray]:
    """Per job (index = ``job_id``), over all its run segments: ``energy_kwh`` (``pue x busy_w x`` GPU-seconds
    held: the share it holds of each GPU's whole draw), ``cost_usd`` (price x GPU-hours held), ``co2_kg`` and
    ``useful_gpu_s`` (GPU-seconds held that did work it kept, :func:`~engine.analysis.reliability.useful_gpu_s`).
    Summed over jobs and added to ``idle_energy_kwh`` (and the idle capacity's carbon), the first three give the
    run's totals over its makespan."""
    cluster = result.cluster
    _, busy_w = gpu_power_w(cluster)
    price = gpu_price_per_h(cluster, model.price_list)
    e = _entries(result)
    held = (e.end_s - e.start_s) * e.fraction
    c = model.carbon_g_per_kwh
    held_c = (carbon_integral(c, e.end_s) - carbon_integral(c, e.start_s)) * e.fraction
    n = result.n_jobs

    def per_job(weights: np.ndarray) -> np.ndarray:
        return np.bincount(e.job, weights=weights, minlength=n)[:n]

    return {
        "energy_kwh": per_job(model.pue * busy_w[e.gpu] * held) / J_PER_KWH,
        "cost_usd": per_job(price[e.gpu] * held) / 3600.0,
        "co2_kg": per_job(model.pue * busy_w[e.gpu] * held_c) / J_PER_KWH / 1000.0,
        "useful_gpu_s": useful_gpu_s(result, per_job(held)),
    }


def power_series(result: Result, model: EnergyModel) -> tuple[np.ndarray, np.ndarray]:
    """The facility's power over the run as steps: ``(t_s, power_w)``, ``power_w[i]`` holding from ``t_s[i]``
    until ``t_s[i + 1]`` (the last value holds after the last change; before the first, the cluster idles at
    ``power_w`` of an empty cluster, ``pue x sum idle_w``); a node powering down lowers it, waking raises it again."""
    idle_w, busy_w = gpu_power_w(result.cluster)
    e = _entries(result)
    delta = model.pue * (busy_w - idle_w)[e.gpu] * e.fraction
    sleep = _sleep(result, idle_w)
    woke = np.isfinite(sleep.end_s)
    saved = model.pue * sleep.saved_w
    times = np.concatenate([e.start_s, e.end_s, sleep.start_s, sleep.end_s[woke]])
    changes = np.concatenate([delta, -delta, -saved, saved[woke]])
    order = np.argsort(times, kind="stable")
    t, first = np.unique(times[order], return_index=True)
    step = np.add.reduceat(changes[order], first) if t.size else np.empty(0)
    return t, model.pue * float(idle_w.sum()) + np.cumsum(step)


def sets_energy(options: RunOptions) -> bool:
    """Whether run options (a scenario's) set an energy model other than the default one (its ``count`` switch
    on, or any other value changed): a scenario file that does gets the energy metrics without a flag; one written
    with the defaults keeps the summaries it had."""
    return options.energy != EnergyModel()

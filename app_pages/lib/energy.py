"""What the pages need of a scenario's energy model: its GPU types' watts and prices as edited, the grid carbon
chosen (a constant or an uploaded CSV), and whether results count energy, cost and carbon."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Mapping, Sequence

from engine import EngineError
from engine.analysis.energy import sets_energy
from engine.analysis.scenario import Scenario
from engine.sim.cluster import Cluster
from engine.sim.options import CarbonSeries, EnergyModel
from engine.traces.carbon import parse_carbon_csv

#: Largest carbon-intensity CSV the app reads, MiB (a year of hourly rows is about 0.3 MiB).
MAX_CARBON_MB = 5
#: The GPU type fields the Cluster page edits, with their column titles.
POWER_COLUMNS = {"board_w": "board W", "idle_w": "idle W", "busy_w": "busy W", "price_per_h": "$ per GPU-hour"}


def energy_of(sc: Scenario) -> EnergyModel | None:
    """The energy model results of ``sc`` count (its ``options.energy``) when it sets one
    (:func:`~engine.analysis.energy.sets_energy`), else ``None``: the CLI and the API decide the same way."""
    return sc.options.energy if sets_energy(sc.options) else None


def _number_or_none(value: Any) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def with_power(cluster: Cluster, rows: Sequence[Mapping[str, Any]]) -> Cluster:
    """``cluster`` with the watts and prices of ``rows`` (``{"GPU type": NAME, board_w: ..., ...}``; an empty cell
    is unknown) in its catalog, so that its JSON's ``gpu_types`` carries them. ``ClusterSpecError`` names a type
    and a field out of bounds (negative, idle above busy)."""
    catalog = dict(cluster.catalog)
    for row in rows:
        name = row["GPU type"]
        catalog[name] = replace(catalog[name], **{k: _number_or_none(row[k]) for k in POWER_COLUMNS})
    return replace(cluster, catalog=catalog)


def carbon_of(
    constant_g: float | None, upload: tuple[str, bytes] | None, current: float | CarbonSeries
) -> float | CarbonSeries:
    """The grid intensity chosen: ``constant_g`` (gCO2/kWh) when given, else the uploaded CSV ``(name, bytes)``
    (:func:`~engine.traces.carbon.parse_carbon_csv`), else the series the scenario has. Bad input raises an
    ``EngineError`` in one line naming the file (and its line)."""
    if constant_g is not None:
        return float(constant_g)
    if upload is None:
        if isinstance(current, CarbonSeries):
            return current
        raise EngineError("carbon: upload a CSV with the columns timestamp,carbon_intensity, or choose a constant")
    name, data = upload
    if len(data) > MAX_CARBON_MB * 2**20:
        raise EngineError(f"carbon CSV {name}: {len(data) / 2**20:.1f} MiB; the limit is {MAX_CARBON_MB} MiB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise EngineError(f"carbon CSV {name}: not UTF-8 text") from None
    return parse_carbon_csv(text, name)

"""Energy, cost and carbon: the closed forms of engine.analysis.energy against independent computations from the
per-job run segments (an event sweep over segment starts and ends), on a generated workload."""

from __future__ import annotations

import math
from collections import defaultdict
from itertools import pairwise

import numpy as np
import pytest

from engine import CarbonSeries, EnergyModel, Job, RunOptions, make_scheduler, parse_cluster, simulate
from engine.analysis.energy import carbon_integral, power_series, summarize_energy
from engine.analysis.metrics import ENERGY_METRICS, METRICS, best_columns, compare, job_frame, summarize, user_frame
from engine.errors import ClusterSpecError
from engine.sim.cluster import DEFAULT_CATALOG
from engine.traces.generator import generate

CLUSTER = "2x4:A100-80,1x4:T4,1x2:V100-32"
SERIES = CarbonSeries(1800.0, (400.0, 250.0, 120.0, 310.0, 500.0), "2024-01-01T00:00:00Z")
MODEL = EnergyModel(pue=1.3, carbon_g_per_kwh=SERIES)


@pytest.fixture(scope="module")
def run():
    """A generated workload with fractional jobs and preemptions (Tiresias) on three GPU types."""
    cluster = parse_cluster(CLUSTER)
    result = simulate(cluster, generate(cluster, 120, load=1.2, seed=3), make_scheduler("tiresias"))
    assert (result.seg_fraction < 1).any() and result.preemptions.sum() > 0  # the cases the formulas must cover
    return result


def carbon_at(t: float) -> float:
    """The series' intensity at simulated time ``t`` (it repeats after its last step)."""
    return SERIES.g_per_kwh[math.floor(t / SERIES.step_s) % len(SERIES.g_per_kwh)]


def sweep(result, model, start_s, end_s):
    """Energy (kWh) and CO2 (kg) by walking the run: at each segment start or end (and each carbon step) the
    share held of every GPU changes; between two such times the facility's power is constant."""
    lay = result.cluster.layout
    idle = [result.cluster.catalog[lay.type_names[k]].idle_w for k in lay.gpu_type]
    busy = [result.cluster.catalog[lay.type_names[k]].busy_w for k in lay.gpu_type]
    events = defaultdict(list)  # time -> [(gpu, change of its share)]
    for i in range(len(result.seg_job)):
        for g in result.segment_gpus(i):
            events[result.seg_start_s[i]].append((int(g), result.seg_fraction[i]))
            events[result.seg_end_s[i]].append((int(g), -result.seg_fraction[i]))
    step = SERIES.step_s
    for k in range(int(start_s // step), int(end_s // step) + 1):
        events[k * step]  # a carbon step boundary: no share changes, the intensity may
    times = sorted({start_s, end_s, *events})
    share = [0.0] * lay.n_gpus
    energy_j = co2_g = 0.0
    for a, b in pairwise(times):
        for g, change in events.get(a, ()):
            share[g] += change
        if b <= start_s or a >= end_s:
            continue
        power_w = model.pue * sum(i + (u_b - i) * u for i, u_b, u in zip(idle, busy, share))
        energy_j += power_w * (b - a)
        c = model.carbon_g_per_kwh
        co2_g += power_w * (b - a) * (c if isinstance(c, float) else carbon_at(a)) / 3.6e6
    return energy_j / 3.6e6, co2_g / 1000.0


def makespan_window(result):
    done = result.status == 0
    first = min(j.submit_s for j in result.jobs)
    return first, float(result.end_s[done].max())


def test_energy_and_carbon_equal_an_event_sweep_over_the_run_segments(run):
    s = summarize(run, MODEL).energy
    energy_kwh, co2_kg = sweep(run, MODEL, *makespan_window(run))
    assert s.energy_kwh == pytest.approx(energy_kwh, rel=1e-9)
    assert s.co2_kg == pytest.approx(co2_kg, rel=1e-9)
    constant = EnergyModel(pue=1.0, carbon_g_per_kwh=200.0)
    c = summarize(run, constant).energy
    assert c.energy_kwh == pytest.approx(s.energy_kwh / 1.3, rel=1e-12)
    assert c.co2_kg == pytest.approx(sweep(run, constant, *makespan_window(run))[1], rel=1e-9)
    assert c.co2_kg == pytest.approx(c.energy_kwh * 200.0 / 1000.0, rel=1e-12)


def test_a_window_clips_the_segments(run):
    start, end = 20_000.0, 90_000.0
    s = summarize_energy(run, MODEL, start, end)
    assert (s.energy_kwh, s.co2_kg) == pytest.approx(sweep(run, MODEL, start, end), rel=1e-9)


def test_cost_is_price_times_gpu_hours_per_type(run):
    lay = run.cluster.layout
    hours = defaultdict(float)
    for i in range(len(run.seg_job)):
        for g in run.segment_gpus(i):
            hours[lay.type_names[lay.gpu_type[g]]] += (
                (run.seg_end_s[i] - run.seg_start_s[i]) * run.seg_fraction[i] / 3600
            )
    assert set(hours) == {"A100-80", "T4", "V100-32"}
    s = summarize(run, MODEL)
    assert s.energy.cost_usd == pytest.approx(
        sum(DEFAULT_CATALOG[t].price_per_h * h for t, h in hours.items()), rel=1e-12
    )
    assert s.energy.cluster_price_per_h == pytest.approx(8 * 3.93 + 4 * 0.35 + 2 * 2.48)
    assert s.energy.cluster_cost_usd == pytest.approx(s.energy.cluster_price_per_h * s.makespan_s / 3600)
    assert s.energy.cost_usd <= s.energy.cluster_cost_usd


def test_a_named_price_list_replaces_the_catalog_prices():
    cluster = parse_cluster("1x4:V100-32,1x4:K80")
    result = simulate(cluster, generate(cluster, 30, load=0.9, seed=1), make_scheduler("fifo"))
    on_demand = summarize(result, EnergyModel()).energy
    spot = summarize(result, EnergyModel(price_list="gcp-preemptible-2020")).energy
    assert spot.cluster_price_per_h == pytest.approx(4 * 0.74 + 4 * 0.135)
    assert on_demand.cluster_price_per_h == pytest.approx(4 * 2.48 + 4 * 0.45)
    assert spot.energy_kwh == on_demand.energy_kwh and spot.cost_usd < on_demand.cost_usd
    with pytest.raises(ClusterSpecError, match="price list 'gcp-preemptible-2020' .*: no price_per_h for A100-80"):
        summarize(
            simulate(parse_cluster("1x1:A100-80"), [], make_scheduler("fifo")),
            EnergyModel(price_list="gcp-preemptible-2020"),
        )


def test_a_cluster_with_no_jobs_costs_idle_power_times_time():
    cluster = parse_cluster("2x8:H100-80,1x4:T4")
    result = simulate(cluster, [], make_scheduler("fifo"))
    hours = 10.0
    s = summarize_energy(result, EnergyModel(pue=1.2, carbon_g_per_kwh=300.0), 0.0, hours * 3600)
    idle_kw = (16 * 700 * 0.15 + 4 * 70 * 0.15) / 1000
    assert s.energy_kwh == pytest.approx(1.2 * idle_kw * hours)
    assert s.idle_energy_kwh == pytest.approx(s.energy_kwh)
    assert s.co2_kg == pytest.approx(s.energy_kwh * 0.3)
    assert s.cost_usd == 0 and s.cluster_cost_usd == pytest.approx((16 * 11.06 + 4 * 0.35) * hours)
    assert summarize(result, EnergyModel()).energy.energy_kwh == 0  # its makespan is 0


def test_jobs_and_idle_capacity_add_up_to_the_run(run):
    s = summarize(run, MODEL).energy
    jobs = job_frame(run, MODEL)
    assert (jobs.loc[jobs["status"] == "unschedulable", ["energy_kwh", "cost_usd", "co2_kg"]] == 0).all().all()
    assert jobs["energy_kwh"].sum() + s.idle_energy_kwh == pytest.approx(s.energy_kwh, rel=1e-9)
    assert jobs["cost_usd"].sum() == pytest.approx(s.cost_usd, rel=1e-12)
    assert 0 < jobs["co2_kg"].sum() < s.co2_kg
    users = user_frame(run, MODEL)
    assert users["cost_usd"].sum() == pytest.approx(s.cost_usd, rel=1e-12)
    assert users["energy_kwh"].sum() == pytest.approx(jobs["energy_kwh"].sum(), rel=1e-12)
    one = users.iloc[0]
    assert one["co2_kg"] == pytest.approx(jobs.loc[jobs["user"] == one["user"], "co2_kg"].sum())


def test_the_power_series_integrates_to_the_energy(run):
    t, power_w = power_series(run, MODEL)
    start, end = makespan_window(run)
    assert t[0] >= start and t[-1] == end
    idle_w = MODEL.pue * sum(DEFAULT_CATALOG[g.gpu_type].idle_w * g.nodes * g.gpus_per_node for g in run.cluster.groups)
    assert power_w[-1] == pytest.approx(idle_w)  # everything ended
    energy_j = idle_w * (t[0] - start) + float(np.dot(power_w[:-1], np.diff(t)))
    assert energy_j / 3.6e6 == pytest.approx(summarize(run, MODEL).energy.energy_kwh, rel=1e-9)


def test_carbon_integral_of_a_repeating_series():
    period = 5 * 1800.0
    total = sum(SERIES.g_per_kwh) * 1800.0
    c = carbon_integral(SERIES, np.array([0.0, 900.0, 1800.0, period, period + 2700.0, -900.0]))
    assert c.tolist() == pytest.approx([0.0, 400 * 900, 400 * 1800, total, total + 400 * 1800 + 250 * 900, -500 * 900])


def test_without_a_model_summaries_and_runs_are_unchanged(run):
    plain = summarize(run)
    assert plain.energy is None and list(plain.to_dict()) == list(METRICS)
    with_energy = summarize(run, MODEL)
    assert list(with_energy.to_dict()) == [*METRICS, *ENERGY_METRICS]
    assert {k: with_energy.to_dict()[k] for k in METRICS} == plain.to_dict()
    assert list(job_frame(run).columns) == [
        c for c in job_frame(run, MODEL).columns if c not in ("energy_kwh", "cost_usd", "co2_kg", "useful_gpu_s")
    ]
    # the energy model is read by the metrics only: the simulation is bit-identical under any of them
    cluster = run.cluster
    again = simulate(cluster, run.jobs, make_scheduler("tiresias"), options=RunOptions(energy=MODEL))
    for field in ("seg_job", "seg_start_s", "seg_end_s", "seg_gpu_ids", "seg_fraction", "end_s", "series_t"):
        assert np.array_equal(getattr(again, field), getattr(run, field)), field


def test_compare_shows_energy_rows_when_asked(run):
    cluster = run.cluster
    other = simulate(cluster, run.jobs, make_scheduler("fifo"))
    table = compare({"tiresias": summarize(run, MODEL), "fifo": summarize(other, MODEL)})
    assert list(table.index) == [*METRICS, *ENERGY_METRICS]
    assert table.loc["cluster_price_per_h", "fifo"] == table.loc["cluster_price_per_h", "tiresias"]
    assert "cluster_price_per_h" not in best_columns(table)  # equal: nothing to choose
    assert list(compare({"a": run}).index) == list(METRICS)
    mixed = compare({"a": summarize(run), "b": summarize(run, MODEL)})
    assert math.isnan(mixed.loc["energy_kwh", "a"]) and mixed.loc["energy_kwh", "b"] > 0


def test_a_gpu_type_without_power_figures_is_named():
    cluster = parse_cluster(
        {
            "groups": [{"gpu_type": "X", "nodes": 1, "gpus_per_node": 2}],
            "gpu_types": [{"name": "X", "vram_gib": 16, "speed": 1, "price_per_h": 1.0}],
        }
    )
    with pytest.raises(ClusterSpecError, match="^GPU type X has no power figures: give board_w"):
        summarize(simulate(cluster, [], make_scheduler("fifo")), EnergyModel())


def test_per_completed_job_and_per_useful_gpu_hour_by_hand():
    # One A100-80 (training speed 2.4, idle 60 W, busy 304 W, $3.93 per GPU-hour): two training jobs of 2400
    # reference seconds run 1000 s each, back to back; the second is recorded failed, so its 1000 s are paid for
    # and useful for nothing.
    jobs = [Job(0, 0.0, 2400.0, job_type="training"), Job(1, 0.0, 2400.0, job_type="training", failed=True)]
    result = simulate(parse_cluster("1x1:A100-80"), jobs, make_scheduler("fifo"))
    s = summarize(result, EnergyModel(pue=1.5)).energy
    energy_kwh = 1.5 * 304.0 * 2000.0 / 3.6e6  # the GPU is busy the whole makespan
    cost_usd = 3.93 * 2000.0 / 3600.0
    assert s.energy_kwh == pytest.approx(energy_kwh)
    assert s.energy_per_job_kwh == pytest.approx(energy_kwh)  # one job completed and pays for both runs
    assert s.cost_per_job_usd == pytest.approx(cost_usd)
    assert s.energy_per_useful_gpu_h_kwh == pytest.approx(energy_kwh / (1000.0 / 3600.0))
    assert s.cost_per_useful_gpu_h_usd == pytest.approx(2 * 3.93)  # twice the price: half the time was useful
    users = user_frame(result, EnergyModel(pue=1.5))
    assert users.loc[0, "cost_per_job_usd"] == pytest.approx(cost_usd)
    assert users.loc[0, "cost_per_useful_gpu_h_usd"] == pytest.approx(2 * 3.93)


def test_per_unit_metrics_are_undefined_without_completed_jobs():
    result = simulate(parse_cluster("1x1:A100-80"), [Job(0, 0.0, 2400.0, failed=True)], make_scheduler("fifo"))
    summary = summarize(result, EnergyModel())
    assert summary.energy.energy_kwh > 0
    assert summary.to_dict()["cost_per_job_usd"] is None and summary.to_dict()["cost_per_useful_gpu_h_usd"] is None


def test_lost_work_raises_the_cost_per_useful_gpu_hour(run):
    s = summarize(run, MODEL).energy
    held_gpu_h = float(job_frame(run)["gpu_s"].sum()) / 3600.0
    ran = summarize(run).completed
    assert s.cost_per_job_usd == pytest.approx(s.cost_usd / ran)
    assert s.cost_per_useful_gpu_h_usd >= s.cost_usd / held_gpu_h

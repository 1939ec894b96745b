"""Carbon-aware deferral (engine/schedulers/carbon.py): a hand-worked run on a two-step carbon series, no deferral
without a deadline or under a constant intensity, and less carbon than fifo on the daily sample series."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import CarbonSeries, EnergyModel, Job, RunOptions, make_scheduler, parse_cluster, simulate
from engine.analysis.energy import summarize_energy
from engine.analysis.metrics import job_frame, summarize
from engine.schedulers.carbon import best_start_s
from engine.traces.carbon import load_carbon_csv
from engine.traces.generator import generate

# 500 gCO2/kWh in the first hour, 100 in the second, repeating.
SERIES = CarbonSeries(3600.0, (500.0, 100.0), "2024-01-01T00:00:00Z")
DAILY = Path(__file__).resolve().parents[2] / "sample_traces" / "carbon" / "daily.csv"


def run(jobs, carbon, name="carbon-defer", cluster="1x2:A100-80"):
    options = RunOptions(energy=EnergyModel(carbon_g_per_kwh=carbon))
    return simulate(parse_cluster(cluster), jobs, make_scheduler(name), options=options)


def test_jobs_with_slack_wait_for_the_low_carbon_hour_never_past_their_latest_start():
    # Two A100-80s; training jobs of 2400 reference seconds run 1000 s (speed 2.4).
    jobs = [
        Job(0, 0.0, 2400.0, job_type="training"),  # no deadline: starts at once
        Job(1, 0.0, 2400.0, job_type="training", deadline_s=2000.0),  # latest start 1000, all at 500 g: at once
        Job(2, 0.0, 2400.0, job_type="training", deadline_s=5000.0),  # latest start 4000: waits for 3600 (100 g)
        Job(3, 0.0, 2400.0, job_type="training", deadline_s=4300.0),  # latest start 3300: 700 s of its run at 100 g
    ]
    r = run(jobs, SERIES)
    assert r.first_start_s.tolist() == pytest.approx([0.0, 0.0, 3600.0, 3300.0])
    assert r.end_s.tolist() == pytest.approx([1000.0, 1000.0, 4600.0, 4300.0])  # every deadline met
    fifo = run(jobs, SERIES, "fifo")
    assert fifo.first_start_s.tolist() == [0.0, 0.0, 1000.0, 1000.0]
    assert summarize(r, EnergyModel(carbon_g_per_kwh=SERIES)).energy.co2_kg < (
        summarize(fifo, EnergyModel(carbon_g_per_kwh=SERIES)).energy.co2_kg
    )


def test_no_job_waits_under_a_constant_intensity_or_without_a_deadline():
    with_deadlines = [Job(i, 0.0, 2400.0, job_type="training", deadline_s=9000.0) for i in range(3)]
    assert run(with_deadlines, 480.0).first_start_s.tolist() == [0.0, 0.0, 1000.0]  # as best-fit
    assert run(with_deadlines, SERIES).first_start_s.tolist() == [3600.0, 3600.0, 4600.0]
    without = [Job(i, 0.0, 2400.0, job_type="training") for i in range(3)]
    assert run(without, SERIES).first_start_s.tolist() == [0.0, 0.0, 1000.0]


def test_the_best_start_prefers_now_among_equals_and_looks_one_period_ahead():
    assert best_start_s(SERIES, 0.0, 3000.0, 600.0) == 0.0  # all in the 500 g hour
    assert best_start_s(SERIES, 100.0, 50_000.0, 600.0) == 3600.0  # the first 100 g hour, not a later one
    assert best_start_s(SERIES, 4000.0, 9000.0, 600.0) == 4000.0  # already in the low hour
    assert best_start_s(SERIES, 0.0, -5.0, 600.0) == 0.0  # past its latest start: now


def test_less_carbon_than_fifo_on_the_daily_series_with_gavel_deadlines():
    # The same window for both (the cluster draws its idle power over the later makespan either way).
    cluster = parse_cluster("4x8:A100-80")
    carbon = load_carbon_csv(DAILY)
    jobs = generate(cluster, 300, load=0.5, seed=1, deadlines="gavel")
    model = EnergyModel(carbon_g_per_kwh=carbon)
    fifo, defer = (run(jobs, carbon, name, "4x8:A100-80") for name in ("fifo", "carbon-defer"))
    end_s = max(float(fifo.end_s.max()), float(defer.end_s.max()))
    assert summarize_energy(defer, model, 0.0, end_s).co2_kg < 0.99 * summarize_energy(fifo, model, 0.0, end_s).co2_kg
    assert job_frame(defer, model)["co2_kg"].sum() < 0.97 * job_frame(fifo, model)["co2_kg"].sum()
    assert summarize(defer).completed == summarize(fifo).completed == 300

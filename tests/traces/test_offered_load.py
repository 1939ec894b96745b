"""Offered load in one place (engine/traces/load.py): the scalar, its variant counted up to the last arrival (the
evaluation's trace blocks), and the series per submit-time bin (the workload chart)."""

import math

import numpy as np
import pytest

from engine import Job
from engine.traces.load import gpu_hours, load_ratio, offered_load, offered_load_of, offered_load_series
from engine.traces.report import make_report

JOBS = (
    Job(0, 0.0, 100.0, gpus=2),
    Job(1, 10.0, 40.0, gpus=1, gpu_fraction=0.5),
    Job(2, 20.0, 5.0, gpus=4),
    Job(3, 40.0, 1000.0, gpus=1),
)


def test_the_scalar_is_gpu_seconds_over_gpus_times_the_arrival_span():
    gpu_s = 2 * 100 + 0.5 * 40 + 4 * 5 + 1000
    assert offered_load(JOBS, 8) == pytest.approx(gpu_s / (8 * 40))
    assert gpu_hours(JOBS) == pytest.approx(gpu_s / 3600)
    assert offered_load(JOBS, 8, arrival_scale=2.0) == pytest.approx(gpu_s / (8 * 80))
    # Up to the last arrival (t=40): job 0 counts 40 s, job 1 30 s, job 2 5 s (ends before), job 3 nothing.
    assert offered_load(JOBS, 8, until_last_arrival=True) == pytest.approx((2 * 40 + 0.5 * 30 + 4 * 5) / (8 * 40))
    shifted = tuple(
        Job(j.job_id, j.submit_s + 500.0, j.duration_s, gpus=j.gpus, gpu_fraction=j.gpu_fraction) for j in JOBS
    )
    assert offered_load(shifted, 8) == offered_load(JOBS, 8)  # the span runs from the first arrival


def test_empty_zero_span_and_no_gpus():
    assert offered_load((), 4) == 0.0
    assert offered_load((Job(0, 5.0, 10.0),), 4) == math.inf
    assert load_ratio(0.0, 4, 0.0) == 0.0
    with pytest.raises(ValueError, match="n_gpus must be >= 1"):
        offered_load(JOBS, 0)


def test_the_trace_report_gives_the_same_load():
    rep = make_report(JOBS, rows=4, dropped={})
    assert rep.offered_load(8) == pytest.approx(offered_load(JOBS, 8), rel=1e-12)


@pytest.mark.parametrize("scale", [1e-6, 0.01, 0.37, 1.0, 2.5, 1e3, 1e6])
def test_until_last_arrival_equals_the_trace_block_formula_bit_for_bit(scale):
    # The formula engine/analysis/evaluate.py:_trace_block bisects on, written out as it was there.
    rng = np.random.default_rng(7)
    since = np.concatenate([[0.0], np.sort(rng.uniform(0, 5000, 49))])
    gpus = rng.integers(1, 9, 50) * rng.choice([0.5, 1.0], 50)
    run_s = rng.lognormal(6, 2, 50)
    span, n_gpus = float(since[-1]), 16
    expected = float((gpus * np.minimum(run_s, scale * (span - since))).sum() / (scale * span * n_gpus))
    assert offered_load_of(since, gpus, run_s, n_gpus, arrival_scale=scale, until_last_arrival=True) == expected


def test_the_series_spreads_the_same_gpu_seconds_over_bins():
    jobs = tuple(
        Job(
            i,
            submit_s=100.0 * i,
            duration_s=50.0 * (1 + i % 4),
            gpus=1 + (i % 2),
            gpu_fraction=0.5 if i % 7 == 0 and i % 2 == 0 else 1.0,
        )
        for i in range(40)
    )
    centres, load = offered_load_series(jobs, n_gpus=4, bins=10)
    width = 3900.0 / 10
    assert len(centres) == 10 and centres[0] == pytest.approx(width / 2)
    assert (load * 4 * width).sum() == pytest.approx(sum(j.gpus * j.gpu_fraction * j.duration_s for j in jobs))
    # Constant arrivals of the same work give about the scalar load in every bin.
    assert load.mean() == pytest.approx(offered_load(jobs, 4), rel=0.05)

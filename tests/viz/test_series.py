"""Queue and utilisation over time: step series, their thinning and their figure."""

import numpy as np
import pytest

from engine.analysis.energy import gpu_power_w
from engine.analysis.metrics import summarize
from engine.sim.options import EnergyModel
from engine.viz import series


def test_step_at():
    t, v = np.array([0.0, 10.0, 20.0]), np.array([1, 3, 0])
    assert series.step_at(t, v, np.array([-1.0, 0.0, 5.0, 10.0, 25.0])).tolist() == [0, 1, 1, 3, 0]


def test_binned_series_keeps_peaks_and_means():
    t = np.arange(0.0, 1000.0)  # a change every second
    v = np.zeros(1000)
    v[500] = 7.0  # a one-second spike
    v[600:] = 2.0
    tb, peak = series.binned_series(t, v, 1000.0, bins=10, how="max")
    assert len(tb) == 10 and peak[5] == 7.0 and peak[6:].tolist() == [2.0] * 4 and peak[:5].max() == 0
    _, mean = series.binned_series(t, v, 1000.0, bins=10, how="mean")
    assert mean[5] == pytest.approx(0.07) and mean[7] == pytest.approx(2.0)  # 7 for 1 s of a 100 s bin
    # Total area is preserved by the time-weighted mean.
    assert (mean * 100).sum() == pytest.approx(v.sum())
    short_t, short_v = series.binned_series(t[:5], v[:5], 5.0, bins=10)
    assert short_t.tolist() == t[:5].tolist()


def test_series_figure(runs):
    fig = series.series_figure(runs)
    assert fig.layout.yaxis.title.text == "queue (jobs)" and fig.layout.yaxis2.title.text == "busy GPUs (%)"
    assert max(max(t.y) for t in fig.data if t.yaxis == "y2") <= 100


def test_series_figure_with_an_energy_model_draws_the_facility_power(runs):
    model = EnergyModel(pue=1.5)
    fig = series.series_figure(runs, energy=model)
    assert fig.layout.yaxis3.title.text == "kW (PUE 1.5)"
    for r in runs.values():
        t_s, kw = series.power_kw(r, model)
        idle_w, busy_w = gpu_power_w(r.cluster)
        assert t_s[0] == 0 and kw[0] == pytest.approx(1.5 * idle_w.sum() / 1000)  # idle before the first job
        assert kw.max() <= 1.5 * busy_w.sum() / 1000 + 1e-9 and kw[-1] == pytest.approx(kw[0])  # idle again
        # Its time-weighted mean from the first submit (0) to the last end, times that span, is the run's energy.
        end = float(r.end_s.max())
        _, mean_kw = series.binned_series(t_s, kw, end, bins=7, how="mean")
        assert len(mean_kw) == 7 and min(j.submit_s for j in r.jobs) == 0
        assert mean_kw.mean() * end / 3600 == pytest.approx(summarize(r, energy=model).energy.energy_kwh)
    assert sum(t.yaxis == "y3" for t in fig.data) == len(runs)

"""Empirical CDFs of per-job quantities and their figure."""

import numpy as np
import pytest

from engine.analysis.metrics import job_frame
from engine.viz import distributions, style


def test_cdf_curve_thins_but_keeps_the_ends():
    v, p = distributions.cdf_curve(np.arange(10_000.0), points=100)
    assert len(v) == 100 and v[0] == 0 and v[-1] == 9999 and p[-1] == 1.0
    assert np.all(np.diff(v) > 0)


def test_cdf_points():
    x, p = distributions.cdf_points([3.0, np.nan, 1.0, 2.0])
    assert x.tolist() == [1.0, 2.0, 3.0] and p.tolist() == pytest.approx([1 / 3, 2 / 3, 1.0])


def test_cdf_figure(runs):
    frames = {name: job_frame(r) for name, r in runs.items()}
    cdf = distributions.cdf_figure(frames)
    assert [a.text for a in cdf.layout.annotations] == ["wait CDF", "JCT CDF"]
    assert [(t.name, t.xaxis, t.showlegend) for t in cdf.data] == [
        ("fifo", "x", True),
        ("best-fit", "x", True),
        ("fifo", "x2", False),
        ("best-fit", "x2", False),
    ]
    assert all(t.y[-1] == pytest.approx(100) for t in cdf.data)
    waits = np.sort(frames["fifo"]["wait_s"].to_numpy())
    unit, div = style.time_scale(max(float(np.nanmax(f["wait_s"])) for f in frames.values()))
    assert cdf.data[0].x[-1] == pytest.approx(waits[-1] / div)
    assert cdf.layout.xaxis.title.text == f"wait ({unit})" and cdf.layout.xaxis2.title.text.startswith("JCT (")

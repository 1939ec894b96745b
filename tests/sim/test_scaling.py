"""Scaling curves: the named ones say what their sources measured, tables interpolate, bad tables and unknown names
are refused with one line naming them."""

from __future__ import annotations

import pytest

from engine.sim.scaling import SCALING_CURVES, AmdahlCurve, ScalingError, TableCurve, scaling_curve
from engine.traces.profiles import APPLICATION_PROFILES


def test_resnet50_on_a100_is_elasticflows_measured_table_and_interpolates_between_points():
    curve = scaling_curve("resnet50-a100")
    assert [curve.speedup(k) for k in (1, 2, 4, 8, 16)] == [1.0, 1.81, 3.07, 4.5, 5.5]
    assert curve.speedup(3) == pytest.approx((1.81 + 3.07) / 2)
    assert curve.speedup(128) == 5.8  # flat past the last measured point


def test_amdahl_has_a_within_node_and_an_across_node_term():
    curve = AmdahlCurve("a", serial=0.1, cross_node=0.05, gpus_per_node=4)
    assert curve.speedup(1) == 1.0
    assert curve.speedup(4) == pytest.approx(1 / (0.1 + 0.9 / 4))  # one node: Amdahl alone
    assert curve.speedup(8) == pytest.approx(1 / (0.1 + 0.9 / 8 + 0.05 / 2))  # two nodes pay half the cross term
    fitted = scaling_curve("amdahl-resnet50")
    assert [round(fitted.speedup(k), 1) for k in (2, 4, 8, 16)] == [1.8, 3.0, 4.5, 5.5]  # its fit to ElasticFlow's


def test_pollux_curves_are_the_application_profiles_tables():
    for app, profile in APPLICATION_PROFILES.items():
        curve = scaling_curve(f"pollux-{app}")
        assert [curve.speedup(k) for k in range(1, 20)] == [profile.speedup_at(k) for k in range(1, 20)]


def test_every_registered_curve_is_one_on_one_gpu():
    assert all(curve.speedup(1) == 1.0 for curve in SCALING_CURVES.values())


@pytest.mark.parametrize(
    ("points", "message"),
    [
        (((1, 1.0), (4, 3.0), (2, 2.0)), r"^scaling curve 'bad': GPU counts must increase, got 4 then 2$"),
        (((1, 1.0), (2, -1.5)), r"^scaling curve 'bad': speed-up at 2 GPUs must be > 0, got -1.5$"),
        (((2, 1.8),), r"^scaling curve 'bad': the table must start at \(1, 1.0\)"),
    ],
)
def test_a_bad_table_is_refused_naming_the_curve(points, message):
    with pytest.raises(ScalingError, match=message):
        TableCurve("bad", points)


def test_an_unknown_curve_names_itself_and_the_known_ones():
    with pytest.raises(ScalingError, match=r"^scaling: unknown scaling curve 'resnet9000'; expected one of linear, "):
        scaling_curve("resnet9000")

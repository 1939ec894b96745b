import json

import numpy as np
import pytest

from engine.errors import ClusterSpecError
from engine.sim.cluster import DEFAULT_CATALOG, Cluster, NodeGroup, gpu_prices, parse_cluster, parse_cluster_text

REQUIRED_TYPES = ["K80", "P100", "T4", "V100-16", "V100-32", "A10", "L4", "A100-40", "A100-80", "H100-80"]


def test_catalog_has_required_types_and_generic_reference():
    for name in REQUIRED_TYPES:
        assert name in DEFAULT_CATALOG
    assert DEFAULT_CATALOG["generic"].speed == 1.0
    assert DEFAULT_CATALOG["A100-80"].vram_gib == 80


def test_shorthand_layout():
    c = parse_cluster("2x8:A100-80, 3x4:V100-32")
    lay = c.layout
    assert c.n_gpus == 28 and c.n_nodes == 5
    assert lay.type_names == ("A100-80", "V100-32")
    assert lay.node_gpus.tolist() == [8, 8, 4, 4, 4]
    assert lay.node_first_gpu.tolist() == [0, 8, 16, 20, 24]
    assert lay.gpu_node[15] == 1 and lay.gpu_node[16] == 2
    assert lay.gpu_type[:16].tolist() == [0] * 16 and lay.gpu_type[16:].tolist() == [1] * 12
    # default racks: 4 consecutive nodes per rack
    assert lay.node_rack.tolist() == [0, 0, 0, 0, 1]
    assert c.gpus_by_type() == {"A100-80": 16, "V100-32": 12}


def test_shorthand_is_case_insensitive_on_type():
    assert parse_cluster("1x2:a100-80").groups[0].gpu_type == "A100-80"


@pytest.mark.parametrize(
    "spec, fragment",
    [
        ("4x8:A100-80,2x4", "part 2 '2x4'"),
        ("4x8:B200", "unknown GPU type 'B200'"),
        ("0x8:A100-80", "counts must be >= 1"),
        ("", "empty cluster spec"),
        ("abc", "part 1 'abc'"),
    ],
)
def test_bad_shorthand_names_the_part(spec, fragment):
    with pytest.raises(ClusterSpecError) as err:
        parse_cluster(spec)
    assert fragment in str(err.value)


def test_json_with_racks_speeds_and_custom_type(tmp_path):
    spec = {
        "groups": [
            {"gpu_type": "MY-GPU", "nodes": 2, "gpus_per_node": 4, "rack": "east"},
            {"gpu_type": "T4", "nodes": 2, "gpus_per_node": 2, "rack": "west"},
        ],
        "gpu_types": [{"name": "MY-GPU", "vram_gib": 48, "speed": 1.5}],
        "bandwidth": {"cross_rack": 1.0},
        "speeds": {"T4": {"inference": 0.9}},
        "colocation_slowdown": 0.2,
    }
    path = tmp_path / "c.json"
    path.write_text(json.dumps(spec))
    c = parse_cluster(str(path))
    assert c.layout.rack_names == ("east", "west")
    assert c.layout.node_rack.tolist() == [0, 0, 1, 1]
    assert c.speed("training", "MY-GPU") == pytest.approx(1.5)
    assert c.speed("inference", "T4") == pytest.approx(0.9)  # override
    assert c.speed("training", "T4") == pytest.approx(DEFAULT_CATALOG["T4"].speed)
    assert c.bandwidth["cross_node"] == 0.25 and c.bandwidth["cross_rack"] == 1.0
    # round trip
    again = parse_cluster(c.to_dict())
    assert again.to_dict() == c.to_dict()
    assert np.array_equal(again.layout.gpu_type, c.layout.gpu_type)


@pytest.mark.parametrize(
    "data, fragment",
    [
        ({"groups": []}, "'groups' must be a non-empty list"),
        ({"groups": [{"gpu_type": "T4", "nodes": 1}]}, "groups[0] needs gpu_type, nodes and gpus_per_node"),
        ({"groups": [{"gpu_type": "T4", "nodes": 1, "gpus_per_node": 2}], "color": 1}, "unknown keys ['color']"),
        ({"groups": [{"gpu_type": "T4", "nodes": 1, "gpus_per_node": 2}], "speeds": {"X": {}}}, "unknown GPU type 'X'"),
        (
            {"groups": [{"gpu_type": "T4", "nodes": 1, "gpus_per_node": 2}], "bandwidth": {"cross_node": "fast"}},
            "bandwidth.cross_node must be a number",
        ),
    ],
)
def test_bad_json_names_the_part(data, fragment):
    with pytest.raises(ClusterSpecError) as err:
        parse_cluster(data)
    assert fragment in str(err.value)


def test_unreadable_json_file(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text("{not json")
    with pytest.raises(ClusterSpecError, match="not valid JSON"):
        parse_cluster(str(p))
    with pytest.raises(ClusterSpecError, match="does not exist"):
        parse_cluster(str(tmp_path / "missing.json"))


def test_speed_model_by_job_type():
    c = Cluster(groups=(NodeGroup("A100-80", 1, 8),))
    assert c.speed("training", "A100-80") == pytest.approx(2.4)
    assert c.speed("inference", "A100-80") == pytest.approx(2.4**0.6)
    assert c.speed("something-else", "A100-80") == pytest.approx(2.4**0.9)  # treated as batch
    assert c.speed("training", "generic") == 1.0


def test_communication_model():
    c = Cluster(groups=(NodeGroup("generic", 2, 4),))
    assert c.comm_factor("training", 1, 1) == 1.0
    assert c.comm_factor("training", 2, 1) == pytest.approx(1 / 1.25)
    assert c.comm_factor("training", 2, 2) == pytest.approx(1 / 1.6)
    assert c.comm_factor("inference", 2, 2) == pytest.approx(1 / (1 + 0.05 * 0.6))


# ------------------------------------------------------------------------------------------ power and price
def test_catalog_types_carry_power_and_price_with_derived_idle_and_busy():
    for t in DEFAULT_CATALOG.values():
        assert t.board_w > 0 and t.price_per_h > 0
        assert t.idle_w == t.board_w * 15 / 100 and t.busy_w == t.board_w * 76 / 100
    assert DEFAULT_CATALOG["H100-80"].board_w == 700 and DEFAULT_CATALOG["T4"].board_w == 70
    assert DEFAULT_CATALOG["T4"].busy_w == 53.2


def test_cluster_json_gpu_type_power_and_price_round_trip():
    spec = {
        "groups": [{"gpu_type": "MY-GPU", "nodes": 1, "gpus_per_node": 2}],
        "gpu_types": [
            {"name": "MY-GPU", "vram_gib": 48, "speed": 1.5, "board_w": 300, "idle_w": 30, "price_per_h": 1.25}
        ],
    }
    c = parse_cluster(spec)
    t = c.catalog["MY-GPU"]
    assert (t.board_w, t.idle_w, t.busy_w, t.price_per_h) == (300, 30, 228, 1.25)
    assert parse_cluster(c.to_dict()).catalog["MY-GPU"] == t
    assert c.to_dict()["gpu_types"] == [
        {
            "name": "MY-GPU",
            "vram_gib": 48.0,
            "speed": 1.5,
            "board_w": 300,
            "idle_w": 30,
            "busy_w": 228.0,
            "price_per_h": 1.25,
        }
    ]


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("board_w", -1, "gpu_types[0]: GPU type X: board_w must be a number >= 0 or null, got -1"),
        ("idle_w", float("nan"), "GPU type X: idle_w must be a number >= 0 or null, got nan"),
        ("price_per_h", float("inf"), "GPU type X: price_per_h must be a number >= 0 or null, got inf"),
        ("price_per_h", "3", "GPU type X: price_per_h must be a number >= 0 or null, got '3'"),
        ("busy_w", True, "GPU type X: busy_w must be a number >= 0 or null, got True"),
        ("idle_w", 500, "GPU type X: idle_w (500) must be <= busy_w (228)"),
        ("watts", 5, "gpu_types[0]: unknown keys ['watts']"),
    ],
)
def test_bad_gpu_type_power_or_price_is_one_line_naming_type_and_field(field, value, message):
    spec = {
        "groups": [{"gpu_type": "X", "nodes": 1, "gpus_per_node": 1}],
        "gpu_types": [{"name": "X", "vram_gib": 16, "speed": 1, "board_w": 300, field: value}],
    }
    with pytest.raises(ClusterSpecError) as err:
        parse_cluster(spec)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_gpu_prices_by_named_list():
    c = parse_cluster("1x4:V100-32,1x2:K80")
    assert gpu_prices(c) == {"V100-32": 2.48, "K80": 0.45}
    assert gpu_prices(c, "gcp-preemptible-2020") == {"V100-32": 0.74, "K80": 0.135}
    with pytest.raises(ClusterSpecError, match="price list 'gcp-preemptible-2020' .*: no price_per_h for A100-80"):
        gpu_prices(parse_cluster("1x8:A100-80"), "gcp-preemptible-2020")
    with pytest.raises(ClusterSpecError, match="unknown price list 'aws'; known: catalog, on-demand"):
        gpu_prices(c, "aws")
    unpriced = parse_cluster(
        {
            "groups": [{"gpu_type": "X", "nodes": 1, "gpus_per_node": 1}],
            "gpu_types": [{"name": "X", "vram_gib": 16, "speed": 1}],
        }
    )
    with pytest.raises(ClusterSpecError, match="the cluster's GPU types: no price_per_h for X"):
        gpu_prices(unpriced)


_ONE_X = {"groups": [{"gpu_type": "X", "nodes": 1, "gpus_per_node": 1}]}


@pytest.mark.parametrize(
    "extra, key",
    [
        ({"colocation_slowdown": 1e308}, "colocation_slowdown"),
        ({"bandwidth": {"cross_node": 1e300}}, "bandwidth.cross_node"),
        ({"communication": {"training": 1e300}}, "communication.training"),
        ({"speeds": {"X": {"training": 5e-324}}}, "speeds.X.training"),
        ({"speeds": {"X": {"training": 1e300}}}, "speeds.X.training"),
        ({"nodes_per_rack": 10**30}, "nodes_per_rack"),
        ({"gpu_types": [{"name": "X", "vram_gib": 16, "speed": 5e-324}]}, "speed"),
        ({"gpu_types": [{"name": "X", "vram_gib": 16, "speed": 1e300}]}, "speed"),
        ({"gpu_types": [{"name": "X", "vram_gib": 1e300, "speed": 1}]}, "vram_gib"),
        ({"gpu_types": [{"name": "X", "vram_gib": 16, "speed": 1, "board_w": 1e300}]}, "board_w"),
        ({"gpu_types": [{"name": "X", "vram_gib": 16, "speed": 1, "busy_w": 1e300}]}, "busy_w"),
        ({"gpu_types": [{"name": "X", "vram_gib": 16, "speed": 1, "price_per_h": 1e300}]}, "price_per_h"),
    ],
)
def test_physically_absurd_cluster_numbers_are_refused_in_one_line_naming_the_key(extra, key):
    spec = {**_ONE_X, "gpu_types": [{"name": "X", "vram_gib": 16, "speed": 1}], **extra}
    with pytest.raises(ClusterSpecError) as err:
        parse_cluster_text(json.dumps(spec))
    message = str(err.value)
    assert key in message and ("at most" in message or "at least" in message)
    assert "\n" not in message


def test_a_huge_colocation_slowdown_no_longer_divides_by_zero_in_the_simulator():
    """Issue 32: colocation_slowdown 1e308 with three fractional jobs on one GPU made the co-location divisor
    infinite and the rate 0 (ZeroDivisionError from the simulator); the largest accepted slowdown runs."""
    from engine import Job, make_scheduler, simulate
    from engine.sim.cluster import MAX_COLOCATION_SLOWDOWN

    jobs = [Job(i, 0.0, 10.0, gpu_fraction=0.25) for i in range(3)]
    with pytest.raises(ClusterSpecError, match="colocation_slowdown"):
        parse_cluster_text(
            '{"groups": [{"gpu_type": "T4", "nodes": 1, "gpus_per_node": 1}], "colocation_slowdown": 1e308}'
        )
    top = parse_cluster_text(
        '{"groups": [{"gpu_type": "T4", "nodes": 1, "gpus_per_node": 1}], '
        f'"colocation_slowdown": {MAX_COLOCATION_SLOWDOWN}}}'
    )
    result = simulate(top, jobs, make_scheduler("fifo"))
    assert np.isfinite(result.end_s).all() and (result.end_s > 10.0).all()

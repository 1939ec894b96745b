import json

import numpy as np
import pytest

from engine.errors import ClusterSpecError
from engine.sim.cluster import DEFAULT_CATALOG, Cluster, NodeGroup, parse_cluster

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


@pytest.mark.parametrize("spec, fragment", [
    ("4x8:A100-80,2x4", "part 2 '2x4'"),
    ("4x8:B200", "unknown GPU type 'B200'"),
    ("0x8:A100-80", "counts must be >= 1"),
    ("", "empty cluster spec"),
    ("abc", "part 1 'abc'"),
])
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


@pytest.mark.parametrize("data, fragment", [
    ({"groups": []}, "'groups' must be a non-empty list"),
    ({"groups": [{"gpu_type": "T4", "nodes": 1}]}, "groups[0] needs gpu_type, nodes and gpus_per_node"),
    ({"groups": [{"gpu_type": "T4", "nodes": 1, "gpus_per_node": 2}], "color": 1}, "unknown keys ['color']"),
    ({"groups": [{"gpu_type": "T4", "nodes": 1, "gpus_per_node": 2}], "speeds": {"X": {}}}, "unknown GPU type 'X'"),
    ({"groups": [{"gpu_type": "T4", "nodes": 1, "gpus_per_node": 2}], "bandwidth": {"cross_node": "fast"}},
     "bandwidth.cross_node must be a number"),
])
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
    assert c.speed("inference", "A100-80") == pytest.approx(2.4 ** 0.6)
    assert c.speed("something-else", "A100-80") == pytest.approx(2.4 ** 0.9)  # treated as batch
    assert c.speed("training", "generic") == 1.0


def test_communication_model():
    c = Cluster(groups=(NodeGroup("generic", 2, 4),))
    assert c.comm_factor("training", 1, 1) == 1.0
    assert c.comm_factor("training", 2, 1) == pytest.approx(1 / 1.25)
    assert c.comm_factor("training", 2, 2) == pytest.approx(1 / 1.6)
    assert c.comm_factor("inference", 2, 2) == pytest.approx(1 / (1 + 0.05 * 0.6))

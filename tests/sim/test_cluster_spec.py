"""Cluster.to_spec: the shortest text that reads back to an equal cluster (the Cluster page stores it)."""

import json
from dataclasses import replace

from engine.sim.cluster import NodeGroup, parse_cluster, parse_cluster_text


def test_default_model_without_racks_is_shorthand():
    cluster = parse_cluster("2x8:A100-80,3x4:T4")
    assert cluster.to_spec() == "2x8:A100-80,3x4:T4"
    assert cluster.vram_gib == 2 * 8 * 80 + 3 * 4 * cluster.catalog["T4"].vram_gib


def test_a_rack_or_a_changed_model_keeps_the_json():
    cluster = parse_cluster("2x8:A100-80")
    racked = replace(cluster, groups=(NodeGroup("A100-80", 2, 8, "r1"),))
    other_model = replace(cluster, nodes_per_rack=2)
    for c in (racked, other_model):
        spec = c.to_spec()
        assert json.loads(spec) == c.to_dict() and parse_cluster_text(spec) == c

"""The cluster picture."""

from engine import parse_cluster
from engine.viz.cluster import cluster_figure, cluster_frame


def test_cluster_frame_and_figure():
    cluster = parse_cluster({"groups": [{"gpu_type": "A100-80", "nodes": 2, "gpus_per_node": 4, "rack": "a"},
                                        {"gpu_type": "T4", "nodes": 1, "gpus_per_node": 2, "rack": "b"}]})
    df = cluster_frame(cluster)
    assert len(df) == 10 and df["x"].tolist() == [0] * 4 + [1] * 4 + [3] * 2  # one gap column before rack b
    fig = cluster_figure(cluster)
    assert {t.name for t in fig.data} == {"A100-80", "T4"}
    assert [a.text for a in fig.layout.annotations] == ["a", "b"]

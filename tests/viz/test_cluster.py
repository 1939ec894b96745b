"""The cluster picture."""

from engine import parse_cluster
from engine.viz.cluster import cluster_figure, cluster_frame


def test_cluster_frame_and_figure():
    cluster = parse_cluster(
        {
            "groups": [
                {"gpu_type": "A100-80", "nodes": 2, "gpus_per_node": 4, "rack": "a"},
                {"gpu_type": "T4", "nodes": 1, "gpus_per_node": 2, "rack": "b"},
            ]
        }
    )
    df = cluster_frame(cluster)
    assert len(df) == 10 and df["x"].tolist() == [0] * 4 + [1] * 4 + [3] * 2  # one gap column before rack b
    fig = cluster_figure(cluster)
    assert {t.name for t in fig.data} == {"A100-80", "T4"}
    assert [a.text for a in fig.layout.annotations] == ["a", "b"]


def test_nodes_are_named_and_the_gpu_axis_starts_at_the_first_gpu():
    cluster = parse_cluster("3x4:V100-32")
    fig = cluster_figure(cluster).to_plotly_json()["layout"]
    assert list(fig["xaxis"]["ticktext"]) == ["n0", "n1", "n2"] and list(fig["xaxis"]["tickvals"]) == [0, 1, 2]
    assert fig["yaxis"]["range"] == [3.5, -0.5] and list(fig["yaxis"]["ticktext"]) == [
        "GPU 0",
        "GPU 1",
        "GPU 2",
        "GPU 3",
    ]
    many = cluster_figure(parse_cluster("100x1:T4")).to_plotly_json()["layout"]["xaxis"]
    assert len(many["ticktext"]) <= 40 and list(many["ticktext"][:2]) == ["n0", "n3"]

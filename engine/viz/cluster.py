"""A picture of the cluster: one square per GPU, nodes in columns grouped by rack, coloured by GPU type."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from engine.sim.cluster import Cluster
from engine.viz.style import PALETTE, plain, plain_all

#: At most this many nodes are named under the picture (every k-th when there are more).
MAX_NODE_LABELS = 40


def cluster_frame(cluster: Cluster) -> pd.DataFrame:
    """One row per GPU: ``gpu, node, slot, rack, gpu_type, x`` where ``x`` places nodes left to right with
    a gap between racks."""
    lay = cluster.layout
    gpu = np.arange(lay.n_gpus)
    node = lay.gpu_node
    slot = gpu - lay.node_first_gpu[node]
    rack = lay.node_rack[node]
    # Node position: its index plus one empty column per rack boundary before it.
    node_x = np.arange(lay.n_nodes) + np.concatenate([[0], np.cumsum(np.diff(lay.node_rack) != 0)])
    return pd.DataFrame(
        {
            "gpu": gpu,
            "node": node,
            "slot": slot,
            "rack": np.array(lay.rack_names, dtype=object)[rack],
            "gpu_type": np.array(lay.type_names, dtype=object)[lay.gpu_type],
            "x": node_x[node],
        }
    )


def cluster_figure(cluster: Cluster) -> go.Figure:
    """A picture of the cluster: a column of squares per node (one square per GPU, coloured by type),
    nodes grouped by rack with a gap between racks."""
    df = cluster_frame(cluster)
    big = len(df) > 2000
    marker = go.Scattergl if big else go.Scatter
    n_cols = int(df["x"].max()) + 1 if len(df) else 1
    size = float(np.clip(600 / max(n_cols, 1), 3, 16))
    fig = go.Figure()
    colours = {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(cluster.layout.type_names)}
    for t, part in df.groupby("gpu_type", sort=False):
        fig.add_trace(
            marker(
                x=part["x"],
                y=part["slot"],
                mode="markers",
                name=plain(t),
                marker=dict(symbol="square", size=size, color=colours[t], line=dict(width=0)),
                customdata=np.stack(
                    [part["gpu"], part["node"], np.array(plain_all(part["rack"]), dtype=object)], axis=1
                ),
                hovertemplate="GPU %{customdata[0]} · node %{customdata[1]} · %{customdata[2]}"
                f"<extra>{plain(t)}</extra>",
            )
        )
    if len(df) and cluster.layout.n_nodes <= 200:
        for rack, part in df.groupby("rack", sort=False):  # above the nodes, in the plot's top margin
            fig.add_annotation(
                x=(part["x"].min() + part["x"].max()) / 2,
                y=1,
                yref="paper",
                yanchor="bottom",
                text=plain(rack),
                showarrow=False,
                font=dict(size=10),
            )
    max_slot = int(df["slot"].max()) if len(df) else 0
    nodes = df.drop_duplicates("node")
    every = max(1, -(-len(nodes) // MAX_NODE_LABELS))  # ceil: at most MAX_NODE_LABELS labels
    fig.update_yaxes(
        title_text="GPU in node",
        range=[max_slot + 0.5, -0.5],
        tickmode="array",
        tickvals=list(range(max_slot + 1)),
        ticktext=[f"GPU {k}" for k in range(max_slot + 1)],
        showgrid=False,
        zeroline=False,
    )
    fig.update_xaxes(
        title_text="node (grouped by rack)",
        tickmode="array",
        tickvals=nodes["x"].tolist()[::every],
        ticktext=[f"n{n}" for n in nodes["node"].tolist()[::every]],
        showgrid=False,
        zeroline=False,
    )
    fig.update_layout(
        template="plotly_white",
        height=int(np.clip(100 + 26 * (max_slot + 1), 220, 420)),
        margin=dict(l=70, r=20, t=60, b=50),
        legend=dict(orientation="h", yanchor="bottom", y=1.12, title_text="GPU type"),
    )
    return fig

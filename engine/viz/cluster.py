"""A picture of the cluster: one square per GPU, nodes in columns grouped by rack, coloured by GPU type."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from engine.sim.cluster import Cluster
from engine.viz.style import PALETTE


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
    return pd.DataFrame({
        "gpu": gpu, "node": node, "slot": slot, "rack": np.array(lay.rack_names, dtype=object)[rack],
        "gpu_type": np.array(lay.type_names, dtype=object)[lay.gpu_type], "x": node_x[node],
    })


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
        fig.add_trace(marker(x=part["x"], y=part["slot"], mode="markers", name=str(t),
                             marker=dict(symbol="square", size=size, color=colours[t], line=dict(width=0)),
                             customdata=np.stack([part["gpu"], part["node"], part["rack"]], axis=1),
                             hovertemplate="GPU %{customdata[0]} · node %{customdata[1]} · %{customdata[2]}"
                                           f"<extra>{t}</extra>"))
    if len(df) and cluster.layout.n_nodes <= 200:
        for rack, part in df.groupby("rack", sort=False):
            fig.add_annotation(x=(part["x"].min() + part["x"].max()) / 2, y=-1, text=str(rack), showarrow=False,
                               yanchor="top", font=dict(size=10))
    max_slot = int(df["slot"].max()) if len(df) else 1
    fig.update_yaxes(title_text="GPU slot in node (index)", range=[max_slot + 0.5, -2.5])
    fig.update_xaxes(title_text="node (grouped by rack)", showticklabels=False, showgrid=False)
    fig.update_layout(template="plotly_white", height=int(np.clip(40 + 26 * (max_slot + 3), 220, 420)),
                      margin=dict(l=60, r=20, t=30, b=40), legend=dict(orientation="h", y=1.1, title_text="GPU type"))
    return fig

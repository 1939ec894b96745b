"""Cluster: edit node groups, pick a preset, see the GPU catalog and a picture of the racks."""

import json
from dataclasses import replace

import pandas as pd
import streamlit as st

from app_pages.lib import common
from engine.sim.cluster import CLUSTER_SOURCES, DEFAULT_CATALOG, NodeGroup
from engine.viz.cluster import cluster_figure

st.title("Cluster")
sc = common.scenario()

OPENB_NODES = common.REPO.parent / "shared" / "traces" / "alibaba-gpu-v2023-openb" / "openb_node_list_gpu_node.csv"
PRESETS = {
    "small heterogeneous (2×8 A100, 4×4 V100, 2×4 T4)": "2x8:A100-80,4x4:V100-32,2x4:T4",
    "64 × A100 (8 nodes × 8)": "8x8:A100-80",
    "tiny (2 nodes × 4 T4)": "2x4:T4",
}
if "openb" in CLUSTER_SOURCES and OPENB_NODES.is_file():
    # A scenario (and so a link) carries the cluster itself, never a path: the server reads its own file here.
    PRESETS["Alibaba PAI, 2023 (openb node list: 1,213 nodes)"] = json.dumps(
        CLUSTER_SOURCES["openb"](str(OPENB_NODES)).to_dict(), separators=(",", ":"))

c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
preset = c1.selectbox("Start from a preset", list(PRESETS), index=None, placeholder="choose a preset…",
                      key="cluster_preset")
if c2.button("Use preset", disabled=preset is None, key="cluster_use_preset", width="stretch"):
    common.set_scenario(replace(sc, cluster=PRESETS[preset], name=""))
    st.rerun()

with common.engine_errors("the cluster is invalid"):
    cluster = common.cluster_of(sc)

# ---------------------------------------------------------------- node groups
st.subheader("Node groups")
st.caption("Each row is a group of identical nodes. Leave *rack* empty to fill racks of "
           f"{cluster.nodes_per_rack} nodes automatically. Add or delete rows at the bottom of the table; edits take "
           "effect when you press *Apply node groups*.")
groups = pd.DataFrame([{"gpu_type": g.gpu_type, "nodes": g.nodes, "gpus_per_node": g.gpus_per_node,
                        "rack": g.rack or ""} for g in cluster.groups])
# The edits wait in a form until Apply: a rerun for each edit rebuilt the table while the user went on typing, and
# the edits typed meanwhile were lost.
with st.form("cluster_groups_form", border=False):
    edited = st.data_editor(
        groups, num_rows="dynamic", hide_index=True, width="stretch", key=f"cluster_groups_{hash(sc.cluster)}",
        column_config={
            "gpu_type": st.column_config.SelectboxColumn("GPU type", options=list(cluster.catalog), required=True),
            "nodes": st.column_config.NumberColumn("nodes", min_value=1, max_value=10_000, step=1, required=True),
            "gpus_per_node": st.column_config.NumberColumn("GPUs per node", min_value=1, max_value=64, step=1,
                                                           required=True),
            "rack": st.column_config.TextColumn("rack (optional)"),
        })
    applied = st.form_submit_button("Apply node groups", type="primary")


def _groups_of(table: pd.DataFrame) -> tuple[NodeGroup, ...]:
    """The node groups the edited table holds (rows without GPU type, nodes or GPUs per node are left out)."""
    rows = table.dropna(subset=["gpu_type", "nodes", "gpus_per_node"])
    return tuple(NodeGroup(r.gpu_type, int(r.nodes), int(r.gpus_per_node),
                           str(r.rack).strip() if isinstance(r.rack, str) and r.rack.strip() else None)
                 for r in rows.itertuples())


if applied and not edited.reset_index(drop=True).equals(groups):
    edited_cluster = common.engine_call(replace, cluster, groups=_groups_of(edited), what="node groups")
    spec = None if edited_cluster is None else edited_cluster.to_spec()
    if spec is not None and spec != sc.cluster:
        new = replace(sc, cluster=spec)
        if common.engine_call(new.build_cluster, what="node groups") is not None:
            common.set_scenario(new)
            st.rerun()

with st.expander("Cluster as text (shorthand or JSON)"):
    text = st.text_area("Cluster spec", sc.cluster, key=f"cluster_text_{hash(sc.cluster)}", height=80,
                        help="e.g. 4x8:A100-80,2x4:V100-32 (nodes × GPUs per node : type), or the JSON form")
    if st.button("Apply", key="cluster_text_apply") and text.strip() != sc.cluster:
        new = common.engine_call(replace, sc, cluster=text.strip(), what="cluster")
        if new is not None and common.engine_call(new.build_cluster, what="cluster") is not None:
            common.set_scenario(new)
            st.rerun()

# ---------------------------------------------------------------- totals and picture
lay = cluster.layout
vram = cluster.vram_gib
m = st.columns(4)
m[0].metric("Racks", len(lay.rack_names))
m[1].metric("Nodes", cluster.n_nodes)
m[2].metric("GPUs", cluster.n_gpus)
m[3].metric("GPU memory", f"{vram / 1024:.1f} TiB" if vram >= 10_240 else f"{vram:.0f} GiB")
common.plot(cluster_figure(cluster), "cluster_picture")

st.subheader("GPU catalog")
st.caption("Speed is relative training throughput (V100 = 1). Inference and interactive jobs gain less from a "
           "faster GPU; see engine/sim/cluster.py for the model.")
catalog = pd.DataFrame([{"GPU type": t.name, "memory (GiB)": t.vram_gib, "relative speed": t.speed,
                         "in this cluster": cluster.gpus_by_type().get(t.name, 0),
                         "built in": t.name in DEFAULT_CATALOG} for t in cluster.catalog.values()])
st.dataframe(catalog, hide_index=True, width="stretch", key="gpu_catalog")

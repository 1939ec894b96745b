"""Topology-aware packing: multi-GPU jobs on the fewest nodes, then the fewest racks.

Spreading a training job over nodes or racks slows it down (see the communication model in
:mod:`engine.sim.cluster`), so ``topo-pack`` looks for, in this order:

1. one node with enough idle GPUs (best fit: the one with the fewest idle GPUs, keeping big holes whole);
2. the fewest nodes inside one rack (racks tried per GPU type, since a job's GPUs share one type);
3. the fewest racks, taking the emptiest racks and, inside them, the emptiest nodes first.

Single-GPU and fractional jobs go to the fullest GPU or node that fits (best fit).
"""

from __future__ import annotations

import numpy as np

from engine.schedulers.placement import PLACEMENTS, _node_gpus, best_fit
from engine.schedulers.registry import SchedulerSpec, list_scheduler, register
from engine.sim.job import Job
from engine.sim.state import ClusterState


def _fewest_nodes(free: np.ndarray, nodes: np.ndarray, k: int) -> list[int]:
    """Nodes (from ``nodes``, all with ``free > 0``, together holding >= ``k`` idle GPUs) covering ``k`` GPUs
    with as few nodes as possible; the last node is the smallest one that covers the remainder."""
    order = nodes[np.argsort(-free[nodes], kind="stable")]
    taken: list[int] = []
    left = k
    for n in order.tolist():
        if left <= 0:
            break
        taken.append(n)
        left -= int(free[n])
    if len(taken) > 1:
        # Swap the last node for the smallest unused node that still covers what the others leave over.
        rest = k - int(free[taken[:-1]].sum())
        unused = order[len(taken) :]
        fits = unused[free[unused] >= rest]
        if fits.size:
            smallest = fits[np.argmin(free[fits])]
            if free[smallest] < free[taken[-1]]:
                taken[-1] = int(smallest)
    return taken


def topo_pack(state: ClusterState, job: Job) -> tuple[int, ...] | None:
    """GPUs for ``job`` on the fewest nodes, then the fewest racks (``None`` if it cannot start now)."""
    k = job.gpus
    if job.gpu_fraction < 1.0 or k == 1:
        return best_fit(state, job)
    if state.free_gpus < k:
        return None
    lay = state.layout
    free = state.node_free
    elig = state.eligible_nodes(job)
    whole = np.flatnonzero(elig & (free >= k))
    if whole.size:
        return _node_gpus(state, int(whole[np.argmin(free[whole])]), k)
    usable = np.flatnonzero(elig & (free > 0))
    if usable.size == 0:
        return None
    n_racks = len(lay.rack_names)
    best: tuple[int, int, list[int]] | None = None  # (racks, nodes, chosen nodes)
    for t in np.unique(lay.node_type[usable]).tolist():
        nodes_t = usable[lay.node_type[usable] == t]
        if int(free[nodes_t].sum()) < k:
            continue
        racks_t = lay.node_rack[nodes_t]
        rack_free = np.bincount(racks_t, weights=free[nodes_t], minlength=n_racks)
        one_rack = np.flatnonzero(rack_free >= k)
        if one_rack.size:
            # Fewest nodes inside one rack; ties go to the rack with the least idle capacity (best fit).
            for r in one_rack[np.argsort(rack_free[one_rack], kind="stable")].tolist():
                in_rack_nodes = _fewest_nodes(free, nodes_t[racks_t == r], k)
                cand = (1, len(in_rack_nodes), in_rack_nodes)
                if best is None or cand[:2] < best[:2]:
                    best = cand
            continue
        # Fewest racks: emptiest racks first, and inside each the emptiest nodes first.
        rack_order = np.argsort(-rack_free, kind="stable")
        chosen: list[int] = []
        left, used_racks = k, 0
        for r in rack_order.tolist():
            if left <= 0:
                break
            in_rack = nodes_t[racks_t == r]
            take = _fewest_nodes(free, in_rack, min(left, int(rack_free[r])))
            chosen.extend(take)
            left -= int(free[take].sum())
            used_racks += 1
        cand = (used_racks, len(chosen), chosen)
        if best is None or cand[:2] < best[:2]:
            best = cand
    if best is None:
        return None
    out: list[int] = []
    for n in best[2]:
        out.extend(_node_gpus(state, n, k - len(out)))
    return tuple(out)


PLACEMENTS["topo-pack"] = lambda: topo_pack

register(
    SchedulerSpec(
        "topo-pack",
        list_scheduler("topo-pack", "fifo", "topo-pack"),
        "Starts jobs in arrival order (skipping those that do not fit) and puts each multi-GPU job on as few "
        "nodes as possible: one node if it can, else the fewest nodes in one rack, else the fewest racks. "
        "Training jobs then talk over fast local links instead of the slower network between nodes and racks.",
    )
)

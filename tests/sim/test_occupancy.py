"""The occupancy bookkeeping: lists, numpy twins and bitmask indexes always agree with a plain recount."""

from __future__ import annotations

import numpy as np
import pytest

from engine import parse_cluster
from engine.sim.occupancy import Occupancy, bits, lowest_bit

CLUSTERS = ["2x4:T4,3x8:A100-80,4x2:V100-32", "1x1:generic", "5x3:generic,1x8:H100-80"]


def recount(occ: Occupancy, lay, twins: bool = True) -> None:
    """Assert every index of ``occ`` equals what a scan of its per-GPU lists gives; with ``twins``, sync the numpy
    twins and assert they equal the lists."""
    n_nodes = lay.n_nodes
    if twins:
        occ.sync()
        assert occ.free == occ.np_free.tolist()
        assert occ.free_vram == occ.np_free_vram.tolist()
        assert occ.tenants == occ.np_tenants.tolist()
        assert occ.node_free == occ.np_node_free.tolist()
    idle = [occ.tenants[g] == 0 for g in range(lay.n_gpus)]
    for n in range(n_nodes):
        first, count = int(lay.node_first_gpu[n]), int(lay.node_gpus[n])
        assert occ.node_free[n] == sum(idle[first : first + count])
        assert list(bits(occ.node_idle[n])) == [g - first for g in range(first, first + count) if idle[g]]
    for c in range(len(occ.nodes_with)):
        assert occ.nodes_with[c] == sum(1 << n for n in range(n_nodes) if occ.node_free[n] >= c)
    assert occ.idle_gpus == sum(idle)
    assert occ.type_idle == [
        sum(idle[g] for g in range(lay.n_gpus) if lay.gpu_type[g] == t) for t in range(len(lay.type_names))
    ]
    for g in range(lay.n_gpus):
        if idle[g]:
            assert occ.free[g] == 1.0 and occ.free_vram[g] == occ.gpu_vram[g]


def brute_first(occ, k, mask):
    nodes = [n for n in range(len(occ.node_free)) if mask >> n & 1 and occ.node_free[n] >= k]
    return nodes[0] if nodes else -1


def brute_tightest(occ, k, mask):
    nodes = [n for n in range(len(occ.node_free)) if mask >> n & 1 and occ.node_free[n] >= k]
    return min(nodes, key=lambda n: (occ.node_free[n], n)) if nodes else -1


@pytest.mark.parametrize("spec", CLUSTERS)
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("sync_every", [1, 7])
def test_random_takes_and_releases_keep_every_index_exact(spec, seed, sync_every):
    """Every index stays exact; the numpy twins, synced after every change or only every 7th, equal the lists."""
    lay = parse_cluster(spec).layout
    occ = Occupancy(lay)
    rng = np.random.default_rng(seed)
    whole: list[tuple[int, ...]] = []  # GPU sets held by whole-GPU jobs
    shares: list[tuple[int, float, float]] = []  # (GPU, fraction, GiB) of fractional tenants
    released: list[int] = []
    taken: list[int] = []
    recount(occ, lay)
    for step in range(300):
        op = rng.integers(4)
        idle = [g for g in range(lay.n_gpus) if occ.tenants[g] == 0]
        if op == 0 and idle:  # a whole-GPU job on 1-3 idle GPUs of one type
            t = lay.gpu_type[rng.choice(idle)]
            same = [g for g in idle if lay.gpu_type[g] == t]
            gpus = tuple(int(g) for g in rng.choice(same, size=min(len(same), int(rng.integers(1, 4))), replace=False))
            occ.take_whole(gpus)
            whole.append(gpus)
            taken.extend(gpus)
        elif op == 1:  # a fractional job on an idle or shared GPU with room
            f = float(rng.choice([0.1, 0.25, 0.5]))
            room = [
                g
                for g in range(lay.n_gpus)
                if (occ.tenants[g] == 0 or g in {s[0] for s in shares})
                and occ.free[g] >= f - 1e-9
                and occ.free_vram[g] >= 2.0
            ]
            if room:
                g = int(rng.choice(room))
                occ.take_share(g, f, 2.0)
                shares.append((g, f, 2.0))
                taken.append(g)
        elif op == 2 and whole:
            gpus = whole.pop(int(rng.integers(len(whole))))
            occ.release_whole(gpus)
            released.extend(gpus)
        elif op == 3 and shares:
            share = shares.pop(int(rng.integers(len(shares))))
            occ.release_share(*share)
            released.append(share[0])
        recount(occ, lay, twins=step % sync_every == 0)
        assert occ.released == released  # every GPU a job left, in order
        assert occ.taken == taken  # every GPU a job started on, in order
        assert occ.shared == sorted({s[0] for s in shares})
        mask = int(rng.integers(1, 1 << lay.n_nodes))
        for k in range(1, occ.max_node_gpus + 2):
            assert occ.first_node(k, mask) == brute_first(occ, k, mask)
            assert occ.tightest_node(k, mask) == brute_tightest(occ, k, mask)
        node = int(rng.integers(lay.n_nodes))
        first = int(lay.node_first_gpu[node])
        expect = [g for g in range(first, first + int(lay.node_gpus[node])) if occ.tenants[g] == 0]
        assert occ.idle_of_node(node, 2) == expect[:2]


def test_last_tenant_leaving_resets_the_gpu_exactly():
    occ = Occupancy(parse_cluster("1x1:T4").layout)
    for f in (0.1, 0.2, 0.3):
        occ.take_share(0, f, f * 16)
    for f in (0.1, 0.2, 0.3):
        occ.release_share(0, f, f * 16)
    assert occ.free == [1.0] and occ.free_vram == [16.0] and occ.shared == []  # no floating-point drift
    assert occ.node_free == [1] and occ.idle_gpus == 1


def test_bit_helpers():
    assert lowest_bit(0b10100) == 2
    assert list(bits(0b10100)) == [2, 4]
    assert list(bits(0)) == []

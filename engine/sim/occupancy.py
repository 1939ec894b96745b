"""Who holds which GPU: the engine's occupancy bookkeeping, with indexes that make placement O(1)-ish.

:class:`Occupancy` keeps, for every GPU, its free share, free memory and number of tenants, and for every
node its number of idle GPUs. It holds each of these twice: as plain Python lists, which the engine's hot loop
reads and writes (indexing a list is several times faster than indexing a numpy array), and as numpy arrays,
which schedulers read through :class:`engine.sim.state.ClusterState`. The arrays are brought up to date on demand
(:meth:`Occupancy.sync`, called by every reader), from the GPUs the logs ``taken`` and ``released`` name since
the last sync: a run whose scheduler never reads them never pays for them.

It also keeps integer bitmasks (Python ints used as bit sets; bit ``i`` is node or GPU ``i``):

* ``nodes_with[c]``: nodes with at least ``c`` idle GPUs (``c = 0 .. max GPUs per node + 1``). When a node
  goes from ``c`` to ``c - 1`` idle GPUs only ``nodes_with[c]`` changes, so updates cost O(1) per GPU;
  "lowest-numbered node with at least ``k`` idle GPUs among the eligible ones" is then
  ``lowest(nodes_with[k] & eligible)``, and "fewest idle GPUs >= ``k``" walks ``c = k, k + 1, ...``.
* ``node_idle[n]``: the idle GPUs of node ``n`` (bit ``i`` is GPU ``node_first_gpu[n] + i``).

and ``shared``, the GPUs that hold fractional jobs as a sorted list: placement rules walk it in id order, and a
step along a list costs far less than one along a bitmask of a thousand GPUs (every bit operation on such a
mask builds a new big integer).

"Idle" means no tenant at all; a GPU shared by fractional jobs is not idle. A node that is down (failed, not yet
repaired: :mod:`engine.sim.failures`) holds each of its GPUs as a whole-GPU tenant would, so every index above
counts them as taken and no placement rule finds them.

Compiled, like the other hot modules; its idioms are explained once in ARCHITECTURE.md.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from typing import Any

import numpy as np

from engine.sim.cluster import Layout


def lowest_bit(mask: int) -> int:
    """Index of the lowest set bit of ``mask`` (> 0)."""
    return (mask & -mask).bit_length() - 1


def bits(mask: int):
    """Indexes of the set bits of ``mask``, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class Occupancy:
    """GPU and node occupancy of one simulation (engine-owned; schedulers only read it).

    Attributes (lists are indexed by GPU or node id; ``np_*`` are the numpy twins handed to schedulers, current
    after :meth:`sync` and written through the memoryviews ``mv_*``):
        free, np_free: free share of each GPU (1.0 idle, 0.0 full).
        free_vram, np_free_vram: free memory of each GPU, GiB.
        tenants, np_tenants: jobs on each GPU.
        node_free, np_node_free: idle GPUs of each node.
        idle_gpus: idle GPUs in the cluster; type_idle: idle GPUs per GPU type.
        nodes_with, node_idle: the bitmask indexes described in the module docstring.
        shared: GPUs that hold fractional jobs, ascending.
        type_nodes: per GPU type, the bitmask of its nodes.
        node_down: whether each node is down (failed, under repair); node_failures: how many times each node has
            failed so far (what a failure-aware scheduler reads); node_up_since_s: when each node was last
            repaired (0 if never); up_gpus: GPUs on nodes that are up.
        released: every GPU a job has left, in order (a GPU once per job leaving it): a scheduler that
            remembers where it read up to knows which GPUs gained room since.
        taken: every GPU a job has started on, in order (a GPU once per job taking it): likewise, the GPUs
            that lost room since.
    """

    __slots__ = (
        "gpu_node",
        "gpu_type",
        "gpu_vram",
        "node_first",
        "node_type",
        "max_node_gpus",
        "free",
        "free_vram",
        "tenants",
        "node_free",
        "np_free",
        "np_free_vram",
        "np_tenants",
        "np_node_free",
        "mv_free",
        "mv_free_vram",
        "mv_tenants",
        "mv_node_free",
        "idle_gpus",
        "type_idle",
        "nodes_with",
        "node_idle",
        "shared",
        "type_nodes",
        "released",
        "taken",
        "synced_taken",
        "synced_released",
        "node_gpus",
        "node_down",
        "node_failures",
        "node_up_since_s",
        "up_gpus",
    )

    def __init__(self, layout: Layout) -> None:
        self.gpu_node: list[int] = layout.gpu_node.tolist()
        self.gpu_type: list[int] = layout.gpu_type.tolist()
        type_vram = layout.type_vram_gib.tolist()
        self.gpu_vram: list[float] = [type_vram[t] for t in self.gpu_type]
        self.node_first: list[int] = layout.node_first_gpu.tolist()
        self.node_type: list[int] = layout.node_type.tolist()
        self.node_gpus: list[int] = layout.node_gpus.tolist()
        node_gpus = self.node_gpus
        n = len(self.gpu_node)
        self.node_down = [False] * len(node_gpus)
        self.node_failures = [0] * len(node_gpus)
        self.node_up_since_s = [0.0] * len(node_gpus)
        self.up_gpus = n
        self.free = [1.0] * n
        self.free_vram = list(self.gpu_vram)
        self.tenants = [0] * n
        self.node_free = list(node_gpus)
        self.np_free = np.ones(n)
        self.np_free_vram = np.array(self.gpu_vram, dtype=float)
        self.np_tenants = np.zeros(n, dtype=np.int64)
        self.np_node_free = layout.node_gpus.copy()
        # sync() writes the twins through memoryviews: a store through one costs less than half of numpy's item
        # assignment, and the arrays stay the ones handed to schedulers.
        self.mv_free: Any = self.np_free.data
        self.mv_free_vram: Any = self.np_free_vram.data
        self.mv_tenants: Any = self.np_tenants.data
        self.mv_node_free: Any = self.np_node_free.data
        self.idle_gpus = n
        self.type_idle: list[int] = np.bincount(layout.gpu_type, minlength=len(layout.type_names)).tolist()
        self.max_node_gpus = max(node_gpus)
        self.nodes_with = [0] * (self.max_node_gpus + 2)
        for node, count in enumerate(node_gpus):
            for c in range(count + 1):
                self.nodes_with[c] = self.nodes_with[c] | (1 << node)
        self.node_idle = [(1 << count) - 1 for count in node_gpus]
        self.shared: list[int] = []
        self.type_nodes = [0] * len(layout.type_names)
        for node, t in enumerate(self.node_type):
            self.type_nodes[t] = self.type_nodes[t] | (1 << node)
        # Lists, not array("q"): appending to a list is several times cheaper, and the ids are the ints of the
        # jobs' GPU tuples, so an entry costs a pointer either way.
        self.released: list[int] = []
        self.taken: list[int] = []
        self.synced_taken = 0  # how much of taken and released the numpy twins reflect
        self.synced_released = 0

    # ----------------------------------------------------------------- updates
    def _idle_to_busy(self, g: int) -> None:
        node = self.gpu_node[g]
        self.node_idle[node] = self.node_idle[node] ^ (1 << (g - self.node_first[node]))
        c = self.node_free[node]
        self.nodes_with[c] = self.nodes_with[c] ^ (1 << node)  # it no longer has c idle GPUs
        self.node_free[node] = c - 1
        self.type_idle[self.gpu_type[g]] = self.type_idle[self.gpu_type[g]] - 1
        self.idle_gpus -= 1

    def _busy_to_idle(self, g: int) -> None:
        node = self.gpu_node[g]
        self.node_idle[node] = self.node_idle[node] ^ (1 << (g - self.node_first[node]))
        c = self.node_free[node] + 1
        self.nodes_with[c] = self.nodes_with[c] ^ (1 << node)  # it now has c idle GPUs
        self.node_free[node] = c
        self.type_idle[self.gpu_type[g]] = self.type_idle[self.gpu_type[g]] + 1
        self.idle_gpus += 1

    def take_whole(self, gpus: tuple[int, ...]) -> None:
        """Give idle ``gpus`` (all of one GPU type) to one whole-GPU job."""
        free, free_vram, tenants = self.free, self.free_vram, self.tenants
        gpu_node, node_first, node_idle, node_free = self.gpu_node, self.node_first, self.node_idle, self.node_free
        nodes_with = self.nodes_with
        for g in gpus:  # _idle_to_busy inlined: this loop runs for every GPU of every job
            free[g] = 0.0
            free_vram[g] = 0.0
            tenants[g] = 1
            node = gpu_node[g]
            node_idle[node] = node_idle[node] ^ (1 << (g - node_first[node]))
            c = node_free[node]
            nodes_with[c] = nodes_with[c] ^ (1 << node)  # it no longer has c idle GPUs
            node_free[node] = c - 1
        t = self.gpu_type[gpus[0]]
        self.type_idle[t] = self.type_idle[t] - len(gpus)
        self.idle_gpus -= len(gpus)
        self.taken.extend(gpus)

    def release_whole(self, gpus: tuple[int, ...]) -> None:
        """Take ``gpus`` back from a whole-GPU job; they become idle."""
        free, free_vram, tenants, gpu_vram = self.free, self.free_vram, self.tenants, self.gpu_vram
        gpu_node, node_first, node_idle, node_free = self.gpu_node, self.node_first, self.node_idle, self.node_free
        nodes_with = self.nodes_with
        for g in gpus:  # _busy_to_idle inlined
            free[g] = 1.0
            free_vram[g] = gpu_vram[g]
            tenants[g] = 0
            node = gpu_node[g]
            node_idle[node] = node_idle[node] ^ (1 << (g - node_first[node]))
            c = node_free[node] + 1
            nodes_with[c] = nodes_with[c] ^ (1 << node)  # it now has c idle GPUs
            node_free[node] = c
        t = self.gpu_type[gpus[0]]
        self.type_idle[t] = self.type_idle[t] + len(gpus)
        self.idle_gpus += len(gpus)
        self.released.extend(gpus)

    def take_down(self, node: int) -> None:
        """``node`` fails: its GPUs, idle (its jobs have stopped), are held until :meth:`bring_up`."""
        first = self.node_first[node]
        count = self.node_gpus[node]
        self.take_whole(tuple(range(first, first + count)))
        self.node_down[node] = True
        self.node_failures[node] = self.node_failures[node] + 1
        self.up_gpus -= count

    def bring_up(self, node: int, now_s: float) -> None:
        """``node`` is repaired at ``now_s``: its GPUs are idle again."""
        first = self.node_first[node]
        count = self.node_gpus[node]
        self.release_whole(tuple(range(first, first + count)))
        self.node_down[node] = False
        self.node_up_since_s[node] = now_s
        self.up_gpus += count

    def share_vram_gib(self, g: int, fraction: float, vram_gib: float) -> float:
        """GiB a fractional tenant holds on GPU ``g``: its request ``vram_gib``, or without one (0) its
        ``fraction`` of the GPU's memory."""
        return vram_gib if vram_gib > 0 else fraction * self.gpu_vram[g]

    def take_share(self, g: int, fraction: float, vram_gib: float) -> None:
        """Add a fractional tenant holding ``fraction`` of GPU ``g`` and ``vram_gib`` of its memory."""
        self.taken.append(g)
        k = self.tenants[g]
        if k == 0:
            self._idle_to_busy(g)
            insort(self.shared, g)
        self.free[g] = self.free[g] - fraction
        self.free_vram[g] = self.free_vram[g] - vram_gib
        self.tenants[g] = k + 1

    def release_share(self, g: int, fraction: float, vram_gib: float) -> None:
        """Remove a fractional tenant of GPU ``g``; the last one leaving resets the GPU exactly to idle."""
        self.released.append(g)
        k = self.tenants[g] - 1
        self.tenants[g] = k
        if k == 0:
            self.free[g] = 1.0  # exact reset: no drift from summed fractions
            self.free_vram[g] = self.gpu_vram[g]
            shared = self.shared
            del shared[bisect_left(shared, g)]
            self._busy_to_idle(g)
        else:
            self.free[g] = self.free[g] + fraction
            self.free_vram[g] = self.free_vram[g] + vram_gib

    def sync(self) -> None:
        """Bring the numpy twins up to date: write the current values of every GPU (and its node) that a job took
        or left since the last sync."""
        taken, released = self.taken, self.released
        if self.synced_taken == len(taken) and self.synced_released == len(released):
            return
        free, free_vram, tenants, node_free, gpu_node = (
            self.free,
            self.free_vram,
            self.tenants,
            self.node_free,
            self.gpu_node,
        )
        mv_free, mv_free_vram, mv_tenants, mv_node_free = (
            self.mv_free,
            self.mv_free_vram,
            self.mv_tenants,
            self.mv_node_free,
        )
        for log, start in ((taken, self.synced_taken), (released, self.synced_released)):
            for i in range(start, len(log)):
                g = log[i]
                mv_free[g] = free[g]
                mv_free_vram[g] = free_vram[g]
                mv_tenants[g] = tenants[g]
                node = gpu_node[g]
                mv_node_free[node] = node_free[node]
        self.synced_taken = len(taken)
        self.synced_released = len(released)

    # ----------------------------------------------------------------- queries
    def first_node(self, k: int, node_mask: int) -> int:
        """Lowest-numbered node in ``node_mask`` with at least ``k`` idle GPUs, or -1."""
        if k > self.max_node_gpus:
            return -1
        m = self.nodes_with[k] & node_mask
        return (m & -m).bit_length() - 1

    def tightest_node(self, k: int, node_mask: int) -> int:
        """Node in ``node_mask`` with the fewest idle GPUs that are still at least ``k`` (lowest id on ties),
        or -1."""
        nodes_with = self.nodes_with
        for c in range(k, self.max_node_gpus + 1):
            m = (nodes_with[c] ^ nodes_with[c + 1]) & node_mask  # exactly c idle GPUs
            if m:
                return (m & -m).bit_length() - 1
        return -1

    def idle_of_node(self, node: int, k: int) -> list[int]:
        """The first ``k`` idle GPUs of ``node`` (ascending ids; fewer if it has fewer)."""
        out: list[int] = []
        m = self.node_idle[node]
        first = self.node_first[node]
        while m and len(out) < k:
            low = m & -m
            out.append(first + low.bit_length() - 1)
            m ^= low
        return out

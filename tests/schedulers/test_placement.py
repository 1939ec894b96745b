"""first-fit and best-fit answer from bitmask indexes; here they must pick exactly the GPUs a plain numpy scan
of the scheduler's view picks, on many states reached by random starts and preemptions."""

from __future__ import annotations

import numpy as np
import pytest

from engine import Job, Preempt, Start, parse_cluster, simulate
from engine.schedulers.placement import best_fit, first_fit

CLUSTERS = {
    "mixed": "2x4:T4,3x8:A100-80,2x2:V100-32,1x8:H100-80",
    "one node": "1x8:generic",
    "many small nodes": "6x2:generic,3x1:T4",
}


def _idle_gpus(state, node: int) -> list[int]:
    lay = state.layout
    first = int(lay.node_first_gpu[node])
    tenants = np.asarray(state.gpu_tenants)[first : first + int(lay.node_gpus[node])]
    return [first + int(i) for i in np.flatnonzero(tenants == 0)]


def scan(state, job: Job, best: bool) -> tuple[int, ...] | None:
    """The placement rules as documented, by scanning the numpy view (independent of the indexes)."""
    if job.gpu_fraction < 1.0:
        cand = np.flatnonzero(state.can_host(job))
        if cand.size == 0:
            return None
        return (int(cand[np.argmin(np.asarray(state.gpu_free)[cand])]) if best else int(cand[0]),)
    k = job.gpus
    if state.free_gpus < k:
        return None
    elig = np.asarray(state.eligible_nodes(job))
    free = np.asarray(state.node_free)
    fits = np.flatnonzero(elig & (free >= k))
    if fits.size:  # one node: the lowest-numbered, or the one with fewest idle GPUs
        node = int(fits[np.argmin(free[fits])]) if best else int(fits[0])
        return tuple(_idle_gpus(state, node)[:k])
    if k == 1:
        return None
    nodes = np.flatnonzero(elig & (free > 0))
    if best:
        nodes = nodes[np.argsort(-free[nodes], kind="stable")]
    types = state.layout.node_type[nodes]
    for t in dict.fromkeys(types.tolist()):  # GPU types in the order they first appear
        of_type = nodes[types == t]
        if free[of_type].sum() < k:
            continue
        out: list[int] = []
        for n in of_type.tolist():
            out += _idle_gpus(state, n)[: k - len(out)]
        return tuple(out)
    return None


class Checker:
    """At every decision point: compare both rules with the scan for every waiting job, then start some jobs
    (by either rule) and preempt some running ones at random, to visit many different states."""

    name = "placement-checker"

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.compared = 0

    def reset(self, state) -> None:
        pass

    def decide(self, state):
        rng = self.rng
        if state.running and rng.random() < 0.2:
            yield Preempt(int(rng.choice(sorted(state.running))))
        for j in list(state.queue):
            if j not in state.queue:
                continue
            job = state.jobs[j]
            got = {}
            for rule, best in ((first_fit, False), (best_fit, True)):
                got[best] = rule(state, job)
                assert got[best] == scan(state, job, best), (rule.__name__, j, state.now_s)
                self.compared += 1
            pick = got[bool(rng.integers(2))]
            if pick is not None and (rng.random() < 0.7 or not state.running):
                yield Start(j, pick)


def workload(lay_types: list[str], seed: int, n: int = 120) -> list[Job]:
    rng = np.random.default_rng(seed)
    jobs, t = [], 0.0
    for i in range(n):
        t += float(rng.exponential(20.0))
        frac = float(rng.choice([1.0, 1.0, 0.25, 0.5, 0.3]))
        gpus = 1 if frac < 1 else int(rng.choice([1, 1, 2, 3, 4, 8, 12]))
        vram = float(rng.choice([0.0, 0.0, 8.0, 20.0, 60.0]))
        allowed = frozenset([str(rng.choice(lay_types))]) if rng.random() < 0.15 else frozenset()
        jobs.append(
            Job(
                i,
                round(t),
                float(rng.integers(30, 400)),
                gpus=gpus,
                gpu_fraction=frac,
                vram_gib=vram,
                allowed_types=allowed,
            )
        )
    return jobs


@pytest.mark.parametrize("cluster", CLUSTERS.values(), ids=CLUSTERS.keys())
@pytest.mark.parametrize("seed", range(3))
def test_indexed_rules_pick_what_a_plain_scan_picks(cluster, seed):
    c = parse_cluster(cluster)
    checker = Checker(seed)
    simulate(c, workload(list(c.layout.type_names), seed), checker, seed=seed)
    assert checker.compared > 100  # the comparison really ran, on many states


def test_multi_gpu_job_spreads_from_the_type_that_first_has_room():
    # Node 0: T4 with 1 idle GPU; nodes 1-2: A100-80 with 2 idle each. A 3-GPU job fits on no single node;
    # T4 (first in id order) has too few idle GPUs, so it takes A100 GPUs: first-fit in id order,
    # best-fit from the nodes with most idle GPUs first.
    c = parse_cluster("1x1:T4,2x2:A100-80")
    jobs = [Job(0, 0.0, 100.0, gpus=3)]

    class Probe:
        name = "probe"

        def reset(self, state):
            pass

        def decide(self, state):
            assert first_fit(state, jobs[0]) == (1, 2, 3)
            assert best_fit(state, jobs[0]) == (1, 2, 3)
            yield Start(0, (1, 2, 3))

    r = simulate(c, jobs, Probe())
    assert r.gpu_ids[0] == (1, 2, 3)

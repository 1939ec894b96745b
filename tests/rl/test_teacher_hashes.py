"""Teachers decide exactly as before: a SHA-256 of every teacher's run on three workloads.

The hashes below were computed on the teachers as they were before their window was indexed (issue 32: the
``mixed`` window scanned the whole queue at every start); any change to a decision changes them. The workloads
keep long queues (offered load above 1), fractional and multi-GPU jobs, jobs pinned to a GPU type (many shapes)
and costly preemption, so the evicting teachers' victims come back to the queue.
"""

from __future__ import annotations

import pytest

from engine import make_scheduler, parse_cluster, simulate
from engine.rl.encoding import EncodingConfig
from engine.rl.teacher import TEACHERS, TeacherScheduler
from engine.sim.options import PreemptionModel, RunOptions
from engine.traces.generator import generate
from tests.sim.test_reference_hashes import result_hash

COSTLY = RunOptions(preemption=PreemptionModel(checkpoint_interval_s=900.0, restart_overhead_s=45.0))
#: A model's own encoding (``teacher:NAME``): a wider window, three rules, whole nodes, bounded evictions.
OWN = EncodingConfig(
    window=6,
    max_types=3,
    rules=("first-fit", "best-fit", "evict"),
    window_order="mixed",
    whole_node=True,
    max_evictions=2,
)


def _workload(name: str):
    if name == "mixed":  # whole and fractional jobs on two GPU types
        cluster = parse_cluster("2x8:V100-32,2x4:T4")
        return cluster, generate(cluster, 300, load=1.5, seed=2)
    # three GPU types, bursts, a fifth of the jobs pinned to one type
    cluster = parse_cluster("2x8:A100-80,2x4:V100-32,4x2:T4")
    return cluster, generate(cluster, 300, load=1.2, seed=5, arrival="bursty", users=6, allowed_share=0.2)


REFERENCE = {
    ("fifo-fast", "mixed"): "ce0ae84883940fae20e4f4d92ad40599f6405fd09baa868e69c20411e604d130",
    ("fifo-fast", "own"): "154c6a4beb13b7ee791e6c931f63f92bed145e24939f49773591c75c106b99fa",
    ("fifo-fast", "pinned"): "284a372edbb49935f4beab32df3d622be31a177746fa4eaec9ea686f971f8e7e",
    ("short-fast", "mixed"): "b600762346eedec08f25f501a5cea03d42aa3c05caf9c358fc5178cbcde289ac",
    ("short-fast", "own"): "697022877b7ddcae35ee7c5757160b7d7f2f2e4bb5cc6fea10f9ac6c107ac979",
    ("short-fast", "pinned"): "f51a4269ff833e1eefce861549a2db982ce0349ab8527072bcca5eeaefc58a37",
    ("short-fast-evict-est", "mixed"): "3da435448afaef24624a615b00a0a2bd1f831b7cb5a518a063583be5ff9ecc05",
    ("short-fast-evict-est", "own"): "6b5183f8ffec3601ad1a772728321713aafc1418f50af9796cd003754c7b3619",
    ("short-fast-evict-est", "pinned"): "b305634d75a1159f362d8d73a5460c1496de4a769a71eced3103db687882f877",
    ("short-packed", "mixed"): "b600762346eedec08f25f501a5cea03d42aa3c05caf9c358fc5178cbcde289ac",
    ("short-packed", "own"): "697022877b7ddcae35ee7c5757160b7d7f2f2e4bb5cc6fea10f9ac6c107ac979",
    ("short-packed", "pinned"): "09573cd19d5e67ddeef71bc968c710a1d5cc2f34436c735d1caf47984cceb70b",
    ("short-spare", "mixed"): "baa6904414a2e0c0caecc0dc3065c834e5a198ebd95fc510423bdedd9b15a055",
    ("short-spare", "own"): "8cf3321371fb6a17fa2752d2b661d1ad7fe543b6e9e43cc48bdd8294b304ef8f",
    ("short-spare", "pinned"): "f3cec8da5461e3c766618f0b0d7465b0778d7d5781452dad141e59214de8fbe9",
    ("short-spare-evict", "mixed"): "b6def649e50791695add54d275ce74c464b3b0273728502227700cbf323ac445",
    ("short-spare-evict", "own"): "4b81f26b33539f5def63c6c5bfc68ff0d42049f13de0fb687060823f92d0af62",
    ("short-spare-evict", "pinned"): "c82363cd6b24da4f1c2a9dcb6780d22cbff6c3aca3c232d74d44223a0015a04c",
    ("short-spare-evict-est", "mixed"): "bb541ff07422d02b55675f260a511d0ae5eccf8db14ee320886998d786d7a69e",
    ("short-spare-evict-est", "own"): "4b81f26b33539f5def63c6c5bfc68ff0d42049f13de0fb687060823f92d0af62",
    ("short-spare-evict-est", "pinned"): "fe482f2cde05a995d49a78b7459ae3a6a5efe5d83b8859dc6822d78c80a569eb",
    # The cap (40 evictions of one job) never binds on these workloads: the same runs as short-spare-evict-est.
    ("short-spare-evict-est-cap", "mixed"): "bb541ff07422d02b55675f260a511d0ae5eccf8db14ee320886998d786d7a69e",
    ("short-spare-evict-est-cap", "own"): "4b81f26b33539f5def63c6c5bfc68ff0d42049f13de0fb687060823f92d0af62",
    ("short-spare-evict-est-cap", "pinned"): "fe482f2cde05a995d49a78b7459ae3a6a5efe5d83b8859dc6822d78c80a569eb",
    ("short-tight", "mixed"): "75a29ac8fc05b30dd3ac4e568b6c5bbd2690411ee0d3f8c429d3fb8f5c418e0e",
    ("short-tight", "own"): "7a4dc723c2f4992ea2f30ed3a92526bed57fac711e13fafe7f6e0ef8091dcea4",
    ("short-tight", "pinned"): "b1483b07fb84e851a347194747ee52470f261f1c73b323ccb607033031070ea1",
    ("short-whole", "mixed"): "a7ce5340ceaf281890e01e89f29b718b296d6bb6ae6700016baa2c39757c57b1",
    ("short-whole", "own"): "7a4dc723c2f4992ea2f30ed3a92526bed57fac711e13fafe7f6e0ef8091dcea4",
    ("short-whole", "pinned"): "7a4dc723c2f4992ea2f30ed3a92526bed57fac711e13fafe7f6e0ef8091dcea4",
    ("short-whole-evict", "mixed"): "41b4f56c51fc2a5d60cd2c534f5f6848a0567107794dd0a6890a6cf989b2e3db",
    ("short-whole-evict", "own"): "ea17e1a6f832fc30891fa56261449b2c2ea78a711ed10a6771a4953e7989fd12",
    ("short-whole-evict", "pinned"): "551db5946b591e51d7790c1ef065adde18923bdd5a596b7b0146f9673938d3a8",
    ("sjf-fast", "mixed"): "de4ecc8873a1b65373a02d0969439ecc62a854826de5a5d77c74ee38a82ab231",
    ("sjf-fast", "own"): "ef7470de8e17bcc950d1e244cd99fd74fe40dc0cf237f85e178ca9ef6ee01fa1",
    ("sjf-fast", "pinned"): "4f56117d871cad2f6f4d7c95fac6e915cf878936bda11766c1c4dd5f12c86e73",
    ("srpt-type", "mixed"): "de4ecc8873a1b65373a02d0969439ecc62a854826de5a5d77c74ee38a82ab231",
    ("srpt-type", "own"): "24cf36d2d8ec379153caa25b336254dc5e18689598156502ec5f1a35007558c7",
    ("srpt-type", "pinned"): "820fe8d3371b35dc1fca407eeccc4871764c879bacb00eeb1d55004241444343",
}


@pytest.mark.parametrize("workload", ["mixed", "pinned", "own"])
@pytest.mark.parametrize("name", sorted(TEACHERS))
def test_teacher_results_match_the_reference_hashes(name, workload):
    cluster, jobs = _workload("pinned" if workload == "own" else workload)
    scheduler = TeacherScheduler(name, OWN, 1) if workload == "own" else make_scheduler(name)
    result = simulate(cluster, jobs, scheduler, seed=3, options=COSTLY)
    assert (result.status == 0).all()
    assert result_hash(result) == REFERENCE[(name, workload)]

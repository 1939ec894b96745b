"""Bit-identical results: a SHA-256 of every job's run segments and finish time on three reference workloads.

The hashes below were computed on the engine as it was before the event loop was split into modules (issue 31);
any change to a simulated number (a start, an end, a GPU, a segment) changes them. Update them only for a change
that means to alter results, and say so in its commit.
"""

from __future__ import annotations

import hashlib

import pytest

from engine import make_scheduler, parse_cluster, simulate
from engine.analysis.presets import load_preset
from engine.sim.options import PreemptionModel, RunOptions
from engine.traces.generator import generate

COSTLY = PreemptionModel(checkpoint_interval_s=900.0, restart_overhead_s=45.0)
PREEMPTION = {"free": PreemptionModel(), "costly": COSTLY}


def _workload(name: str):
    """``(cluster, jobs)`` of reference workload ``name``."""
    if name == "mixed":  # whole and fractional jobs on two GPU types, Poisson arrivals
        cluster = parse_cluster("4x8:A100-80,2x4:V100-32")
        return cluster, generate(cluster, 400, load=1.3, seed=2)
    if name == "bursty":  # bursts of arrivals, many users, on three GPU types
        cluster = parse_cluster("2x8:A100-80,2x4:V100-32,4x2:T4")
        return cluster, generate(cluster, 300, load=1.1, seed=5, arrival="bursty", users=6)
    preset = load_preset("fractional-fragmentation")  # a teaching preset's workload
    return preset.build_cluster(), preset.build_jobs()


def result_hash(result) -> str:
    """SHA-256 over each job, in job order, of its run segments (start, end, GPU share, GPUs) and finish time;
    floats as exact hexadecimal."""
    per_job: list[list[str]] = [[] for _ in range(result.n_jobs)]
    for i, j in enumerate(result.seg_job.tolist()):
        gpus = ",".join(str(g) for g in result.segment_gpus(i).tolist())
        per_job[j].append(
            f"{float(result.seg_start_s[i]).hex()}-{float(result.seg_end_s[i]).hex()}"
            f"x{float(result.seg_fraction[i]).hex()}@{gpus}"
        )
    digest = hashlib.sha256()
    for j, segments in enumerate(per_job):
        digest.update(f"{j}:{';'.join(segments)}|{float(result.end_s[j]).hex()}\n".encode())
    return digest.hexdigest()


REFERENCE = {
    ("mixed", "fifo", "free"): "f3a2c69a815baa86d9c6074057e6915d80c0597425995076f578d414a3a992d0",
    ("mixed", "fifo", "costly"): "f3a2c69a815baa86d9c6074057e6915d80c0597425995076f578d414a3a992d0",
    ("mixed", "easy-backfill", "free"): "5b480c0104ccdc5510838f6f841fec68cce261e286605d013ba4bbf3ae0e533a",
    ("mixed", "easy-backfill", "costly"): "5b480c0104ccdc5510838f6f841fec68cce261e286605d013ba4bbf3ae0e533a",
    ("mixed", "tiresias", "free"): "16ecc121213a114ff4459b3a6d8de76824d25276096f7fce404f02d9ab3cdbf3",
    ("mixed", "tiresias", "costly"): "dd2d2fb536ad5681e07eb98de548c903d779a45fbfa8213c899900218ca2d7d2",
    ("bursty", "fifo", "free"): "94fe1a098b7c94b19432029268196a49e7a3146ce5d840f6509891e6b0f18797",
    ("bursty", "fifo", "costly"): "94fe1a098b7c94b19432029268196a49e7a3146ce5d840f6509891e6b0f18797",
    ("bursty", "easy-backfill", "free"): "62c4786619d39a3eb226c46859015358c168b7db9c90143dd1518739b9bd47a2",
    ("bursty", "easy-backfill", "costly"): "62c4786619d39a3eb226c46859015358c168b7db9c90143dd1518739b9bd47a2",
    ("bursty", "tiresias", "free"): "47515f195aaa563ebadcaf38af11a5bea1197ac7ddc82fa9a646c5eae78f97cd",
    ("bursty", "tiresias", "costly"): "9f5dbe51f1958c132feffc110b8129fde1a49a84ea6a498ed337efa02b726a69",
    ("preset", "fifo", "free"): "ea7713d8f14e891dc7143714e4da83553e7e77618bb538b6504509b840c08255",
    ("preset", "fifo", "costly"): "ea7713d8f14e891dc7143714e4da83553e7e77618bb538b6504509b840c08255",
    ("preset", "easy-backfill", "free"): "49b511d9cb5a0d1b584fe3f0f28231aff42e0aac83d1e179da7f4fe5ba7458c0",
    ("preset", "easy-backfill", "costly"): "49b511d9cb5a0d1b584fe3f0f28231aff42e0aac83d1e179da7f4fe5ba7458c0",
    ("preset", "tiresias", "free"): "7fd1532a76561f9ae0bdbd8f7daefb13d29a0adc445c92904e7261a898e2c567",
    ("preset", "tiresias", "costly"): "113c60d31b55cbe97fd5f5baaa20185729637ad6c1ea9c377e368fb28028b933",
}


@pytest.mark.parametrize("workload", ["mixed", "bursty", "preset"])
@pytest.mark.parametrize("scheduler", ["fifo", "easy-backfill", "tiresias"])
@pytest.mark.parametrize("preemption", ["free", "costly"])
def test_results_match_the_reference_hashes(workload, scheduler, preemption):
    cluster, jobs = _workload(workload)
    result = simulate(
        cluster, jobs, make_scheduler(scheduler), seed=3, options=RunOptions(preemption=PREEMPTION[preemption])
    )
    assert result.seg_job.size >= len(jobs) - len(result.unschedulable_reasons)  # every runnable job ran
    assert result_hash(result) == REFERENCE[(workload, scheduler, preemption)]

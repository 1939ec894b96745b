"""The workload generator: seeded, at the target load, within what the cluster can hold, options work."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from engine.sim.cluster import parse_cluster
from engine.traces import load_trace, write_csv
from engine.traces.generator import DEFAULT_TYPES, FRACTIONS, VRAM_GIB, generate, generate_workload, job_types

CLUSTER = parse_cluster("4x8:V100-32,2x8:A100-80")


def gpu_seconds(jobs):
    return sum(j.duration_s * j.gpus * j.gpu_fraction for j in jobs)


def test_same_seed_same_jobs_and_file(tmp_path):
    a, b = generate(CLUSTER, 300, seed=7), generate(CLUSTER, 300, seed=7)
    assert a == b
    assert generate(CLUSTER, 300, seed=8) != a
    assert generate_workload is generate
    p1, p2 = write_csv(a, tmp_path / "a.csv"), write_csv(b, tmp_path / "b.csv")
    assert p1.read_bytes() == p2.read_bytes()
    assert load_trace(p1).jobs == a


@pytest.mark.parametrize("arrival", ["poisson", "bursty", "diurnal"])
def test_numbered_in_submit_order_from_zero(arrival):
    jobs = generate(CLUSTER, 500, seed=1, arrival=arrival)
    assert [j.job_id for j in jobs] == list(range(500))
    assert jobs[0].submit_s == 0.0
    assert all(a.submit_s <= b.submit_s for a, b in zip(jobs, jobs[1:]))


@pytest.mark.parametrize("load", [0.3, 0.8, 1.5])
def test_offered_load_hits_target(load):
    jobs = generate(CLUSTER, 4000, load=load, seed=2)
    realised = gpu_seconds(jobs) / (CLUSTER.n_gpus * jobs[-1].submit_s)
    assert realised == pytest.approx(load, rel=0.06)


def test_defaults_close_to_real_traces():
    jobs = generate(CLUSTER, 20000, seed=1)
    dur = np.array([j.duration_s for j in jobs])
    assert 900 < np.median(dur) < 1800  # Philly median: 1,144 s
    assert 0.85 < np.mean([j.gpus == 1 for j in jobs]) < 0.95  # Philly: 93 % single-GPU
    assert 0.25 < np.mean([j.fractional for j in jobs]) < 0.45  # openb: 44 % of GPU pods fractional
    assert {j.gpu_fraction for j in jobs} <= set(FRACTIONS)
    assert {j.vram_gib for j in jobs} <= set(VRAM_GIB)
    assert len({(j.gpus, j.gpu_fraction, j.vram_gib, j.allowed_types) for j in jobs}) <= 40
    assert 0 < np.mean([j.estimate_s < j.duration_s for j in jobs]) < 0.1  # users mostly over-estimate
    by_type = Counter(j.job_type for j in jobs)
    assert by_type["inference"] > by_type["interactive"]
    assert all(j.gpus == 1 for j in jobs if j.job_type in ("inference", "interactive"))


def test_users_are_skewed():
    counts = Counter(j.user for j in generate(CLUSTER, 3000, seed=3, users=5))
    assert [u for u, _ in counts.most_common()] == [f"user{i}" for i in range(5)]
    even = Counter(j.user for j in generate(CLUSTER, 3000, seed=3, users=5, user_skew=0))
    assert max(even.values()) < 1.2 * min(even.values())


def test_choices_fit_the_cluster():
    small = parse_cluster("2x4:T4")  # 16 GiB GPUs, 8 of them
    jobs = generate(small, 2000, seed=4, mix={"training": 1})
    assert max(j.gpus for j in jobs) <= 8 and max(j.vram_gib for j in jobs) <= 16


def test_pinned_types_fit_memory():
    jobs = generate(CLUSTER, 1000, seed=5, allowed_share=0.5)
    pinned = [j for j in jobs if j.allowed_types]
    assert 0.4 < len(pinned) / len(jobs) < 0.6
    for j in pinned:
        (t,) = j.allowed_types
        assert CLUSTER.catalog[t].vram_gib >= j.vram_gib


def test_diurnal_peaks_in_the_afternoon():
    jobs = generate(CLUSTER, 6000, seed=6, arrival="diurnal", diurnal_amplitude=0.8, load=0.3)
    hours = Counter(int(j.submit_s // 3600) % 24 for j in jobs)
    assert hours[14] > 3 * hours[2]


def test_bursty_counts_are_overdispersed():
    def dispersion(arrival):
        t = np.array([j.submit_s for j in generate(CLUSTER, 5000, seed=7, arrival=arrival)])
        counts = np.bincount((t // (30 * t[-1] / len(t))).astype(int))  # windows of ~30 arrivals
        return counts.var() / counts.mean()

    assert dispersion("poisson") == pytest.approx(1.0, abs=0.3)
    assert dispersion("bursty") > 3


def test_type_overrides_from_json_like_values():
    types = job_types({"training": {"gpus": {"8": 1}, "median_s": 60}, "tiny": {"median_s": 40}})
    assert types["training"].gpus == {8: 1.0} and types["training"].vram_gib == DEFAULT_TYPES["training"].vram_gib
    jobs = generate(CLUSTER, 50, seed=1, mix={"training": 1, "tiny": 1}, types={"tiny": {"median_s": 40, "sigma": 0}})
    assert {j.duration_s for j in jobs if j.job_type == "tiny"} == {40.0}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_jobs": 0}, "n_jobs"),
        ({"load": 0}, "load"),
        ({"arrival": "weekly"}, "arrival"),
        ({"mix": {"training": 0}}, "mix"),
        ({"mix": {"nope": 1}}, "unknown job types"),
        ({"types": {"training": {"colour": 1}}}, "unknown keys"),
        ({"types": {"training": {"fraction": {"2": 1}}}}, "fraction"),
        ({"users": 0}, "users"),
        ({"burst_share": 1}, "burst_share"),
    ],
)
def test_bad_arguments(kwargs, match):
    args = {"n_jobs": 10, **kwargs}
    with pytest.raises(ValueError, match=match):
        generate(CLUSTER, args.pop("n_jobs"), **args)

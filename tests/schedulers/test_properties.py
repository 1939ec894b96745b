"""Properties every registered scheduler must keep, on random small clusters and workloads (hypothesis).

For each run: every job completes exactly once or is unschedulable; its run segments are consistent with
its start, end, run time and preemption count; no GPU's share or memory is ever over-allocated and
whole-GPU jobs never share (rebuilt from the result's segments alone); the busy-GPU time series integrates
to the GPU-seconds of the segments; and a second run with the same seed gives identical results.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from engine import Job, PreemptionModel, RunOptions, make_scheduler, parse_cluster, scheduler_names, simulate
from engine.schedulers.tiresias import Tiresias
from engine.sim.job import JOB_TYPES
from engine.sim.simulator import COMPLETED, UNSCHEDULABLE

TYPES = ("generic", "T4", "A100-80")  # 32, 16 and 80 GiB

# Registered schedulers, plus variants that reach code paths the defaults rarely do on tiny workloads.
VARIANTS = {
    "tiresias(thresholds 20, 200 GPU-s)": lambda: Tiresias(thresholds_gpu_s=(20.0, 200.0), promote_knob=2.0),
    "sjf+topo-pack": lambda: make_scheduler("sjf+topo-pack"),
    "sjf+fgd": lambda: make_scheduler("sjf+fgd"),
}
FACTORIES = {**{name: (lambda name=name: make_scheduler(name)) for name in scheduler_names()}, **VARIANTS}


@st.composite
def clusters(draw):
    groups = [
        {
            "gpu_type": draw(st.sampled_from(TYPES)),
            "nodes": draw(st.integers(1, 3)),
            "gpus_per_node": draw(st.sampled_from((1, 2, 4))),
        }
        for _ in range(draw(st.integers(1, 2)))
    ]
    return parse_cluster({"groups": groups, "nodes_per_rack": draw(st.integers(1, 2))})


@st.composite
def workloads(draw):
    jobs = []
    for i in range(draw(st.integers(1, 10))):
        fraction = draw(st.sampled_from((1.0, 1.0, 0.25, 0.5, 0.75)))
        duration = float(draw(st.integers(1, 400)))
        jobs.append(
            Job(
                i,
                float(draw(st.integers(0, 300))),
                duration,
                gpus=1 if fraction < 1 else draw(st.sampled_from((1, 1, 2, 3, 4))),
                gpu_fraction=fraction,
                vram_gib=float(draw(st.sampled_from((0, 0, 0, 0, 8, 20, 40)))),
                user=draw(st.sampled_from(("a", "b", "c"))),
                job_type=draw(st.sampled_from(JOB_TYPES)),
                allowed_types=draw(
                    st.sampled_from((frozenset(), frozenset(), frozenset({"T4"}), frozenset({"generic", "A100-80"})))
                ),
                estimate_s=duration * draw(st.sampled_from((0.5, 1.0, 1.0, 3.0))),
            )
        )
    jobs.sort(key=lambda j: j.submit_s)  # ids in submit order, as loaded traces have them
    return [
        Job(
            i,
            j.submit_s,
            j.duration_s,
            j.gpus,
            j.gpu_fraction,
            j.vram_gib,
            j.user,
            j.job_type,
            j.priority,
            j.allowed_types,
            j.estimate_s,
        )
        for i, j in enumerate(jobs)
    ]


def check_each_job_ends_once(r) -> None:
    for j, job in enumerate(r.jobs):
        segs = np.flatnonzero(r.seg_job == j)
        if r.status[j] == UNSCHEDULABLE:
            assert j in r.unschedulable_reasons and segs.size == 0
            assert np.isnan(r.first_start_s[j]) and np.isnan(r.end_s[j])
            continue
        assert r.status[j] == COMPLETED and j not in r.unschedulable_reasons
        assert segs.size == r.preemptions[j] + 1, f"job {j}: {segs.size} segments, {r.preemptions[j]} preemptions"
        starts, ends = r.seg_start_s[segs], r.seg_end_s[segs]
        assert starts[0] == r.first_start_s[j] >= job.submit_s
        assert ends[-1] == r.end_s[j]
        assert np.all(starts < ends) and np.all(starts[1:] >= ends[:-1])  # one segment at a time
        assert np.sum(ends - starts) == pytest.approx(r.run_s[j], rel=1e-9, abs=1e-9)


def check_no_overallocation(r) -> None:
    lay = r.cluster.layout
    per_gpu: dict[int, list[tuple[float, int, float, float, bool]]] = {}
    for i in range(r.seg_job.size):
        job = r.jobs[r.seg_job[i]]
        gpus = r.segment_gpus(i)
        assert gpus.size == job.gpus and np.unique(gpus).size == gpus.size
        t = lay.gpu_type[gpus]
        assert np.all(t == t[0]), f"segment {i} mixes GPU types"
        type_name, vram = lay.type_names[t[0]], float(lay.type_vram_gib[t[0]])
        assert not job.allowed_types or type_name in job.allowed_types
        assert job.vram_gib <= vram
        whole = job.gpu_fraction >= 1
        mem = vram if whole else (job.vram_gib or job.gpu_fraction * vram)
        assert r.seg_fraction[i] == job.gpu_fraction
        for g in gpus.tolist():
            # Ends sort before starts at equal times (key 0 < 1): a GPU freed at t may be reused at t.
            per_gpu.setdefault(g, []).append((r.seg_start_s[i], 1, job.gpu_fraction, mem, whole))
            per_gpu[g].append((r.seg_end_s[i], 0, -job.gpu_fraction, -mem, whole))
    for g, events in per_gpu.items():
        share = mem_used = 0.0
        tenants = whole_tenants = 0
        vram = float(lay.type_vram_gib[lay.gpu_type[g]])
        for _, is_start, d_share, d_mem, whole in sorted(events, key=lambda e: (e[0], e[1])):
            share += d_share
            mem_used += d_mem
            tenants += 1 if is_start else -1
            whole_tenants += (1 if is_start else -1) if whole else 0
            assert share <= 1 + 1e-9, f"GPU {g} over-shared: {share}"
            assert mem_used <= vram + 1e-6, f"GPU {g} memory over-allocated: {mem_used} > {vram}"
            assert whole_tenants == 0 or tenants == 1, f"GPU {g}: a whole-GPU job shares its GPU"


def check_busy_time_adds_up(r) -> None:
    seg_gpu_s = sum(
        (r.seg_end_s[i] - r.seg_start_s[i]) * r.segment_gpus(i).size * r.seg_fraction[i] for i in range(r.seg_job.size)
    )
    series = float(np.sum(r.series_busy_gpus[:-1] * np.diff(r.series_t))) if r.series_t.size else 0.0
    assert series == pytest.approx(seg_gpu_s, rel=1e-9, abs=1e-6)
    assert np.all(np.diff(r.series_t) > 0) and np.all(r.series_busy_gpus >= -1e-9)
    assert np.all(r.series_busy_gpus <= r.cluster.n_gpus + 1e-9)


def same_result(a, b) -> bool:
    arrays = (
        "status",
        "first_start_s",
        "end_s",
        "run_s",
        "preemptions",
        "seg_job",
        "seg_start_s",
        "seg_end_s",
        "seg_gpu_ptr",
        "seg_gpu_ids",
        "seg_fraction",
        "series_t",
        "series_busy_gpus",
        "series_queue",
    )
    return all(np.array_equal(getattr(a, k), getattr(b, k), equal_nan=True) for k in arrays) and (
        a.gpu_ids == b.gpu_ids
    )


@pytest.mark.parametrize("name", sorted(FACTORIES))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), jobs=workloads(), seed=st.integers(0, 3), checkpointed=st.booleans())
def test_scheduler_properties(name, cluster, jobs, seed, checkpointed):
    costly = PreemptionModel(checkpoint_interval_s=30.0, restart_overhead_s=5.0)
    options = RunOptions(preemption=costly) if checkpointed else None
    r = simulate(cluster, jobs, FACTORIES[name](), seed=seed, options=options)
    event(f"preempted: {bool(r.preemptions.any())}")  # coverage, shown by --hypothesis-show-statistics
    event(f"unschedulable: {bool((r.status == UNSCHEDULABLE).any())}")
    check_each_job_ends_once(r)
    check_no_overallocation(r)
    check_busy_time_adds_up(r)
    again = simulate(cluster, jobs, FACTORIES[name](), seed=seed, options=options)
    assert same_result(r, again)


def test_the_checks_catch_broken_results():
    """The property checks are not vacuous: they reject a result whose bookkeeping was tampered with."""
    jobs = [Job(0, 0.0, 10.0), Job(1, 0.0, 10.0, gpu_fraction=0.5)]
    r = simulate(parse_cluster("1x1:generic"), jobs, make_scheduler("fifo"))
    check_each_job_ends_once(r)
    check_no_overallocation(r)
    check_busy_time_adds_up(r)
    overlap = replace(r, seg_start_s=np.array([0.0, 5.0]), first_start_s=np.array([0.0, 5.0]))
    with pytest.raises(AssertionError, match="GPU 0 over-shared"):
        check_no_overallocation(overlap)
    with pytest.raises(AssertionError):
        check_busy_time_adds_up(replace(r, series_busy_gpus=r.series_busy_gpus * 2))
    with pytest.raises(AssertionError, match="segments"):
        check_each_job_ends_once(replace(r, preemptions=np.array([1, 0])))
    assert not same_result(r, replace(r, end_s=r.end_s + 1))

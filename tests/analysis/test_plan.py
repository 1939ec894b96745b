"""Capacity plans: the answer meets the target and one node fewer does not (checked by direct runs), for one
shape and for a group grown inside a mixed cluster; the search itself and the target's meaning; cost plans over
several shapes, whose answer no cheaper mix beats (checked by brute force)."""

from __future__ import annotations

import itertools
import math

import pytest

from engine import make_scheduler, simulate
from engine.analysis.energy import cluster_price_per_h
from engine.analysis.metrics import summarize
from engine.analysis.plan import (
    PlanError,
    Target,
    _Search,
    grown_cluster,
    mix_cluster,
    parse_node,
    parse_target,
    plan,
    plan_mix,
)
from engine.errors import ClusterSpecError, UnknownNameError
from engine.sim.cluster import parse_cluster
from engine.sim.options import AdmissionModel, EnergyModel, FailureModel, PreemptionModel, RunOptions
from engine.traces.generator import generate

pytestmark = pytest.mark.timeout(300)


def direct(cluster, jobs, scheduler: str) -> dict:
    return summarize(simulate(cluster, jobs, make_scheduler(scheduler), seed=0)).to_dict()


@pytest.mark.parametrize("base", [None, "1x8:A100-80"])
def test_the_answer_is_the_fewest_nodes_meeting_the_target(ray_local, base):
    jobs = generate("3x4:V100-32", 70, load=1.0, seed=2)
    target = parse_target("mean_wait_s<=900")
    answer = plan(jobs, "4:V100-32", ["fifo", "sjf"], target, cluster=base)
    assert answer.attrs["meta"]["address"] == ray_local and answer.attrs["meta"]["cpus"] == 2
    base_cluster = None if base is None else parse_cluster(base)
    for row in answer.itertuples():
        n = int(row.nodes)
        assert n >= 1 and row.error is None
        runs = {m: direct(grown_cluster((4, "V100-32"), m, base_cluster), jobs, row.scheduler) for m in range(1, n + 1)}
        assert target.met_by(runs[n]) and row.value_at_nodes == runs[n]["mean_wait_s"]
        assert not any(target.met_by(runs[m]) for m in range(1, n))  # fewest: every smaller count fails
        if n > 1:
            assert row.value_at_nodes_minus_1 == runs[n - 1]["mean_wait_s"]
        assert row.gpus == grown_cluster((4, "V100-32"), n, base_cluster).n_gpus
    probed = {(p["scheduler"], p["nodes"]) for p in answer.attrs["probes"]}
    assert all((r.scheduler, int(r.nodes)) in probed for r in answer.itertuples())
    fewest = answer.loc[answer.gpus.idxmin(), "scheduler"]
    assert answer.attrs["meta"]["fewest_gpus"] == fewest


def test_grown_cluster_keeps_the_other_groups():
    base = parse_cluster("2x8:A100-80,3x4:V100-32")
    assert grown_cluster((4, "V100-32"), 7, base).to_shorthand() == "2x8:A100-80,7x4:V100-32"
    assert grown_cluster((4, "T4"), 2, base).to_shorthand() == "2x8:A100-80,3x4:V100-32,2x4:T4"
    assert grown_cluster((8, "A100-80"), 3).to_shorthand() == "3x8:A100-80"


@pytest.mark.parametrize("k", [2, 3, 5])
@pytest.mark.parametrize("answer", [1, 2, 37, 500])
def test_search_brackets_the_smallest_count_and_runs_it_and_the_one_below(k, answer):
    search, rounds = _Search(max_nodes=1024), 0
    while not search.done:
        counts = search.next_counts(k)
        assert counts and len(counts) <= k
        search.meets.update({n: n >= answer for n in counts})
        rounds += 1
    assert search.hi == answer and (answer == 1 or search.meets[answer - 1] is False)
    assert rounds <= 2 * math.ceil(math.log2(1024)) + 1


def test_a_target_no_count_meets_gives_no_answer():
    jobs = generate("1x4:T4", 20, load=0.5, seed=1)
    answer = plan(jobs, "4:T4", "fifo", "max_wait_s<=-1", max_nodes=3, backend="serial")
    assert answer.nodes.isna().all() and [p["nodes"] for p in answer.attrs["probes"]] == [1, 2, 3]
    assert answer.attrs["meta"]["fewest_gpus"] is None


def test_targets_and_shapes_are_checked():
    assert parse_target("p95_wait_s <= 1800") == Target("p95_wait_s", "<=", 1800.0)
    assert parse_target("utilization>=0.5") == Target("utilization", ">=", 0.5)
    with pytest.raises(UnknownNameError, match="unknown metric 'p95_wait'.*p95_wait_s"):
        parse_target("p95_wait<=10")
    for bad in ("p95_wait_s<10", "p95_wait_s<=nan", "p95_wait_s<=", ""):
        with pytest.raises(PlanError):
            parse_target(bad)
    for bad in ("8", "8:NOPE", "8:A100-80,4:T4", "0:T4"):
        with pytest.raises(PlanError, match="node shape"):
            parse_node(bad)
    t = Target("mean_wait_s", "<=", 100.0)
    assert t.met_by({"mean_wait_s": 50.0, "unschedulable": 0})
    assert not t.met_by({"mean_wait_s": 50.0, "unschedulable": 1})  # a job that never runs is not a short wait
    assert not t.met_by({"mean_wait_s": None, "unschedulable": 0})


def test_a_plan_may_target_a_reliability_metric_under_failures():
    # Issue 34: a plan whose target holds under failures. More nodes finish sooner and meet fewer failures, so ETTR
    # rises with the count; the answer meets the target and one node fewer does not (both run directly here).
    jobs = generate("3x4:V100-32", 70, load=1.0, seed=2)
    options = RunOptions(
        preemption=PreemptionModel(checkpoint_interval_s=3600, restart_overhead_s=300),
        failures=FailureModel(mtbf_h=50, repair_h=4),
    )
    target = parse_target("ettr>=0.993")
    answer = plan(jobs, "4:V100-32", "fifo", target, options=options, max_nodes=8, backend="serial")
    n = int(answer.nodes[0])

    def run(nodes: int) -> dict:
        cluster = grown_cluster((4, "V100-32"), nodes)
        return summarize(simulate(cluster, jobs, make_scheduler("fifo"), seed=0, options=options)).to_dict()

    at, below = run(n), run(n - 1)
    assert n == 5 and target.met_by(at) and not target.met_by(below)
    assert answer.value_at_nodes[0] == at["ettr"] and answer.value_at_nodes_minus_1[0] == below["ettr"] < 0.993
    with pytest.raises(PlanError, match="target ettr>=0.993: ettr is measured only under failures"):
        plan(jobs, "4:V100-32", "fifo", target, max_nodes=8, backend="serial")  # the runs would not have it
    with pytest.raises(PlanError, match="measured only under failures"):
        plan_mix(jobs, ["4:V100-32", "4:T4"], "fifo", "failed_job_gpu_h<=1", max_nodes=2, backend="serial")


def test_a_cost_plan_over_two_shapes_is_the_cheapest_mix_that_meets_the_target():
    # Jobs of a V100-32 cluster: those needing more than 16 GiB fit the A100s only, the rest run on cheap T4s.
    jobs = generate("2x4:V100-32", 40, load=1.0, seed=2)
    shapes = [(4, "T4"), (1, "A100-80")]
    target = parse_target("mean_wait_s<=900")
    answer = plan_mix(jobs, ["4:T4", "1:A100-80"], ["fifo", "sjf"], target, max_nodes=6, backend="serial")
    for row in answer.itertuples():
        assert row.error is None and row.cluster is not None
        best = mix_cluster(shapes, tuple(row.nodes))
        assert best.to_shorthand() == row.cluster and row.cluster_price_per_h == cluster_price_per_h(best, "catalog")
        run = direct(best, jobs, row.scheduler)
        assert target.met_by(run) and row.value == run["mean_wait_s"]
        # Brute force: no mix of the two shapes (up to max_nodes of each) that costs less meets the target.
        cheaper = [
            m
            for m in itertools.product(range(7), repeat=2)
            if any(m) and cluster_price_per_h(mix_cluster(shapes, m), "catalog") < row.cluster_price_per_h
        ]
        assert cheaper and not any(target.met_by(direct(mix_cluster(shapes, m), jobs, row.scheduler)) for m in cheaper)
        up = parse_cluster(row.runner_up)  # meets, costs no less, and is not the answer plus spare nodes
        assert target.met_by(direct(up, jobs, row.scheduler))
        assert row.cluster_price_per_h <= row.runner_up_price_per_h == cluster_price_per_h(up, "catalog")
        counts = [sum(g.nodes for g in up.groups if g.gpu_type == t) for _, t in shapes]
        assert any(c < n for c, n in zip(counts, row.nodes))
    assert {len(parse_cluster(c).groups) for c in answer.cluster} == {2}  # a genuine mix: both shapes
    assert answer.attrs["meta"]["cheapest"] in ("fifo", "sjf")


def test_a_cost_plan_prices_by_the_price_list_and_checks_its_input():
    jobs = generate("1x4:V100-32", 20, load=1.0, seed=1)
    options = RunOptions(energy=EnergyModel(price_list="gcp-preemptible-2020"))
    answer = plan_mix(
        jobs, ["2:V100-32", "4:P100"], "fifo", "mean_wait_s<=1e9", max_nodes=4, backend="serial", options=options
    )
    assert answer.cluster_price_per_h[0] == pytest.approx(2 * 0.74 * answer.nodes[0][0] + 4 * 0.43 * answer.nodes[0][1])
    with pytest.raises(PlanError, match="minimize"):
        plan_mix(jobs, ["2:V100-32"], "fifo", "mean_wait_s<=1", minimize="gpus", backend="serial")
    with pytest.raises(PlanError, match="distinct"):
        plan_mix(jobs, ["2:V100-32", "2:V100-32"], "fifo", "mean_wait_s<=1", backend="serial")
    with pytest.raises(ClusterSpecError, match="no price_per_h for A100-80"):
        plan_mix(jobs, ["2:V100-32", "1:A100-80"], "fifo", "mean_wait_s<=1", backend="serial", options=options)


def test_a_deadline_ratio_target_gives_the_fewest_nodes_meeting_it_under_admission():
    jobs = generate("2x4:V100-32", 60, load=1.2, seed=3, deadlines="gavel")
    options = RunOptions(admission=AdmissionModel("feasible"))
    target = parse_target("deadline_ratio >= 0.95")
    answer = plan(jobs, "4:V100-32", ["fifo", "edf"], target, max_nodes=8, backend="serial", options=options)

    def ratio(n, s):
        r = simulate(grown_cluster((4, "V100-32"), n, None), jobs, make_scheduler(s), seed=0, options=options)
        return summarize(r).to_dict()["deadline_ratio"]

    for row in answer.itertuples():
        n = int(row.nodes)
        assert ratio(n, row.scheduler) == row.value_at_nodes >= 0.95
        assert n == 1 or ratio(n - 1, row.scheduler) < 0.95
    nodes = dict(zip(answer.scheduler, answer.nodes))
    assert nodes["edf"] < nodes["fifo"]  # measured: 2 nodes against 6
    with pytest.raises(PlanError, match="no job of the plan's trace has a deadline"):
        plan(generate("1x4:T4", 5, seed=1), "4:T4", "fifo", target, backend="serial")


def test_plan_and_plan_mix_take_the_same_run_keywords_and_refuse_a_misspelt_one():
    """Both share one keyword record (``PlanRunner``): its keywords (progress, rounds) work in each, and one it
    does not have is a TypeError before any run, as a function's unknown keyword is."""
    jobs = generate("1x4:V100-32", 12, load=1.0, seed=1)
    seen = {"plan": [], "mix": []}
    runs = {"backend": "serial", "probes_per_round": 3}
    one = plan(
        jobs,
        "4:V100-32",
        "fifo",
        "mean_wait_s<=1e9",
        max_nodes=4,
        on_progress=lambda *a: seen["plan"].append(a),
        **runs,
    )
    nodes = ["4:V100-32", "4:T4"]
    mix = plan_mix(
        jobs, nodes, "fifo", "mean_wait_s<=1e9", max_nodes=2, on_progress=lambda *a: seen["mix"].append(a), **runs
    )
    assert one.attrs["meta"]["backend"] == mix.attrs["meta"]["backend"] == "serial"
    assert seen["plan"] and seen["mix"]
    assert one.attrs["meta"]["runs"] == 3  # 1, 2 and 4 nodes: the first round, of three probes
    for run in (plan, plan_mix):
        node = "4:V100-32" if run is plan else ["4:V100-32"]
        with pytest.raises(TypeError, match="backed"):
            run(jobs, node, "fifo", "mean_wait_s<=1e9", backed="serial")

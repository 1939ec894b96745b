"""Hand-worked checks of the event loop: speeds, placement effects, sharing, preemption, errors."""

from __future__ import annotations

import numpy as np
import pytest

from engine import (
    InvalidDecision,
    Job,
    Preempt,
    PreemptionModel,
    RunOptions,
    Simulation,
    StallError,
    Start,
    Wake,
    make_scheduler,
    parse_cluster,
    simulate,
)
from engine.sim.simulator import COMPLETED, UNSCHEDULABLE


class Scripted:
    """A scheduler that plays a fixed script: ``{time: [decisions]}``; nothing at other times."""

    name = "scripted"

    def __init__(self, script):
        self.script = script

    def reset(self, state):
        pass

    def decide(self, state):
        return list(self.script.get(state.now_s, []))


def job(i, submit, dur, **kw):
    return Job(i, float(submit), float(dur), **kw)


def test_single_job_runs_at_gpu_type_speed():
    c = parse_cluster("1x1:A100-80")
    r = simulate(c, [job(0, 5, 240, job_type="training")], make_scheduler("fifo"))
    assert r.first_start_s[0] == 5
    assert r.end_s[0] == pytest.approx(5 + 240 / 2.4)
    assert r.status[0] == COMPLETED and r.run_s[0] == pytest.approx(100)


def test_inference_gains_less_from_fast_gpu():
    c = parse_cluster("1x1:A100-80")
    r = simulate(c, [job(0, 0, 100, job_type="inference")], make_scheduler("fifo"))
    assert r.end_s[0] == pytest.approx(100 / 2.4**0.6)


def test_spread_over_nodes_is_slower_and_costs_gpu_seconds():
    c = parse_cluster("2x1:generic")  # two 1-GPU nodes in one rack
    r = simulate(c, [job(0, 0, 100, gpus=2, job_type="training")], make_scheduler("fifo"))
    assert r.end_s[0] == pytest.approx(125.0)  # 1 / (1 + 1.0 * 0.25)
    assert r.comm_overhead_gpu_s[0] == pytest.approx(2 * 125 * 0.2)  # 2 GPUs x 125 s x (1 - 0.8)
    cross_rack = parse_cluster(
        {
            "groups": [
                {"gpu_type": "generic", "nodes": 1, "gpus_per_node": 1, "rack": "a"},
                {"gpu_type": "generic", "nodes": 1, "gpus_per_node": 1, "rack": "b"},
            ]
        }
    )
    r2 = simulate(cross_rack, [job(0, 0, 100, gpus=2, job_type="training")], make_scheduler("fifo"))
    assert r2.end_s[0] == pytest.approx(160.0)
    r3 = simulate(c, [job(0, 0, 100, gpus=2, job_type="inference")], make_scheduler("fifo"))
    assert r3.end_s[0] == pytest.approx(100 * (1 + 0.05 * 0.25))


def test_consolidated_job_pays_no_communication():
    c = parse_cluster("1x2:generic")
    r = simulate(c, [job(0, 0, 100, gpus=2, job_type="training")], make_scheduler("fifo"))
    assert r.end_s[0] == 100 and r.comm_overhead_gpu_s[0] == 0


def test_colocation_slows_sharers_and_retimes_completions():
    c = parse_cluster("1x1:generic")
    jobs = [job(0, 0, 100, gpu_fraction=0.5), job(1, 50, 100, gpu_fraction=0.5)]
    r = simulate(c, jobs, make_scheduler("first-fit"))
    # Job 0 alone for 50 s (50 work left), then both at 1/1.1: job 0 ends at 50 + 55 = 105.
    assert r.end_s[0] == pytest.approx(105.0)
    # Job 1 did 55/1.1 = 50 work by t=105, then runs alone for its last 50.
    assert r.end_s[1] == pytest.approx(155.0)
    assert r.gpu_ids[0] == r.gpu_ids[1] == (0,)


def test_fractional_jobs_never_exceed_one_gpu_or_memory():
    c = parse_cluster("1x1:T4")  # 16 GiB
    jobs = [
        job(0, 0, 100, gpu_fraction=0.5, vram_gib=10),
        job(1, 0, 100, gpu_fraction=0.25, vram_gib=10),
        job(2, 0, 100, gpu_fraction=0.5),
    ]  # no memory given: holds half of 16 GiB
    r = simulate(c, jobs, make_scheduler("first-fit"))
    # job 1 needs 10 GiB but only 6 are left next to job 0: it waits for job 0.
    assert r.first_start_s[0] == 0
    assert r.first_start_s[1] > 0
    # whole-GPU job never shares
    r2 = simulate(c, [job(0, 0, 100, gpu_fraction=0.5), job(1, 1, 10)], make_scheduler("first-fit"))
    assert r2.first_start_s[1] == pytest.approx(r2.end_s[0])


def test_completion_before_arrival_at_equal_times():
    c = parse_cluster("1x1:generic")
    r = simulate(c, [job(0, 0, 10), job(1, 10, 5)], make_scheduler("fifo"))
    assert r.first_start_s[1] == 10 and r.end_s[1] == 15


def test_unschedulable_jobs_are_reported_and_excluded():
    c = parse_cluster("1x4:T4")
    jobs = [
        job(0, 0, 10, gpus=8),
        job(1, 0, 10, vram_gib=40),
        job(2, 0, 10, allowed_types=frozenset({"H100-80"})),
        job(3, 1, 10),
    ]
    r = simulate(c, jobs, make_scheduler("fifo"))
    assert r.status.tolist() == [UNSCHEDULABLE] * 3 + [COMPLETED]
    assert "needs 8 GPUs" in r.unschedulable_reasons[0]
    assert "40 GiB" in r.unschedulable_reasons[1]
    assert "H100-80" in r.unschedulable_reasons[2]
    assert np.isnan(r.end_s[0]) and r.end_s[3] == pytest.approx(1 + 10 / 0.45**0.9)


def test_preemption_loses_work_since_checkpoint_and_pays_restart():
    c = parse_cluster("1x1:generic")
    script = {0.0: [Start(0, (0,)), Wake(10.0)], 10.0: [Preempt(0), Start(0, (0,))]}
    r = simulate(
        c,
        [job(0, 0, 100)],
        Scripted(script),
        options=RunOptions(preemption=PreemptionModel(checkpoint_interval_s=4, restart_overhead_s=3)),
    )
    # 10 s done, kept 8 (last checkpoint), lost 2; restart adds 3: 95 s left from t=10.
    assert r.end_s[0] == pytest.approx(105.0)
    assert r.preemptions[0] == 1
    assert r.lost_gpu_s[0] == pytest.approx(2.0)
    assert r.seg_job.tolist() == [0, 0]
    assert r.seg_start_s.tolist() == [0.0, 10.0] and r.seg_end_s.tolist() == [10.0, 105.0]
    assert r.run_s[0] == pytest.approx(105.0)


class CostReader(Scripted):
    """The script of :class:`Scripted`, recording ``state.preemption_cost_s(0)`` whenever job 0 runs."""

    def __init__(self, script):
        super().__init__(script)
        self.costs = {}

    def decide(self, state):
        if 0 in state.running:
            self.costs[state.now_s] = state.preemption_cost_s(0)
        return super().decide(state)


@pytest.mark.parametrize(
    "model, costs, end_s",
    [
        # checkpoints every 4 s, restart costs 3: at 10 s, 2 s since the checkpoint at 8 (+3) are what preempting
        # costs; after the restart at 10 the job redoes 3 s of overhead and 2 s of work: at 15 it is back at 10 s
        # of work (cost 2 + 3 again); at 17 it has 12 s done, exactly a checkpoint (cost 0 + 3).
        (PreemptionModel(checkpoint_interval_s=4, restart_overhead_s=3), {10.0: 5.0, 15.0: 5.0, 17.0: 3.0}, 105.0),
        (PreemptionModel(), {10.0: 0.0, 15.0: 0.0, 17.0: 0.0}, 100.0),
    ],
)
def test_preemption_cost_is_what_a_preemption_then_loses(model, costs, end_s):
    c = parse_cluster("1x1:generic")
    sched = CostReader(
        {0.0: [Start(0, (0,)), Wake(10.0)], 10.0: [Preempt(0), Start(0, (0,)), Wake(15.0)], 15.0: [Wake(17.0)]}
    )
    r = simulate(c, [job(0, 0, 100)], sched, options=RunOptions(preemption=model))
    assert sched.costs == pytest.approx(costs)
    # The cost read at 10 s is what the preemption then lost: the rolled-back work plus the restart.
    assert r.lost_gpu_s[0] + (model.restart_overhead_s if r.preemptions[0] else 0) == pytest.approx(costs[10.0])
    assert r.end_s[0] == pytest.approx(end_s)


def test_preemption_cost_of_a_job_not_running_is_refused():
    sim = Simulation(parse_cluster("1x1:generic"), [job(0, 0, 10)])
    sim.reset()
    with pytest.raises(ValueError, match="job 0 is not running"):
        sim.state.preemption_cost_s(0)


def test_stall_raises_instead_of_spinning():
    c = parse_cluster("1x1:generic")
    with pytest.raises(StallError, match="1 job\\(s\\) wait"):
        simulate(c, [job(0, 0, 10)], Scripted({}))


class WakeForever:
    name = "wake-forever"

    def reset(self, state):
        pass

    def decide(self, state):
        return [Wake(state.now_s + 1.0)]


def test_idle_wakeups_forever_are_a_stall():
    with pytest.raises(StallError):
        simulate(parse_cluster("1x1:generic"), [job(0, 0, 10)], WakeForever())


@pytest.mark.parametrize(
    "decision, fragment",
    [
        (Start(0, (0, 1)), "asks for 1 GPU(s) but was given 2"),
        (Start(0, (9,)), "GPU id 9 does not exist"),
        (Start(5, (0,)), "job 5 does not exist"),
        (Start(1, (0,)), "job 1 cannot start: it is not waiting (not yet submitted)"),
        (Preempt(0), "job 0 cannot be preempted: it is not running"),
        (Wake(0.0), "wake-up time 0.0 must be a finite time after now"),
        ("go", "unknown decision 'go'"),
    ],
)
def test_invalid_decisions_name_job_and_constraint(decision, fragment):
    c = parse_cluster("1x2:generic")
    with pytest.raises(InvalidDecision) as err:
        simulate(c, [job(0, 0, 10), job(1, 5, 10)], Scripted({0.0: [decision]}))
    assert fragment in str(err.value) and "scripted" in str(err.value)


def test_busy_gpu_and_type_mix_are_refused():
    c = parse_cluster("1x2:generic,1x2:T4")
    with pytest.raises(InvalidDecision, match="GPU 0 is not free"):
        simulate(c, [job(0, 0, 10), job(1, 0, 10)], Scripted({0.0: [Start(0, (0,)), Start(1, (0,))]}))
    with pytest.raises(InvalidDecision, match="mix types generic and T4"):
        simulate(c, [job(0, 0, 10, gpus=2)], Scripted({0.0: [Start(0, (0, 2))]}))
    with pytest.raises(InvalidDecision, match="not among its allowed types"):
        simulate(c, [job(0, 0, 10, allowed_types=frozenset({"T4"}))], Scripted({0.0: [Start(0, (0,))]}))


def test_simulation_is_resumable_step_by_step():
    c = parse_cluster("1x1:generic")
    sim = Simulation(c, [job(0, 0, 10), job(1, 0, 10)], scheduler_name="manual")
    state = sim.reset()
    assert state.now_s == 0 and list(state.queue) == [0, 1]
    sim.apply([Start(0, (0,))])
    assert list(state.queue) == [1] and state.free_gpus == 0 and 0 in state.running
    assert sim.advance() is True and state.now_s == 10
    assert sim.step([Start(1, (0,))]) is False and sim.done
    r = sim.result()
    assert r.end_s.tolist() == [10.0, 20.0]
    assert r.series_t.tolist() == [0.0, 10.0, 20.0]
    assert r.series_queue.tolist() == [1, 0, 0]
    assert r.series_busy_gpus.tolist() == [1.0, 1.0, 0.0]


def test_view_arrays_are_read_only():
    sim = Simulation(parse_cluster("1x2:generic"), [job(0, 0, 10)])
    state = sim.reset()
    with pytest.raises(ValueError):
        state.gpu_free[0] = 0.0


def test_same_seed_same_result_bit_for_bit():
    rng = np.random.default_rng(7)
    jobs = [
        job(i, float(rng.integers(0, 500)), float(rng.integers(1, 300)), gpus=int(rng.choice([1, 2, 4])))
        for i in range(60)
    ]
    jobs.sort(key=lambda j: j.submit_s)
    jobs = [Job(i, j.submit_s, j.duration_s, gpus=j.gpus) for i, j in enumerate(jobs)]
    c = parse_cluster("2x4:V100-32,1x4:A100-40")
    a = simulate(c, jobs, make_scheduler("random"), seed=3)
    b = simulate(c, jobs, make_scheduler("random"), seed=3)
    for field in ("first_start_s", "end_s", "seg_gpu_ids", "series_t", "series_busy_gpus"):
        assert np.array_equal(getattr(a, field), getattr(b, field))
    other = simulate(c, jobs, make_scheduler("random"), seed=4)
    assert not np.array_equal(a.seg_gpu_ids, other.seg_gpu_ids)


def test_co_tenants_ending_together_never_move_time_backwards():
    # Three quarter-GPU jobs share the GPU from t=1 and are due to end together at t=2.2. When the first one
    # ends, the other two are re-timed (one co-tenant fewer) and their remaining work came out a rounding error
    # below zero: they were due at 2.1999999999999997, after the clock had reached 2.2, and the whole-GPU job
    # waiting behind them started before its GPU was free (found by the property tests with topo-pack).
    fractions = [1.0, 0.25, 1.0, 0.25, 1.0, 0.25]
    jobs = [Job(i, 0.0, 1.0, gpu_fraction=f, job_type="training", estimate_s=0.5) for i, f in enumerate(fractions)]
    r = simulate(parse_cluster("1x1:generic"), jobs, make_scheduler("topo-pack"))
    assert np.all(np.diff(r.series_t) > 0)
    assert r.end_s[[1, 3, 5]].tolist() == [2.2, 2.2, 2.2]
    assert r.first_start_s[2] == 2.2


def test_a_completion_time_that_overflows_raises_naming_the_job_instead_of_a_nan_end():
    """Issue 32: a job whose finish time overflowed was reported as waiting forever (a StallError blaming the
    scheduler) or completed with end = NaN. Job and cluster bounds make such a job impossible to build, so it is
    forced past them here; the engine refuses to record the non-finite time."""
    from engine.errors import EngineError

    long = job(0, 0, 10.0)
    object.__setattr__(long, "duration_s", 1.7e308)  # past Job's own check, as no input can get
    with pytest.raises(EngineError, match="job 0: its completion time overflows"):
        simulate(parse_cluster("1x1:K80"), [long, job(1, 0, 1.0)], make_scheduler("fifo"))


class Restless:
    """Starts what waits and asks to be woken again ``every_s`` later, at every decision point before ``until_s``."""

    name = "restless"

    def __init__(self, every_s, until_s):
        self.every_s, self.until_s = every_s, until_s

    def reset(self, state):
        pass

    def decide(self, state):
        wake = [Wake(state.now_s + self.every_s)] if state.now_s + self.every_s < self.until_s else []
        return [*(Start(j, (0,)) for j in state.queue), *wake]


def test_wake_ups_alone_past_the_bound_are_no_progress_naming_the_scheduler():
    """Issue 32: a scheduler woken every millisecond beside a long job made a decision point per millisecond
    (1e9 beside a job of 12 days), each recorded; past MAX_WAKE_ONLY_POINTS in a row with no event it stops."""
    from engine.sim.checks import MAX_WAKE_ONLY_POINTS

    long_s = 2 * MAX_WAKE_ONLY_POINTS / 1000  # twice the bound, in milliseconds
    with pytest.raises(StallError, match=f"scheduler 'restless' makes no progress .* {MAX_WAKE_ONLY_POINTS:,} "):
        simulate(parse_cluster("1x1:generic"), [job(0, 0, long_s)], Restless(0.001, long_s))
    assert simulate(parse_cluster("1x1:generic"), [job(0, 0, long_s)], Restless(1.0, long_s)).end_s[0] == long_s


class Endless:
    """Answers its first call with ``stream(state)``, then with nothing."""

    name = "endless"

    def __init__(self, stream):
        self.stream, self.calls = stream, 0

    def reset(self, state):
        pass

    def decide(self, state):
        self.calls += 1
        return self.stream(state) if self.calls == 1 else []


def _wakes(state):
    return (Wake(state.now_s + 1.0) for _ in range(20_000))


def _start_preempt_pairs(state):
    return (d for _ in range(10_000) for d in (Start(0, (0,)), Preempt(0)))


@pytest.mark.parametrize("stream", [_wakes, _start_preempt_pairs, lambda state: list(_wakes(state))])
def test_a_stream_of_decisions_in_one_call_past_the_bound_is_refused_naming_the_scheduler(stream):
    """Issue 32: an endless stream of wake-ups or of start/preempt pairs from one decide() call was applied until
    memory ran out; past 4 decisions per job + 10,000 (here 20,000 for one job) the call is refused."""
    with pytest.raises(InvalidDecision, match="scheduler 'endless' returned more than 10,004 decisions in one call"):
        simulate(parse_cluster("1x1:generic"), [job(0, 0, 10.0)], Endless(stream))

"""Sweeps on Ray: rows equal the CLI's own generate + simulate runs, a failing cell is reported with its
parameters while the others complete, specs round-trip through JSON and refuse bad input."""

from __future__ import annotations

import functools
import json
import math
import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from engine.analysis.metrics import DEADLINE_METRICS, ELASTIC_METRICS, ENERGY_METRICS, METRICS, summarize
from engine.analysis.scenario import Scenario, WorkloadSpec, scale_submits
from engine.analysis.sweep import CELL_COLUMNS, SweepError, SweepSpec, run_sweep
from engine.cli import main
from engine.errors import RunCancelled, UnknownNameError
from engine.runner.workers import call
from engine.schedulers import make_scheduler
from engine.sim.options import EnergyModel, RunOptions
from engine.traces import load_trace, write_csv
from engine.traces.generator import generate

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(300)  # Ray's start on a loaded 2-core machine takes tens of seconds


def cli_metrics(tmp_path: Path, cluster: str, trace: str, scheduler: str, seed: int, *extra: str) -> dict:
    """``python -m engine simulate ... --json`` (in-process): the metrics a sweep row must equal."""
    out = tmp_path / f"sim-{scheduler}-{seed}.json"
    assert (
        main(
            [
                "simulate",
                "--cluster",
                cluster,
                "--trace",
                trace,
                "--scheduler",
                scheduler,
                "--seed",
                str(seed),
                "--quiet",
                "--json",
                str(out),
                *extra,
            ]
        )
        == 0
    )
    return json.loads(out.read_text())


def same(row: pd.Series, metrics: dict) -> bool:
    return all((v is None and math.isnan(row[k])) or row[k] == v for k, v in metrics.items())


def test_rows_equal_generate_then_simulate_on_the_command_line(ray_local, tmp_path, capsys):
    spec = SweepSpec.grid(
        clusters=("2x4:V100-32", "1x8:A100-80"), schedulers=("fifo", "sjf"), jobs=40, loads=(0.7, 1.3), seeds=2
    )
    frame = run_sweep(spec)
    assert frame.attrs["meta"]["backend"] == "ray" and frame.attrs["meta"]["address"] == ray_local
    assert list(frame.columns) == [*CELL_COLUMNS, *METRICS]
    assert len(frame) == spec.cells == 16 and not frame.attrs["failures"]
    for cluster in spec.clusters:
        for load in spec.loads:
            for seed in range(spec.seeds):
                trace = tmp_path / f"gen-{cluster.replace(':', '_')}-{load}-{seed}.csv"
                assert (
                    main(
                        [
                            "generate",
                            "--cluster",
                            cluster,
                            "--jobs",
                            "40",
                            "--load",
                            str(load),
                            "--seed",
                            str(seed),
                            "--out",
                            str(trace),
                        ]
                    )
                    == 0
                )
                for scheduler in spec.schedulers:
                    row = frame[
                        (frame.cluster == cluster)
                        & (frame.load == load)
                        & (frame.seed == seed)
                        & (frame.scheduler == scheduler)
                    ]
                    assert len(row) == 1
                    assert same(row.iloc[0], cli_metrics(tmp_path, cluster, str(trace), scheduler, seed))
    capsys.readouterr()
    # The in-process backend (the benchmark's baseline) computes the same cells.
    serial = run_sweep(spec, backend="serial")
    pd.testing.assert_frame_equal(serial, frame)
    assert serial.attrs["meta"]["backend"] == "serial"


def test_trace_rows_equal_simulate_with_load_scale(ray_local, tmp_path, capsys):
    trace = str(write_csv(generate("2x4:T4", 50, load=0.8, seed=4), tmp_path / "t.csv"))
    spec = SweepSpec.grid(
        clusters=("2x4:T4",), schedulers=("first-fit", "easy-backfill"), trace=trace, loads=(1.0, 2.5), seeds=2
    )
    frame = run_sweep(spec)
    assert len(frame) == 8
    for row in frame.itertuples():
        expected = cli_metrics(tmp_path, "2x4:T4", trace, row.scheduler, row.seed, "--load-scale", str(row.load))
        assert same(frame.loc[row.Index], expected)
    assert scale_submits(load_trace(trace).jobs, 2.5) == load_trace(trace, load_scale=2.5).jobs
    capsys.readouterr()


class _Broken:
    """A scheduler that fails on clusters of more than 8 GPUs (a bug that shows on some cells only)."""

    name = "broken"

    def __init__(self):
        self.inner = make_scheduler("fifo")

    def reset(self, state):
        if state.n_gpus > 8:
            raise RuntimeError(f"cannot schedule {state.n_gpus} GPUs")
        self.inner.reset(state)

    def decide(self, state):
        return self.inner.decide(state)


def test_a_failing_cell_is_reported_with_its_parameters_and_the_others_complete(ray_local):
    spec = SweepSpec.grid(
        clusters=("2x4:V100-32", "2x8:V100-32"), schedulers=("fifo", "broken"), jobs=30, loads=(0.9,), seeds=2
    )
    frame = run_sweep(spec, factories={"broken": _Broken})
    failures = frame.attrs["failures"]
    assert [(f["cluster"], f["load"], f["seed"], f["scheduler"]) for f in failures] == [
        ("2x8:V100-32", 0.9, 0, "broken"),
        ("2x8:V100-32", 0.9, 1, "broken"),
    ]
    assert all(f["error"] == "RuntimeError: cannot schedule 16 GPUs" for f in failures)
    assert frame.attrs["meta"]["failed"] == 2 and frame.attrs["meta"]["completed"] == 6
    assert set(zip(frame.cluster, frame.scheduler)) == {
        ("2x4:V100-32", "fifo"),
        ("2x4:V100-32", "broken"),
        ("2x8:V100-32", "fifo"),
    }
    assert (frame.completed == 30).all()


class _Slow:
    """fifo that thinks for a minute per decision on clusters of more than 8 GPUs (a cell that runs too long)."""

    name = "slow"

    def __init__(self):
        self.inner = make_scheduler("fifo")

    def reset(self, state):
        self.big = state.n_gpus > 8
        self.inner.reset(state)

    def decide(self, state):
        if self.big:
            time.sleep(60)
        return self.inner.decide(state)


class _Hog(_Slow):
    """fifo that asks for 8 GiB at its start on clusters of more than 8 GPUs (a cell past its memory)."""

    name = "hog"

    def reset(self, state):
        if state.n_gpus > 8:
            self.hoard = bytearray(8 * 2**30)
        self.big = False
        self.inner.reset(state)


def test_a_guarded_cell_past_its_time_or_memory_is_a_failed_cell_and_the_others_complete(ray_local):
    spec = SweepSpec.grid(
        clusters=("2x4:V100-32", "2x8:V100-32"), schedulers=("fifo", "slow", "hog"), jobs=30, loads=(0.9,)
    )
    guard = functools.partial(call, what="this cell", limit_s=5, memory_mb=2048)
    start = time.monotonic()
    frame = run_sweep(spec, factories={"slow": _Slow, "hog": _Hog}, guard=guard)
    assert time.monotonic() - start < 45  # the slow cell would think for a minute per decision
    errors = {f["scheduler"]: f["error"] for f in frame.attrs["failures"]}
    assert errors == {
        "slow": "RunLimitError: this cell stopped after 5 s, this server's time limit per run: make it smaller "
        "(fewer jobs, a smaller cluster, fewer schedulers at once)",
        "hog": "RunLimitError: this cell stopped: it needed more than 2,048 MiB, this server's memory limit per "
        "run: make it smaller (fewer jobs, a smaller cluster)",
    }
    assert {f["cluster"] for f in frame.attrs["failures"]} == {"2x8:V100-32"}
    assert len(frame) == 4 and (frame.completed == 30).all()  # every other cell, guarded the same, finished
    plain = run_sweep(SweepSpec.grid(clusters=("2x4:V100-32",), schedulers=("fifo",), jobs=30, loads=(0.9,)))
    assert frame[frame.scheduler == "fifo"].iloc[0].mean_wait_s == plain.iloc[0].mean_wait_s


class _Stopped(Exception):
    """What a page's progress callback raises when its run is told to stop."""


class _SlowTelling(_Slow):
    """:class:`_Slow` that, where it is slow, writes the id of the process it runs in to ``folder`` at its start."""

    def __init__(self, folder: str):
        super().__init__()
        self.folder = folder

    def reset(self, state):
        if state.n_gpus > 8:
            (Path(self.folder) / str(os.getpid())).touch()
        super().reset(state)


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def test_cells_left_pending_by_an_error_are_cancelled_with_their_worker_processes(ray_local, tmp_path):
    import ray

    spec = SweepSpec.grid(clusters=("2x4:V100-32", "2x8:V100-32"), schedulers=("fifo", "slow"), jobs=30, loads=(0.9,))

    def stop_once_the_slow_cell_runs(done: int, total: int) -> None:
        deadline = time.monotonic() + 60
        while not any(tmp_path.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.1)
        raise _Stopped

    guard = functools.partial(call, what="this cell", limit_s=300, memory_mb=2048)
    slow = functools.partial(_SlowTelling, str(tmp_path))
    with pytest.raises(_Stopped):
        run_sweep(spec, factories={"slow": slow}, guard=guard, on_progress=stop_once_the_slow_cell_runs)
    started = [int(p.name) for p in tmp_path.iterdir()]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (ray.available_resources().get("CPU", 0) < 2 or any(map(_alive, started))):
        time.sleep(0.2)
    assert ray.available_resources().get("CPU", 0) == 2  # the slow cell no longer holds a CPU of Ray's
    assert started and not any(map(_alive, started))  # nor its worker process a core: it would think for minutes


def test_a_cancelled_sweep_stops_at_once_and_frees_rays_cpus(ray_local, tmp_path):
    import ray

    spec = SweepSpec.grid(clusters=("2x8:V100-32",), schedulers=("slow",), jobs=30, loads=(0.9,))
    cancel = threading.Event()

    def cancel_once_the_slow_cell_runs() -> None:
        while not any(tmp_path.iterdir()):
            time.sleep(0.1)
        cancel.set()  # the page's run was told to stop: its session ended, say

    threading.Thread(target=cancel_once_the_slow_cell_runs, daemon=True).start()
    start = time.monotonic()
    with pytest.raises(RunCancelled, match="stopped with"):
        run_sweep(spec, factories={"slow": functools.partial(_SlowTelling, str(tmp_path))}, cancel=cancel)
    assert time.monotonic() - start < 60  # the cell alone thinks a minute per decision
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and ray.available_resources().get("CPU", 0) < 2:
        time.sleep(0.2)
    assert ray.available_resources().get("CPU", 0) == 2


def test_spec_round_trips_through_json_and_refuses_bad_input():
    spec = SweepSpec.grid(
        clusters=("4x8:A100-80",),
        schedulers=("fifo", "sjf"),
        jobs=100,
        loads=(0.5, 1.0),
        seeds=3,
        generator={"users": 6, "arrival": "bursty"},
    )
    assert SweepSpec.from_json(spec.to_json()) == spec
    trace_spec = SweepSpec.grid(
        clusters=("2x4:T4",), schedulers=("fifo",), trace="t.csv", trace_options={"window": (0.0, 3600.0), "first": 10}
    )
    assert trace_spec.loads == (1.0,) and SweepSpec.from_json(trace_spec.to_json(), trusted=True) == trace_spec
    with pytest.raises(SweepError, match="trace_sha256 only"):  # a file from elsewhere names no server path
        SweepSpec.from_json(trace_spec.to_json())
    bad = [
        ({"clusters": ["2x4:T4"], "schedulers": ["fifo"]}, "either jobs"),
        ({"clusters": ["2x4:T4"], "schedulers": ["fifo"], "jobs": 10, "loads": [0.5], "trace": "x"}, "not both"),
        ({"clusters": ["2x4:T4"], "schedulers": ["fifo"], "jobs": 10, "loads": [0.5], "colour": 1}, "unknown keys"),
        ({"clusters": ["2x4:T4"], "schedulers": ["fifo", "fifo"], "jobs": 10, "loads": [0.5]}, "more than once"),
        (
            {"clusters": ["2x4:T4"], "schedulers": ["fifo"], "jobs": 10, "loads": [0.0]},
            "load must be a number in (0, 4]",
        ),
        ({"clusters": ["2x4:T4"], "schedulers": ["fifo"], "jobs": 10, "loads": [0.5], "seeds": 0}, "seeds"),
        (
            {"clusters": ["2x4:T4"], "schedulers": ["fifo"], "jobs": 10, "loads": [0.5], "generator": {"x": 1}},
            "generator",
        ),
        ({"clusters": ["2x4:T4"], "schedulers": ["fifo"], "trace": "t.csv", "trace_options": 5}, "trace_options"),
        ({"clusters": ["2x4:T4"], "schedulers": ["fifo"], "trace": "t.csv", "trace_options": {"window": 3}}, "window"),
        (
            {
                "clusters": [f"{n}x4:T4" for n in range(1, 101)],
                "schedulers": [f"s{i}" for i in range(10)],
                "jobs": 10,
                "loads": [i / 25 for i in range(1, 101)],
                "seeds": 2,
            },
            "at most 100,000",
        ),
    ]
    for data, message in bad:
        with pytest.raises(SweepError, match="(?s).*" + message.replace("(", r"\(").replace(")", r"\)")):
            SweepSpec.from_dict(data, trusted=True)
    with pytest.raises(SweepError, match="not valid JSON"):
        SweepSpec.from_json("{")


def test_unknown_names_fail_before_any_cell_runs():
    with pytest.raises(UnknownNameError, match="unknown scheduler 'nope'"):
        run_sweep(SweepSpec.grid(clusters=("2x4:T4",), schedulers=("fifo", "nope"), jobs=5, loads=(0.5,)))


def test_import_engine_imports_neither_ray_nor_pandas():
    code = (
        "import sys, engine; assert callable(engine.sweep) and callable(engine.plan); "
        "print(sorted(m for m in ('ray', 'pandas') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_with_energy_every_row_adds_cost_and_energy_as_simulate_prints_them(tmp_path, capsys):
    options = RunOptions(energy=EnergyModel(pue=1.2, carbon_g_per_kwh=300.0, price_list="on-demand"))
    spec = SweepSpec.grid(
        clusters=("1x4:T4", "1x2:A100-80"), schedulers=("fifo", "sjf"), jobs=20, loads=(1.2,), options=options
    )
    frame = run_sweep(spec, backend="serial", energy=True)
    assert list(frame.columns) == [*CELL_COLUMNS, *METRICS, *ENERGY_METRICS] and len(frame) == 4
    assert list(run_sweep(spec, backend="serial").columns) == [*CELL_COLUMNS, *METRICS]
    for cluster in spec.clusters:
        trace = tmp_path / f"gen-{cluster.replace(':', '_')}.csv"
        assert main(["generate", "--cluster", cluster, "--jobs", "20", "--load", "1.2", "--out", str(trace)]) == 0
        for scheduler in spec.schedulers:
            row = frame[(frame.cluster == cluster) & (frame.scheduler == scheduler)].iloc[0]
            direct = cli_metrics(
                tmp_path,
                cluster,
                str(trace),
                scheduler,
                0,
                "--pue",
                "1.2",
                "--carbon",
                "300",
                "--price-list",
                "on-demand",
            )
            assert set(ENERGY_METRICS) <= set(direct) and same(row, direct)
    assert frame["cost_usd"].gt(0).all() and frame["co2_kg"].gt(0).all()
    capsys.readouterr()


def test_a_journal_keeps_whole_cells_of_its_own_grid_only(tmp_path):
    from engine.analysis.sweep import CellJournal

    spec = SweepSpec.grid(["1x4:T4"], ["fifo", "sjf"], jobs=10, loads=[0.5, 1.0])
    journal = CellJournal(tmp_path / "j.jsonl", spec, {})
    assert journal.open() == {} and not (tmp_path / "j.jsonl").exists()  # nothing written before a cell ends
    whole = run_sweep(spec, backend="serial", kept={}, on_cell=journal.add)
    journal.close()
    lines = (tmp_path / "j.jsonl").read_text().splitlines()
    assert len(lines) == 1 + 4
    (tmp_path / "j.jsonl").write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:30])  # a kill mid-line
    kept = CellJournal(tmp_path / "j.jsonl", spec, {}).open()
    assert len(kept) == 3 and all(k == tuple(r[c] for c in CELL_COLUMNS) for k, r in kept.items())
    resumed = run_sweep(spec, backend="serial", kept=kept)
    pd.testing.assert_frame_equal(resumed, whole)
    other = SweepSpec.grid(["1x4:T4"], ["fifo", "sjf"], jobs=10, loads=[0.5, 1.5])
    assert CellJournal(tmp_path / "j.jsonl", other, {}).open() == {}  # another grid: started over
    assert CellJournal(tmp_path / "j.jsonl", spec, {"trace.csv": [1, 2]}).open() == {}  # other inputs too


def test_an_option_axis_runs_every_cell_at_each_value_and_rows_carry_it():
    # Issue 34: MTBF as a sweep axis. Each row is the scenario run with that MTBF; a shorter MTBF fails more nodes.
    from engine.analysis.metrics import RELIABILITY_METRICS, summarize
    from engine.sim.options import FailureModel

    base = RunOptions(failures=FailureModel(repair_h=4.0))  # nodes never fail in the base: the axis turns them on
    grid = SweepSpec.grid(["2x4:A100-80"], ["fifo", "easy-backfill"], jobs=60, loads=[0.9], seeds=2, options=base)
    spec = SweepSpec(grid.base, grid.clusters, grid.loads, seeds=2, axes=(("failures.mtbf_h", (20, 2000)),))
    assert spec.cells == 8 and spec.columns == (*CELL_COLUMNS, "failures.mtbf_h")
    frame = run_sweep(spec, backend="serial")
    assert list(frame.columns) == [*CELL_COLUMNS, "failures.mtbf_h", *METRICS, *RELIABILITY_METRICS]
    assert frame["failures.mtbf_h"].tolist() == [20.0] * 4 + [2000.0] * 4
    for _, row in frame.iterrows():
        sc = spec.cell(row.cluster, row.load, row.seed, (row["failures.mtbf_h"],))
        assert sc.options.failures.mtbf_h == row["failures.mtbf_h"] and sc.options.failures.repair_h == 4.0
        direct = summarize(sc.with_schedulers([row.scheduler]).run()[row.scheduler]).to_dict()
        assert same(row, direct)
    by_mtbf = frame.groupby("failures.mtbf_h")["node_failures"].mean()
    assert by_mtbf[20.0] > 0 == by_mtbf[2000.0]  # these seeds: 2 and 5 failures at 20 h, none at 2,000 h
    assert SweepSpec.from_json(spec.to_json()) == spec
    assert "axes" not in grid.to_dict()  # a grid without axes keeps the form older versions read


@pytest.mark.parametrize(
    "axes, message",
    [
        (
            {"failures.nope": [1]},
            "'failures.nope' is not a numeric run option; valid: preemption.checkpoint_interval_s",
        ),
        ({"failures.mtbf_per": [1]}, "is not a numeric run option"),
        ({"failures.mtbf_h": [100, -1]}, "options.failures.mtbf_h must be a number of hours > 0"),
        ({"failures.job_failure_rate": [0.5, 1.5]}, "options.failures.job_failure_rate must be a number from 0 to 1"),
        ({"failures.mtbf_h": [1, 1]}, "each once"),
        ({"failures.mtbf_h": ["x"]}, "takes finite numbers"),
        ({"failures.mtbf_h": 100}, "sweep axes: expected an object"),
    ],
)
def test_a_bad_option_axis_is_refused_naming_it(axes, message):
    data = SweepSpec.grid(["1x4:T4"], ["fifo"], jobs=5, loads=[0.5]).to_dict()
    with pytest.raises(SweepError, match="^sweep axes: .*") as info:
        SweepSpec.from_dict({**data, "axes": axes})
    assert message in str(info.value)


def test_a_cancel_stops_a_sweep_between_cells():
    spec = SweepSpec.grid(["1x4:V100-32"], ["fifo", "sjf"], jobs=20, loads=[0.8, 1.2], seeds=2)  # 8 cells
    cancel, done = threading.Event(), []

    def on_progress(finished: int, total: int) -> None:
        done.append(finished)
        if finished == 3:
            cancel.set()

    with pytest.raises(RunCancelled, match="stopped with 5 cells pending"):
        run_sweep(spec, backend="serial", on_progress=on_progress, cancel=cancel)
    assert done == [1, 2, 3]


def test_a_sweep_of_elastic_jobs_has_the_elastic_columns_and_a_cell_without_any_counts_zero():
    """Found using the app as a stranger: the Explore page could not plot rescales or elastic GPU efficiency (the
    sweep dropped them), and a cell whose few jobs drew no deadline (or no elastic job) stopped the whole sweep
    with pandas' "Cannot convert non-finite values" instead of counting 0 of them."""
    base = Scenario(cluster="1x4:T4", workload=WorkloadSpec(n_jobs=30, elastic=0.5), schedulers=("fifo", "optimus"))
    frame = run_sweep(SweepSpec(base=base, clusters=(base.cluster,), loads=(1.2,)), backend="serial")
    assert list(frame.columns) == [*CELL_COLUMNS, *METRICS, *ELASTIC_METRICS]
    sc = base.with_seed(0)
    sc = replace(sc, workload=replace(sc.workload, load=1.2))
    for name, result in sc.run().items():
        row = frame[frame.scheduler == name].iloc[0]
        assert {k: row[k] for k in ELASTIC_METRICS} == {k: summarize(result).value(k) for k in ELASTIC_METRICS}
    assert frame.rescales.iloc[1] > 0 == frame.rescales.iloc[0]
    for workload in (WorkloadSpec(n_jobs=4, elastic=0.05), WorkloadSpec(n_jobs=4, deadlines="gavel", best_effort=1.0)):
        spec = SweepSpec(base=replace(base, workload=workload), clusters=(base.cluster,), loads=(0.8, 1.2), seeds=2)
        frame = run_sweep(spec, backend="serial")
        counts = [k for k, m in {**DEADLINE_METRICS, **ELASTIC_METRICS}.items() if m.unit in ("jobs", "count")]
        assert (frame[[k for k in counts if k in frame]] == 0).all().all() and len(frame) == 8

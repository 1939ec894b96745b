"""One scenario file, every front end: the app's "Scenario (JSON)" download runs with ``simulate --scenario``
(every scheduler, like ``compare``), is the base of ``sweep --spec`` and is evaluated by ``evaluate --scenario``;
a sweep spec of the older form still runs."""

from __future__ import annotations

import csv
import json

import pytest

from engine.analysis.metrics import summarize
from engine.analysis.scenario import Scenario, WorkloadSpec, content_hash
from engine.cli import main
from engine.schedulers import make_scheduler
from engine.sim.options import PreemptionModel, RunOptions
from engine.sim.simulator import simulate
from engine.traces import write_csv
from engine.traces.generator import generate

pytestmark = pytest.mark.timeout(300)
COSTLY = RunOptions(preemption=PreemptionModel(checkpoint_interval_s=600.0, restart_overhead_s=120.0))
SCENARIO = Scenario(
    cluster="2x4:V100-32",
    workload=WorkloadSpec(n_jobs=40, load=1.6, seed=3),
    schedulers=("fifo", "tiresias"),
    seed=2,
    options=COSTLY,
)


def _direct(sc: Scenario, jobs=None) -> dict[str, dict]:
    cluster = sc.build_cluster()
    jobs = sc.build_jobs(cluster) if jobs is None else jobs
    return {
        n: summarize(simulate(cluster, jobs, make_scheduler(n), seed=sc.seed, options=sc.options)).to_dict()
        for n in sc.schedulers
    }


def test_simulate_runs_every_scheduler_of_a_downloaded_scenario(tmp_path, capsys):
    path = tmp_path / "scenario.json"
    path.write_text(SCENARIO.to_json())  # what the app's download button writes
    assert main(["simulate", "--scenario", str(path), "--quiet", "--json", str(tmp_path / "out.json")]) == 0
    out = capsys.readouterr().out
    assert "fifo" in out and "tiresias" in out and "* best value" in out and "seed 2" in out
    got = json.loads((tmp_path / "out.json").read_text())
    assert got == _direct(SCENARIO) and got["tiresias"]["lost_gpu_h"] > 0  # its run options apply


def test_simulate_reads_an_uploaded_trace_from_trace(tmp_path, capsys):
    trace = write_csv(generate("1x4:T4", 25, seed=5), tmp_path / "mine.csv")
    data = trace.read_bytes()
    sc = Scenario(
        cluster="1x4:T4",
        workload=WorkloadSpec(source="trace", trace_sha256=content_hash(data), trace_name="mine.csv"),
        schedulers=("fifo", "sjf"),
    )
    (tmp_path / "s.json").write_text(sc.to_json())
    out = tmp_path / "out.json"
    assert (
        main(["simulate", "--scenario", str(tmp_path / "s.json"), "--trace", str(trace), "--quiet", "--json", str(out)])
        == 0
    )
    assert json.loads(out.read_text()) == _direct(sc, sc.build_jobs(sc.build_cluster(), data))
    other = write_csv(generate("1x4:T4", 25, seed=6), tmp_path / "other.csv")
    assert main(["simulate", "--scenario", str(tmp_path / "s.json"), "--trace", str(other), "--quiet"]) == 2
    assert "do not match" in capsys.readouterr().err


def test_evaluate_takes_a_scenario_file_with_its_schedulers_and_run_options(tmp_path, capsys):
    path = tmp_path / "scenario.json"
    path.write_text(SCENARIO.to_json())
    out = tmp_path / "ev.json"
    assert main(["evaluate", "--scenario", str(path), "--seeds", "2", "--quiet", "--json", str(out)]) == 0
    assert "checkpoint every 600 s, restart costs 120 s" in capsys.readouterr().out
    runs = json.loads(out.read_text())["runs"]
    assert list(runs) == ["fifo", "tiresias"]
    for seed in (0, 1):  # seed k is the scenario with workload and simulation seed k
        assert [r[seed] for r in runs.values()] == list(_direct(SCENARIO.with_seed(seed)).values())


def test_sweep_takes_a_scenario_file_as_its_base(ray_local, tmp_path):
    path = tmp_path / "scenario.json"
    path.write_text(SCENARIO.to_json())
    out = tmp_path / "r.csv"
    assert main(["sweep", "--spec", str(path), "--load", "0.8,1.6", "--seeds", "2", "--out", str(out), "--quiet"]) == 0
    with open(out, newline="") as f:
        table = list(csv.DictReader(f))
    assert len(table) == 2 * 2 * 2
    cell = SCENARIO.with_seed(1)
    expected = _direct(cell)
    row = next(r for r in table if (r["load"], r["seed"], r["scheduler"]) == ("1.6", "1", "tiresias"))
    assert float(row["mean_wait_s"]) == expected["tiresias"]["mean_wait_s"]


def test_a_sweep_spec_of_the_older_form_still_runs(ray_local, tmp_path):
    # A literal copy of a spec the Explore page wrote before sweeps had a base scenario.
    old = {
        "clusters": ["2x4:V100-32"],
        "schedulers": ["fifo", "sjf"],
        "seeds": 2,
        "jobs": 40,
        "loads": [0.6, 1.2],
        "generator": {"users": 6, "arrival": "poisson"},
        "trace": None,
        "trace_options": {},
    }
    (tmp_path / "old.json").write_text(json.dumps(old))
    out = tmp_path / "r.csv"
    assert main(["sweep", "--spec", str(tmp_path / "old.json"), "--out", str(out), "--quiet"]) == 0
    with open(out, newline="") as f:
        row = next(r for r in csv.DictReader(f) if (r["load"], r["seed"], r["scheduler"]) == ("1.2", "1", "sjf"))
    jobs = generate("2x4:V100-32", 40, 1.2, 1, users=6)
    expected = summarize(simulate(SCENARIO.build_cluster(), jobs, make_scheduler("sjf"), seed=1))
    assert float(row["mean_wait_s"]) == expected.mean_wait_s

"""Elastic jobs from the generator to the summary: ``generate --elastic/--scaling`` writes the canonical CSV's
``min_gpus``, ``max_gpus`` and ``scaling`` columns, the loader reads them back (bad values are one line naming the
column), the scenario record carries the share and curve, and ``--rescale-s`` reaches the run."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from engine.analysis.scenario import ScenarioError, WorkloadSpec
from engine.cli import main
from engine.errors import TraceError
from engine.traces import load_trace
from engine.traces.generator import generate

CLUSTER = "2x8:A100-80"


@pytest.fixture
def elastic_csv(tmp_path):
    out = tmp_path / "e.csv"
    argv = ["generate", "--cluster", CLUSTER, "--jobs", "60", "--load", "1.2", "--seed", "3", "--out", str(out)]
    assert main([*argv, "--elastic", "0.3", "--scaling", "amdahl-resnet50", "--deadlines", "elasticflow"]) == 0
    return out


def test_generate_writes_elastic_jobs_that_read_back_equal(elastic_csv):
    frame = pd.read_csv(elastic_csv, keep_default_na=False)
    assert {"min_gpus", "max_gpus", "scaling"} <= set(frame.columns)
    elastic = frame[frame.scaling != ""]
    assert len(elastic) == pytest.approx(0.3 * 60, abs=8)  # about the share asked for
    assert (elastic.min_gpus == 1).all() and (elastic.max_gpus > elastic.gpus).all()
    assert set(elastic.scaling) == {"amdahl-resnet50"} and (frame.gpu_fraction[frame.scaling != ""] == 1).all()
    expected = generate(CLUSTER, 60, 1.2, 3, deadlines="elasticflow", elastic=0.3, scaling="amdahl-resnet50")
    assert load_trace(str(elastic_csv)).jobs == tuple(expected)


def test_elastic_share_leaves_the_rest_of_the_workload_as_it_was():
    rigid = generate(CLUSTER, 80, 1.1, 5)
    elastic = generate(CLUSTER, 80, 1.1, 5, elastic=0.5)
    assert [(j.submit_s, j.duration_s, j.gpus) for j in rigid] == [(j.submit_s, j.duration_s, j.gpus) for j in elastic]
    assert not any(j.elastic for j in rigid) and sum(j.elastic for j in elastic) > 20
    assert {j.scaling for j in elastic if j.elastic} == {"resnet50-a100"}  # the default curve


@pytest.mark.parametrize(
    ("row", "column", "message"),
    [
        ("0,100,2,3,4,linear", "min_gpus", "a GPU count from 1 to the job's gpus (2)"),
        ("0,100,2,1,4,resnet9", "scaling", "a scaling curve"),
        ("0,100,2,1,4,", "scaling", "a scaling curve for an elastic job"),
    ],
)
def test_a_bad_elastic_row_is_one_line_naming_the_column(tmp_path, row, column, message):
    path = tmp_path / "bad.csv"
    path.write_text(f"submit_s,duration_s,gpus,min_gpus,max_gpus,scaling\n{row}\n")
    with pytest.raises(TraceError, match=re.escape(message)) as err:
        load_trace(str(path), "csv")
    assert err.value.column == column and "\n" not in str(err.value)


def test_the_scenario_record_carries_elastic_share_and_curve():
    spec = WorkloadSpec(n_jobs=50, elastic=0.4, scaling="pollux-bert")
    assert WorkloadSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    assert "elastic" not in WorkloadSpec().to_dict() and "scaling" not in WorkloadSpec().to_dict()
    jobs = spec.build_jobs(__import__("engine").parse_cluster(CLUSTER))
    assert {j.scaling for j in jobs if j.elastic} == {"pollux-bert"}
    with pytest.raises(ScenarioError, match=r"scenario.workload.scaling 'gpt9': expected one of linear"):
        WorkloadSpec(scaling="gpt9")
    with pytest.raises(ScenarioError, match=r"scenario.workload.elastic must be a number in \[0, 1\]"):
        WorkloadSpec(elastic=2.0)


def test_simulate_reports_rescales_and_takes_the_rescale_cost(elastic_csv, tmp_path, capsys):
    argv = ["simulate", "--cluster", CLUSTER, "--trace", str(elastic_csv), "--scheduler", "optimus"]
    jobs_csv = tmp_path / "jobs.csv"
    assert main([*argv, "--json", str(tmp_path / "s.json"), "--jobs-csv", str(jobs_csv)]) == 0
    summary = json.loads((tmp_path / "s.json").read_text())
    frame = pd.read_csv(jobs_csv)
    assert summary["rescales"] == frame.rescales.sum() and summary["elastic_jobs"] == frame.scaling.notna().sum()
    assert main([*argv, "--rescale-s", "-1"]) == 2
    assert "--rescale-s" in capsys.readouterr().err

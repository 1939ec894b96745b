"""``python -m engine generate`` and ``python -m engine trace info``."""

from __future__ import annotations

import json

import pytest

from engine.cli import main
from engine.traces import load_trace, write_csv
from engine.traces.generator import generate


def test_generate_is_seeded_and_hits_the_load(tmp_path, capsys):
    args = ["generate", "--cluster", "2x8:A100-80", "--jobs", "300", "--load", "0.7", "--seed", "5"]
    assert main([*args, "--out", str(tmp_path / "a.csv")]) == 0
    assert "wrote" in capsys.readouterr().out
    assert main([*args, "--out", str(tmp_path / "b.csv")]) == 0
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    jobs = load_trace(tmp_path / "a.csv").jobs
    assert jobs == generate("2x8:A100-80", 300, 0.7, 5)
    assert (
        main(["trace", "info", str(tmp_path / "a.csv"), "--cluster", "2x8:A100-80", "--json", str(tmp_path / "i.json")])
        == 0
    )
    info = json.loads((tmp_path / "i.json").read_text())
    assert info["offered_load"] == pytest.approx(0.7, rel=0.15)


def test_generate_options(tmp_path):
    out = tmp_path / "g.csv"
    assert (
        main(
            [
                "generate",
                "--cluster",
                "2x8:T4",
                "--jobs",
                "50",
                "--out",
                str(out),
                "--mix",
                "inference=1",
                "--arrival",
                "bursty",
                "--users",
                "3",
            ]
        )
        == 0
    )
    jobs = load_trace(out).jobs
    assert {j.job_type for j in jobs} == {"inference"} and len({j.user for j in jobs}) <= 3


def test_trace_info_json_keys(tmp_path, capsys):
    path = tmp_path / "t.csv"
    path.write_text("submit_s,duration_s,gpus,user\n0,3600,2,a\n10,0,1,b\n20,1800,4,b\n30,x,1,c\n")
    out = tmp_path / "info.json"
    assert main(["trace", "info", str(path), "--skip-bad", "--cluster", "1x8:V100-32", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "non_positive_duration: 1" in text and "malformed: 1" in text and "offered load" in text
    info = json.loads(out.read_text())
    assert {k: info[k] for k in ("rows", "jobs", "dropped", "span_s", "gpu_hours", "users")} == {
        "rows": 4,
        "jobs": 2,
        "dropped": {"malformed": 1, "non_positive_duration": 1},
        "span_s": 20.0,
        "gpu_hours": 4.0,
        "users": 2,
    }
    assert info["gpu_histogram"] == {"2": 1, "4": 1}
    assert info["offered_load"] == pytest.approx(4 * 3600 / (8 * 20))
    assert info["examples"] == ["line 5, column 'duration_s': expected a number, got 'x'"]


def test_trace_info_trims_and_maps(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("t,d\n0,10\n100,10\n200,10\n300,10\n")
    out = tmp_path / "i.json"
    assert (
        main(
            [
                "trace",
                "info",
                str(path),
                "--map",
                "submit=t,duration=d",
                "--window",
                "50:",
                "--first",
                "1",
                "--load-scale",
                "2",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    info = json.loads(out.read_text())
    assert (info["format"], info["jobs"], info["trimmed"]) == ("mapped", 1, 3)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["trace", "info", "{tmp}/missing.csv"], "file not found"),
        (["trace", "info", "{tmp}/bad.csv"], "line 3, column 'gpus': expected an integer"),
        (["trace", "info", "{tmp}/bad.csv", "--window", "5:1"], "--window"),
        (["trace", "info", "{tmp}/bad.csv", "--map", "submit"], "expected KEY=COLUMN"),
        (["trace", "info", "{tmp}/bad.csv", "--format", "tiresias", "--time-unit", "ms"], "missing required column"),
        (
            ["generate", "--cluster", "2x8:T4", "--jobs", "0", "--out", "{tmp}/x.csv"],
            "--jobs: expected an integer from 1 to 5,000,000",
        ),
        (["generate", "--cluster", "2x8:T4", "--jobs", "5", "--out", "{tmp}/x.csv", "--mix", "a"], "TYPE=SHARE"),
        (["generate", "--cluster", "2x8:T4", "--jobs", "5", "--out", "{tmp}/no/x.csv"], "does not exist"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path, capsys, argv, message):
    (tmp_path / "bad.csv").write_text("submit_s,duration_s,gpus\n0,1,1\n0,1,two\n")
    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_info_on_real_openb_cluster(traces_dir, tmp_path):
    jobs = generate("2x8:T4", 20, seed=1)
    path = write_csv(jobs, tmp_path / "j.csv")
    nodes = traces_dir / "alibaba-gpu-v2023-openb" / "openb_node_list_gpu_node.csv"
    out = tmp_path / "i.json"
    assert main(["trace", "info", str(path), "--cluster", f"openb:{nodes}", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["cluster_gpus"] == 6212

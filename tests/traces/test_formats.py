"""Philly, openb, Tiresias, Gavel and mapped CSV readers on small hand-made files."""

from __future__ import annotations

import math

import pytest

from engine.errors import TraceError
from engine.traces import load_trace
from engine.traces.gavel import THROUGHPUT_STEPS_PER_S


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_philly(tmp_path):
    path = write(
        tmp_path,
        "philly.csv",
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
        "2017-10-09 06:13:03,2951.0,8,23608.0,6214e9\n"
        "2017-10-09 06:13:04,0,1,0,6214e9\n"
        "2017-10-09 06:13:05,5,0,0,6214e9\n"
        ",5,1,5,6214e9\n\n",
    )
    trace = load_trace(path)
    assert trace.format == "philly"
    assert [(j.submit_s, j.duration_s, j.gpus, j.user, j.job_type, j.name) for j in trace.jobs] == [
        (0.0, 2951.0, 8, "6214e9", "training", "row2"),
        (2932.0, 66.0, 1, "11cb48", "training", "row1"),
    ]
    assert trace.report.rows == 5
    assert trace.report.dropped == {"missing_time": 1, "no_gpu": 1, "non_positive_duration": 1}


def test_philly_bad_timestamp_names_line(tmp_path):
    path = write(
        tmp_path,
        "p.csv",
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        "2017-10-09 07:01:55,66.0,1,66.0,a\n2017-13-45 07:01:55,66.0,1,66.0,a\n",
    )
    with pytest.raises(TraceError, match="line 3, column 'timestamp': expected a date-time"):
        load_trace(path)


OPENB_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
)


def test_openb_pods(tmp_path):
    path = write(
        tmp_path,
        "pods.csv",
        OPENB_HEADER + "p0,1000,1024,1,460,,LS,Running,100,400,100\n"
        "p1,1000,1024,8,1000,V100M16|V100M32|V100M16,BE,Running,50,1050,60\n"
        "p2,1000,1024,0,0,,LS,Running,10,20,10\n"
        "p3,1000,1024,1,1000,G9,BE,Pending,10,20,\n"
        "p4,1000,1024,1,1000,G9|T4,Guaranteed,Failed,200,200,\n",
    )
    trace = load_trace(path)
    assert trace.format == "openb"
    assert [
        (j.name, j.submit_s, j.duration_s, j.gpus, j.gpu_fraction, j.allowed_types, j.user, j.job_type, j.priority)
        for j in trace.jobs
    ] == [
        ("p1", 0.0, 1000.0, 8, 1.0, frozenset({"V100-16", "V100-32"}), "BE", "batch", 0),
        ("p0", 50.0, 300.0, 1, 0.46, frozenset(), "LS", "inference", 1),
    ]
    assert trace.report.dropped == {"no_gpu": 1, "unknown_gpu_type": 1, "non_positive_duration": 1}


def test_openb_failed_pods_end_failed_on_both_paths(tmp_path):
    from engine.traces import TRACE_FORMATS, read_file

    path = write(
        tmp_path,
        "pods.csv",
        OPENB_HEADER + "p0,1000,1024,1,1000,,LS,Succeeded,0,400,0\n"
        "p1,1000,1024,2,1000,,BE,Failed,10,110,10\n"
        "p2,1000,1024,1,500,,BE,Running,20,220,20\n"
        "p3,1000,1024,1,1000,,LS,Failed,30,90,30\n",
    )
    trace = load_trace(path)
    assert [j.failed for j in trace.jobs] == [False, True, False, True]
    assert trace.report.failed == 2
    slow = read_file(TRACE_FORMATS["openb"], path, use_fast=False)
    fast = read_file(TRACE_FORMATS["openb"], path)
    assert fast.used_fast_path and list(slow.rows.failed) == list(fast.rows.failed) == [0, 1, 0, 1]


@pytest.mark.parametrize(
    ("row", "column"),
    [
        ("p,1,1,2,500,,LS,Running,0,10,0", "gpu_milli"),
        ("p,1,1,1,1500,,LS,Running,0,10,0", "gpu_milli"),
        ("p,1,1,x,1000,,LS,Running,0,10,0", "num_gpu"),
        ("p,1,1,1,1000,,LS,Running,0,ten,0", "deletion_time"),
    ],
)
def test_openb_bad_rows(tmp_path, row, column):
    path = write(tmp_path, "pods.csv", OPENB_HEADER + row + "\n")
    with pytest.raises(TraceError) as err:
        load_trace(path)
    assert (err.value.line, err.value.column) == (2, column)


def test_openb_without_times_is_an_error(tmp_path):
    path = write(tmp_path, "m.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,1000\n")
    with pytest.raises(TraceError, match="no creation_time/deletion_time"):
        load_trace(path)


TIRESIAS = (
    "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
    "0,1,1000,606,vgg19,164000,30\n1,8,3000,133,vgg11,147000,23\n"
)


@pytest.mark.parametrize(("unit", "scale"), [(None, 1.0), ("s", 1.0), ("ms", 1e-3)])
def test_tiresias_time_unit(tmp_path, unit, scale):
    trace = load_trace(write(tmp_path, "t.csv", TIRESIAS), time_unit=unit)
    assert trace.format == "tiresias"
    assert [(j.name, j.submit_s, j.duration_s, j.gpus) for j in trace.jobs] == [
        ("0", 0.0, 164000 * scale, 1),
        ("1", 2000 * scale, 147000 * scale, 8),
    ]


def test_gavel(tmp_path):
    def line(model, steps, gpus, arrival):
        return "\t".join(
            [model, 'python3 x.py "quoted"', "dir", "--n", "1", str(steps), str(gpus), "1", "-1.000000", str(arrival)]
        )

    path = write(
        tmp_path,
        "g.trace",
        "\n".join(
            [
                line("ResNet-50 (batch size 64)", 2931, 1, 0),
                line("Transformer (batch size 16)", 11005, 2, 5),
                line("Mystery (batch size 1)", 100, 1, 0),
            ]
        )
        + "\n",
    )
    trace = load_trace(path)
    assert trace.format == "gavel"
    assert [(j.submit_s, j.gpus) for j in trace.jobs] == [(0.0, 1), (5.0, 2)]
    assert trace.jobs[0].duration_s == pytest.approx(2931 / THROUGHPUT_STEPS_PER_S["ResNet-50"])
    assert trace.jobs[1].duration_s == pytest.approx(11005 / (2 * THROUGHPUT_STEPS_PER_S["Transformer"]))
    assert trace.report.dropped == {"unknown_model": 1}
    assert not any(j.has_deadline for j in trace.jobs)  # SLO -1: none


def test_gavel_slo_is_a_deadline_in_multiples_of_the_duration(tmp_path):
    def line(slo, arrival):
        return "\t".join(["LM (batch size 5)", "x", "dir", "--n", "1", "9625", "1", "1", slo, str(arrival)])

    trace = load_trace(write(tmp_path, "g.trace", "\n".join([line("1.2", 10), line("-1", 20), line("10", 30)])))
    duration = 9625 / THROUGHPUT_STEPS_PER_S["LM"]
    assert [j.deadline_s for j in trace.jobs] == pytest.approx([1.2 * duration, math.inf, 20 + 10 * duration])
    with pytest.raises(TraceError, match="line 1, column 'SLO'.*a deadline after the submit time"):
        load_trace(write(tmp_path, "zero.trace", line("0", 10) + "\n"), "gavel")


def test_mapped(tmp_path):
    path = write(
        tmp_path, "m.csv", "id,start,end,n,who,mem\na,2000,5000,2,ann,16\nb,1000,1500,1,bob,8\nc,3000,,1,bob,8\n"
    )
    cmap = {"submit": "start", "end": "end", "gpus": "n", "user": "who", "vram_gib": "mem", "name": "id"}
    trace = load_trace(path, "mapped", column_map=cmap, time_unit="ms")
    assert [(j.name, j.submit_s, j.duration_s, j.gpus, j.user, j.vram_gib) for j in trace.jobs] == [
        ("b", 0.0, 0.5, 1, "bob", 8.0),
        ("a", 1.0, 3.0, 2, "ann", 16.0),
    ]
    assert trace.report.dropped == {"missing_time": 1}


def test_mapped_deadline_is_absolute_in_the_submit_unit(tmp_path):
    path = write(tmp_path, "m.csv", "start,ms,due\n2000,500,4000\n1000,500,\n")
    trace = load_trace(
        path, "mapped", column_map={"submit": "start", "duration": "ms", "deadline_s": "due"}, time_unit="ms"
    )
    assert [j.deadline_s for j in trace.jobs] == [math.inf, 3.0]
    bad = write(tmp_path, "bad.csv", "start,ms,due\n2000,500,1000\n")
    with pytest.raises(TraceError, match="line 2, column 'due'.*a deadline after the submit time"):
        load_trace(bad, "mapped", column_map={"submit": "start", "duration": "ms", "deadline": "due"})


def test_mapped_iso_dates_and_suffixed_keys(tmp_path):
    path = write(tmp_path, "m.csv", "when,secs\n2024-01-01 00:00:10,5\n2024-01-01 00:00:00,7\n")
    trace = load_trace(path, "mapped", column_map={"submit_s": "when", "duration_s": "secs"})
    assert [(j.submit_s, j.duration_s, j.name) for j in trace.jobs] == [(0.0, 7.0, "2"), (10.0, 5.0, "1")]


@pytest.mark.parametrize(
    ("cmap", "match"),
    [
        (None, "needs submit"),
        ({"submit": "when"}, "duration=COLUMN or end=COLUMN"),
        ({"submit": "when", "duration": "secs", "colour": "x"}, "not a job field"),
        ({"submit": "when", "duration": "nope"}, "missing required column 'nope'"),
    ],
)
def test_mapped_bad_maps(tmp_path, cmap, match):
    path = write(tmp_path, "m.csv", "when,secs\n1,5\n")
    with pytest.raises(TraceError, match=match):
        load_trace(path, "mapped", column_map=cmap)


def test_mapped_error_names_the_file_column(tmp_path):
    path = write(tmp_path, "m.csv", "when,secs,g\n1,5,1\n2,5,many\n")
    with pytest.raises(TraceError, match="line 3, column 'g': expected an integer"):
        load_trace(path, "mapped", column_map={"submit": "when", "duration": "secs", "gpus": "g"})


def test_gavel_older_seven_field_layout(tmp_path):
    """Gavel's older per-virtual-cluster Philly traces: job type, command, steps flag, scale factor, total
    steps, arrival time, priority; no header. Detected and read like the 10-field layout."""

    def line(model, gpus, steps, arrival, priority):
        return "\t".join(
            [
                model,
                "python3 main.py --data_dir=/data",
                "--num_steps",
                str(gpus),
                str(steps),
                f"{arrival:.6f}",
                str(priority),
            ]
        )

    path = write(
        tmp_path,
        "cluster_0.trace",
        "\n".join(
            [
                line("ResNet-50 (batch size 64)", 4, 2931, 12.5, 1),
                line("LM (batch size 20)", 1, 9625, 3.0, 2),
            ]
        )
        + "\n",
    )
    trace = load_trace(path)
    assert trace.format == "gavel"
    assert [(j.submit_s, j.gpus, j.priority) for j in trace.jobs] == [(0.0, 1, 2), (9.5, 4, 1)]
    assert trace.jobs[0].duration_s == pytest.approx(9625 / THROUGHPUT_STEPS_PER_S["LM"])
    assert trace.jobs[1].duration_s == pytest.approx(2931 / (4 * THROUGHPUT_STEPS_PER_S["ResNet-50"]))


def test_gavel_line_of_another_width_names_the_layouts(tmp_path):
    path = write(
        tmp_path,
        "g.trace",
        "\t".join(["ResNet-50 (batch size 64)", "cmd", "--n", "1", "10", "0", "1"])
        + "\n"
        + "\t".join(["LM", "cmd", "5"])
        + "\n",
    )
    with pytest.raises(TraceError, match="expected 7 fields as on the first line, got 3") as err:
        load_trace(path)
    assert err.value.line == 2
    odd = write(tmp_path, "odd.trace", "\t".join(["a", "b", "c", "d", "1"]) + "\n")
    with pytest.raises(
        TraceError, match="10 tab-separated fields .or 7 in Gavel's older Philly traces., but this one has 5"
    ):
        load_trace(odd, "gavel")

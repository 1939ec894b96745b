"""Property and fuzz tests: any input gives a valid trace or one TraceError, never anything else.

Also: the vectorised fast path and the row-by-row path agree on every file the fast path accepts.
"""

from __future__ import annotations

import dataclasses
import gzip
import math
import os
import random
import warnings
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import TraceError
from engine.sim.job import Job
from engine.traces import TRACE_FORMATS, load_trace, write_csv

FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# Field texts a messy trace might hold: numbers of every size and sign, blanks, words, quotes, odd bytes.
FIELD = st.one_of(
    st.integers(-5, 20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(
        [
            "",
            " ",
            "-1",
            "0",
            "1e308",
            "-1e308",
            "1e999",
            "nan",
            "inf",
            "0.5",
            "1.0",
            "x",
            "1_000",
            "2017-10-09 07:01:55",
            '"',
            "a,b",
            "T4|A10",
            "LS",
            "\u00e9",
            "9" * 40,
        ]
    ),
    st.text(max_size=6),
)
HEADERS = {
    "csv": "job_id,name,submit_s,duration_s,gpus,gpu_fraction,vram_gib,user,job_type,priority,allowed_types,estimate_s",
    "philly": "timestamp,duration,num_gpus,gpu_time,cluster",
    "openb": "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
    "scheduled_time",
    "tiresias": "job_id,num_gpu,submit_time,iterations,model_name,duration,interval",
}


def check_trace(trace):
    """What every loaded trace promises."""
    jobs = trace.jobs
    assert all(isinstance(j, Job) for j in jobs)
    assert [j.job_id for j in jobs] == list(range(len(jobs)))
    if jobs:
        assert jobs[0].submit_s == 0.0
        assert all(a.submit_s <= b.submit_s for a, b in zip(jobs, jobs[1:]))
        assert all(math.isfinite(j.submit_s) and math.isfinite(j.duration_s) for j in jobs)
    rep = trace.report
    assert rep.jobs == len(jobs)
    assert rep.rows == rep.jobs + sum(rep.dropped.values()) + rep.trimmed


def load_or_error(path, fmt=None, **kwargs):
    try:
        trace = load_trace(path, fmt, **kwargs)
    except TraceError as err:
        assert str(err) and "\n" not in str(err)
        return None
    check_trace(trace)
    return trace


@FUZZ
@given(data=st.binary(max_size=300), fmt=st.sampled_from([None, *TRACE_FORMATS]))
def test_binary_garbage(tmp_path, data, fmt):
    path = tmp_path / "garbage"
    path.write_bytes(data)
    kwargs = {"column_map": {"submit": "a", "duration": "b"}} if fmt == "mapped" else {}
    load_or_error(path, fmt, **kwargs)


def rows_strategy(width):
    ragged = st.lists(FIELD, min_size=max(0, width - 1), max_size=width + 1)
    return st.lists(st.one_of(st.lists(FIELD, min_size=width, max_size=width), ragged), max_size=8)


@pytest.mark.parametrize("fmt", sorted(HEADERS))
@FUZZ
@given(data=st.data())
def test_malformed_rows(tmp_path, fmt, data, monkeypatch):
    """Messy rows: an error naming a line, or a valid trace; skip_bad always loads; both paths agree."""
    header = HEADERS[fmt]
    rows = data.draw(rows_strategy(header.count(",") + 1))
    path = tmp_path / f"{fmt}.csv"
    path.write_text(header + "\n" + "".join(",".join(r) + "\n" for r in rows), encoding="utf-8")
    try:
        trace = load_trace(path, fmt)
    except TraceError as err:
        trace = None
        assert err.line is not None and str(err)
    if trace is not None:
        check_trace(trace)
    skipped = load_or_error(path, fmt, skip_bad=True)
    if trace is not None and skipped is not None:
        assert skipped.jobs == trace.jobs
    spec = TRACE_FORMATS[fmt]
    if spec.fast is not None:
        monkeypatch.setitem(TRACE_FORMATS, fmt, dataclasses.replace(spec, fast=None))
        try:
            row_path = load_trace(path, fmt)
        except TraceError:
            row_path = None
        assert row_path == trace


@FUZZ
@given(
    jobs=st.lists(
        st.builds(
            dict,
            duration_s=st.floats(1e-3, 1e9),
            gpus=st.integers(1, 64),
            fraction=st.sampled_from([0.1, 0.25, 1 / 3, 0.5, 1.0]),
            vram_gib=st.floats(0, 1e4),
            # Readers strip fields; inner "\r", "," and quotes survive. No NUL and no lone surrogate: write_csv refuses them.
            user=st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=5).map(
                str.strip
            ),
            gap=st.floats(0, 1e7),
            estimate=st.one_of(st.just(math.nan), st.floats(1e-3, 1e9)),
        ),
        min_size=1,
        max_size=20,
    )
)
def test_write_read_round_trip(tmp_path, jobs):
    t, built = 0.0, []
    for i, j in enumerate(jobs):
        t = t + j["gap"] if i else 0.0
        frac = j["fraction"]
        built.append(
            Job(
                i,
                t,
                j["duration_s"],
                1 if frac < 1 else j["gpus"],
                frac,
                j["vram_gib"],
                j["user"] or "user0",
                "batch",
                0,
                frozenset(),
                j["estimate"],
                f"n{i}",
            )
        )
    path = write_csv(built, tmp_path / "rt.csv")
    assert load_trace(path).jobs == tuple(built)


def test_write_csv_rejects_nul(tmp_path):
    with pytest.raises(ValueError, match="NUL"):
        write_csv([Job(0, 0.0, 1.0, user="a\x00b")], tmp_path / "x.csv")


def test_write_csv_rejects_text_utf8_cannot_encode(tmp_path):
    with pytest.raises(ValueError, match=r"job 0: .*'\\ud800', which UTF-8 cannot encode"):
        write_csv([Job(0, 0.0, 1.0, user="a\ud800")], tmp_path / "x.csv")
    assert not (tmp_path / "x.csv").exists()  # checked before anything is written


# Rows that are well-formed but exercise every drop rule (zero/negative durations, no GPU, empty times).
NUM = st.sampled_from(["0", "1", "2", "8", "-1", "", "3.5", "1e3", "7200", " 4 "])
VALID_ROWS = {
    "csv": st.tuples(
        st.integers(0, 9).map(str),
        st.just("n"),
        NUM,
        NUM,
        st.sampled_from(["", "1", "2", "0"]),
        st.sampled_from(["", "1", "0.5"]),
        st.sampled_from(["", "0", "16"]),
        st.sampled_from(["", "u1", "u2"]),
        st.sampled_from(["", "training"]),
        st.just(""),
        st.sampled_from(["", "T4", "A10|T4"]),
        st.sampled_from(["", "60"]),
    ),
    "philly": st.tuples(
        st.sampled_from(["2017-10-09 07:01:55", "2017-10-10 00:00:00", ""]),
        NUM,
        st.sampled_from(["0", "1", "4"]),
        st.just("0"),
        st.sampled_from(["6214e9", "a", ""]),
    ),
    "openb": st.tuples(
        st.just("p"),
        st.just("1"),
        st.just("1"),
        st.sampled_from(["0", "1", "2"]),
        st.sampled_from(["1000"]),
        st.sampled_from(["", "T4", "G9", "V100M16|G9"]),
        st.sampled_from(["LS", "BE", ""]),
        st.just("Running"),
        NUM,
        NUM,
        st.just(""),
    ),
}


@pytest.mark.parametrize("fmt", sorted(VALID_ROWS))
@FUZZ
@given(data=st.data())
def test_fast_path_agrees_with_row_path(tmp_path, fmt, data, monkeypatch):
    rows = data.draw(st.lists(VALID_ROWS[fmt], min_size=1, max_size=12))
    path = tmp_path / f"{fmt}.csv"
    path.write_text(HEADERS[fmt] + "\n" + "".join(",".join(r) + "\n" for r in rows), encoding="utf-8")
    fast = load_or_error(path, fmt)
    spec = TRACE_FORMATS[fmt]
    monkeypatch.setitem(TRACE_FORMATS, fmt, dataclasses.replace(spec, fast=None))
    assert load_or_error(path, fmt) == fast


SWF_NUM = st.sampled_from(["0", "1", "4", "-1", "60", "3600", "1.5", "1e3"])


@FUZZ
@given(rows=st.lists(st.lists(SWF_NUM, min_size=18, max_size=18), min_size=1, max_size=12))
def test_swf_fast_path_agrees_with_row_path(tmp_path, rows, monkeypatch):
    path = tmp_path / "t.swf"
    path.write_text("; MaxProcs: 8\n" + "".join(" ".join(r) + "\n" for r in rows), encoding="utf-8")
    fast = load_or_error(path, "swf")
    monkeypatch.setitem(TRACE_FORMATS, "swf", dataclasses.replace(TRACE_FORMATS["swf"], fast=None))
    assert load_or_error(path, "swf") == fast


# ------------------------------------------------------------------------ seeded mutation fuzz of real files
# Each case takes a file (a shipped sample or the head of a real trace), applies 1-3 seeded mutations of the
# kinds that broke the loaders before (see MUTATIONS and TOKENS), loads it with random format options, and
# checks the loader contract: a valid trace or one TraceError on one line, never another exception or a
# warning; and the fast path gives exactly what the row path gives. TRACE_FUZZ_CASES sets how many cases
# (default 1,000: about 15-30 s on one core); a failure names the seed, which reproduces the case alone.
FUZZ_CASES = int(os.environ.get("TRACE_FUZZ_CASES", "1000"))
SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
REAL = Path(__file__).resolve().parents[3] / "shared" / "traces"
HEAD_LINES = 80  # a real trace's first lines: enough rows for every column, small enough to load in ms
MAPPED_OPTIONS = {
    "column_map": {
        "submit": "start_ms",
        "duration": "run_ms",
        "gpus": "gpu_count",
        "gpu_fraction": "gpu_share",
        "vram_gib": "mem_gb",
        "user": "owner",
        "job_type": "queue",
        "name": "task",
    },
    "time_unit": "ms",
}
SAMPLE_FORMATS = {
    "canonical.csv": "csv",
    "gavel.trace": "gavel",
    "mapped.csv": "mapped",
    "openb-pods.csv": "openb",
    "openb-nodes.csv": None,
    "philly.csv": "philly",
    "sample.swf": "swf",
    "tiresias.csv": "tiresias",
}
REAL_FORMATS = {
    "alibaba-gpu-v2023-openb/openb_pod_list_default.csv": "openb",
    "alibaba-gpu-v2023-openb/openb_pod_list_gpushare100.csv": "openb",
    "alibaba-gpu-v2023-openb/openb_pod_list_multigpu50.csv": "openb",
    "alibaba-gpu-v2023-openb/openb_node_list_gpu_node.csv": None,
    "philly/philly.csv": "philly",
    "swf-kth-sp2/KTH-SP2-1996-2.1-cln.swf": "swf",
    "tiresias/60_job.csv": "tiresias",
    "gavel/artifact_evaluation.trace": "gavel",
}
#: Field values that broke a loader, or nearly: 64-bit overflow, zoned and sloppy timestamps, NUL, quotes,
#: fields past the csv module's limit, non-ASCII digits, infinities, denormals.
TOKENS = [
    "",
    " ",
    "-1",
    "0",
    "1",
    "4.0",
    " 4 ",
    "1e309",
    "-1e309",
    "nan",
    "inf",
    "1e-320",
    "9" * 25,
    "-" + "9" * 25,
    "18446744073709551616",
    "9007199254740993",
    "9007199254740992",
    "2017-10-09 07:01:55+02:00",
    "2017-10-09T07:01:55Z",
    "2017-10-09 07:01:55.5",
    "2017-1-9 7:1:55",
    "2017-10-09 07:01:55",
    "\x00",
    '"',
    '"a,b"',
    "\ufeff",
    "\u0661\u0662",
    "1_000",
    "0x10",
    "\u00e9",
    "\r",
    "T4|A10",
    "G9|V100M16",
    "LS",
    "x" * 140_000,
    " " * 140_000,
    "1e12",
    "-1e12",
    "1e13",
]


def fuzz_corpus() -> list[tuple[str, bytes, str | None]]:
    """(name, bytes, format) of every sample, and the first lines of every real trace that is present."""
    out = [(name, (SAMPLES / name).read_bytes(), fmt) for name, fmt in SAMPLE_FORMATS.items()]
    for rel, fmt in REAL_FORMATS.items():
        if (REAL / rel).is_file():
            with open(REAL / rel, "rb") as f:
                out.append((rel, b"".join(f.readline() for _ in range(HEAD_LINES)), fmt))
    return out


def _mutate_field(rng: random.Random, data: bytes) -> bytes:
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    sep = b"\t" if b"\t" in lines[i] else b"," if b"," in lines[i] else b" "
    fields = lines[i].split(sep)
    fields[rng.randrange(len(fields))] = rng.choice(TOKENS).encode("utf-8", "surrogatepass")
    lines[i] = sep.join(fields)
    return b"\n".join(lines)


def _mutate_lines(rng: random.Random, data: bytes) -> bytes:
    lines = data.split(b"\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    op = rng.randrange(4)
    if op == 0:
        del lines[i]
    elif op == 1:
        lines.insert(i, lines[j])
    elif op == 2:
        lines[i], lines[j] = lines[j], lines[i]
    else:
        lines.insert(i, rng.choice([b"", b"   ", b" " * 140_000, b";", b"\r", b",,,,"]))
    return b"\n".join(lines)


MUTATIONS = {
    "field": _mutate_field,
    "lines": _mutate_lines,
    "byte": lambda rng, d: (lambda i: d[:i] + bytes([rng.randrange(256)]) + d[i + 1 :])(rng.randrange(len(d) or 1)),
    "truncate": lambda rng, d: d[: rng.randrange(len(d) + 1)],
    "bom": lambda rng, d: b"\xef\xbb\xbf" + d,
    "crlf": lambda rng, d: d.replace(b"\n", b"\r\n"),
}
MUTATION_WEIGHTS = [6, 2, 1, 1, 1, 1]  # mostly field values: where the loaders' checks live


def fuzz_case(seed: int, corpus) -> tuple[str, bytes, str | None, dict, str]:
    """Case ``seed``: (file name, mutated bytes, format, load options, what was done)."""
    rng = random.Random(seed)
    name, data, fmt = corpus[rng.randrange(len(corpus))]
    done = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.choices(list(MUTATIONS), weights=MUTATION_WEIGHTS)[0]
        data = MUTATIONS[kind](rng, data)
        done.append(kind)
    if rng.random() < 0.15:
        data = gzip.compress(data, mtime=0)
        if rng.random() < 0.5:  # a corrupt body behind a valid gzip header
            i = rng.randrange(10, max(11, len(data) - 8))
            data = data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1 :]
            done.append("corrupt-gzip")
        else:
            done.append("gzip")
    options = dict(MAPPED_OPTIONS) if fmt == "mapped" else {}
    if fmt == "tiresias" and rng.random() < 0.3:
        options["time_unit"] = "ms"
    if fmt is None or rng.random() < 0.3:
        fmt = None if fmt != "mapped" else fmt  # auto-detect (the mapped format cannot be detected)
    options["skip_bad"] = rng.random() < 0.4
    if rng.random() < 0.3:
        options["load_scale"] = rng.choice([0.5, 2.0, 5e-324, 1e-300, 1e-12, 1e300])
    if rng.random() < 0.2:
        options["first"] = rng.randrange(5)
    if rng.random() < 0.2:
        options["window"] = (0.0, rng.choice([0.0, 60.0, 1e6, math.inf]))
    return name, data, fmt, options, "+".join(done)


def outcome(path: Path, fmt: str | None, options: dict):
    """What loading gives, comparable between the two paths: the jobs and report, or the error's message."""
    try:
        trace = load_trace(path, fmt, **options)
    except TraceError as err:
        assert str(err) and "\n" not in str(err), repr(str(err))
        return ("error", str(err))
    check_trace(trace)
    return ("trace", trace.jobs, trace.report, trace.format)


def test_seeded_mutations_of_samples_and_real_traces_keep_the_loader_contract(tmp_path, monkeypatch):
    corpus = fuzz_corpus()
    row_only = {k: dataclasses.replace(f, fast=None) for k, f in TRACE_FORMATS.items()}
    fast_formats = dict(TRACE_FORMATS)
    failures, outcomes = [], Counter()
    for seed in range(FUZZ_CASES):
        name, data, fmt, options, done = fuzz_case(seed, corpus)
        path = tmp_path / f"case{Path(name).suffix}"
        path.write_bytes(data)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # a NumPy or pandas warning is a loader bug too
                fast = outcome(path, fmt, options)
                monkeypatch.setattr("engine.traces.TRACE_FORMATS", row_only)
                try:
                    row = outcome(path, fmt, options)
                finally:
                    monkeypatch.setattr("engine.traces.TRACE_FORMATS", fast_formats)
            if fast != row:
                raise AssertionError(f"fast path {fast[0]} != row path {row[0]}")
            outcomes[fast[0]] += 1
        except Exception as exc:  # noqa: BLE001 -- collect every broken case with what reproduces it
            failures.append(
                f"seed {seed} ({name}, {done}, format {fmt}, {options}): {type(exc).__name__}: {str(exc)[:200]}"
            )
    assert not failures, f"{len(failures)} of {FUZZ_CASES} cases broke the contract:\n" + "\n".join(failures[:20])
    assert outcomes["trace"] and outcomes["error"], outcomes  # the mutations reach both outcomes


# The failures the fuzz found, one by one: each is now a TraceError naming the line (and column), or a trace.
PHILLY_HEAD = "timestamp,duration,num_gpus,gpu_time,cluster\n"
CSV_HEAD = "submit_s,duration_s,gpus,priority\n"


@pytest.mark.parametrize(
    "name,data,fmt,options,expected",
    [
        (
            "zoned.csv",
            PHILLY_HEAD + "2017-10-09 07:01:55+02:00,60,1,60,a\n2017-10-09 05:02:55Z,60,1,60,a\n",
            "philly",
            {},
            None,
        ),
        (
            "big.csv",
            CSV_HEAD + "0,60,1,18446744073709551616\n",
            "csv",
            {},
            "line 2, column 'priority': expected an integer",
        ),
        (
            "big.swf",
            "1 0 0 60 1 -1 -1 " + "9" * 30 + " 60 -1 1 1 -1 -1 -1 -1 -1 -1\n",
            "swf",
            {},
            "line 1, column 'field 8",
        ),
        ("scale.csv", CSV_HEAD + "0,60,1,0\n100,60,1,0\n", "csv", {"load_scale": 5e-324}, "use a scale of at least"),
        (
            "nul.csv",
            "name,num_gpu,gpu_milli,creation_time,deletion_time,cpu\np,1,1000,0,60,\x00\n",
            "openb",
            {},
            "line 2: contains NUL bytes",
        ),
        ("long.csv", CSV_HEAD + "0,60,1," + "1" * 140_000 + "\n", "csv", {}, "line 2: not valid CSV (field larger"),
        ("blank.csv", CSV_HEAD + "0,60,1,0\n" + " " * 140_000 + "\n", "csv", {}, "line 3: not valid CSV (field larger"),
        ("cr.csv", CSV_HEAD + "0,60,1,\r0\n", "csv", {}, "line 3, column 'duration_s': expected 4 fields"),
    ],
)
def test_inputs_that_broke_the_loaders(tmp_path, monkeypatch, name, data, fmt, options, expected):
    path = tmp_path / name
    path.write_bytes(data.encode("utf-8"))
    fast = outcome(path, fmt, options)
    monkeypatch.setitem(TRACE_FORMATS, fmt, dataclasses.replace(TRACE_FORMATS[fmt], fast=None))
    assert outcome(path, fmt, options) == fast
    if expected is None:
        assert fast[0] == "trace" and [j.submit_s for j in fast[1]] == [0.0, 60.0]  # both 05:01:55 UTC -> 60 s apart
    else:
        assert fast[0] == "error" and expected in fast[1], fast


def test_corrupt_gzip_body_is_a_trace_error(tmp_path):
    data = gzip.compress((SAMPLES / "canonical.csv").read_bytes(), mtime=0)
    path = tmp_path / "t.csv.gz"
    path.write_bytes(data[:200] + bytes([data[200] ^ 0xFF]) + data[201:])
    with pytest.raises(TraceError, match=r"line \d+: cannot read \(Error -3 while decompressing"):
        load_trace(path, "csv")


@pytest.mark.parametrize("name", sorted(n for n, f in SAMPLE_FORMATS.items() if f))
def test_a_byte_order_mark_is_accepted(tmp_path, name):
    options = MAPPED_OPTIONS if SAMPLE_FORMATS[name] == "mapped" else {}
    plain = load_trace(SAMPLES / name, SAMPLE_FORMATS[name], **options)
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + (SAMPLES / name).read_bytes())
    with_bom = load_trace(path, None if name != "mapped.csv" else "mapped", **options)  # detection sees past it
    assert with_bom.jobs == plain.jobs and with_bom.jobs

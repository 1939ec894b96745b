"""Links are data, never paths: a shared link attacked the way an outsider would (AppTest).

A link's scenario may name a cluster only as shorthand or inline JSON, every number in it is bounded, and
what it carries is shown as text. Each attack must end in one inline warning (the default scenario is used),
never a traceback, a hang, a server file's content or a server path.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engine.analysis import scenario as scenario_mod
from engine.sim import cluster as cluster_mod
from tests.app.test_pages import app

REPO = Path(__file__).resolve().parents[2]
#: The default scenario's cluster (2x8:A100-80,4x4:V100-32), as the sidebar shows it.
DEFAULT_TOTALS = "6 nodes, 32 GPUs"


def open_link(query: dict[str, str], page: str | None = None) -> AppTest:
    """The app opened from a link with ``query`` (then ``page``), without an exception."""
    return app(page, query)


def shown_text(at: AppTest) -> str:
    """Everything the page and the sidebar show as text (markdown sources, alerts, captions, metrics)."""
    parts = []
    for kind in ("markdown", "caption", "warning", "error", "info", "success", "title", "subheader", "text"):
        parts += [str(e.value) for e in at.get(kind)]
        parts += [str(e.value) for e in at.sidebar.get(kind)]
    parts += [f"{m.label} {m.value}" for m in at.metric]
    return "\n".join(parts)


def warning_of(at: AppTest) -> str:
    """The page's one warning, as a reader sees it (Markdown escapes removed)."""
    warnings = [re.sub(r"\\(.)", r"\1", w.value) for w in at.warning]
    assert len(warnings) == 1 and "could not be read" in warnings[0], warnings
    return warnings[0]


@pytest.fixture(scope="module")
def server_files():
    """Files an outsider might name: a real cluster JSON, a FIFO, the repository's own files."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cluster_json = tmp / "cluster.json"
        cluster_json.write_text(json.dumps({"groups": [{"gpu_type": "H100-80", "nodes": 7, "gpus_per_node": 8}]}))
        fifo = tmp / "fifo"
        os.mkfifo(fifo)
        fifo_json = tmp / "fifo.json"
        os.mkfifo(fifo_json)
        yield {"json": cluster_json, "fifo": fifo, "fifo_json": fifo_json, "tmp": tmp}


def attack_specs(files) -> list[str]:
    nodes = REPO / "sample_traces" / "openb-nodes.csv"
    return [
        "openb:/etc/passwd",
        "/etc/passwd",
        "/etc/hostname",
        "openb:/proc/self/fd/0",
        "/proc/self/environ",
        f"openb:{nodes}",
        "openb:sample_traces/openb-nodes.csv",
        "openb: sample_traces/openb-nodes.csv",
        str(files["json"]),
        f"file://{files['json']}",
        f"{files['tmp']}/../{files['tmp'].name}/cluster.json",
        "presets/heavy-user.json",
        "../../../../etc/passwd",
        "~/.bashrc",
        "C:\\Windows\\win.ini",
        "\\\\server\\share\\cluster.json",
        str(files["fifo"]),
        f"openb:{files['fifo']}",
        str(files["fifo_json"]),
        f"openb:{files['fifo_json']}",
        "/does/not/exist.json",
        "openb:/does/not/exist.csv",
    ]


@pytest.mark.slow  # one app run per attack link: about 7 s
def test_a_link_never_reads_a_file_or_tells_whether_one_exists(server_files):
    """Files named every way (absolute, relative, ~, file://, ../, Windows, FIFOs, /proc, openb:): each link
    gets the same message whether the file exists or not, and the page uses the default cluster."""
    passwd_first = Path("/etc/passwd").read_text().splitlines()[0]
    messages = {}
    for spec in attack_specs(server_files):
        at = open_link({"cluster": spec})
        text = shown_text(at)
        assert DEFAULT_TOTALS in text, (spec, text)  # the file's cluster (7 x H100) is never used
        message = warning_of(at).replace(spec.strip(), "SPEC")  # the link's own text is quoted, nothing else
        assert "56 GPUs" not in text and passwd_first not in text and str(server_files["tmp"]) not in message
        messages[spec] = message
    # An oracle would answer differently for files that exist and files that do not: one message fits all.
    by_kind = {messages[s] for s in ("/etc/passwd", "/etc/hostname", "../../../../etc/passwd")}
    assert len(by_kind) == 1, by_kind
    assert messages["openb:/etc/passwd"] == messages["openb:/does/not/exist.csv"]
    assert messages[str(server_files["json"])] == messages["/does/not/exist.json"]


# (link parameters, words the one-line warning must hold: the limit it breaks)
BAD_NUMBERS = [
    ({"cluster": "20000x8:A100-80"}, "the playground's limit is 10,000 nodes and 65,536 GPUs"),
    ({"cluster": "1000000x8:A100-80"}, "the limit is 100,000 nodes and 1,000,000 GPUs"),
    ({"cluster": "100000000x8:A100-80"}, "the limit is 100,000 nodes"),
    ({"cluster": "9" * 5000 + "x8:A100-80"}, "100,000 nodes"),
    ({"cluster": "2x" + "9" * 3000 + ":T4"}, "64 GPUs per node"),
    ({"cluster": "[" * 100_000}, f"{scenario_mod.MAX_CLUSTER_CHARS:,}"),
    ({"cluster": '{"groups":' + "[" * 5000 + "]" * 5000 + "}"}, f"limit is {cluster_mod.MAX_JSON_DEPTH}"),
    ({"cluster": '{"groups":[{"gpu_type":"T4","nodes":1e999,"gpus_per_node":1}]}'}, "nodes"),
    ({"cluster": "2x4:T4", "w.n_jobs": "1000000"}, "100,000"),
    ({"cluster": "2x4:T4", "w.n_jobs": "9" * 1000}, "at most 40 characters"),
    ({"cluster": "2x4:T4", "w.users": "10000"}, "1,000"),
    ({"cluster": "2x4:T4", "w.load": "1e999"}, "(0, 4]"),
    ({"cluster": "2x4:T4", "w.load": "nan"}, "(0, 4]"),
    ({"cluster": "2x4:T4", "w.mix": "training:inf"}, "from 0 to 10"),
    ({"cluster": "2x4:T4", "w.mix": "training:11"}, "from 0 to 10"),
    ({"cluster": "2x4:T4", "w.mix": "cryptomining:1"}, "unknown job type"),
    ({"cluster": "2x4:T4", "w.mix": "training:0,batch:0"}, "at least one weight above 0"),
    ({"cluster": "2x4:T4", "w.seed": "-1"}, "2,147,483,647"),
    ({"cluster": "2x4:T4", "seed": "99999999999999999999"}, "2,147,483,647"),
    ({"cluster": "2x4:T4", "w.first": "-5"}, "10,000,000"),
    ({"cluster": "2x4:T4", "w.source": "preset", "w.preset": "../../etc/passwd"}, "expected one of"),
    ({"cluster": "2x4:T4", "sched": ",".join(f"s{i}" for i in range(40))}, "limit is 16"),
    ({"cluster": "2x4:T4", "sched": "rl:../../etc/passwd"}, "not a scheduler name"),
    ({"cluster": "2x4:T4", "w.trace_format": "x" * 100_000}, "1,600"),
]


@pytest.mark.parametrize("query,limit", BAD_NUMBERS, ids=[f"{i}" for i in range(len(BAD_NUMBERS))])
def test_huge_and_malformed_numbers_get_one_line_with_the_limit(query, limit):
    at = open_link(query)
    message = warning_of(at)
    assert limit in message, message
    assert "\n" not in message and len(message) < 600, message
    assert DEFAULT_TOTALS in shown_text(at)


@pytest.mark.slow  # a dozen app runs: about 7 s
def test_pages_with_widgets_open_links_their_widgets_would_refuse():
    """The Workload and Cluster pages' widgets raise on values outside their bounds: such links never reach them."""
    for query, _ in (BAD_NUMBERS[i] for i in (0, 8, 10, 13, 17)):
        for page in ("app_pages/workload.py", "app_pages/cluster.py"):
            at = open_link(query, page)
            assert not at.exception and len(at.warning) <= 1, query
    # At the very bounds, the widgets accept what the scenario accepts.
    at = open_link(
        {
            "cluster": "10000x1:T4",
            "w.n_jobs": "100000",
            "w.users": "1000",
            "w.seed": str(2**31 - 1),
            "w.mix": "training:10,batch:0",
            "w.load": "4",
        }
    )
    assert not at.warning, [w.value for w in at.warning]
    at.switch_page("app_pages/cluster.py").run()
    assert not at.exception, [e.value for e in at.exception]


def test_markdown_in_a_link_is_shown_as_text():
    link = "[click me](https:evil.example)"
    sha = "ab" * 32
    at = open_link(
        {
            "cluster": "2x4:T4",
            "name": f"**{link}** :red[alarm]",
            "w.source": "trace",
            "w.trace_name": f"{link}.csv",
            "w.trace_sha256": sha,
        }
    )
    assert not at.warning, [w.value for w in at.warning]  # a valid scenario with odd names
    sidebar = "\n".join(str(e.value) for kind in ("markdown", "caption") for e in at.sidebar.get(kind))
    assert "click me" in sidebar
    assert "](http" not in sidebar and "**[" not in sidebar and ":red[" not in sidebar, sidebar
    at.switch_page("app_pages/workload.py").run()
    assert not at.exception
    page = shown_text(at)
    assert "click me" in page and "](http" not in page, page


def test_an_uploaded_scenario_json_is_bounded_like_a_link():
    at = open_link({"cluster": "2x4:T4"})
    deep = b'{"cluster": "2x4:T4", "workload": ' + b'{"mix": ' * 50_000 + b"{}" + b"}" * 50_001
    at.sidebar.file_uploader[0].upload("deep.json", deep).run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert any("limit is" in e for e in errors), errors


def test_a_model_name_never_becomes_a_path(tmp_path):
    """The Train page writes models/<name>.json and runs/<name>/: a name with path characters is refused."""
    at = open_link({"cluster": "2x4:T4"}, "app_pages/train.py")
    if not at.text_input:  # the RL extra is not installed: the page says so and offers nothing to attack
        pytest.skip("training is not available in this installation")
    name = f"../../../..{tmp_path}/evil"
    at.text_input(key="train_name").set_value(name).run()
    at.button(key="train_start").click().run()
    assert not at.exception and any("A model name is 1 to 64 letters" in e.value for e in at.error)
    assert not list(tmp_path.iterdir()) and "training_job" not in at.session_state


def test_a_link_without_a_cluster_is_applied_on_the_default_cluster():
    """Found using the app as a stranger: /compare?sched=fifo,edf&w.n_jobs=60 opened the default scenario, the
    link's schedulers and workload silently dropped."""
    at = open_link({"sched": "fifo,edf", "w.n_jobs": "60", "w.deadlines": "gavel"}, "app_pages/compare.py")
    assert not at.warning, [w.value for w in at.warning]  # everything in it applies: nothing to warn about
    sc = at.session_state["scenario"]
    assert sc.schedulers == ("fifo", "edf") and (sc.workload.n_jobs, sc.workload.deadlines) == (60, "gavel")
    assert sc.cluster == scenario_mod.Scenario().cluster and DEFAULT_TOTALS in shown_text(at)
    assert at.query_params["cluster"] == sc.cluster  # the address bar now holds the whole scenario


def test_parameters_no_setting_reads_get_one_line_naming_them_and_the_rest_applies():
    link = "[click me](https:evil.example)"
    at = open_link({"cluster": "2x4:T4", "w.njobs": "60", link: "1", "sched": "fifo"})
    warnings = [re.sub(r"\\(.)", r"\1", w.value) for w in at.warning]
    assert len(warnings) == 1 and "'w.njobs', '[click me](https:evil.example)'" in warnings[0], warnings
    assert "are not settings of the playground; they were left out" in warnings[0]
    assert "](http" not in at.warning[0].value
    sc = at.session_state["scenario"]
    assert sc.cluster == "2x4:T4" and sc.schedulers == ("fifo",) and sc.workload.n_jobs == 300
    assert "w.njobs" not in at.query_params
    many = open_link({f"x{i}": "1" for i in range(8)})
    assert [re.sub(r"\\(.)", r"\1", w.value) for w in many.warning] == [
        "The link's parameters 'x0', 'x1', 'x2', 'x3', 'x4' and 3 more are not settings of the playground; they "
        "were left out."
    ]


def test_a_scheduler_the_playground_does_not_have_gets_one_line_naming_it_and_the_others_run():
    """Found using the app as a stranger: /compare?sched=fifo,nonesuch showed fifo alone, 'nonesuch' dropped
    without a word (the sidebar still listed it)."""
    at = open_link({"sched": "fifo,nonesuch,edf,rl:no-such-model"})
    assert [re.sub(r"\\(.)", r"\1", w.value) for w in at.warning] == [
        "The link's schedulers 'nonesuch', 'rl:no-such-model' are not schedulers of the playground; they were left out."
    ]
    assert at.session_state["scenario"].schedulers == ("fifo", "edf") and at.query_params["sched"] == "fifo,edf"
    assert "**Schedulers** · fifo\\, edf" in [m.value for m in at.sidebar.markdown]
    at.switch_page("app_pages/compare.py").run()
    assert at.multiselect(key="compare_schedulers").value == ["fifo", "edf"]

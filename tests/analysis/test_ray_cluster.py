"""Sweeps and plans on a Ray cluster this project did not start: a real head (``ray start --head --block``) with
token authentication on, joined through the command line with the token in ``RAY_AUTH_TOKEN`` only, as a user
joins one. Its rows equal a run in this process; a wrong or missing token, or no head, is one line and exit 2
within seconds; a head lost mid-sweep keeps the finished cells and reports the rest.

Every connection stays on loopback: the head binds 127.0.0.1 on free ports, and ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``
keeps Ray from replacing 127.0.0.1 by this machine's outward address. The head runs in its own process group and
is stopped by killing that group (never ``ray stop``, which stops every Ray on the machine)."""

from __future__ import annotations

import csv
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from engine.analysis.plan import plan
from engine.analysis.sweep import SweepSpec, run_sweep
from engine.traces import write_csv
from engine.traces.generator import generate

pytest.importorskip("ray")
REPO = Path(__file__).resolve().parents[2]
RAY = Path(sys.executable).with_name("ray")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not RAY.exists(), reason=f"no ray command beside {sys.executable}"),
]
GRID = ["--cluster", "2x4:V100-32", "--jobs", "40", "--load", "0.7,1.2", "--schedulers", "fifo,sjf", "--seeds", "2"]
#: A failed join must be reported within this many seconds (Python and Ray's import included, on a busy machine).
FAIL_WITHIN_S = 15


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports free on 127.0.0.1 now."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def loopback_env(home: Path, **extra: str) -> dict[str, str]:
    """This environment without any Ray address, token or mode, with ``home`` as HOME (no ~/.ray/auth_token)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    return {
        **env,
        "HOME": str(home),
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        "RAY_USAGE_STATS_ENABLED": "0",
        "ENGINE_PURE_PYTHON": "1",
        **extra,
    }


@contextmanager
def ray_head(home: Path, token: str):
    """A Ray head on 127.0.0.1 (2 CPUs, no dashboard) with token authentication on; yields ``(address, process)``.
    Its whole process group is killed on exit."""
    port, *others = free_ports(17)
    temp_dir = tempfile.mkdtemp(prefix="rayh-", dir="/tmp")  # short: Ray's socket paths live under it
    log = open(Path(temp_dir) / "head.log", "w+")
    options = dict(
        zip(
            [
                "--ray-client-server-port",
                "--node-manager-port",
                "--object-manager-port",
                "--dashboard-agent-listen-port",
                "--dashboard-agent-grpc-port",
                "--runtime-env-agent-port",
                "--metrics-export-port",
            ],
            map(str, others),
        )
    )
    argv = [
        str(RAY),
        "start",
        "--head",
        "--block",
        "--port",
        str(port),
        "--node-ip-address",
        "127.0.0.1",
        "--num-cpus",
        "2",
        "--include-dashboard",
        "false",
        "--object-store-memory",
        str(200 * 1024**2),
        "--temp-dir",
        temp_dir,
        "--disable-usage-stats",
        "--worker-port-list",
        ",".join(map(str, others[7:])),
        *[x for kv in options.items() for x in kv],
    ]
    head = subprocess.Popen(
        argv,
        env=loopback_env(home, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        cwd=temp_dir,
    )
    try:
        deadline = time.monotonic() + 120
        while "Ray runtime started" not in Path(log.name).read_text():
            assert head.poll() is None and time.monotonic() < deadline, Path(log.name).read_text()[-3000:]
            time.sleep(0.5)
        yield f"127.0.0.1:{port}", head
    finally:
        kill_group(head)
        log.close()
        shutil.rmtree(temp_dir, ignore_errors=True)


def kill_group(head: subprocess.Popen) -> None:
    """Kill the head's process group (as a crash would end it) and wait until none of it is left."""
    try:
        os.killpg(head.pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        head.poll()  # reap the head itself, so that the group can empty
        try:
            os.killpg(head.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    raise AssertionError(f"processes of group {head.pid} outlived SIGKILL")


@pytest.fixture(scope="module")
def head(tmp_path_factory):
    """A head shared by this module's tests: ``(address, token)``."""
    token = secrets.token_hex(16)
    with ray_head(tmp_path_factory.mktemp("home"), token) as (address, _):
        yield address, token


def engine_cli(*argv: str, env: dict[str, str], timeout_s: float = 300) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "engine", *argv],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    return proc, time.monotonic() - t0


def csv_rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_a_sweep_and_a_plan_on_the_head_equal_a_run_in_this_process(head, tmp_path):
    address, token = head
    env = loopback_env(tmp_path, RAY_AUTH_TOKEN=token)
    proc, _ = engine_cli(
        "sweep",
        *GRID,
        "--address",
        address,
        "--quiet",
        "--out",
        str(tmp_path / "r.csv"),
        "--json",
        str(tmp_path / "m.json"),
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((tmp_path / "m.json").read_text())
    assert meta["address"] == address and meta["cpus"] == 2 and meta["completed"] == 8
    spec = SweepSpec.grid(("2x4:V100-32",), ("fifo", "sjf"), jobs=40, loads=(0.7, 1.2), seeds=2)
    run_sweep(spec, backend="serial").to_csv(tmp_path / "here.csv", index=False)
    assert csv_rows(tmp_path / "r.csv") == csv_rows(tmp_path / "here.csv")

    trace = write_csv(generate("3x4:V100-32", 60, load=1.0, seed=3), tmp_path / "t.csv")
    proc, _ = engine_cli(
        "plan",
        "--trace",
        str(trace),
        "--node",
        "4:V100-32",
        "--scheduler",
        "fifo,sjf",
        "--target",
        "p95_wait_s<=3600",
        "--address",
        address,
        "--quiet",
        "--json",
        str(tmp_path / "p.json"),
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    answer = json.loads((tmp_path / "p.json").read_text())
    here = plan(
        str(trace), "4:V100-32", ["fifo", "sjf"], "p95_wait_s<=3600", backend="serial", probes_per_round=answer["cpus"]
    )
    assert answer["address"] == address
    assert {s: (a["nodes"], a["value_at_nodes"]) for s, a in answer["schedulers"].items()} == {
        r["scheduler"]: (r["nodes"], r["value_at_nodes"]) for r in here.to_dict("records")
    }


@pytest.mark.parametrize("case", ["wrong token", "no token", "no head"])
def test_a_failed_join_is_one_line_naming_the_address_and_exit_2_within_seconds(head, tmp_path, case):
    address, _ = head
    env = loopback_env(tmp_path, **({"RAY_AUTH_TOKEN": secrets.token_hex(16)} if case == "wrong token" else {}))
    if case == "no head":
        address = f"127.0.0.1:{free_ports(1)[0]}"
    proc, took_s = engine_cli("sweep", *GRID, "--address", address, "--out", str(tmp_path / "r.csv"), env=env)
    assert proc.returncode == 2 and took_s < FAIL_WITHIN_S
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ") and address in proc.stderr
    assert {
        "wrong token": "refused the authentication token from RAY_AUTH_TOKEN",
        "no token": "requires an authentication token and none was found",
        "no head": "no Ray head answers",
    }[case] in proc.stderr
    assert not (tmp_path / "r.csv").exists()


PLUGIN = '''
import time
from pathlib import Path

from engine.schedulers import SchedulerSpec, make_scheduler, register

STARTED = Path(__file__).with_name("started")


def slow_after_two():
    """fifo; every build after the third (the driver's check, then two cells) first sleeps a minute."""
    with STARTED.open("a") as f:
        f.write("x\\n")
    if len(STARTED.read_text().split()) > 3:
        time.sleep(60)
    return make_scheduler("fifo")


register(SchedulerSpec("slow-after-two", slow_after_two, "fifo, slow after two cells"))
'''


def test_a_head_lost_mid_sweep_keeps_the_finished_cells_and_reports_the_rest(tmp_path):
    token = secrets.token_hex(16)
    (tmp_path / "slow.py").write_text(PLUGIN)
    started = tmp_path / "started"
    with ray_head(tmp_path, token) as (address, head):
        sweep = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "engine",
                "sweep",
                "--plugin",
                str(tmp_path / "slow.py"),
                "--cluster",
                "1x4:T4",
                "--jobs",
                "20",
                "--load",
                "0.8",
                "--seeds",
                "6",
                "--schedulers",
                "slow-after-two",
                "--address",
                address,
                "--quiet",
                "--out",
                str(tmp_path / "r.csv"),
            ],
            cwd=REPO,
            env=loopback_env(tmp_path, RAY_AUTH_TOKEN=token),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 120
            while not (started.exists() and len(started.read_text().split()) >= 5):  # two done, two asleep
                assert sweep.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
            time.sleep(1)
            kill_group(head)
            lost = time.monotonic()
            out, err = sweep.communicate(timeout=120)
        finally:
            if sweep.poll() is None:
                sweep.kill()
    assert time.monotonic() - lost < 40  # well before Ray's own minute, after which it ends the process
    assert sweep.returncode == 1, err
    assert "6 cells" in out and "2 completed, 4 failed" in out
    assert len(csv_rows(tmp_path / "r.csv")) == 2
    assert err.count(f"the Ray cluster at {address} went away") == 4

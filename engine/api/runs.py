"""Runs of the HTTP API off the request path: the server's settings and the :class:`RunManager`.

A posted run is written to the store (``queued``) and handed to a pool of at most ``workers`` threads; each
thread runs its scenario in a bounded worker process (:func:`engine.runner.workers.call`: time and memory
bounds), writes its progress to the store as it goes and its results (or its one-line error) when it ends. The
request that posted it returns at once; a cancel kills the worker process. Runs wait in the pool's queue in the
order they came; at most :attr:`ApiSettings.max_queued` may wait, and at most
:attr:`ApiSettings.max_runs_per_client` of one client be queued or running (so no client fills the queue).

A sweep (:class:`~engine.analysis.sweep.SweepSpec`) or a capacity plan (:class:`~engine.analysis.plan.PlanSpec`)
is a run too, of another ``kind``: its thread drives it on Ray (a local Ray started on the first one and kept,
or the cluster at ``RAY_ADDRESS``), its jobs built or loaded first in a bounded worker process; a cancel (or the
run's time limit) cancels its pending cells.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from engine.analysis.energy import sets_energy
from engine.analysis.plan import PlanSpec, plan_json, run_plan_spec
from engine.analysis.results import metrics_json, results_as_json, run_scenario, scenario_results, sweep_json
from engine.analysis.scenario import Scenario, WorkloadSpec, load_trace_bytes
from engine.analysis.sweep import SweepSpec, run_sweep
from engine.errors import EngineError, RunCancelled
from engine.runner import workers
from engine.runner.store import DEFAULT_STORE, RunRecord, RunStore
from engine.runner.workers import RunLimitError, call
from engine.sim.job import Job
from engine.traces.limits import DEFAULT_MAX_JOBS, host_setting

#: Smallest change of a run's progress written to the store (a run of 100,000 jobs would otherwise write 100
#: times per scheduler anyway; this keeps it to at most 100 writes per run).
PROGRESS_STEP = 0.01
#: Least time between two progress writes of a run, seconds (the event streams look every 0.2 s; a small run
#: would otherwise write once per job, a transaction each, while its caller waits).
PROGRESS_EVERY_S = 0.1
#: What a run of each kind runs.
Work = Scenario | SweepSpec | PlanSpec


@dataclass(frozen=True)
class ApiSettings:
    """What a server allows; :meth:`from_env` reads the host's settings (the app's names where they exist).

    Attributes:
        store_path: the run store's SQLite file (``--store``).
        token: the bearer token every request but ``GET /v1/health`` must carry (``PLAYGROUND_API_TOKEN``);
            empty: none needed (a server bound to localhost only).
        workers: runs at once (``PLAYGROUND_WORKERS``, default CPU cores, at most 8).
        run_timeout_s: seconds one run may take (``PLAYGROUND_RUN_TIMEOUT_S``, default 3,600).
        memory_mb: address space of one run's worker process, MiB (``PLAYGROUND_RUN_MEMORY_MB``, default 4,096).
        max_jobs: jobs of an uploaded trace one run may simulate (``PLAYGROUND_MAX_JOBS``, default 100,000).
        upload_limit_mb: largest trace upload, MiB (``PLAYGROUND_API_UPLOAD_MB``, default 128).
        trace_store_mb: uploaded traces the store keeps, MiB (``PLAYGROUND_API_TRACE_STORE_MB``, default 512).
        trace_store_mb_per_client: uploaded traces the store keeps of one client (the last to upload a trace owns
            it; a client is as for ``max_runs_per_client``), MiB (``PLAYGROUND_API_TRACE_STORE_MB_PER_CLIENT``,
            default 128): past it, the client's own least recently used uploads are evicted, not the others'.
        sync_max_job_runs: jobs x schedulers ``POST /v1/simulate`` answers synchronously (default 20,000).
        sync_timeout_s: seconds a synchronous run may take (``PLAYGROUND_API_SYNC_TIMEOUT_S``, default 30).
        max_queued: runs that may wait for a worker (``PLAYGROUND_API_MAX_QUEUED``, default 1,000).
        max_runs_per_client: runs (sweeps and plans too) one client may have queued or running
            (``PLAYGROUND_API_MAX_RUNS_PER_CLIENT``, default 50); finished, failed and cancelled runs do not count.
            A client is the address that connects (the request's peer address): X-Forwarded-For is not trusted,
            so behind a reverse proxy every client is the proxy and they share one cap.
        sync_per_client: synchronous requests (``POST /v1/simulate``, a trace upload being loaded) one client
            may have at once (``PLAYGROUND_API_SYNC_PER_CLIENT``, default 1); a client is as above.
        sweep_cells: cells one sweep may have (``PLAYGROUND_SWEEP_CELLS``, the app's setting, default 2,000).
        sweep_job_runs: cells x jobs per cell one sweep may simulate (``PLAYGROUND_API_SWEEP_JOB_RUNS``, default
            2,000,000: the app's bound).
    """

    store_path: Path = DEFAULT_STORE
    token: str = ""
    workers: int = min(8, os.cpu_count() or 1)
    run_timeout_s: int = 3600
    memory_mb: int = 4096
    max_jobs: int = DEFAULT_MAX_JOBS
    upload_limit_mb: int = 128
    trace_store_mb: int = 512
    #: 128: the largest upload (``upload_limit_mb``) fits, and one client never evicts more than a quarter of the
    #: store's 512 MiB of others' uploads.
    trace_store_mb_per_client: int = 128
    sync_max_job_runs: int = 20_000
    sync_timeout_s: int = 30
    max_queued: int = 1000
    #: 50: twenty clients at their cap (the issue's 20 concurrent clients) fit the 1,000 places of the queue, and
    #: one client alone still keeps every worker busy (at most 8) with runs waiting behind them.
    max_runs_per_client: int = 50
    #: 1: each synchronous request holds one of the server's ``workers`` slots for up to ``sync_timeout_s``; with
    #: one each, no client holds them all on a server of 2 workers or more. More at once go to ``POST /v1/runs``.
    sync_per_client: int = 1
    sweep_cells: int = 2000
    sweep_job_runs: int = 2_000_000

    @classmethod
    def from_env(cls, store_path: Path = DEFAULT_STORE) -> ApiSettings:
        d = cls()
        return cls(
            store_path=store_path,
            token=os.environ.get("PLAYGROUND_API_TOKEN", ""),
            workers=host_setting("PLAYGROUND_WORKERS", d.workers),
            run_timeout_s=host_setting("PLAYGROUND_RUN_TIMEOUT_S", d.run_timeout_s),
            memory_mb=host_setting("PLAYGROUND_RUN_MEMORY_MB", d.memory_mb),
            max_jobs=host_setting("PLAYGROUND_MAX_JOBS", d.max_jobs),
            upload_limit_mb=host_setting("PLAYGROUND_API_UPLOAD_MB", d.upload_limit_mb),
            trace_store_mb=host_setting("PLAYGROUND_API_TRACE_STORE_MB", d.trace_store_mb),
            trace_store_mb_per_client=host_setting(
                "PLAYGROUND_API_TRACE_STORE_MB_PER_CLIENT", d.trace_store_mb_per_client
            ),
            sync_max_job_runs=host_setting("PLAYGROUND_API_SYNC_MAX_JOB_RUNS", d.sync_max_job_runs),
            sync_timeout_s=host_setting("PLAYGROUND_API_SYNC_TIMEOUT_S", d.sync_timeout_s),
            max_queued=host_setting("PLAYGROUND_API_MAX_QUEUED", d.max_queued),
            max_runs_per_client=host_setting("PLAYGROUND_API_MAX_RUNS_PER_CLIENT", d.max_runs_per_client),
            sync_per_client=host_setting("PLAYGROUND_API_SYNC_PER_CLIENT", d.sync_per_client),
            sweep_cells=host_setting("PLAYGROUND_SWEEP_CELLS", d.sweep_cells),
            sweep_job_runs=host_setting("PLAYGROUND_API_SWEEP_JOB_RUNS", d.sweep_job_runs),
        )


class BusyError(EngineError):
    """The server, or the client that asked, has as much work as it may have (runs queued, synchronous requests);
    the message names the cap and its setting. Nothing is stored or started."""


class RunManager:
    """The store and the runs in flight: :meth:`submit`, :meth:`restart`, :meth:`cancel`, :meth:`simulate`,
    :meth:`close`. ``client`` (the connecting address) names who asks, for the caps per client."""

    def __init__(self, settings: ApiSettings) -> None:
        workers.add_preload(__name__)  # the worker sides of simulate() and of an upload live here
        self.settings = settings
        self.store = RunStore(
            settings.store_path,
            trace_limit_bytes=settings.trace_store_mb * 2**20,
            client_trace_limit_bytes=settings.trace_store_mb_per_client * 2**20,
        )
        self._pool = ThreadPoolExecutor(max_workers=settings.workers, thread_name_prefix="run")
        self._sync = threading.BoundedSemaphore(settings.workers)
        self._cancels: dict[str, threading.Event] = {}
        self._clients: dict[str, str] = {}  # run id -> its client, while the run counts against the client's cap
        self._sync_clients: Counter[str] = Counter()  # synchronous requests in progress per client
        self._lock = threading.Lock()

    def in_flight(self) -> int:
        with self._lock:
            return len(self._cancels)

    def submit(self, work: Work, kind: str, client: str) -> RunRecord:
        """Store a new run of ``work`` (a scenario, or a sweep or plan to drive on Ray: ``kind``) and queue it.
        :class:`BusyError` (nothing stored) when the server or ``client`` has as many runs as it may."""
        run_id = uuid.uuid4().hex
        self._reserve(run_id, client)
        try:
            record = self.store.create_run(work.to_json(), kind, run_id)
        except BaseException:
            self._release(run_id)
            raise
        self._pool.submit(self._execute, run_id, work)
        return record

    def restart(self, run_id: str, work: Work, client: str) -> bool:
        """Queue interrupted run ``run_id`` of ``work`` again; whether it was interrupted. :class:`BusyError` (the
        run stays interrupted) when the server or ``client`` has as many runs as it may."""
        if not self.store.requeue(run_id):
            return False
        try:
            self._reserve(run_id, client)
        except BusyError:
            self.store.set_state(run_id, "interrupted", only_from=("queued",))
            raise
        self._pool.submit(self._execute, run_id, work)
        return True

    def _reserve(self, run_id: str, client: str) -> None:
        """Count run ``run_id`` in flight, for the server and for ``client``; :class:`BusyError` when full."""
        settings = self.settings
        with self._lock:
            if len(self._cancels) >= settings.max_queued + settings.workers:
                raise BusyError(
                    f"this server already has {settings.max_queued:,} runs waiting (PLAYGROUND_API_MAX_QUEUED); "
                    "try again when some have finished"
                )
            mine = sum(1 for c in self._clients.values() if c == client)
            if mine >= settings.max_runs_per_client:
                raise BusyError(
                    f"this client ({client or 'unknown address'}) already has {mine:,} runs queued or running, the "
                    "most one client may have (PLAYGROUND_API_MAX_RUNS_PER_CLIENT): try again when one has "
                    "finished, or cancel one (DELETE /v1/runs/ID)"
                )
            self._cancels[run_id] = threading.Event()
            self._clients[run_id] = client

    def _release(self, run_id: str) -> None:
        with self._lock:
            self._cancels.pop(run_id, None)
            self._clients.pop(run_id, None)

    def cancel(self, run_id: str) -> bool:
        """Cancel a queued, running or interrupted run (its worker process is killed); whether it was one."""
        moved = self.store.set_state(run_id, "cancelled", only_from=("queued", "running", "interrupted"))
        with self._lock:
            event = self._cancels.get(run_id)
            if moved:  # no longer the client's, while its worker process stops
                self._clients.pop(run_id, None)
        if event is not None:
            event.set()
        return moved

    def simulate(self, scenario: Scenario, client: str) -> dict:
        """The metrics table of a small scenario, run now in a worker process within the synchronous bounds."""
        with self._sync_turn(client):
            return call(
                _metrics_of,
                scenario,
                self._trace_bytes(scenario),
                what="the run",
                limit_s=self.settings.sync_timeout_s,
                memory_mb=self.settings.memory_mb,
                slots=self._sync,
            )

    def import_report(self, data: bytes, workload: WorkloadSpec, client: str) -> dict:
        """An upload loaded with ``workload``'s loader options in a worker process (synchronous bounds): its
        import report (``TraceReport.to_dict()``)."""
        name = workload.trace_name or "the trace"
        with self._sync_turn(client):
            return call(
                import_report,
                data,
                workload,
                what=f"loading {name}",
                limit_s=self.settings.sync_timeout_s,
                memory_mb=self.settings.memory_mb,
                slots=self._sync,
            )

    @contextmanager
    def _sync_turn(self, client: str) -> Iterator[None]:
        """One synchronous request of ``client`` in progress: :class:`BusyError` when it already has
        :attr:`ApiSettings.sync_per_client`."""
        with self._lock:
            mine = self._sync_clients[client]
            if mine >= self.settings.sync_per_client:
                raise BusyError(
                    f"this client ({client or 'unknown address'}) already has {mine:,} synchronous requests in "
                    "progress (POST /v1/simulate, trace uploads), the most one client may have "
                    "(PLAYGROUND_API_SYNC_PER_CLIENT): wait for it, or POST the run to /v1/runs"
                )
            self._sync_clients[client] += 1
        try:
            yield
        finally:
            with self._lock:
                self._sync_clients[client] -= 1
                if not self._sync_clients[client]:
                    del self._sync_clients[client]

    def close(self) -> None:
        """Stop: every run in flight is cancelled in its process and marked interrupted (it can be restarted)."""
        with self._lock:
            ids = list(self._cancels)
        for run_id in ids:
            self.store.set_state(run_id, "interrupted")
        with self._lock:
            for event in self._cancels.values():
                event.set()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _trace_bytes(self, scenario: Scenario) -> bytes | None:
        wl = scenario.workload
        return self.store.get_trace(wl.trace_sha256) if wl.source == "trace" and wl.trace_sha256 else None

    def _execute(self, run_id: str, work: Work) -> None:
        with self._lock:
            cancel = self._cancels[run_id]
        try:
            if cancel.is_set() or not self.store.set_state(run_id, "running", only_from=("queued",)):
                return
            written = [0.0, time.monotonic()]  # share and time of the last write

            def on_progress(done: int, total: int) -> None:
                share = done / total if total else 1.0
                now = time.monotonic()
                if share - written[0] >= PROGRESS_STEP and now - written[1] >= PROGRESS_EVERY_S:
                    written[:] = [share, now]
                    self.store.set_progress(run_id, share)

            try:
                if isinstance(work, Scenario):
                    results = call(
                        _results_json,
                        work,
                        self._trace_bytes(work),
                        what="the run",
                        limit_s=self.settings.run_timeout_s,
                        memory_mb=self.settings.memory_mb,
                        on_progress=on_progress,
                        cancel=cancel,
                    )
                else:
                    results = self._on_ray(work, on_progress, cancel)
            except RunCancelled:
                return
            except EngineError as exc:  # bad input found by the work, a bound passed, a Ray cluster gone
                self.store.set_state(run_id, "failed", error=_one_line(str(exc)))
                return
            except Exception as exc:  # noqa: BLE001 -- a bug in the engine: the run fails with one line, not the server
                self.store.set_state(run_id, "failed", error=_one_line(f"internal error: {exc}"))
                return
            self.store.finish(run_id, results)
        finally:
            self._release(run_id)

    def _on_ray(
        self, spec: SweepSpec | PlanSpec, on_progress: Callable[[int, int], None], cancel: threading.Event
    ) -> dict[str, str]:
        """A sweep or plan driven on Ray from this thread: its jobs first (a bounded worker process), then its
        cells; its results as the store keeps them. Past the run time limit its cells are cancelled and
        :class:`RunLimitError` raised; a cancel raises :class:`RunCancelled`."""
        limit_s, memory_mb = self.settings.run_timeout_s, self.settings.memory_mb
        what = "the sweep" if isinstance(spec, SweepSpec) else "the plan"
        timed_out = threading.Event()

        def time_up() -> None:
            timed_out.set()
            cancel.set()

        timer = threading.Timer(limit_s, time_up)
        timer.daemon = True
        timer.start()
        try:
            data = self._trace_bytes(spec.base)

            def bounded(fn: Callable, *args: Any) -> Any:
                return call(fn, *args, what=f"{what}'s jobs", limit_s=limit_s, memory_mb=memory_mb, cancel=cancel)

            if isinstance(spec, SweepSpec):
                trace = bounded(_trace_jobs, spec.base.workload, data) if data else None
                energy = sets_energy(spec.base.options)
                frame = run_sweep(spec, trace_jobs=trace, on_progress=on_progress, energy=energy, cancel=cancel)
                answer = sweep_json(frame)
            else:
                jobs = bounded(_plan_jobs, spec.base, data)
                answer = plan_json(run_plan_spec(spec, jobs, on_progress=on_progress, cancel=cancel))
        except RunCancelled:
            if timed_out.is_set():
                raise RunLimitError(
                    f"{what} stopped after {limit_s:g} s, this server's time limit per run: make it smaller "
                    "(fewer cells or jobs, fewer schedulers at once)"
                ) from None
            raise RunCancelled(f"{what} was cancelled") from None
        finally:
            timer.cancel()
        return {
            "metrics": json.dumps(answer, allow_nan=False, separators=(",", ":")),
            "jobs": "null",
            "timeline": "null",
        }


def _trace_jobs(workload: WorkloadSpec, data: bytes) -> tuple[Job, ...]:
    """The worker side of a sweep on an uploaded trace: its jobs before the grid's cuts."""
    return workload.load_trace(data).jobs


def _plan_jobs(base: Scenario, data: bytes | None) -> tuple[Job, ...]:
    """The worker side of a plan: the base scenario's jobs, built for its cluster."""
    return base.build_jobs(base.build_cluster(), data)


def import_report(data: bytes, workload: WorkloadSpec) -> dict:
    """The worker side of an upload: the trace's bytes loaded with the workload's loader options; its import
    report (``TraceReport.to_dict()``)."""
    return load_trace_bytes(data, workload).report.to_dict()


def _results_json(
    scenario: Scenario, trace_bytes: bytes | None, on_progress: Callable[[int, int], None] | None = None
) -> dict[str, str]:
    """The worker side of a run: its results as JSON texts (a string crosses back cheaper than the objects)."""
    return results_as_json(scenario_results(scenario, trace_bytes, on_progress=on_progress))


def _metrics_of(scenario: Scenario, trace_bytes: bytes | None) -> dict:
    """The worker side of :meth:`RunManager.simulate`: the metrics table only."""
    return metrics_json(run_scenario(scenario, trace_bytes).results)


def _one_line(text: str) -> str:
    return " ".join(text.split())[:1000]

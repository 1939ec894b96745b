"""The HTTP API, version 1 (FastAPI; the OpenAPI schema at ``/openapi.json``, its pages at ``/docs``).

Read-only lists: ``GET /v1/health``, ``/v1/schedulers``, ``/v1/agents`` (trained models with their cards'
verdicts), ``/v1/presets``, ``/v1/gpu-types``. Traces: ``POST /v1/traces`` (the file's bytes as the body; the
file name, format and loader options as query parameters) -> 201 with its SHA-256, job count and import report.
Runs: ``POST /v1/runs`` (a scenario JSON, the app's download, as the body) -> 202, ``{"id": ...}`` and
``Location``; ``GET /v1/runs/{id}`` (state and progress), ``/events`` (Server-Sent Events until the run ends),
``/results`` (the metrics table: the JSON ``simulate --scenario FILE --json`` writes; CSV and Parquet by
``Accept`` or a ``.csv``/``.parquet`` suffix), ``/results/jobs`` (per-job records), ``/results/timeline``;
``DELETE /v1/runs/{id}`` cancels, ``POST /v1/runs/{id}/restart`` queues an interrupted run again.
``POST /v1/simulate``: a small scenario answered at once with its metrics table.
Sweeps and capacity plans are runs too, run on Ray: ``POST /v1/sweeps`` (a sweep spec, the Explore page's or
``sweep --spec``'s) and ``POST /v1/plans`` (a plan spec: a base scenario, node shapes, a target) -> 202 and the
same ``/v1/runs/{id}`` routes; their results are one JSON (a sweep's ``rows``, ``failures`` and ``meta``; what
``plan --json`` writes) and, as CSV or Parquet, the sweep's rows (``sweep --out``'s CSV) or one row per scheduler.

Every input is data from a stranger: bodies are bounded (413 names the limit), a scenario is untrusted (never a
path), and every error is ``{"error": "<one line>"}`` with a 4xx status (422 for invalid input): the message the
command line prints for the same input. With a token set (``PLAYGROUND_API_TOKEN``), every request but the health
check needs ``Authorization: Bearer <token>`` (compared in constant time).

No client can take the whole server: a client (the address that connects; ``X-Forwarded-For`` is not trusted, so
behind a reverse proxy all clients are the proxy) may have at most ``PLAYGROUND_API_MAX_RUNS_PER_CLIENT`` runs,
sweeps and plans queued or running (50) and ``PLAYGROUND_API_SYNC_PER_CLIENT`` synchronous requests (simulate,
uploads) at once (1), and the server at most ``PLAYGROUND_API_MAX_QUEUED`` runs waiting (1,000). Past a cap the
answer is 429 with a ``Retry-After`` header and the error naming the cap's setting; nothing is stored or started,
and the client's earlier runs go on (a cancelled or finished run no longer counts). The store keeps
``PLAYGROUND_API_TRACE_STORE_MB_PER_CLIENT`` of one client's uploads (128 MiB of ``PLAYGROUND_API_TRACE_STORE_MB``'s
512): past it, that client's own least recently used uploads are evicted (named in the upload's answer).
"""

from __future__ import annotations

import asyncio
import hmac
import io
import json
import re
from contextlib import asynccontextmanager
from dataclasses import replace
from functools import cache
from typing import Any, AsyncIterator

import pandas as pd
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException

from engine.analysis.plan import PlanSpec
from engine.analysis.scenario import (
    MAX_SCENARIO_BYTES,
    Scenario,
    ScenarioError,
    WorkloadSpec,
    content_hash,
    preset_scenario,
)
from engine.analysis.sweep import SweepSpec
from engine.api.runs import ApiSettings, BusyError, RunManager, Work
from engine.errors import EngineError
from engine.runner.store import FINAL_STATES, RunRecord, StoreError
from engine.runner.workers import RunLimitError
from engine.traces.limits import UploadLimitError, check_job_limit, check_trace_size

API_VERSION = "1"
_RUN_ID = re.compile(r"[0-9a-f]{32}")
#: How often the event stream looks at a run's state, seconds; and how often it sends a keep-alive comment.
EVENT_POLL_S = 0.2
EVENT_KEEPALIVE_S = 15.0
#: An upload's query parameters by the workload keys they set (the others have the same name).
_UPLOAD_PARAMETERS = {"trace_name": "name", "trace_format": "format"}
_TABLE_TYPES = {"csv": "text/csv", "parquet": "application/vnd.apache.parquet"}
#: Seconds a client refused by a cap is told to wait (``Retry-After``); an estimate: a small run ends within it,
#: and a client that waits so long between tries costs the server one refused request per 10 s.
RETRY_AFTER_S = 10


#: The request bodies, for the OpenAPI schema (the routes read them raw: bounded, and parsed by the engine).
_SCENARIO_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {"type": "object", "description": "a scenario: the app's Scenario (JSON) download"},
                "example": Scenario(
                    cluster="2x4:V100-32", workload=WorkloadSpec(n_jobs=100), schedulers=("fifo", "sjf")
                ).to_dict(),
            }
        },
    }
}
_SWEEP_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {"type": "object", "description": "a sweep spec: base scenario, clusters, loads, seeds"},
                "example": SweepSpec(
                    base=Scenario(cluster="2x4:V100-32", workload=WorkloadSpec(n_jobs=100), schedulers=("fifo", "sjf")),
                    clusters=("2x4:V100-32", "4x4:V100-32"),
                    loads=(0.6, 0.9),
                    seeds=2,
                ).to_dict(),
            }
        },
    }
}
_PLAN_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {"type": "object", "description": "a plan spec: base scenario, node shapes, target"},
                "example": PlanSpec(
                    base=Scenario(cluster="2x4:V100-32", workload=WorkloadSpec(n_jobs=100), schedulers=("fifo", "sjf")),
                    nodes=("8:A100-80",),
                    target="p95_wait_s<=1800",
                    max_nodes=64,
                ).to_dict(),
            }
        },
    }
}
_TRACE_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/octet-stream": {
                "schema": {"type": "string", "format": "binary", "description": "the trace file's bytes (gzip allowed)"}
            }
        },
    }
}


class ApiError(HTTPException):
    """An answer with a 4xx status and a one-line message (``{"error": message}``)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(status, " ".join(message.split()))


def create_app(settings: ApiSettings) -> FastAPI:
    """The API over the store of ``settings`` (opened, and its unfinished runs marked interrupted, on startup)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.runs = RunManager(settings)
        try:
            yield
        finally:
            await asyncio.to_thread(app.state.runs.close)

    app = FastAPI(
        title="GPU-cluster scheduling playground",
        version=API_VERSION,
        lifespan=lifespan,
        description="Run scheduling scenarios headless: upload traces, post runs, follow them, fetch results.",
    )
    _install_error_handlers(app)
    _install_token_check(app, settings.token)
    _add_routes(app, settings)
    return app


# ---------------------------------------------------------------------------------------------- plumbing
def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, exc: HTTPException) -> JSONResponse:
        return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("query", "path", "body"))
        return JSONResponse({"error": f"{where}: {first.get('msg', 'invalid input')}"}, status_code=422)

    @app.exception_handler(BusyError)
    async def busy(_request: Request, exc: BusyError) -> JSONResponse:
        return JSONResponse(
            {"error": " ".join(str(exc).split())}, status_code=429, headers={"Retry-After": str(RETRY_AFTER_S)}
        )

    @app.exception_handler(EngineError)
    async def engine_error(_request: Request, exc: EngineError) -> JSONResponse:
        status = 413 if isinstance(exc, (UploadLimitError, StoreError)) else 422
        return JSONResponse({"error": " ".join(str(exc).split())}, status_code=status)

    @app.exception_handler(Exception)
    async def bug(_request: Request, exc: Exception) -> JSONResponse:  # logged by the server, never sent
        return JSONResponse(
            {"error": f"internal error ({type(exc).__name__}); the server log has the details"}, status_code=500
        )


def _install_token_check(app: FastAPI, token: str) -> None:
    if not token:
        return
    expected = f"Bearer {token}".encode()

    @app.middleware("http")
    async def check_token(request: Request, call_next):
        if request.url.path.startswith("/v1/") and request.url.path != "/v1/health":
            given = request.headers.get("authorization", "").encode()
            if not hmac.compare_digest(given, expected):
                return JSONResponse(
                    {"error": "this server needs Authorization: Bearer <PLAYGROUND_API_TOKEN>"},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
        return await call_next(request)


async def _read_body(request: Request, limit: int, what: str) -> bytes:
    """The request's body, refused with 413 as soon as it passes ``limit`` bytes (declared or streamed)."""
    too_big = ApiError(413, f"{what} is larger than this server's limit of {limit:,} bytes")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_big
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)


def _runs(request: Request) -> RunManager:
    return request.app.state.runs


def _client(request: Request) -> str:
    """Who asks, for the caps per client: the address that connects (``serve`` ignores ``X-Forwarded-For``)."""
    return request.client.host if request.client else ""


def _record(runs: RunManager, run_id: str) -> RunRecord:
    record = runs.store.get_run(run_id) if _RUN_ID.fullmatch(run_id) else None
    if record is None:
        raise ApiError(404, f"no run {run_id[:40]!r} on this server")
    return record


def _run_view(record: RunRecord) -> dict[str, Any]:
    body = "scenario" if record.kind == "scenario" else "spec"
    return {**record.to_dict(), body: json.loads(record.scenario), "links": _links(record.id)}


def _work_of(record: RunRecord) -> Work:
    """What a stored run runs, read back from its JSON by its kind."""
    if record.kind == "sweep":
        return SweepSpec.from_json(record.scenario)
    if record.kind == "plan":
        return PlanSpec.from_json(record.scenario)
    return Scenario.from_json(record.scenario)


def _links(run_id: str) -> dict[str, str]:
    base = f"/v1/runs/{run_id}"
    return {
        "self": base,
        "events": f"{base}/events",
        "results": f"{base}/results",
        "jobs": f"{base}/results/jobs",
        "timeline": f"{base}/results/timeline",
    }


async def _scenario(request: Request, runs: RunManager) -> Scenario:
    """The body as an untrusted scenario that can run here: schedulers known, cluster valid, trace uploaded."""
    body = await _read_body(request, MAX_SCENARIO_BYTES, "the scenario JSON")
    sc = Scenario.from_json(body)
    await asyncio.to_thread(_check_runnable, sc, runs)
    return sc


def _check_runnable(sc: Scenario, runs: RunManager) -> None:
    from engine.schedulers import make_scheduler

    if not sc.schedulers:
        raise ApiError(422, "scenario.schedulers is empty: name at least one scheduler (GET /v1/schedulers)")
    for name in sc.schedulers:
        make_scheduler(name)
    sc.build_cluster()
    wl = sc.workload
    if wl.source == "trace" and runs.store.trace_info(wl.trace_sha256) is None:
        raise ApiError(
            422,
            f"the trace {wl.trace_name or wl.trace_sha256[:12]} (sha256 {wl.trace_sha256[:12]}...) is "
            "not on this server: upload it with POST /v1/traces (uploads not used for long are evicted)",
        )


def _check_sweep(spec: SweepSpec, runs: RunManager) -> None:
    """A sweep that can run here: its base runnable, every cluster shorthand or inline JSON within the
    playground's bounds, its cells and job runs within the server's."""
    _check_runnable(spec.base, runs)
    for cluster in spec.clusters:
        replace(spec.base, cluster=cluster).build_cluster()
    settings = runs.settings
    if spec.cells > settings.sweep_cells:
        raise ApiError(
            422, f"the sweep has {spec.cells:,} cells; this server runs at most {settings.sweep_cells:,} in one sweep"
        )
    job_runs = spec.cells * _job_runs(replace(spec.base, schedulers=spec.base.schedulers[:1]), runs)
    if job_runs > settings.sweep_job_runs:
        raise ApiError(
            422,
            f"the sweep simulates {job_runs:,} jobs in all (cells x jobs); this server runs at most "
            f"{settings.sweep_job_runs:,} in one sweep",
        )


def _job_runs(sc: Scenario, runs: RunManager) -> int:
    """Jobs x schedulers the scenario simulates, at most (a trace's: its block, or its rows up to ``first``)."""
    wl = sc.workload
    if wl.source == "generate":
        jobs = wl.n_jobs
    elif wl.source == "preset":
        jobs = preset_scenario(wl.preset).workload.n_jobs
    else:
        info = runs.store.trace_info(wl.trace_sha256)
        rows = int(info.report.get("rows", 0)) if info else 0  # the upload's rows: at most that many jobs
        jobs = wl.block or (min(wl.first, rows) if wl.first else rows)
    return jobs * len(sc.schedulers)


def _results_frame(record: RunRecord, results: Any) -> pd.DataFrame:
    """A done run's results as a table: one row per scheduler (a scenario's metrics, a plan's answers) or per
    cell (a sweep)."""
    if record.kind == "sweep":
        return pd.DataFrame(results["rows"], columns=list(results["rows"][0]) if results["rows"] else None)
    if record.kind == "plan":
        return pd.DataFrame(list(results["schedulers"].values()))
    return pd.DataFrame.from_dict(results, orient="index").rename_axis("scheduler").reset_index()


def _table(frame: pd.DataFrame, kind: str) -> Response:
    if kind == "csv":
        return Response(frame.to_csv(index=False), media_type="text/csv")
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return Response(buffer.getvalue(), media_type=_TABLE_TYPES["parquet"])


def _json_text(text: str | None) -> Response:
    """Stored JSON text as it is (a large run's records are not parsed to be sent)."""
    return Response(text or "null", media_type="application/json")


def _wanted(request: Request, suffix: str) -> str:
    """``json``, ``csv`` or ``parquet``: the suffix of the path, else the ``Accept`` header."""
    if suffix:
        return suffix
    accept = request.headers.get("accept", "")
    return next((kind for kind, media in _TABLE_TYPES.items() if media in accept), "json")


def _done(runs: RunManager, run_id: str) -> RunRecord:
    """The run, if its results can be read: 409 while it is not done, 410 when it failed or was cancelled."""
    record = _record(runs, run_id)
    if record.state == "failed":
        raise ApiError(410, record.error or "the run failed")
    if record.state == "cancelled":
        raise ApiError(410, "the run was cancelled: it has no results")
    if record.state == "interrupted":
        raise ApiError(
            409, f"the run was interrupted by a server restart: POST /v1/runs/{run_id}/restart runs it again"
        )
    if record.state != "done":
        raise ApiError(
            409,
            f"the run is {record.state} ({record.progress:.0%} done): results come when it is done "
            f"(follow GET /v1/runs/{run_id}/events)",
        )
    return record


def _scenario_run(runs: RunManager, run_id: str, part: str) -> RunRecord:
    """A done scenario run (a sweep or plan has no per-job records or timeline: 404)."""
    record = _done(runs, run_id)
    if record.kind != "scenario":
        raise ApiError(
            404, f"a {record.kind} has no {part}: GET /v1/runs/{run_id}/results has its results (JSON, CSV, Parquet)"
        )
    return record


async def _queue(request: Request, runs: RunManager, work: Work, kind: str) -> JSONResponse:
    """Store a new run of ``work`` and queue it: 202 with its id and ``Location`` (429 when the queue, or the
    client's share of it, is full)."""
    record = await asyncio.to_thread(runs.submit, work, kind, _client(request))
    return JSONResponse(
        {"id": record.id, "kind": kind, "state": record.state, "links": _links(record.id)},
        status_code=202,
        headers={"Location": f"/v1/runs/{record.id}"},
    )


# ---------------------------------------------------------------------------------------------- routes
def _add_routes(app: FastAPI, settings: ApiSettings) -> None:
    upload_limit = settings.upload_limit_mb * 2**20

    @app.get("/v1/health")
    async def health(request: Request) -> dict[str, Any]:
        return {"status": "ok", "version": API_VERSION, "runs_in_flight": _runs(request).in_flight()}

    @app.get("/v1/schedulers")
    def schedulers() -> dict[str, Any]:
        return _scheduler_list()

    @app.get("/v1/agents")
    def agents() -> list[dict[str, Any]]:
        return _agent_list()

    @app.get("/v1/presets")
    def presets() -> list[dict[str, Any]]:
        return _preset_list()

    @app.get("/v1/gpu-types")
    def gpu_types() -> dict[str, Any]:
        from engine.sim.cluster import DEFAULT_CATALOG, PRICE_LISTS

        return {
            "gpu_types": [t.to_dict() for t in DEFAULT_CATALOG.values()],
            "price_lists": {name: p.to_dict() for name, p in PRICE_LISTS.items()},
        }

    @app.post("/v1/traces", status_code=201, openapi_extra=_TRACE_BODY)
    async def upload_trace(
        request: Request,
        name: str = "trace.csv",
        format: str = "",
        time_unit: str = "",
        skip_bad: bool = False,
        first: int = 0,
    ) -> dict[str, Any]:
        """The body is the trace file's bytes (gzip allowed); ``name`` is its file name (its extension helps
        detect the format). Answers its SHA-256 (what a scenario's ``workload.trace_sha256`` names), its jobs
        and the import report (rows dropped by reason, ``unit_warning``, ...)."""
        runs = _runs(request)
        data = await _read_body(request, upload_limit, "the trace file")
        if not data:
            raise ApiError(422, "the body is empty: send the trace file's bytes")
        try:
            workload = WorkloadSpec(
                source="trace",
                trace_sha256=content_hash(data),
                trace_name=name,
                trace_format=format,
                time_unit=time_unit,
                skip_bad=skip_bad,
                first=first,
            )
        except ScenarioError as exc:  # name the query parameter, not the scenario's key
            message = str(exc)
            for key in ("trace_name", "trace_format", "time_unit", "skip_bad", "first"):
                message = message.replace(f"scenario.workload.{key}", _UPLOAD_PARAMETERS.get(key, key))
            raise ApiError(422, message) from None
        check_trace_size(data, name, settings.max_jobs)
        report = await asyncio.to_thread(runs.import_report, data, workload, _client(request))
        check_job_limit(report["jobs"], name, settings.max_jobs, "the query parameter first (workload.first)")
        digest, evicted = await asyncio.to_thread(runs.store.put_trace, data, name, report, _client(request))
        answer = {
            "sha256": digest,
            "name": name,
            "jobs": report["jobs"],
            "report": report,
            "evicted": [{"sha256": t.sha256, "name": t.name} for t in evicted],
        }
        if evicted:
            answer["message"] = (
                f"to keep this upload, the server evicted {len(evicted)} older upload(s) used least "
                f"recently ({', '.join(t.name for t in evicted)}): it keeps {settings.trace_store_mb:,} MiB of "
                f"uploads, {settings.trace_store_mb_per_client:,} MiB of one client's (PLAYGROUND_API_TRACE_STORE_MB, "
                "PLAYGROUND_API_TRACE_STORE_MB_PER_CLIENT); upload them again to run them"
            )
        return answer

    @app.post("/v1/runs", status_code=202, openapi_extra=_SCENARIO_BODY)
    async def post_run(request: Request) -> JSONResponse:
        """The body is a scenario JSON (the app's "Scenario (JSON)" download, older files too)."""
        runs = _runs(request)
        return await _queue(request, runs, await _scenario(request, runs), "scenario")

    @app.post("/v1/sweeps", status_code=202, openapi_extra=_SWEEP_BODY)
    async def post_sweep(request: Request) -> JSONResponse:
        """The body is a sweep spec (``sweep --spec``'s, the Explore page's download; a scenario JSON is the grid
        of its own cluster and load). Its cells run on Ray; follow it under ``/v1/runs/{id}``."""
        runs = _runs(request)
        spec = SweepSpec.from_json(await _read_body(request, MAX_SCENARIO_BYTES, "the sweep spec"))
        await asyncio.to_thread(_check_sweep, spec, runs)
        return await _queue(request, runs, spec, "sweep")

    @app.post("/v1/plans", status_code=202, openapi_extra=_PLAN_BODY)
    async def post_plan(request: Request) -> JSONResponse:
        """The body is a plan spec: ``base`` (a scenario: jobs, schedulers, seed, run options), ``nodes`` (one
        shape for the fewest nodes, several for the cheapest mix), ``target``, ``max_nodes``, ``grow``. Its runs
        go out on Ray; follow it under ``/v1/runs/{id}``."""
        runs = _runs(request)
        spec = PlanSpec.from_json(await _read_body(request, MAX_SCENARIO_BYTES, "the plan spec"))
        await asyncio.to_thread(_check_runnable, spec.base, runs)
        return await _queue(request, runs, spec, "plan")

    @app.get("/v1/runs")
    def list_runs(request: Request, limit: int = 100) -> list[dict[str, Any]]:
        return [r.to_dict() for r in _runs(request).store.list_runs(max(1, min(limit, 1000)))]

    @app.get("/v1/runs/{run_id}")
    def get_run(request: Request, run_id: str) -> dict[str, Any]:
        return _run_view(_record(_runs(request), run_id))

    @app.delete("/v1/runs/{run_id}")
    def cancel_run(request: Request, run_id: str) -> dict[str, Any]:
        runs = _runs(request)
        record = _record(runs, run_id)
        if not runs.cancel(run_id):
            raise ApiError(
                409, f"the run is already {record.state}: only a queued, running or interrupted run can be cancelled"
            )
        return _run_view(_record(runs, run_id))

    @app.post("/v1/runs/{run_id}/restart", status_code=202)
    def restart_run(request: Request, run_id: str) -> JSONResponse:
        runs = _runs(request)
        record = _record(runs, run_id)
        if not runs.restart(run_id, _work_of(record), _client(request)):
            raise ApiError(409, f"the run is {record.state}: only an interrupted run can be restarted")
        return JSONResponse(
            {"id": run_id, "state": "queued", "links": _links(run_id)},
            status_code=202,
            headers={"Location": f"/v1/runs/{run_id}"},
        )

    @app.get("/v1/runs/{run_id}/events")
    async def run_events(request: Request, run_id: str) -> StreamingResponse:
        """Server-Sent Events: ``progress`` with ``{id, state, progress}`` at every change, then ``end`` with
        the final state (done, failed with its error, cancelled or interrupted)."""
        runs = _runs(request)
        _record(runs, run_id)
        return StreamingResponse(
            _events(request, runs, run_id),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    for suffix in ("", ".json", ".csv", ".parquet"):
        _add_results_routes(app, suffix)

    @app.post("/v1/simulate", openapi_extra=_SCENARIO_BODY)
    async def simulate_now(request: Request) -> dict[str, Any]:
        """A small scenario run now: its metrics table (the JSON ``simulate --scenario --json`` writes). At most
        :attr:`ApiSettings.sync_max_job_runs` jobs x schedulers; larger runs go to ``POST /v1/runs``."""
        runs = _runs(request)
        sc = await _scenario(request, runs)
        job_runs = await asyncio.to_thread(_job_runs, sc, runs)
        if job_runs > settings.sync_max_job_runs:
            raise ApiError(
                422,
                f"POST /v1/simulate runs at most {settings.sync_max_job_runs:,} jobs x schedulers; "
                f"this scenario has {job_runs:,}: POST it to /v1/runs instead",
            )
        try:
            return await asyncio.to_thread(runs.simulate, sc, _client(request))
        except RunLimitError as exc:
            raise ApiError(422, f"{exc} (or POST it to /v1/runs)") from None


def _add_results_routes(app: FastAPI, suffix: str) -> None:
    kind_of_suffix = suffix.lstrip(".")

    @app.get(f"/v1/runs/{{run_id}}/results{suffix}", name=f"results{suffix}")
    def results(request: Request, run_id: str) -> Any:
        """The results of a done run. A scenario's: the metrics table ``{scheduler: {metric: value}}`` (one row
        per scheduler as a table); a sweep's: ``{rows, failures, meta}`` (the rows as a table); a plan's: what
        ``plan --json`` writes (one row per scheduler as a table)."""
        runs = _runs(request)
        record = _done(runs, run_id)
        kind = _wanted(request, kind_of_suffix)
        if kind == "json":
            return _json_text(runs.store.results_json(run_id, "metrics"))
        return _table(_results_frame(record, runs.store.results(run_id, "metrics")), kind)

    @app.get(f"/v1/runs/{{run_id}}/results/jobs{suffix}", name=f"jobs{suffix}")
    def jobs(request: Request, run_id: str) -> Any:
        """Per-job records of a done run: ``{scheduler: [record, ...]}`` (a ``scheduler`` column in CSV)."""
        runs = _runs(request)
        _scenario_run(runs, run_id, "per-job records")
        kind = _wanted(request, kind_of_suffix)
        if kind == "json":
            return _json_text(runs.store.results_json(run_id, "jobs"))
        records = runs.store.results(run_id, "jobs")
        frame = pd.concat(
            [pd.DataFrame(rows).assign(scheduler=name) for name, rows in records.items()], ignore_index=True
        )
        return _table(frame[["scheduler", *[c for c in frame.columns if c != "scheduler"]]], kind)

    if not suffix or suffix == ".json":

        @app.get(f"/v1/runs/{{run_id}}/results/timeline{suffix}", name=f"timeline{suffix}")
        def timeline(request: Request, run_id: str) -> Any:
            """Queued and running jobs and busy GPUs over time, per scheduler (step series)."""
            runs = _runs(request)
            _scenario_run(runs, run_id, "timeline")
            return _json_text(runs.store.results_json(run_id, "timeline"))


async def _events(request: Request, runs: RunManager, run_id: str) -> AsyncIterator[str]:
    last: tuple[str, float] | None = None
    quiet_s = 0.0
    while True:
        record = runs.store.get_run(run_id)
        if record is None:
            return
        view = {"id": record.id, "state": record.state, "progress": record.progress, "error": record.error or None}
        if record.state in (*FINAL_STATES, "interrupted"):
            yield f"event: end\ndata: {json.dumps(view)}\n\n"
            return
        if (record.state, record.progress) != last:
            last, quiet_s = (record.state, record.progress), 0.0
            yield f"event: progress\ndata: {json.dumps(view)}\n\n"
        elif quiet_s >= EVENT_KEEPALIVE_S:
            quiet_s = 0.0
            yield ": keep-alive\n\n"
        if await request.is_disconnected():
            return
        await asyncio.sleep(EVENT_POLL_S)
        quiet_s += EVENT_POLL_S


# ---------------------------------------------------------------------------------------------- lists
@cache
def _scheduler_list() -> dict[str, Any]:
    from engine.schedulers import PREFIXES, SCHEDULERS
    from engine.schedulers.ordering import ORDERS
    from engine.schedulers.placement import PLACEMENTS

    return {
        "schedulers": [{"name": name, "summary": spec.summary} for name, spec in sorted(SCHEDULERS.items())],
        "orders": list(ORDERS),
        "placements": list(PLACEMENTS),
        "prefixes": sorted(PREFIXES),
        "combine": "ORDER+PLACEMENT, e.g. sjf+best-fit; PREFIX:NAME for a prefix's schedulers (rl:<model>)",
    }


@cache
def _agent_list() -> list[dict[str, Any]]:
    from engine.rl.agent import model_names, read_card

    out = []
    for name in model_names():
        card = read_card(name)
        out.append(
            {
                "name": f"rl:{name}",
                "description": card.get("description", ""),
                "verdict": card.get("verdict"),
                "beats_best_baseline": card.get("beats_best_baseline"),
            }
        )
    return out


@cache
def _preset_list() -> list[dict[str, Any]]:
    from engine.analysis.presets import PRESETS

    return [{"name": name, "title": p.title, "scenario": p.scenario.to_dict()} for name, p in sorted(PRESETS.items())]

"""The run store: runs, their scenarios, states and results, and uploaded traces, in one SQLite file.

A run is a scenario (its JSON text; for a sweep or a plan, its spec: the run's ``kind``) with a state: ``queued`` -> ``running`` -> ``done`` | ``failed`` |
``cancelled``; ``interrupted`` is a run that was queued or running when its server stopped (:class:`RunStore`
marks them so when it opens the file) and can be queued again (:meth:`RunStore.requeue`). A done run's results
(JSON: the metrics table, per-job records, the timeline) are written in the same transaction as its state, so a
run is never ``done`` without its results, kept as the JSON texts the worker wrote (a large run's per-job records
are never parsed by the server unless asked for as a table); a sweep's or plan's results are one JSON text (kept as
its ``metrics``; it has no per-job records or timeline). Uploaded traces are kept by the SHA-256 of their bytes, at most
``trace_limit_bytes`` in all and ``client_trace_limit_bytes`` of one client's (the API's; its last uploader owns a
trace); the least recently used go first (a client's own, when it is past its share), and
:meth:`RunStore.put_trace` names them.

Every write is one transaction (SQLite's WAL journal: readers never wait for a writer, a killed process loses at
most the transaction it had not committed). One server per store file: opening it marks every unfinished run
interrupted, unless it is opened with ``runs=False`` (the app: it keeps only uploads there). Each thread has its
own connection, so a store may be used from any thread.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from engine.errors import EngineError

#: Where ``python -m engine serve`` keeps its store unless told otherwise (``runs/`` is git-ignored).
DEFAULT_STORE = Path("runs") / "playground.sqlite"
#: Bytes of uploaded traces a store keeps by default.
DEFAULT_TRACE_LIMIT_BYTES = 512 * 2**20

STATES = ("queued", "running", "done", "failed", "cancelled", "interrupted")
#: States a run never leaves (``interrupted`` leaves only by :meth:`RunStore.requeue`).
FINAL_STATES = ("done", "failed", "cancelled")
#: What a run runs: a scenario, a sweep spec or a plan spec.
KINDS = ("scenario", "sweep", "plan")
_UNFINISHED = ("queued", "running")
#: What a done run keeps (:func:`engine.analysis.results.scenario_results`' keys).
RESULT_PARTS = ("metrics", "jobs", "timeline")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    scenario TEXT NOT NULL,
    state TEXT NOT NULL,
    progress REAL NOT NULL DEFAULT 0,
    error TEXT NOT NULL DEFAULT '',
    created_s REAL NOT NULL,
    updated_s REAL NOT NULL,
    kind TEXT NOT NULL DEFAULT 'scenario'
);
CREATE TABLE IF NOT EXISTS results (
    run_id TEXT PRIMARY KEY REFERENCES runs(id),
    metrics TEXT NOT NULL,
    jobs TEXT NOT NULL,
    timeline TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS traces (
    sha256 TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    data BLOB NOT NULL,
    size_bytes INTEGER NOT NULL,
    report TEXT NOT NULL,
    created_s REAL NOT NULL,
    used_s REAL NOT NULL,
    client TEXT NOT NULL DEFAULT ''
);
"""
#: Columns added since the first API version: a store written before them gets them when it opens.
_ADDED_COLUMNS = {"runs": "kind TEXT NOT NULL DEFAULT 'scenario'", "traces": "client TEXT NOT NULL DEFAULT ''"}


_RUN_COLUMNS = "id, scenario, state, progress, error, created_s, updated_s, kind"


class StoreError(EngineError):
    """A request the store cannot satisfy (an upload over its limit); the message says which limit."""


@dataclass(frozen=True)
class RunRecord:
    """One run as stored: ``scenario`` is its scenario's JSON text (a sweep's or plan's spec, by ``kind``),
    ``progress`` the share of its simulated jobs (a sweep's cells, a plan's runs so far) finished (0..1),
    ``error`` the one-line reason of a failed run."""

    id: str
    scenario: str
    state: str
    progress: float
    error: str
    created_s: float
    updated_s: float
    kind: str = "scenario"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "state": self.state,
            "progress": self.progress,
            "error": self.error or None,
            "created_s": self.created_s,
            "updated_s": self.updated_s,
        }


@dataclass(frozen=True)
class TraceRecord:
    """An uploaded trace without its bytes: its name, size and import report (the JSON the upload answered)."""

    sha256: str
    name: str
    size_bytes: int
    report: dict[str, Any]


class RunStore:
    """The store in SQLite file ``path`` (created with its folder); see the module's docstring. ``runs=False``
    opens it for its traces only, leaving the runs of the server that runs them as they are."""

    def __init__(
        self,
        path: str | Path = DEFAULT_STORE,
        *,
        trace_limit_bytes: int = DEFAULT_TRACE_LIMIT_BYTES,
        client_trace_limit_bytes: int = DEFAULT_TRACE_LIMIT_BYTES,
        runs: bool = True,
    ) -> None:
        self.path = Path(path)
        self.trace_limit_bytes = trace_limit_bytes
        self.client_trace_limit_bytes = client_trace_limit_bytes
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        db = self._db()
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(_SCHEMA)
        for table, column in _ADDED_COLUMNS.items():
            if column.split()[0] not in {row[1] for row in db.execute(f"PRAGMA table_info({table})")}:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
        self.interrupted = self._mark_interrupted() if runs else []

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection inside ``BEGIN IMMEDIATE ... COMMIT`` (rolled back on any error)."""
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def _db(self) -> sqlite3.Connection:
        """This thread's connection, kept open: closing the last connection to a WAL database checkpoints it and
        waits for the disk (milliseconds per write, if every write closed its connection)."""
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            db.execute("PRAGMA busy_timeout=30000")
            db.execute("PRAGMA synchronous=NORMAL")  # WAL: a commit survives a killed process, not a power cut
        return db

    def _mark_interrupted(self) -> list[str]:
        with self._transaction() as db:
            ids = [r[0] for r in db.execute("SELECT id FROM runs WHERE state IN (?, ?)", _UNFINISHED)]
            db.execute(
                "UPDATE runs SET state='interrupted', updated_s=? WHERE state IN (?, ?)", (time.time(), *_UNFINISHED)
            )
        return ids

    # ------------------------------------------------------------------ runs
    def create_run(self, scenario_json: str, kind: str = "scenario", run_id: str = "") -> RunRecord:
        """A new queued run of ``scenario_json`` (the scenario as JSON text; a sweep's or plan's spec by
        ``kind``), with id ``run_id`` (32 hex digits; by default a new one)."""
        if kind not in KINDS:
            raise ValueError(f"unknown run kind {kind!r}")
        now = time.time()
        run_id = run_id or uuid.uuid4().hex
        with self._transaction() as db:
            db.execute(
                "INSERT INTO runs (id, scenario, state, created_s, updated_s, kind) VALUES (?, ?, 'queued', ?, ?, ?)",
                (run_id, scenario_json, now, now, kind),
            )
        return RunRecord(run_id, scenario_json, "queued", 0.0, "", now, now, kind)

    def get_run(self, run_id: str) -> RunRecord | None:
        row = self._db().execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE id=?", (run_id,)).fetchone()
        return None if row is None else RunRecord(*row)

    def list_runs(self, limit: int = 100) -> list[RunRecord]:
        """The ``limit`` most recent runs, newest first."""
        rows = (
            self._db()
            .execute(
                f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY created_s DESC LIMIT ?",
                (limit,),
            )
            .fetchall()
        )
        return [RunRecord(*r) for r in rows]

    def set_state(self, run_id: str, state: str, *, error: str = "", only_from: tuple[str, ...] = _UNFINISHED) -> bool:
        """Move run ``run_id`` to ``state`` if it is in one of ``only_from`` (by default: not finished); whether it
        moved. A finished run never changes (a cancelled run that then ends stays cancelled)."""
        if state not in STATES:
            raise ValueError(f"unknown run state {state!r}")
        marks = ", ".join("?" * len(only_from))
        with self._transaction() as db:
            cursor = db.execute(
                f"UPDATE runs SET state=?, error=?, updated_s=? WHERE id=? AND state IN ({marks})",
                (state, error, time.time(), run_id, *only_from),
            )
            return cursor.rowcount == 1

    def set_progress(self, run_id: str, progress: float) -> None:
        """Record the share of a running run's jobs finished."""
        with self._transaction() as db:
            db.execute(
                "UPDATE runs SET progress=?, updated_s=? WHERE id=? AND state='running'",
                (min(max(float(progress), 0.0), 1.0), time.time(), run_id),
            )

    def finish(self, run_id: str, results_json: Mapping[str, str]) -> bool:
        """Store a running run's results (:data:`RESULT_PARTS` -> JSON text) and mark it done, in one transaction;
        ``False`` (nothing written) when the run is no longer running (cancelled meanwhile). ``ValueError`` when a
        part is not JSON."""
        texts = [results_json[k] for k in RESULT_PARTS]
        for part, text in zip(RESULT_PARTS, texts):
            try:
                json.loads(text)
            except (TypeError, ValueError):
                raise ValueError(f"results part {part!r} is not JSON text") from None
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE runs SET state='done', progress=1, updated_s=? WHERE id=? AND state='running'",
                (time.time(), run_id),
            )
            if cursor.rowcount != 1:
                return False
            db.execute(
                "INSERT OR REPLACE INTO results (run_id, metrics, jobs, timeline) VALUES (?, ?, ?, ?)", (run_id, *texts)
            )
        return True

    def requeue(self, run_id: str) -> bool:
        """Queue an interrupted run again (its progress back to 0); whether it was interrupted."""
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE runs SET state='queued', progress=0, error='', updated_s=? WHERE id=? AND state='interrupted'",
                (time.time(), run_id),
            )
            return cursor.rowcount == 1

    def results_json(self, run_id: str, part: str = "metrics") -> str | None:
        """A done run's results part (one of :data:`RESULT_PARTS`) as the JSON text stored; ``None`` if it has
        none."""
        if part not in RESULT_PARTS:
            raise ValueError(f"unknown results part {part!r}")
        row = self._db().execute(f"SELECT {part} FROM results WHERE run_id=?", (run_id,)).fetchone()
        return None if row is None else row[0]

    def results(self, run_id: str, part: str = "metrics") -> Any:
        """A done run's results part, parsed (:meth:`results_json`)."""
        text = self.results_json(run_id, part)
        return None if text is None else json.loads(text)

    # ------------------------------------------------------------------ traces
    def put_trace(
        self, data: bytes, name: str, report: dict[str, Any], client: str | None = None
    ) -> tuple[str, list[TraceRecord]]:
        """Keep an uploaded trace (its bytes, file name and import report) for ``client`` (the API's caller; ``None``:
        no share per client, the app's); returns its SHA-256 and the traces evicted (least recently used first) to
        make room: the client's own past its share, then anyone's past the store's limit. :class:`StoreError` when
        ``data`` alone is larger than the store, or one client's share, keeps."""
        shares: list[tuple[int, str, str, tuple[str, ...]]] = [(self.trace_limit_bytes, "uploaded traces", "", ())]
        if client is not None:
            shares.insert(
                0, (self.client_trace_limit_bytes, "one client's uploaded traces", "WHERE client=?", (client,))
            )
        for limit, what, _, _ in shares:
            if len(data) > limit:
                raise StoreError(
                    f"the file is {len(data) / 2**20:.1f} MiB; this server keeps at most {limit / 2**20:.0f} MiB of {what}"
                )
        digest = hashlib.sha256(data).hexdigest()
        now = time.time()
        evicted = []
        with self._transaction() as db:
            db.execute("DELETE FROM traces WHERE sha256=?", (digest,))
            for limit, _, where, args in shares:
                total = db.execute(f"SELECT COALESCE(SUM(size_bytes), 0) FROM traces {where}", args).fetchone()[0]
                for sha, old_name, size, old_report in db.execute(
                    f"SELECT sha256, name, size_bytes, report FROM traces {where} ORDER BY used_s, rowid", args
                ).fetchall():
                    if total + len(data) <= limit:
                        break
                    db.execute("DELETE FROM traces WHERE sha256=?", (sha,))
                    total -= size
                    evicted.append(TraceRecord(sha, old_name, size, json.loads(old_report)))
            db.execute(
                "INSERT INTO traces (sha256, name, data, size_bytes, report, created_s, used_s, client) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (digest, name, data, len(data), json.dumps(report), now, now, client or ""),
            )
        return digest, evicted

    def get_trace(self, sha256: str) -> bytes | None:
        """The bytes of the uploaded trace ``sha256`` (now its most recently used), ``None`` if not kept."""
        with self._transaction() as db:
            row = db.execute("SELECT data FROM traces WHERE sha256=?", (sha256,)).fetchone()
            if row is not None:
                db.execute("UPDATE traces SET used_s=? WHERE sha256=?", (time.time(), sha256))
        return None if row is None else bytes(row[0])

    def trace_info(self, sha256: str) -> TraceRecord | None:
        row = (
            self._db()
            .execute("SELECT sha256, name, size_bytes, report FROM traces WHERE sha256=?", (sha256,))
            .fetchone()
        )
        return None if row is None else TraceRecord(row[0], row[1], row[2], json.loads(row[3]))

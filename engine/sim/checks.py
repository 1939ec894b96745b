"""Checking a scheduler's decisions: whether a decision may be applied now, and if not, why, in one line.

:class:`DecisionChecks` reads the simulation's own per-job lifecycle and occupancy (the same lists the event
loop writes; it never writes them) and answers for one decision at a time. The simulation builds one per run
(:meth:`engine.sim.simulator.Simulation.reset`), validates every decision with it before acting on it, and
hands schedulers the same answers through ``ClusterState.validate``. :class:`ProgressGuard` checks a scheduler's
behaviour over a run (decisions per call, decision points its wake-ups alone make) and :func:`finite_end_s` the
completion times the simulation computes.

A start is checked twice over: :meth:`DecisionChecks.valid_start`, a quick test that only accepts what
:meth:`DecisionChecks.start_problem` accepts, runs for every start; the full check, which has the final word
and the message, runs only when the quick one refuses.

Compiled, like the other hot modules (``engine/_native.py``); its idioms are explained once in ARCHITECTURE.md.
"""

from __future__ import annotations

import math
from typing import Any, Final, Iterable, Iterator

import numpy as np

from engine.errors import EngineError, InvalidDecision, StallError
from engine.sim.cluster import Layout
from engine.sim.job import Job
from engine.sim.occupancy import Occupancy
from engine.sim.state import (
    FRACTION_EPS,
    JOB_QUEUED,
    JOB_RUNNING,
    LIFECYCLE_NAMES,
    Preempt,
    Resize,
    RunningJob,
    ShapeTable,
    Start,
    Wake,
)


class DecisionChecks:
    """The validity of decisions against one run's live state.

    Args:
        jobs: the workload.
        lifecycle: each job's lifecycle state (``JOB_*`` of :mod:`engine.sim.state`), the simulation's own list.
        occupancy: the simulation's occupancy.
        shapes: the workload's shape table.
        layout: the cluster's flat arrays.
    """

    def __init__(
        self,
        jobs: tuple[Job, ...],
        lifecycle: list[int],
        occupancy: Occupancy,
        shapes: ShapeTable,
        layout: Layout,
        running: dict[int, RunningJob] | None = None,
    ) -> None:
        self._running = running if running is not None else {}
        self._jobs = jobs
        self._n_jobs = len(jobs)
        self._lifecycle = lifecycle
        self._occ = occupancy
        self._job_shape = shapes.job_shape
        self._shape_type_ok = shapes.type_ok
        self._shape_gpus = shapes.gpus
        self._lay = layout
        self._gpu_type: list[int] = layout.gpu_type.tolist()
        self._n_gpus: int = layout.n_gpus
        self._type_names = layout.type_names
        self._type_vram: list[float] = layout.type_vram_gib.tolist()

    def problem(self, d: object, now_s: float) -> str | None:
        """Why decision ``d`` (a :data:`~engine.sim.state.Decision`, or whatever a scheduler handed in) is invalid
        at time ``now_s``, or None."""
        # The fields are read as Any: a scheduler may put anything in them (numpy integers, lists), and this
        # method's job is to say what is wrong, even where the code runs compiled (see engine/_native.py).
        raw: Any = d
        if isinstance(d, Start):
            return self.start_problem(raw.job_id, raw.gpu_ids)
        if isinstance(d, Preempt):
            j = raw.job_id
            if not (isinstance(j, (int, np.integer)) and 0 <= j < self._n_jobs):
                return f"job {j!r} does not exist"
            if self._lifecycle[j] != JOB_RUNNING:
                return f"job {j} cannot be preempted: it is not running ({self.describe(int(j))})"
            return None
        if isinstance(d, Wake):
            at_s = raw.at_s
            if not (isinstance(at_s, (int, float)) and at_s > now_s and math.isfinite(at_s)):
                return f"wake-up time {at_s!r} must be a finite time after now ({now_s:g} s)"
            return None
        if isinstance(d, Resize):
            return self.resize_problem(raw.job_id, raw.gpu_ids)
        return f"unknown decision {d!r}; expected Start, Preempt, Wake or Resize"

    def can_host(self, job: Job) -> np.ndarray:
        """Boolean mask over GPUs that could take ``job`` (or one of its GPUs) right now."""
        elig = self._shape_gpus[self._job_shape[job.job_id]]
        occ = self._occ
        occ.sync()
        if job.gpu_fraction >= 1.0:
            return elig & (occ.np_tenants == 0)
        need_vram = job.vram_gib if job.vram_gib > 0 else job.gpu_fraction * self._lay.type_vram_gib[self._lay.gpu_type]
        return elig & (occ.np_free >= job.gpu_fraction - FRACTION_EPS) & (occ.np_free_vram >= need_vram - FRACTION_EPS)

    def stall(self, scheduler_name: str, now_s: float, waiting: list[int]) -> StallError:
        """The error of a run stalled at ``now_s`` with jobs ``waiting`` (in queue order) and nothing else to do."""
        j = waiting[0]
        job = self._jobs[j]
        return StallError(
            f"scheduler {scheduler_name!r} stalled at t={now_s:g} s: {len(waiting)} job(s) wait, "
            f"nothing runs, nothing starts and no event is pending (first waiting: job {j}, "
            f"{job.gpus} GPU(s) x {job.gpu_fraction:g}, {job.vram_gib:g} GiB)"
        )

    def describe(self, j: int) -> str:
        """Where job ``j`` is in the run, in words ("waiting", "running", ...)."""
        return LIFECYCLE_NAMES[self._lifecycle[j]]

    def valid_start(self, j: Any, gpus: Any) -> bool:
        """A quick test that accepts only starts :meth:`start_problem` accepts (it may refuse more: the caller
        then asks :meth:`start_problem`, which has the final word and the message)."""
        if type(j) is not int or not 0 <= j < self._n_jobs or self._lifecycle[j] != JOB_QUEUED:
            return False
        job = self._jobs[j]
        if type(gpus) is not tuple or len(gpus) != job.gpus:
            return False
        gpu_type, n_gpus, occ = self._gpu_type, self._n_gpus, self._occ
        g = gpus[0]
        if type(g) is not int or not 0 <= g < n_gpus or not self._shape_type_ok[self._job_shape[j]][gpu_type[g]]:
            return False
        if job.gpu_fraction < 1.0:
            return (
                occ.free[g] >= job.gpu_fraction - FRACTION_EPS
                and occ.free_vram[g] >= occ.share_vram_gib(g, job.gpu_fraction, job.vram_gib) - FRACTION_EPS
            )
        if len(gpus) == 1:
            return not occ.tenants[g]
        t, tenants = gpu_type[g], occ.tenants
        for g in gpus:
            if type(g) is not int or not 0 <= g < n_gpus or tenants[g] or gpu_type[g] != t:
                return False
        return len(set(gpus)) == len(gpus)

    def start_problem(self, j: Any, gpus: Any) -> str | None:
        """Why starting job ``j`` on ``gpus`` now is invalid, or None."""
        if not (isinstance(j, (int, np.integer)) and 0 <= j < self._n_jobs):
            return f"job {j!r} does not exist"
        if self._lifecycle[j] != JOB_QUEUED:
            return f"job {j} cannot start: it is not waiting ({self.describe(int(j))})"
        job = self._jobs[j]
        if not job.elastic and len(gpus) != job.gpus:
            return f"job {j} asks for {job.gpus} GPU(s) but was given {len(gpus)}"
        return self._size_problem(j, job, gpus) or self._gpus_problem(j, job, gpus, ())

    def resize_problem(self, j: Any, gpus: Any) -> str | None:
        """Why resizing job ``j`` to ``gpus`` now is invalid, or None: it must be elastic and running, and ``gpus``
        a new set of its size range, of one allowed type, each GPU idle or already its own."""
        if not (isinstance(j, (int, np.integer)) and 0 <= j < self._n_jobs):
            return f"job {j!r} does not exist"
        job = self._jobs[j]
        if not job.elastic:
            return f"job {j} cannot be resized: it is rigid (min_gpus = max_gpus = {job.gpus})"
        running = self._running.get(int(j))
        if self._lifecycle[j] != JOB_RUNNING or running is None:
            return f"job {j} cannot be resized: it is not running ({self.describe(int(j))})"
        held = running.gpu_ids
        problem = self._size_problem(j, job, gpus) or self._gpus_problem(j, job, gpus, held)
        if problem is None and set(gpus) == set(held):
            return f"job {j}: a resize to the GPUs it holds changes nothing"
        return problem

    def _size_problem(self, j: Any, job: Job, gpus: Any) -> str | None:
        """Why ``gpus`` is no GPU set of elastic ``job``'s size range (None for a rigid job: checked before)."""
        if job.elastic and not job.min_gpus <= len(gpus) <= job.max_gpus:
            return f"job {j} runs on {job.min_gpus} to {job.max_gpus} GPUs but was given {len(gpus)}"
        return None

    def _gpus_problem(self, j: Any, job: Job, gpus: Any, held: tuple[int, ...]) -> str | None:
        """Why job ``j`` cannot take ``gpus`` now (``held``: the GPUs it holds, free to it), or None."""
        n = self._n_gpus
        for g in gpus:
            if not (isinstance(g, (int, np.integer)) and 0 <= g < n):
                return f"job {j}: GPU id {g!r} does not exist (cluster has GPUs 0..{n - 1})"
        if len(set(gpus)) != len(gpus):
            return f"job {j}: GPU ids {tuple(gpus)} repeat a GPU"
        t = self._gpu_type[gpus[0]]
        names = self._type_names
        for g in gpus:
            if self._gpu_type[g] != t:
                return f"job {j}: GPUs mix types {names[t]} and {names[self._gpu_type[g]]}; a job runs on one type"
        if job.allowed_types and names[t] not in job.allowed_types:
            return f"job {j}: GPU type {names[t]} is not among its allowed types {sorted(job.allowed_types)}"
        if job.vram_gib > self._type_vram[t] + FRACTION_EPS:
            return f"job {j}: needs {job.vram_gib:g} GiB per GPU but {names[t]} has {self._type_vram[t]:g} GiB"
        occ = self._occ
        if job.gpu_fraction >= 1.0:
            for g in gpus:
                if occ.tenants[g] != 0 and g not in held:
                    return f"job {j}: GPU {g} is not free (whole-GPU jobs never share)"
        else:
            g = gpus[0]
            if occ.free[g] < job.gpu_fraction - FRACTION_EPS:
                return f"job {j}: GPU {g} has {occ.free[g]:.3g} of a GPU free, job needs {job.gpu_fraction:g}"
            mem = occ.share_vram_gib(g, job.gpu_fraction, job.vram_gib)
            if occ.free_vram[g] < mem - FRACTION_EPS:
                return f"job {j}: GPU {g} has {occ.free_vram[g]:.3g} GiB free, job needs {mem:g} GiB"
        return None


# Consecutive decision points at which nothing runs, nothing starts and no job will ever arrive again:
# only wake-ups keep such a run going, so after this many the run is declared stalled.
_MAX_IDLE_WAKES: Final = 1000
# Consecutive decision points that only a scheduler's wake-up made (no completion, arrival, failure or repair in
# between): past this many the scheduler makes no progress. The longest such run over tests/sim and
# tests/schedulers (every registered scheduler) is 1,000, the idle stall above; 100 times that is allowed. A
# scheduler that asks to be woken every millisecond beside a job of a year would otherwise make 3e10 decision
# points, each recorded.
MAX_WAKE_ONLY_POINTS: Final = 100_000
# Decisions one decide() call may return: DECISIONS_PER_JOB per job of the workload plus DECISIONS_EXTRA. A call
# has reason to start each waiting job once, preempt each running one once and ask for a wake-up per job (three per
# job); the most over tests/sim and tests/schedulers (every registered scheduler) is 26 in one call, and at most
# 1 per job. More is an endless stream (of wake-ups, or of starts and preemptions of the same jobs) that would
# exhaust memory.
DECISIONS_PER_JOB: Final = 4
DECISIONS_EXTRA: Final = 10_000


class ProgressGuard:
    """Stops a run whose scheduler keeps the loop busy without progress, with an error naming the scheduler: too
    many decisions in one call (:meth:`decisions`), too many decision points made by its wake-ups alone
    (:meth:`point`), wake-ups that keep a run alive that nothing else can move (:meth:`idle`)."""

    def __init__(self, scheduler_name: str, n_jobs: int) -> None:
        self._name = scheduler_name
        self.max_decisions = DECISIONS_PER_JOB * n_jobs + DECISIONS_EXTRA
        self._wake_only = 0
        self._idle = 0

    def decisions(self, decisions: Iterable[Any]) -> Iterable[Any]:
        """``decisions``, one call's answer, refused (``InvalidDecision``) past :attr:`max_decisions`: a list or
        tuple at once, any other iterable when it yields one decision too many."""
        kind = type(decisions)
        if kind is list or kind is tuple:
            given: Any = decisions
            if len(given) > self.max_decisions:
                raise self._too_many()
            return decisions
        return self._capped(decisions)

    def _capped(self, decisions: Iterable[Any]) -> Iterator[Any]:
        left = self.max_decisions
        for d in decisions:
            if left == 0:
                raise self._too_many()
            left -= 1
            yield d

    def _too_many(self) -> InvalidDecision:
        return InvalidDecision(
            f"scheduler {self._name!r} returned more than {self.max_decisions:,} decisions in one "
            f"call ({DECISIONS_PER_JOB} per job + {DECISIONS_EXTRA:,}): an endless stream?"
        )

    def point(self, wake_only: bool, now_s: float) -> None:
        """A decision point at ``now_s``; ``wake_only`` when only a wake-up made it. ``StallError`` past
        :data:`MAX_WAKE_ONLY_POINTS` such points in a row."""
        if not wake_only:
            self._wake_only = 0
            return
        self._wake_only += 1
        if self._wake_only > MAX_WAKE_ONLY_POINTS:
            raise StallError(
                f"scheduler {self._name!r} makes no progress at t={now_s:g} s: its wake-ups alone made "
                f"{MAX_WAKE_ONLY_POINTS:,} decision points in a row (no job ended, arrived or failed "
                "in between)"
            )

    def idle(self, idle: bool) -> bool:
        """Whether the run is stalled: ``idle`` (nothing runs, nothing started, no job will arrive, jobs wait) at
        more than :data:`_MAX_IDLE_WAKES` decision points in a row."""
        self._idle = self._idle + 1 if idle else 0
        return self._idle > _MAX_IDLE_WAKES


def finite_end_s(end_s: float, job_id: int) -> float:
    """``end_s``, the completion time just computed for job ``job_id``, when it is finite; else an ``EngineError``
    naming the job. Job and cluster bounds (:mod:`engine.sim.job`, :mod:`engine.sim.cluster`) keep every time
    finite; this is the last line that keeps an overflow from being recorded as an end at inf or NaN."""
    if end_s < math.inf:  # False for inf and NaN: one comparison per (re-)timing
        return end_s
    raise EngineError(
        f"job {job_id}: its completion time overflows ({end_s}): its duration, its GPU's speed or "
        "its slowdowns are past what a float can time"
    )

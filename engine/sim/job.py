"""The job record: what a user submitted, in seconds and GiB.

A `Job` is immutable. ``duration_s`` is the true run time at reference speed (a ``generic`` GPU, speed 1,
all GPUs on one node); the simulator stretches or shrinks it by GPU type, placement and co-location.
Schedulers must not read ``duration_s`` (they see ``estimate_s``) unless they declare themselves oracles.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from numbers import Real
from typing import Any, Final

from engine.errors import quote
from engine.sim.scaling import RIGID, SCALING_CURVES

#: Job types the built-in speed and communication tables know. Any other string is allowed and is
#: treated like ``"batch"`` by those tables.
JOB_TYPES = ("training", "inference", "batch", "interactive")

#: Largest magnitude of a time or duration in seconds (about 31,700 years): keeps shifted times finite.
MAX_TIME_S: Final = 1e12
#: GPU count above which a row is malformed (no cluster is that large; keeps arithmetic small).
MAX_GPUS: Final = 1_000_000
#: Memory of one GPU, GiB: at most 10 TiB (the largest GPUs have under 200 GiB); a cluster's GPU types have the
#: same bound.
MAX_VRAM_GIB: Final = 1e4
#: Largest magnitude of a priority: 2**53, what a float holds exactly (schedulers sort priorities in arrays).
MAX_PRIORITY: Final = 2**53

_TYPE_SETS: dict[frozenset[str], frozenset[str]] = {}  # each distinct allowed_types value, once
_ANY_TYPE: frozenset[str] = frozenset()
_PUT: Final = object.__setattr__  # sets a field of a frozen record (ARCHITECTURE.md, "Frozen records")


@dataclass(frozen=True, init=False, slots=True)
class Job:
    """One job of a workload.

    Attributes:
        job_id: index of the job in its workload, ``0..n-1`` in submit order.
        submit_s: submit time, seconds from the start of the trace (first arrival at 0 after loading).
        duration_s: true run time in seconds at reference speed (speed-1 GPUs, consolidated).
        gpus: number of GPUs; 1 for a fractional job.
        gpu_fraction: share of one GPU, in (0, 1]; below 1 only when ``gpus == 1``. Fractional jobs may
            share a GPU with other fractional jobs; whole-GPU jobs never share.
        vram_gib: GPU memory needed on each GPU, GiB; 0 means "fits any GPU".
        user: the tenant the job belongs to (fairness metrics group by it).
        job_type: ``training``, ``inference``, ``batch``, ``interactive`` or any other label.
        priority: larger is more important; only some schedulers use it.
        allowed_types: GPU type names the job may run on; empty means any type.
        estimate_s: the user's requested or estimated run time in seconds (what schedulers see).
        name: the job's id in the original trace, for reports.
        failed: the trace recorded this job as failed (an SWF status 0): it runs its recorded ``duration_s`` and
            ends ``FAILED`` (a job the run's failure model makes crash is another matter: ``engine.sim.failures``).
        deadline_s: the absolute time, seconds from the start of the trace, by which the job should end; ``inf``
            (the default; NaN reads as it) for a best-effort job without one. Deadline metrics and admission
            control read it.
        min_gpus, max_gpus: the GPU counts an elastic job may run on (``min_gpus <= gpus <= max_gpus``); both
            ``gpus`` by default: a rigid job, which runs on exactly ``gpus`` GPUs. Fractional jobs are rigid.
        scaling: the name of an elastic job's scaling curve (:data:`engine.sim.scaling.SCALING_CURVES`); ``""``
            for a rigid job. ``duration_s`` is the job's run time at its requested size ``gpus``; on ``k`` GPUs it
            runs ``speedup(k) / speedup(gpus)`` times as fast (:mod:`engine.sim.elastic`).

    Construction checks every field and raises ``ValueError`` naming the job and the field. Numbers are stored
    as Python ``float`` and ``int`` (numpy scalars are converted), ``user``, ``job_type`` and ``name`` as
    ``str``, ``allowed_types`` as a frozenset shared by every job with the same set.
    """

    job_id: int
    submit_s: float
    duration_s: float
    gpus: int
    gpu_fraction: float
    vram_gib: float
    user: str
    job_type: str
    priority: int
    allowed_types: frozenset[str]
    estimate_s: float
    name: str
    failed: bool
    deadline_s: float
    min_gpus: int
    max_gpus: int
    scaling: str

    def __init__(
        self,
        job_id: Any,
        submit_s: Any,
        duration_s: Any,
        gpus: Any = 1,
        gpu_fraction: Any = 1.0,
        vram_gib: Any = 0.0,
        user: Any = "user0",
        job_type: Any = "batch",
        priority: Any = 0,
        allowed_types: Any = _ANY_TYPE,
        estimate_s: Any = math.nan,
        name: Any = "",
        failed: Any = False,
        deadline_s: Any = math.inf,
        min_gpus: Any = None,
        max_gpus: Any = None,
        scaling: Any = RIGID,
    ) -> None:
        j = _integer(job_id, "job_id", job_id)
        submit = _real(j, "submit_s", submit_s)
        # The upper bounds keep every time the simulator computes finite: with the cluster's bounds on speeds and
        # slowdowns (engine.sim.cluster), a job of MAX_TIME_S reference seconds ends before about 1e30 s.
        if not (math.isfinite(submit) and submit >= 0):
            raise ValueError(f"job {j}: submit_s must be a finite number >= 0, got {submit_s}")
        if submit > MAX_TIME_S:
            raise ValueError(f"job {j}: submit_s must be at most {MAX_TIME_S:.0e} seconds, got {submit:g}")
        duration = _real(j, "duration_s", duration_s)
        if not (math.isfinite(duration) and duration > 0):
            raise ValueError(f"job {j}: duration_s must be a finite number > 0, got {duration_s}")
        if duration > MAX_TIME_S:
            raise ValueError(f"job {j}: duration_s must be at most {MAX_TIME_S:.0e} seconds, got {duration:g}")
        if not (isinstance(gpus, int) and gpus >= 1):
            raise ValueError(f"job {j}: gpus must be an integer >= 1, got {gpus!r}")
        if gpus > MAX_GPUS:
            raise ValueError(f"job {j}: gpus must be at most {MAX_GPUS:,}, got {gpus:,}")
        fraction = _real(j, "gpu_fraction", gpu_fraction)
        if not (0 < fraction <= 1):
            raise ValueError(f"job {j}: gpu_fraction must be in (0, 1], got {gpu_fraction}")
        if fraction < 1 and gpus != 1:
            raise ValueError(f"job {j}: a fractional job (gpu_fraction < 1) must ask for 1 GPU")
        vram = _real(j, "vram_gib", vram_gib)
        if not (math.isfinite(vram) and vram >= 0):
            raise ValueError(f"job {j}: vram_gib must be a finite number >= 0, got {vram_gib}")
        if vram > MAX_VRAM_GIB:
            raise ValueError(f"job {j}: vram_gib must be at most {MAX_VRAM_GIB:g} GiB, got {vram:g}")
        estimate = _real(j, "estimate_s", estimate_s)
        if math.isnan(estimate):
            estimate = duration
        elif not (math.isfinite(estimate) and estimate > 0):
            raise ValueError(f"job {j}: estimate_s must be a finite number > 0, got {estimate_s}")
        elif estimate > MAX_TIME_S:
            raise ValueError(f"job {j}: estimate_s must be at most {MAX_TIME_S:.0e} seconds, got {estimate:g}")
        types = allowed_types if isinstance(allowed_types, frozenset) else frozenset(allowed_types)
        # One shared object per distinct set of types: the engine groups jobs by shape (a tuple holding this set)
        # at every run, and a shared set is hashed once and compared by identity (and 100,000 jobs do not hold
        # 100,000 empty sets).
        types = _TYPE_SETS.setdefault(types, types)
        if failed is not False and failed is not True:
            if failed not in (0, 1):  # numpy booleans and 0/1 compare equal; anything else is an error
                raise ValueError(f"job {j}: failed must be true or false, got {failed!r}")
            failed = bool(failed)
        rank = _integer(j, "priority", priority)
        if not -MAX_PRIORITY <= rank <= MAX_PRIORITY:
            raise ValueError(f"job {j}: priority must be at least -2**53 and at most 2**53, got {quote(rank)}")
        deadline = _real(j, "deadline_s", deadline_s)
        if math.isnan(deadline):  # inf, not NaN, stands for "none": jobs with equal fields stay equal
            deadline = math.inf
        elif not deadline > submit:
            raise ValueError(f"job {j}: deadline_s must be after submit_s ({submit}), got {deadline_s}")
        least, most = _elastic_range(j, gpus, fraction, min_gpus, max_gpus, scaling)
        values = (
            j,
            submit,
            duration,
            int(gpus),
            fraction,
            vram,
            str(user),
            str(job_type),
            rank,
            types,
            estimate,
            str(name),
            failed,
            deadline,
            least,
            most,
            scaling,
        )
        for field, value in zip(_FIELDS, values):  # frozen: the fields are set once, here
            _PUT(self, field, value)

    def __reduce__(self) -> tuple:
        # Pickled by value and rebuilt through __init__ (a compiled class has no instance dict to restore).
        return (Job, tuple(getattr(self, field) for field in _FIELDS))

    @property
    def gpu_demand(self) -> float:
        """GPUs this job occupies: ``gpus * gpu_fraction``."""
        return self.gpus * self.gpu_fraction

    @property
    def has_deadline(self) -> bool:
        """The job carries a deadline (``deadline_s`` is finite)."""
        return self.deadline_s < math.inf

    @property
    def elastic(self) -> bool:
        """The job may run on other GPU counts than ``gpus`` (``min_gpus < max_gpus``)."""
        return self.min_gpus < self.max_gpus

    @property
    def fractional(self) -> bool:
        return self.gpu_fraction < 1.0


#: The fields in the order __init__ takes them.
_FIELDS: Final = (
    "job_id",
    "submit_s",
    "duration_s",
    "gpus",
    "gpu_fraction",
    "vram_gib",
    "user",
    "job_type",
    "priority",
    "allowed_types",
    "estimate_s",
    "name",
    "failed",
    "deadline_s",
    "min_gpus",
    "max_gpus",
    "scaling",
)


def _elastic_range(j: int, gpus: int, fraction: float, min_gpus: Any, max_gpus: Any, scaling: Any) -> tuple[int, int]:
    """``(min_gpus, max_gpus)`` of job ``j`` (``None``: ``gpus``), or a ValueError naming the job and the field."""
    bounds = []
    for field, value in (("min_gpus", min_gpus), ("max_gpus", max_gpus)):
        count = gpus if value is None else _integer(j, field, value)
        if not 1 <= count <= MAX_GPUS:
            raise ValueError(f"job {j}: {field} must be an integer from 1 to {MAX_GPUS:,}, got {quote(value)}")
        bounds.append(count)
    least, most = bounds
    if not least <= gpus <= most:
        raise ValueError(f"job {j}: needs min_gpus <= gpus <= max_gpus, got {least} <= {gpus} <= {most}")
    if scaling != RIGID and scaling not in SCALING_CURVES:
        raise ValueError(
            f"job {j}: unknown scaling curve {quote(scaling)}; expected one of {', '.join(SCALING_CURVES)}"
        )
    if least < most and (fraction < 1.0 or scaling == RIGID):
        raise ValueError(f"job {j}: an elastic job (min_gpus < max_gpus) needs whole GPUs and a scaling curve")
    return least, most


def _real(job_id: object, field: str, value: Any) -> float:
    """``value`` as a float, or a ValueError naming the job and the field."""
    if type(value) is float:
        return value
    if isinstance(value, (int, Real)):
        return float(value)
    raise ValueError(f"job {job_id}: {field} must be a number, got {value!r}")


def _integer(job_id: object, field: str, value: Any) -> int:
    """``value`` as an int (numpy integers too), or a ValueError naming the job and the field."""
    if type(value) is int:
        return value
    try:
        return operator.index(value)
    except TypeError:
        raise ValueError(f"job {job_id}: {field} must be an integer, got {value!r}") from None

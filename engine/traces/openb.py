"""Alibaba PAI GPU cluster traces, 2023 (``openb``, from "Beware of Fragmentation", ATC'23).

**Pod lists** (``openb_pod_list_*.csv``), a trace: columns ``name, cpu_milli, memory_mib, num_gpu (0-8),
gpu_milli (share of one GPU in 1/1000), gpu_spec (allowed GPU models joined by '|', empty = any), qos
(LS/BE/Burstable/Guaranteed), pod_phase, creation_time, deletion_time, scheduled_time`` (seconds from an
undisclosed origin). Mapping:

* submit = ``creation_time``; duration = ``deletion_time - creation_time`` (an upper bound: running pods
  are deleted at the end of the observation window); an empty time drops the row as ``missing_time``, a
  duration <= 0 as ``non_positive_duration``;
* ``num_gpu`` = 0 (CPU-only pod) drops the row as ``no_gpu`` (checked first); GPUs = ``num_gpu``; GPU
  fraction = ``gpu_milli / 1000`` (``gpu_milli`` must be 1..1000, and 1000 when ``num_gpu`` > 1);
* allowed types = ``gpu_spec`` models through :data:`OPENB_MODELS` (``V100M16`` -> ``V100-16``, ...;
  duplicates removed); a spec naming only unknown models drops the row as ``unknown_gpu_type``;
* user = ``qos`` (the file has no user column; the QoS class is the closest thing to a tenant);
  job type ``inference`` for ``LS`` (latency-sensitive) pods, ``batch`` otherwise; priority
  :data:`QOS_PRIORITY`; name = ``name``; no estimate. CPU and host memory are not modelled.
* failed = ``pod_phase`` is ``Failed`` (:data:`FAILED_PHASE`): the pod runs its recorded time and ends failed
  (:attr:`~engine.sim.job.Job.failed`); other phases (``Running``, ``Succeeded``, ``Pending``) run to their end.

A pod list without ``creation_time``/``deletion_time`` (``multigpu50``) has no times to simulate and
is an error.

**Node lists** (``openb_node_list_*.csv``), a cluster: ``sn, cpu_milli, memory_mib, gpu, model``.
``--cluster openb:PATH`` (:data:`engine.sim.cluster.CLUSTER_SOURCES` calls :func:`openb_cluster`) builds the cluster from
the nodes with GPUs (CPU-only nodes, empty ``model``, are skipped), consecutive nodes of the same model and
GPU count forming one node group. The undisclosed models ``G1``, ``G2``, ``G3`` are added to the catalog
as placeholders (:data:`PLACEHOLDER_TYPES`: 32 GiB, speed 1; their real figures are not public).

The traces are for research or study use; cite the paper (see ``sample_traces/README.md``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterator

import numpy as np

from engine.errors import ClusterSpecError, TraceError
from engine.sim.cluster import DEFAULT_CATALOG, Cluster, GpuType, NodeGroup
from engine.traces.base import BadField, Columns, ReadContext, read_header, read_rows, to_int, to_time
from engine.traces.fast import keep_frame, numbers, read_chunks, strings

POD_REQUIRED = ("name", "num_gpu", "gpu_milli")
NODE_REQUIRED = ("sn", "gpu", "model")

#: openb GPU model names -> catalog names.
OPENB_MODELS: dict[str, str] = {
    "P100": "P100",
    "T4": "T4",
    "V100M16": "V100-16",
    "V100M32": "V100-32",
    "A10": "A10",
    "G1": "G1",
    "G2": "G2",
    "G3": "G3",
}
#: Catalog entries for the models whose identity Alibaba did not disclose (placeholder figures).
PLACEHOLDER_TYPES = tuple(GpuType(name, 32.0, 1.0) for name in ("G1", "G2", "G3"))
COLUMN_NAMES = Columns(gpus="num_gpu", gpu_fraction="gpu_milli", duration_s="deletion_time")
QOS_PRIORITY = {"Guaranteed": 2, "LS": 1, "Burstable": 0, "BE": 0}


def _header(ctx: ReadContext) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    header, rows = read_header(ctx, None, POD_REQUIRED)
    if "creation_time" not in header or "deletion_time" not in header:
        raise ctx.error(
            "this openb pod list has no creation_time/deletion_time columns (like multigpu50), "
            "so it has no times to simulate",
            1,
        )
    return header, rows


class _Specs(dict):
    """``gpu_spec`` text -> allowed catalog types (``None``: names only unknown models), memoised."""

    def __missing__(self, text: str) -> frozenset[str] | None:
        names = [m.strip() for m in text.split("|") if m.strip()]
        known = frozenset(OPENB_MODELS[m] for m in names if m in OPENB_MODELS)
        value = self[text] = known if (known or not names) else None
        return value


#: The ``pod_phase`` of a pod that failed (Kubernetes' phase names).
FAILED_PHASE = "Failed"


def read(ctx: ReadContext) -> None:
    """Read an openb pod list into ``ctx``, row by row."""
    header, rows = _header(ctx)
    ix = {c: header.index(c) for c in header}
    i_name, i_gpus, i_milli = ix["name"], ix["num_gpu"], ix["gpu_milli"]
    i_c, i_d = ix["creation_time"], ix["deletion_time"]
    i_spec, i_qos, i_phase = ix.get("gpu_spec"), ix.get("qos"), ix.get("pod_phase")
    specs = _Specs()

    def row(f: list[str], line: int) -> None:
        gpus = to_int(f[i_gpus], "num_gpu")
        milli = to_int(f[i_milli], "gpu_milli")
        c_txt, d_txt = f[i_c].strip(), f[i_d].strip()
        created = to_time(c_txt, "creation_time") if c_txt else math.nan
        deleted = to_time(d_txt, "deletion_time") if d_txt else math.nan
        qos = f[i_qos].strip() if i_qos is not None else ""
        ctx.keep(
            created,
            deleted - created,
            gpus=gpus,
            gpu_fraction=milli / 1000,
            user=qos or "unknown",
            job_type=_job_type(qos),
            priority=QOS_PRIORITY.get(qos, 0),
            allowed_types=specs[f[i_spec].strip() if i_spec is not None else ""],
            name=f[i_name].strip(),
            failed=i_phase is not None and f[i_phase].strip() == FAILED_PHASE,
            columns=COLUMN_NAMES,
        )

    read_rows(ctx, rows, row, width=len(header), header=header)


def _job_type(qos: str) -> str:
    return "inference" if qos == "LS" else "batch"


def fast(ctx: ReadContext) -> None:
    """The vectorised path (see :mod:`engine.traces.fast`)."""
    header, _ = _header(ctx)
    specs = _Specs()
    for chunk in read_chunks(ctx, expected=tuple(header)):
        n = len(chunk)
        created = numbers(chunk, "creation_time", time=True, allow_missing=True)
        deleted = numbers(chunk, "deletion_time", time=True, allow_missing=True)
        qos = strings(chunk, "qos") if "qos" in chunk else np.full(n, "", dtype=object)
        spec = strings(chunk, "gpu_spec") if "gpu_spec" in chunk else np.full(n, "", dtype=object)
        phase = strings(chunk, "pod_phase") if "pod_phase" in chunk else np.full(n, "", dtype=object)
        keep_frame(
            ctx,
            submit_s=created,
            duration_s=deleted - created,
            gpus=numbers(chunk, "num_gpu", integer=True),
            gpu_fraction=numbers(chunk, "gpu_milli", integer=True) / 1000,
            user=np.where(qos == "", "unknown", qos).astype(object),
            job_type=np.array([_job_type(q) for q in qos], dtype=object),
            priority=np.array([QOS_PRIORITY.get(q, 0) for q in qos], dtype=np.int64),
            allowed=[specs[t] for t in spec],
            name=strings(chunk, "name"),
            failed=phase == FAILED_PHASE,
        )


def openb_cluster(path: str | Path) -> Cluster:
    """The cluster of an openb node list (GPU nodes only); ``ClusterSpecError`` names a bad line."""
    path = Path(str(path).strip())
    ctx = ReadContext(path=path)
    groups: list[NodeGroup] = []
    try:
        header, rows = read_header(ctx, None, NODE_REQUIRED)
        i_gpu, i_model = header.index("gpu"), header.index("model")
        for line, f in rows:
            if len(f) != len(header):
                raise ctx.error(f"expected {len(header)} fields as in the header, got {len(f)}", line)
            try:
                gpus = to_int(f[i_gpu], "gpu")
            except BadField as exc:
                raise ctx.error(f"expected {exc.expected}, got {f[i_gpu]!r}", line, "gpu") from None
            model = f[i_model].strip()
            if gpus == 0 or not model:
                continue
            if model not in OPENB_MODELS:
                raise ctx.error(f"unknown GPU model {model!r}; known: {', '.join(OPENB_MODELS)}", line, "model")
            if not 1 <= gpus <= 64:
                raise ctx.error(f"expected 0 to 64 GPUs per node, got {gpus}", line, "gpu")
            gtype = OPENB_MODELS[model]
            if groups and groups[-1].gpu_type == gtype and groups[-1].gpus_per_node == gpus:
                groups[-1] = NodeGroup(gtype, groups[-1].nodes + 1, gpus)
            else:
                groups.append(NodeGroup(gtype, 1, gpus))
    except TraceError as exc:
        raise ClusterSpecError(f"openb node list: {exc}") from None
    if not groups:
        raise ClusterSpecError(f"openb node list {path}: no node with GPUs")
    catalog = {**DEFAULT_CATALOG, **{t.name: t for t in PLACEHOLDER_TYPES}}
    return Cluster(groups=tuple(groups), catalog=catalog)

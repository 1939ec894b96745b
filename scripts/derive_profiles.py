"""Derive the application profiles of ``engine/traces/profiles.py`` from numbers transcribed from Pollux's artifact.

    python scripts/derive_profiles.py     # prints every profile as profiles.py holds it

Offline: the numbers below were copied by hand from Pollux's public artifact (Aurick Qiao et al., *Pollux:
Co-adaptive Cluster Scheduling for Goodput-Optimized Deep Learning*, OSDI 2021; repository ``petuum/adaptdl``,
folder ``simulator/``, commit ``de25dcc90c350b8ade3a710e437a651a8d2efae6``); nothing here reads the network.
``tests/traces/test_pollux.py`` checks that ``profiles.py`` holds what :func:`derive` computes.

The model is the one Pollux's simulator uses to pick a job's configuration (``applications.py``,
``Application.get_configurations``): a job of total batch size B on n GPUs runs ``ceil(B / n)`` samples per GPU;
above the application's largest measured per-GPU batch it accumulates gradients over ``a`` extra micro-steps
(``a = ceil(local / max_local) - 1``, each of ``ceil(local / (a + 1))`` samples), which costs
``step + a x (step - sync)`` seconds a step (only the last micro-step synchronises). Step and sync times come from
``traces/<app>/placements.csv`` (measured on Pollux's cluster of 4-GPU nodes), linearly interpolated between the
measured per-GPU batch sizes; n GPUs use the consolidated placement (full 4-GPU nodes plus one partial node,
e.g. 6 GPUs = ``24``, the artifact's id for nodes holding 2 and 4 replicas). Then

* speed-up(n) = step time on 1 GPU / step time on n GPUs, at the same total batch B (same samples a step, so the
  ratio of throughputs);
* reference run time = iterations to finish ``max_epochs`` at batch B (``traces/<app>/validation-<B>.csv``, column
  ``iteration``, last epoch) x the 1-GPU step time at B.

Cross-check against Pollux's rigid simulation (``RIGID_JCT_S`` below), whose completion times include scheduling
rounds and waits: jobs submitted to a quiet cluster completed 3-10 % after the run times derived here (workload-6
cifar10-0, 6 GPUs: 947 s vs 854 s; workload-6 bert-13, 16 GPUs: 1,379 s vs 1,335 s; workload-1 deepspeech2-1,
6 GPUs: 4,182 s vs 3,998 s; workload-7 yolov3-20, 4 GPUs: 14,151 s vs 12,868 s).

B is the batch size Pollux's workloads (``simulator/workloads/workload-*.csv``) use most for the application; where
two are used equally often (cifar10: 2048 and 4096), the one whose validation file the artifact copy has. Where the
copy lacks the data, the number is an *estimate* and says so (deepspeech2, imagenet, ncf; see their notes).
"""

from __future__ import annotations

import csv
import io
import math
import sys
from itertools import pairwise
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.traces.profiles import AppProfile

#: GPU counts of the speed-up tables (one node of 4, then whole nodes; 6 is a common Pollux replica count).
GPU_COUNTS = (1, 2, 3, 4, 6, 8, 12, 16)
GPUS_PER_NODE = 4

# ------------------------------------------------------------------------------------- transcribed numbers
#: Largest per-GPU batch measured in ``placements.csv`` (yolov3: ``max_local_bsz=8`` in ``applications.py``;
#: deepspeech2: largest ``local_bsz`` in its ``scalability.csv``).
MAX_LOCAL_BSZ = {"cifar10": 1024, "bert": 12, "imagenet": 200, "yolov3": 8, "deepspeech2": 80}

#: The batch size of each profile: the one Pollux's workloads use most for the application. ``workload.py`` draws
#: each job's (replicas, batch size) uniformly from the application's configurations. In workload-1 and workload-7:
#: cifar10 2048 on 6 or 8 replicas and 4096 on 12 or 16 (two configurations each; the copy read has
#: validation-2048.csv, not validation-4096.csv); bert 384 only; imagenet 6400 x 3 and 3200 x 1 (workload-1),
#: 6400 x 4 and 3200 x 1 (workload-7); yolov3 64 only; deepspeech2 320 x 8 and 640 x 4 (workload-1), 320 x 7 and
#: 640 x 2 (workload-7); ncf 32768 only.
BATCH_SIZE = {"cifar10": 2048, "bert": 384, "imagenet": 6400, "yolov3": 64, "deepspeech2": 320, "ncf": 32768}

#: ``validation-<B>.csv``: the ``iteration`` value of the last row, the end of epoch max_epochs (``applications.py``:
#: cifar10 100, bert 2, yolov3 50, deepspeech2 80).
ITERATIONS = {"cifar10": 3178, "bert": 480, "yolov3": 14577, "deepspeech2": 2264}

#: Rows of ``placements.csv`` (placement, local_bsz, step_time, sync_time) that the consolidated placements at
#: GPU_COUNTS need (the two measured batch sizes around each point, or the one it equals).
PLACEMENTS = {
    "cifar10": """
1,1024,0.7020925283432007,0.0005468864023685456
2,1024,0.8379724740982055,0.0011728127837181094
3,513,0.409562349319458,0.03564195861816406
3,725,0.5798220872879029,0.06464437408447266
4,363,0.27890911102294924,0.021735043144226078
4,513,0.395232105255127,0.03336192035675049
24,257,0.23076505661010743,0.042165414810180664
24,363,0.27816870212554934,0.01461869750022888
44,182,0.224548864364624,0.08303376350402833
44,257,0.26041061878204347,0.059468985748291014
444,129,0.17085661888122558,0.06324510078430176
444,182,0.19440717697143556,0.05171079063415527
4444,91,0.147971248626709,0.07013094100952148
4444,129,0.15457544326782227,0.0439342041015625
""",
    "bert": """
1,12,0.9215156733989716,0.013695754051208497
2,12,0.9190408140420914,0.05467441153526306
3,12,0.9494313150644302,0.07788509035110472
4,12,0.9571182131767273,0.09286786985397338
24,11,2.3917264491319656,1.5968457107543945
44,12,2.538950562477112,1.6628430938720702
444,11,1.6889024674892426,0.8779327430725098
4444,12,1.8881946355104446,0.9953583183288576
""",
    "imagenet": """
1,200,0.923530888557434,0.0012039680004119874
2,200,0.9454313039779663,0.01593857946395874
3,163,0.8037435054779053,0.0016435360193252564
3,200,0.9983175277709961,0.001728214406967163
4,200,1.0050264596939087,0.0075231265068054195
24,163,0.8130674123764038,0.04238517189025879
24,200,1.0193392992019654,0.07327171821594239
44,200,1.0148882150650025,0.006369747114181519
444,163,0.8319523572921753,0.04296894073486328
444,200,1.047966766357422,0.08029728775024415
4444,200,1.0462684392929078,0.008119945526123046
""",
    "yolov3": """
1,8,0.3261484205722809,0.0024901360273361208
2,8,0.3566535413265228,0.03225891834497452
3,8,0.4375617504119873,0.09438191461563111
4,8,0.5009251087903976,0.11896183347702027
24,6,1.582841470837593,1.1441269989013672
44,8,1.6367916762828827,1.2665243377685549
444,6,1.2449592500925064,0.7160717544555664
4444,4,1.174428179860115,0.8398707008361816
""",
}

#: deepspeech2 has no ``placements.csv`` in the copy read; its ``scalability.csv`` rows (num_nodes, num_replicas,
#: local_bsz, step_time, sync_time) measure one replica per node on 6 to 16 nodes.
DEEPSPEECH2_SCALABILITY = """
6,6,40,1.344086304306984,0.20412753462791441
6,6,57,1.8561437765757243,0.22828941370646158
6,6,80,2.773968802558051,0.21695291985405815
8,8,40,1.3100585639476776,0.1978351364135742
8,8,80,2.84389066696167,0.2722910512288411
12,12,20,1.0558039546012878,0.40422440052032477
12,12,28,1.2367096245288849,0.3915698328018189
12,12,80,2.8538726568222046,0.3051437683105469
16,16,20,1.242578774690628,0.5266109094619751
"""
DEEPSPEECH2_GPU_COUNTS = (1, 6, 8, 12, 16)

#: Job completion times of Pollux's own simulation of rigid jobs (``results-jobload/tiresias-1.0/summary.json``,
#: the Tiresias+TunedJobs policy: every job at its workload's replicas and batch size). A completion time is the
#: run time plus any wait or preemption, so the shortest over the 8 workloads is the closest upper bound of the run
#: time. Used where the copy lacks data.
RIGID_JCT_S = {
    # Shortest of the 32-replica, batch-6400 jobs: workload-6 imagenet-81 (others: 47,644, 48,124, 50,452 s).
    "imagenet": (32, 42001),
    # Shortest ncf completion (workload-1 ncf-29, workload-4 ncf-59 and others; every ncf job: 1 replica, 32768).
    "ncf": (1, 77),
}


# ------------------------------------------------------------------------------------------- derivation
def consolidated(gpus: int) -> int:
    """The artifact's id of ``gpus`` replicas packed into 4-GPU nodes: full nodes plus one partial node, rotated to
    the smallest id as Pollux's simulator normalises placements (6 -> 24, 8 -> 44, 3 -> 3)."""
    nodes = [GPUS_PER_NODE] * (gpus // GPUS_PER_NODE) + ([gpus % GPUS_PER_NODE] if gpus % GPUS_PER_NODE else [])
    return min(int("".join(map(str, nodes[i:] + nodes[:i]))) for i in range(len(nodes)))


def _rows(text: str) -> list[list[float]]:
    return [[float(v) for v in row] for row in csv.reader(io.StringIO(text.strip()))]


def _interpolate(points: list[tuple[float, float, float]], local: int) -> tuple[float, float]:
    """(step, sync) at per-GPU batch ``local`` between measured ``(local_bsz, step, sync)`` points."""
    points = sorted(points)
    for (x0, s0, y0), (x1, s1, y1) in pairwise(points):
        if x0 <= local <= x1:
            f = (local - x0) / (x1 - x0)
            return s0 + f * (s1 - s0), y0 + f * (y1 - y0)
    exact = [(s, y) for x, s, y in points if x == local]
    if not exact:
        raise ValueError(f"per-GPU batch {local} is outside the transcribed rows {[p[0] for p in points]}")
    return exact[0]


def step_time_s(points: list[tuple[float, float, float]], gpus: int, batch: int, max_local: int) -> float:
    """Seconds a step of total batch ``batch`` takes on ``gpus`` GPUs, with gradient accumulation above
    ``max_local`` samples per GPU (``points``: the placement's measured ``(local_bsz, step, sync)``)."""
    local = math.ceil(batch / gpus)
    accumulate = math.ceil(local / max_local) - 1
    step, sync = _interpolate(points, math.ceil(local / (accumulate + 1)))
    return step + accumulate * (step - sync)


def _speedups(steps: dict[int, float]) -> tuple[tuple[int, float], ...]:
    return tuple((n, steps[1] / s) for n, s in steps.items())


def derive() -> dict[str, tuple[float, tuple[tuple[int, float], ...], int]]:
    """``application -> (reference run time on 1 GPU in s, ((gpus, speed-up), ...), batch size)``, unrounded."""
    out = {}
    for app, text in PLACEMENTS.items():
        rows = _rows(text)
        batch, max_local = BATCH_SIZE[app], MAX_LOCAL_BSZ[app]
        steps = {
            n: step_time_s([(r[1], r[2], r[3]) for r in rows if int(r[0]) == consolidated(n)], n, batch, max_local)
            for n in GPU_COUNTS
        }
        speedup = _speedups(steps)
        if app in RIGID_JCT_S:  # imagenet: no iteration count at this batch size; anchor on the rigid run
            gpus, jct = RIGID_JCT_S[app]
            reference = jct * AppProfile(1.0, speedup, batch, "").speedup_at(gpus)
        else:
            reference = ITERATIONS[app] * steps[1]
        out[app] = (reference, speedup, batch)

    # deepspeech2 (estimate): 1 GPU never measured. A single GPU does no synchronisation, so its step is taken as
    # the compute part (step - sync) of the 80-sample rows, averaged, times 4 micro-steps for 320 samples.
    rows = _rows(DEEPSPEECH2_SCALABILITY)
    batch, max_local = BATCH_SIZE["deepspeech2"], MAX_LOCAL_BSZ["deepspeech2"]
    compute_80 = [r[3] - r[4] for r in rows if r[2] == max_local]
    steps = {1: math.ceil(batch / max_local) * sum(compute_80) / len(compute_80)}
    for n in DEEPSPEECH2_GPU_COUNTS[1:]:
        steps[n] = step_time_s([(r[2], r[3], r[4]) for r in rows if r[1] == n], n, batch, max_local)
    out["deepspeech2"] = (ITERATIONS["deepspeech2"] * steps[1], _speedups(steps), batch)

    # ncf (estimate): no placements in the copy read, and Pollux's workloads run it on 1 GPU only.
    out["ncf"] = (float(RIGID_JCT_S["ncf"][1]), ((1, 1.0),), BATCH_SIZE["ncf"])
    return out


def main() -> int:
    for app, (reference, speedup, batch) in derive().items():
        table = ", ".join(f"({n}, {s:.3f})" for n, s in speedup)
        print(f"{app:12s} batch {batch:>6}  reference {reference:12,.0f} s  speed-up ({table})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

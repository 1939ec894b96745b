"""Per-application profiles: how long a deep-learning job runs on one GPU and how it speeds up on more.

Pollux- and Sia-style workloads (``name, time, application, num_replicas, batch_size``) name an application instead
of a run time; :data:`APPLICATION_PROFILES` gives each of Pollux's six applications a reference run time on one GPU
and a speed-up table by GPU count, so a job of ``g`` GPUs runs ``reference_run_s / speedup_at(g)`` seconds.

All numbers come from Pollux's public artifact (Aurick Qiao et al., *Pollux: Co-adaptive Cluster Scheduling for
Goodput-Optimized Deep Learning*, OSDI 2021; ``petuum/adaptdl``, folder ``simulator/``), measured on the paper's
testbed of 4-GPU nodes. ``scripts/derive_profiles.py`` holds the transcribed measurements and the
arithmetic, and prints these numbers; a test checks the two agree. Speed-ups are at the profile's fixed total batch
size (throughput on ``g`` GPUs / throughput on 1, consolidated into as few 4-GPU nodes as possible):

===========  ======  ===========  ====================================================  =====================
application  batch   1 GPU        speed-up at 1, 2, 3, 4, 6, 8, 12, 16 GPUs             numbers
===========  ======  ===========  ====================================================  =====================
cifar10      2048    4,461 s      1, 1.68, 2.57, 3.56, 5.22, 5.40, 7.41, 9.09           measured
bert         384     13,951 s     1, 2.09, 3.01, 4.15, 4.57, 5.63, 8.78, 10.45          measured
imagenet     6400    594,741 s    1, 1.98, 2.78, 3.70, 5.78, 7.31, 11.17, 14.16         run time estimated
yolov3       64      37,780 s     1, 1.95, 2.31, 2.94, 1.28, 1.58, 2.08, 2.21           measured
deepspeech2  320     23,175 s     at 1, 6, 8, 12, 16 only: 1, 5.80, 7.81, 8.43, 8.24   estimated
ncf          32768   77 s         1 (1 GPU only)                                        estimated
===========  ======  ===========  ====================================================  =====================

Between table points the speed-up is linear in the GPU count; beyond the last point it stays flat (no
extrapolation past what was measured: Pollux's placements span at most 4 nodes, 16 GPUs). The tables are what the
measurements say, not smoothed: a step that spans nodes synchronises for about 1 s, so yolov3 on 6 GPUs (two
nodes) is slower than on 4 and bert gains little from 4 to 6 (its 2.09 on 2 GPUs, above 2, is as measured).
"""

from __future__ import annotations

from dataclasses import dataclass

# Where the numbers come from (each profile's ``source`` starts with it) and the speed-up tables, shared with the
# engine's scaling curves (``pollux-<app>``).
from engine.sim.scaling import POLLUX_ARTIFACT, POLLUX_TABLES, table_speedup


@dataclass(frozen=True)
class AppProfile:
    """One application's run time model.

    Attributes:
        reference_run_s: seconds the job runs on one GPU at ``batch_size`` (to the end of its training epochs).
        speedup: ``((gpus, speed-up), ...)`` with GPU counts increasing from ``(1, 1.0)``.
        batch_size: the total batch size the numbers are for.
        source: where the numbers come from, and which are estimates.
    """

    reference_run_s: float
    speedup: tuple[tuple[int, float], ...]
    batch_size: int
    source: str

    def __post_init__(self) -> None:
        if not self.reference_run_s > 0:
            raise ValueError(f"reference_run_s must be > 0, got {self.reference_run_s!r}")
        if not self.speedup or self.speedup[0] != (1, 1.0):
            raise ValueError(f"a speed-up table starts at (1, 1.0), got {self.speedup[:1]!r}")
        gpus = [g for g, _ in self.speedup]
        if gpus != sorted(set(gpus)) or any(not s > 0 for _, s in self.speedup):
            raise ValueError(f"speed-up table needs increasing GPU counts and speed-ups > 0: {self.speedup!r}")

    def speedup_at(self, gpus: int) -> float:
        """The speed-up on ``gpus`` GPUs (>= 1): linear between table points, the last point's beyond it."""
        return table_speedup(self.speedup, gpus)

    def run_time_s(self, gpus: int) -> float:
        """Seconds the job runs on ``gpus`` GPUs (rigid: the same GPUs from start to end)."""
        return self.reference_run_s / self.speedup_at(gpus)


# How each number is derived: scripts/derive_profiles.py (step times from simulator/traces/<app>/placements.csv,
# iterations from validation-<batch>.csv's last epoch, max_epochs from applications.py).
APPLICATION_PROFILES: dict[str, AppProfile] = {
    # 3,178 iterations (validation-2048, epoch 100) x 1.404 s (1 GPU: 2 micro-steps of 1024 samples).
    "cifar10": AppProfile(
        4461,
        POLLUX_TABLES["cifar10"],
        2048,
        f"{POLLUX_ARTIFACT}: cifar10 placements.csv, validation-2048.csv (100 epochs)",
    ),
    # 480 iterations (validation-384, epoch 2) x 29.06 s (1 GPU: 32 micro-steps of 12). Multi-node placements
    # synchronise about 1 s a step, so 6 GPUs (two nodes) gain little over 4.
    "bert": AppProfile(
        13951,
        POLLUX_TABLES["bert"],
        384,
        f"{POLLUX_ARTIFACT}: bert placements.csv, validation-384.csv (2 epochs)",
    ),
    # Estimate: the copy read has no validation-6400.csv (iterations at this batch size). The speed-ups are
    # measured (placements.csv); the run time is anchored on Pollux's own rigid simulation, where the fastest
    # 32-replica job of batch 6400 (workload-6 imagenet-81) completed in 42,001 s: 42,001 x speed-up(32)
    # (= 14.16, flat past 16), so a 32-replica job runs 42,001 s here.
    "imagenet": AppProfile(
        594741,
        POLLUX_TABLES["imagenet"],
        6400,
        f"{POLLUX_ARTIFACT}: imagenet placements.csv; run time an estimate from the rigid "
        "(Tiresias) simulation's 42,001 s for 32 replicas (results-jobload/tiresias-1.0)",
    ),
    # 14,577 iterations (validation-64, epoch 50) x 2.592 s (1 GPU: 8 micro-steps of 8, max_local_bsz=8). Across
    # nodes a step synchronises for about 1 s, more than it computes: 6 to 16 GPUs are slower than 4.
    "yolov3": AppProfile(
        37780,
        POLLUX_TABLES["yolov3"],
        64,
        f"{POLLUX_ARTIFACT}: yolov3 placements.csv, validation-64.csv (50 epochs)",
    ),
    # Estimate: the copy read has no deepspeech2 placements.csv, only scalability.csv (one replica per node on 6
    # to 16 nodes). 1 GPU = 4 x the compute part (step - sync) of an 80-sample step = 10.24 s, x 2,264 iterations
    # (validation-320, epoch 80). Spread placements: consolidated ones would be somewhat faster.
    "deepspeech2": AppProfile(
        23175,
        POLLUX_TABLES["deepspeech2"],
        320,
        f"{POLLUX_ARTIFACT}: deepspeech2 scalability.csv, validation-320.csv (80 epochs); "
        "1-GPU step and spread placements: an estimate",
    ),
    # Estimate: the copy read has no ncf placements.csv and Pollux runs ncf on 1 GPU only; 77 s is the shortest
    # ncf completion time of the rigid simulation over its 8 workloads (an upper bound of the run time). No
    # speed-up data.
    "ncf": AppProfile(
        77,
        POLLUX_TABLES["ncf"],
        32768,
        f"{POLLUX_ARTIFACT}: ncf run time an estimate, the shortest rigid (Tiresias) completion "
        "time (results-jobload/tiresias-1.0); no multi-GPU data",
    ),
}

"""Teachers: hand-written policies over the learned schedulers' action space, for behaviour cloning.

A teacher sees what an agent sees (the :class:`~engine.rl.encoding.Snapshot` of a state: the job window and
where each job fits) and answers with an action index of the same encoding, so its choices can be imitated
exactly by a policy network (:mod:`engine.rl.clone`). Teachers never choose *wait*: they start the best
feasible (job, GPU type) pair, and the decision point ends when nothing more fits.

Teachers (:data:`TEACHERS`), each scoring every feasible (job, GPU type) pair and taking the smallest score
(ties: lower window slot, then lower type slot):

* ``sjf-fast``: shortest estimated GPU-time first (``estimate_s x gpus x gpu_fraction``); the job goes on
  the GPU type it runs fastest on among those where it fits now.
* ``short-fast``: shortest estimated run time first (``estimate_s``, whatever the GPU count), on the job's
  fastest fitting type. With heavy-tailed run times, short jobs dominate the mean wait, and multi-GPU jobs are
  not pushed back for their size alone.
* ``short-packed``: like ``short-fast``, but among the types where the job fits it prefers one with a node
  that holds the whole job (no communication over nodes), then the fastest.
* ``short-tight``: like ``short-packed``, then the type whose emptiest node has the fewest idle GPUs (packing
  tightly, as ``best-fit`` does, keeps whole nodes free for multi-GPU jobs), then the fastest.
* ``srpt-type``: smallest estimated GPU-time *on that type* (the estimate divided by the job's speed on the
  type), so a job that gains little from a fast type leaves it to one that gains more.
* ``fifo-fast``: the oldest job that fits anywhere, on its fastest fitting type (FIFO without blocking).

Every teacher places with the packing rule ``rule`` (an index into the encoding's rules) on the chosen type.
"""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

from ..errors import EngineError
from ..job import Job
from ..state import ClusterState, Decision
from .encoding import EncodingConfig, Snapshot, decode, snapshot


def job_type_speeds(state: ClusterState, job_type: str) -> np.ndarray:
    """Reference-work seconds per second of one job of ``job_type`` on each GPU type of the cluster."""
    return np.array([state.cluster.speed(job_type, t) for t in state.layout.type_names])


#: A teacher's key for starting ``job`` on a type where it runs at ``speed``; ``one_node``: the type has a node
#: with ``job.gpus`` idle GPUs (the job can start without spreading over nodes); ``block``: the most idle GPUs
#: on one node of the type.
Score = Callable[[Job, float, bool, float], tuple]


def _sjf(job: Job, speed: float, one_node: bool, block: float) -> tuple:
    return (job.estimate_s * job.gpus * job.gpu_fraction, -speed)


def _short(job: Job, speed: float, one_node: bool, block: float) -> tuple:
    return (job.estimate_s, -speed)


def _short_packed(job: Job, speed: float, one_node: bool, block: float) -> tuple:
    return (job.estimate_s, not one_node, -speed)


def _short_tight(job: Job, speed: float, one_node: bool, block: float) -> tuple:
    return (job.estimate_s, not one_node, block, -speed)


def _srpt(job: Job, speed: float, one_node: bool, block: float) -> tuple:
    return (job.estimate_s * job.gpus * job.gpu_fraction / speed,)


def _fifo(job: Job, speed: float, one_node: bool, block: float) -> tuple:
    return (job.submit_s, job.job_id, -speed)


TEACHERS: dict[str, Score] = {"sjf-fast": _sjf, "short-fast": _short, "short-packed": _short_packed,
                              "short-tight": _short_tight,
                              "srpt-type": _srpt, "fifo-fast": _fifo}


def teacher_action(name: str, state: ClusterState, cfg: EncodingConfig, snap: Snapshot, rule: int = 0) -> int:
    """The action teacher ``name`` takes in ``state`` (``snap`` is the state's snapshot); *wait* if nothing fits."""
    score = _score(name)
    if not 0 <= rule < len(cfg.rules):
        raise EngineError(f"teacher rule index {rule} is out of range 0..{len(cfg.rules) - 1}")
    best, best_key = cfg.wait_action, None
    speeds: dict[str, np.ndarray] = {}
    lay = state.layout
    block = np.zeros(len(lay.type_names))
    np.maximum.at(block, lay.node_type, state.node_free)  # largest idle block on one node, per type
    for slot, (j, fits) in enumerate(zip(snap.window, snap.fits)):
        if not fits.any():
            continue
        job = state.jobs[j]
        sp = speeds.get(job.job_type)
        if sp is None:
            sp = speeds[job.job_type] = job_type_speeds(state, job.job_type)
        for t in np.flatnonzero(fits):
            key = (*score(job, float(sp[t]), job.fractional or block[t] >= job.gpus, float(block[t])), slot, int(t))
            if best_key is None or key < best_key:
                best, best_key = cfg.action(slot, int(t), rule), key
    return best


def _score(name: str) -> Score:
    try:
        return TEACHERS[name]
    except KeyError:
        raise EngineError(f"unknown teacher {name!r}; valid teachers: {', '.join(TEACHERS)}") from None


class TeacherScheduler:
    """A teacher as an engine scheduler (to measure it with ``simulate`` like any heuristic)."""

    def __init__(self, name: str, cfg: EncodingConfig, rule: int = 0) -> None:
        _score(name)
        self.name, self.cfg, self.rule = f"teacher:{name}", cfg, rule
        self._teacher = name

    def reset(self, state: ClusterState) -> None:
        """Stateless: every choice is a function of the current state."""

    def decide(self, state: ClusterState) -> Iterator[Decision]:
        while True:
            snap = snapshot(state, self.cfg)
            action = teacher_action(self._teacher, state, self.cfg, snap, self.rule)
            if action == self.cfg.wait_action:
                return
            yield decode(state, action, self.cfg, snap)

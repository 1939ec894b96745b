"""Learned schedulers: the shared encoding, training (MaskablePPO), policies and the ``rl:<name>`` plug-in.

Importing this package imports neither torch nor gymnasium; it registers the teachers
(:mod:`engine.rl.teacher`, hand-written policies over the agents' action space) as ordinary schedulers, and the
prefixes ``rl:<model>`` (a trained agent) and ``expert:<model>`` (the lookahead expert it was cloned from).
"""

from __future__ import annotations

from engine.rl.teacher import register_teachers
from engine.schedulers.registry import PREFIXES


def rl_scheduler(name: str):
    """Build the scheduler ``rl:<name>`` from ``models/<name>.json`` (the ``rl`` prefix factory)."""
    from engine.rl.agent import load_agent

    return load_agent(name)


def expert_scheduler(name: str):
    """Build ``expert:<name>``: the lookahead expert model ``name`` was cloned from (the ``expert`` prefix factory),
    built from its card's training config (its encoding, objective and ``clone.expert``); ``ModelError`` if it had
    none."""
    from engine.rl.agent import ModelError, home_of, read_card
    from engine.rl.lookahead import LookaheadScheduler
    from engine.rl.train import TrainConfig

    card = read_card(name, home_of(name))
    try:
        cfg = TrainConfig.from_dict(card["training"]["config"])
    except (KeyError, TypeError):
        raise ModelError(f"model card {name}: no training config to build its expert from") from None
    if cfg.clone is None or cfg.clone.expert is None:
        raise ModelError(f"model {name!r} was not cloned from a lookahead expert (its clone.expert is empty)")
    env = cfg.env
    return LookaheadScheduler(
        cfg.clone.expert, env.encoding, env.reward, env.encoding.rules.index(cfg.clone.rule), name=f"expert:{name}"
    )


PREFIXES["rl"] = rl_scheduler  # rl:<model>; torch is imported only when a model is loaded
PREFIXES["expert"] = expert_scheduler
register_teachers()

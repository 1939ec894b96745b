"""The ``rl:<name>`` scheduler: a trained policy from ``models/`` (or, for names not shipped there, from the
folder of models trained in the app, :func:`user_models_dir`) behind the ordinary scheduler protocol.

Loading is safe by construction: the card ``models/<name>.json`` is JSON; the network is built in code from
the card's policy spec; the weights file's SHA-256 must equal the card's ``sha256`` before it is opened; and
it is read with ``torch.load(weights_only=True)``, which accepts only tensors and plain containers and refuses
any pickle that would import or call code. SB3 ``.zip`` files (which unpickle objects) are never loaded.

At each decision point the scheduler repeats: encode the state (the same :mod:`engine.rl.encoding` functions
the environment uses), pick the most likely allowed action, decode it into a ``Start`` (after its preemptions,
for the ``"evict"`` rule), until the policy chooses *wait* or nothing more can start. Decisions are
deterministic.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, Iterator

from engine.errors import EngineError
from engine.rl.encoding import EncodingConfig, decode, encode, snapshot
from engine.sim.state import ClusterState, Decision

MODELS_DIR = Path(__file__).resolve().parents[2] / "models"
#: Environment variable naming the folder of models trained from the app (default ``runs/models/``, git-ignored).
USER_MODELS_ENV = "ENGINE_USER_MODELS"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class ModelError(EngineError):
    """A model card or weights file is missing, altered or not plain weights; the message says which."""


def user_models_dir() -> Path:
    """Where models trained from the app go: ``$ENGINE_USER_MODELS``, else ``runs/models/`` (git-ignored), so a
    page never overwrites a shipped card in ``models/``."""
    return Path(os.environ.get(USER_MODELS_ENV) or MODELS_DIR.parent / "runs" / "models")


def home_of(name: str) -> Path:
    """The folder holding model ``name``'s card: ``models/`` (shipped) first, else :func:`user_models_dir`."""
    user = user_models_dir()
    return user if not (MODELS_DIR / f"{name}.json").is_file() and (user / f"{name}.json").is_file() else MODELS_DIR


def model_names(models_dir: Path | None = None) -> list[str]:
    """Names of the models with a card in ``models_dir`` (default ``models/``)."""
    return sorted(p.stem for p in Path(models_dir or MODELS_DIR).glob("*.json"))


def read_card(name: str, models_dir: Path | None = None) -> dict[str, Any]:
    """The card of model ``name`` (JSON only; nothing is executed)."""
    models_dir = Path(models_dir or MODELS_DIR)
    if not _NAME.match(name):
        raise ModelError(f"model name {name!r}: use letters, digits, '.', '_' or '-' (no paths)")
    path = models_dir / f"{name}.json"
    if not path.is_file():
        known = ", ".join(model_names(models_dir)) or "none"
        raise ModelError(f"no model {name!r} in {models_dir}; available: {known}")
    try:
        card = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelError(f"model card {path}: not readable JSON ({exc})") from None
    for key in ("weights", "sha256", "policy", "encoding"):
        if key not in card:
            raise ModelError(f"model card {path}: missing key {key!r}")
    return card


def load_weights(path: Path, sha256: str) -> dict[str, Any]:
    """A plain ``state_dict`` from ``path`` after checking its SHA-256; refuses anything that is not plain data."""
    import pickle

    import torch

    data = Path(path).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise ModelError(f"weights {path}: SHA-256 {digest[:16]}... does not match the card's {sha256[:16]}...; "
                         "refusing to load an altered file")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, AttributeError, TypeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"weights {path}: refused, not a plain tensor state dict ({first})") from None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ModelError(f"weights {path}: refused, expected a mapping of parameter names to tensors")
    return state


class RLScheduler:
    """A trained agent as a :class:`~engine.sim.state.Scheduler` (build it with :func:`load_agent`)."""

    def __init__(self, name: str, card: dict[str, Any], policy: Any, encoding: EncodingConfig) -> None:
        import torch

        self.name = f"rl:{name}"
        self.card = card
        self.policy = policy
        self.encoding = encoding
        self._torch = torch

    def reset(self, state: ClusterState) -> None:
        """Nothing to clear: the policy is a function of the current state."""

    def act(self, obs: dict[str, Any], mask) -> int:
        """The most likely allowed action for one observation."""
        torch = self._torch
        with torch.no_grad():
            t = {k: torch.as_tensor(v).unsqueeze(0) for k, v in obs.items()}
            pol = self.policy
            features = pol.extract_features(t, pol.pi_features_extractor)
            logits = pol.action_net(pol.mlp_extractor.forward_actor(features))[0]
            logits[~torch.as_tensor(mask)] = -torch.inf
            return int(torch.argmax(logits))

    def decide(self, state: ClusterState) -> Iterator[Decision]:
        enc = self.encoding
        while True:
            snap = snapshot(state, enc)
            if not snap.mask[:-1].any():
                return
            action = self.act(encode(state, enc, snap), snap.mask)
            if action == enc.wait_action:
                return
            yield from decode(state, action, enc, snap)


def load_agent(name: str, models_dir: Path | None = None) -> RLScheduler:
    """Build the scheduler ``rl:<name>`` from ``models_dir/<name>.json`` and its weights (hash checked)."""
    import torch

    from engine.rl.env import observation_space
    from engine.rl.policies import PolicySpec, build_policy

    models_dir = Path(models_dir or home_of(name))
    card = read_card(name, models_dir)
    weights = str(card["weights"])
    if not _NAME.match(weights) or not weights.endswith(".pt"):
        raise ModelError(f"model card {name}: weights must be a plain .pt file name beside the card, got {weights!r}")
    if card.get("format", "torch-state-dict") != "torch-state-dict":
        raise ModelError(f"model card {name}: unsupported weights format {card.get('format')!r}")
    state = load_weights(models_dir / weights, str(card["sha256"]))
    enc = EncodingConfig.from_dict(card["encoding"])
    spec = PolicySpec.from_dict(card["policy"])
    obs_space, act_space = observation_space(enc)
    torch.set_num_threads(1)
    policy = build_policy(spec, obs_space, act_space)
    try:
        policy.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise ModelError(f"weights of {name} do not fit the network its card describes "
                         f"({str(exc).splitlines()[0]})") from None
    policy.eval()
    return RLScheduler(name, card, policy, enc)

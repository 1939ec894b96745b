"""Policy networks for learned schedulers, built in code (never unpickled).

Two kinds, described by a :class:`~engine.rl.inference.PolicySpec` (inference runs in NumPy,
:mod:`engine.rl.inference`; torch is for training):

* ``mlp``: Stable-Baselines3's ``MultiInputPolicy`` layout: every observation part is flattened, concatenated
  and fed to separate actor and critic MLPs (``net_arch``).
* ``attention``: :class:`AttentionExtractor`, in the spirit of AttentiveSched: each job slot, each GPU-type
  slot and the global features become a token; a small Transformer encoder lets every job attend to every
  other job and to every GPU type (and back), so the joint (job, GPU type, rule) logits are computed from
  features that already know the competition and the free capacity. Empty slots are masked out of attention.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableMultiInputActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, CombinedExtractor
from torch import nn

from engine.rl.inference import PolicySpec

__all__ = ["AttentionExtractor", "PolicySpec", "TorchPolicy", "build_policy", "policy_kwargs", "state_arrays"]


def policy_kwargs(spec: PolicySpec) -> dict[str, Any]:
    """Keyword arguments for ``MaskablePPO(policy_kwargs=...)`` / the policy constructor."""
    kw: dict[str, Any] = {"net_arch": dict(pi=list(spec.net_arch), vf=list(spec.net_arch))}
    if spec.kind == "attention":
        kw["features_extractor_class"] = AttentionExtractor
        kw["features_extractor_kwargs"] = dict(d_model=spec.d_model, n_heads=spec.n_heads, n_layers=spec.n_layers)
    else:
        kw["features_extractor_class"] = CombinedExtractor
    return kw


class AttentionExtractor(BaseFeaturesExtractor):
    """Self-attention over [global token, job tokens, GPU-type tokens]; outputs all tokens, flattened."""

    def __init__(self, observation_space: spaces.Dict, d_model: int = 32, n_heads: int = 2, n_layers: int = 1):
        window, job_f = observation_space["jobs"].shape
        n_types, group_f = observation_space["groups"].shape
        glob_f = observation_space["global"].shape[0]
        super().__init__(observation_space, features_dim=(1 + window + n_types) * d_model)
        self.job_in = nn.Linear(job_f, d_model)
        self.group_in = nn.Linear(group_f, d_model)
        self.glob_in = nn.Linear(glob_f, d_model)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=2 * d_model, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        jobs, groups, glob = obs["jobs"], obs["groups"], obs["global"]
        tokens = torch.cat([self.glob_in(glob).unsqueeze(1), self.job_in(jobs), self.group_in(groups)], dim=1)
        # Feature 0 of a job or group slot is "present". The global token's entry is a zero, so it counts as
        # empty (masked out of attention, its output zeroed): the trained weights depend on this, so it stays
        # until a model is retrained (engine.rl.inference mirrors it).
        empty = torch.cat([torch.zeros_like(glob[:, :1]), jobs[..., 0], groups[..., 0]], dim=1) < 0.5
        out = self.encoder(tokens, src_key_padding_mask=empty)
        out = out.masked_fill(empty.unsqueeze(-1), 0.0)
        return out.flatten(1)


def build_policy(
    spec: PolicySpec, observation_space: spaces.Dict, action_space: spaces.Discrete
) -> MaskableMultiInputActorCriticPolicy:
    """A fresh policy network of ``spec`` for these spaces (weights are loaded separately)."""
    return MaskableMultiInputActorCriticPolicy(
        observation_space, action_space, lr_schedule=lambda _: 0.0, **policy_kwargs(spec)
    )


class TorchPolicy:
    """The torch policy's most likely allowed action for one observation (what training's evaluation uses;
    the ``rl:`` scheduler uses :class:`~engine.rl.inference.NumpyPolicy`, which takes the same actions)."""

    def __init__(self, policy: MaskableMultiInputActorCriticPolicy) -> None:
        self.policy = policy

    def logits(self, obs: Mapping[str, np.ndarray]) -> torch.Tensor:
        with torch.no_grad():
            t = {k: torch.as_tensor(v).unsqueeze(0) for k, v in obs.items()}
            pol = self.policy
            features = pol.extract_features(t, pol.pi_features_extractor)
            return pol.action_net(pol.mlp_extractor.forward_actor(features))[0]

    def act(self, obs: Mapping[str, np.ndarray], mask: np.ndarray) -> int:
        logits = self.logits(obs)
        logits[~torch.as_tensor(np.asarray(mask, dtype=bool))] = -torch.inf
        return int(torch.argmax(logits))


def state_arrays(policy: torch.nn.Module) -> dict[str, np.ndarray]:
    """The policy's ``state_dict`` as float32 NumPy arrays (what weights files hold)."""
    return {k: v.detach().cpu().numpy().astype(np.float32) for k, v in policy.state_dict().items()}

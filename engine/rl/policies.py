"""Policy networks for learned schedulers, built in code (never unpickled).

Two kinds, described by a :class:`PolicySpec`:

* ``mlp``: Stable-Baselines3's ``MultiInputPolicy`` layout: every observation part is flattened, concatenated
  and fed to separate actor and critic MLPs (``net_arch``).
* ``attention``: :class:`AttentionExtractor`, in the spirit of AttentiveSched: each job slot, each GPU-type
  slot and the global features become a token; a small Transformer encoder lets every job attend to every
  other job and to every GPU type (and back), so the joint (job, GPU type, rule) logits are computed from
  features that already know the competition and the free capacity. Empty slots are masked out of attention.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping

import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableMultiInputActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, CombinedExtractor
from torch import nn

from engine.errors import EngineError

POLICY_KINDS = ("mlp", "attention")


@dataclass(frozen=True)
class PolicySpec:
    """The network of an agent.

    Attributes:
        kind: ``"mlp"`` or ``"attention"``.
        net_arch: hidden layer sizes of the actor and critic heads.
        d_model: token width of the attention extractor.
        n_heads: attention heads.
        n_layers: Transformer encoder layers.
    """

    kind: str = "mlp"
    net_arch: tuple[int, ...] = (64, 64)
    d_model: int = 32
    n_heads: int = 2
    n_layers: int = 1

    def __post_init__(self) -> None:
        if self.kind not in POLICY_KINDS:
            raise EngineError(f"policy.kind {self.kind!r}: expected one of {list(POLICY_KINDS)}")
        object.__setattr__(self, "net_arch", tuple(int(x) for x in self.net_arch))
        if self.d_model % self.n_heads:
            raise EngineError(f"policy.d_model ({self.d_model}) must be a multiple of n_heads ({self.n_heads})")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["net_arch"] = list(self.net_arch)
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "PolicySpec":
        valid = set(cls.__dataclass_fields__)
        unknown = set(data) - valid
        if unknown:
            raise EngineError(f"policy: unknown keys {sorted(unknown)}; valid keys: {sorted(valid)}")
        return cls(**data)

    def policy_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``MaskablePPO(policy_kwargs=...)`` / the policy constructor."""
        kw: dict[str, Any] = {"net_arch": dict(pi=list(self.net_arch), vf=list(self.net_arch))}
        if self.kind == "attention":
            kw["features_extractor_class"] = AttentionExtractor
            kw["features_extractor_kwargs"] = dict(d_model=self.d_model, n_heads=self.n_heads,
                                                   n_layers=self.n_layers)
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
        layer = nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=2 * d_model, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        jobs, groups, glob = obs["jobs"], obs["groups"], obs["global"]
        tokens = torch.cat([self.glob_in(glob).unsqueeze(1), self.job_in(jobs), self.group_in(groups)], dim=1)
        # Feature 0 of a job or group slot is "present"; the global token is always present.
        empty = torch.cat([torch.zeros_like(glob[:, :1]), jobs[..., 0], groups[..., 0]], dim=1) < 0.5
        out = self.encoder(tokens, src_key_padding_mask=empty)
        out = out.masked_fill(empty.unsqueeze(-1), 0.0)
        return out.flatten(1)


def build_policy(spec: PolicySpec, observation_space: spaces.Dict, action_space: spaces.Discrete
                 ) -> MaskableMultiInputActorCriticPolicy:
    """A fresh policy network of ``spec`` for these spaces (weights are loaded separately)."""
    return MaskableMultiInputActorCriticPolicy(observation_space, action_space, lr_schedule=lambda _: 0.0,
                                               **spec.policy_kwargs())

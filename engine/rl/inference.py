"""A trained policy evaluated in NumPy from its weights: no torch, no lock, one forward pass per decision.

:class:`PolicySpec` describes the network (the same layouts :mod:`engine.rl.policies` builds in torch for
training); :func:`param_shapes` says which arrays of which shapes its weights are, from the spec and the
encoding alone (so a card that asks for a huge network is refused before anything is allocated);
:class:`NumpyPolicy` scores every action of one observation in one pass and takes the most likely allowed one.

The arithmetic is the torch policy's, in float64 (the weights are float32): Stable-Baselines3's
``MultiInputPolicy`` (observation parts flattened in key order, tanh MLP, linear action head) and, for
``attention``, the token extractor of :class:`engine.rl.policies.AttentionExtractor` (a post-norm Transformer
encoder layer with ReLU feed-forward, empty slots masked out of attention and zeroed). A test runs both on the
same workloads and checks every action is the same.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Mapping

import numpy as np

from engine.errors import EngineError, check_int, reject_unknown_keys
from engine.rl.encoding import OBSERVATION_PARTS, EncodingConfig

POLICY_KINDS = ("mlp", "attention")
#: Bounds on what a card may ask for (each far above the shipped models), checked before anything is built.
MAX_LAYERS, MAX_WIDTH, MAX_D_MODEL, MAX_HEADS, MAX_ENCODER_LAYERS = 8, 4096, 512, 16, 8
#: Most parameters a model may have (float32: 64 MiB), checked from the shapes before any weight is read.
MAX_PARAMS = 16 * 2**20


@dataclass(frozen=True)
class PolicySpec:
    """The network of an agent.

    Attributes:
        kind: ``"mlp"`` or ``"attention"``.
        net_arch: hidden layer sizes of the actor and critic heads (1 to :data:`MAX_LAYERS` layers, each at
            most :data:`MAX_WIDTH` wide).
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
        if isinstance(self.net_arch, (str, bytes)) or not hasattr(self.net_arch, "__iter__"):
            raise EngineError(f"policy.net_arch must be a list of layer sizes, got {self.net_arch!r}")
        arch = tuple(self.net_arch)
        if not 1 <= len(arch) <= MAX_LAYERS:
            raise EngineError(f"policy.net_arch: 1 to {MAX_LAYERS} layers, got {len(arch)}")
        object.__setattr__(self, "net_arch", tuple(check_int(x, "policy.net_arch[]", 1, MAX_WIDTH) for x in arch))
        check_int(self.d_model, "policy.d_model", 1, MAX_D_MODEL)
        check_int(self.n_heads, "policy.n_heads", 1, MAX_HEADS)
        check_int(self.n_layers, "policy.n_layers", 1, MAX_ENCODER_LAYERS)
        if self.d_model % self.n_heads:
            raise EngineError(f"policy.d_model ({self.d_model}) must be a multiple of n_heads ({self.n_heads})")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["net_arch"] = list(self.net_arch)
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PolicySpec:
        if not isinstance(data, Mapping):
            raise EngineError(f"policy must be an object, got {type(data).__name__}")
        valid = set(cls.__dataclass_fields__)
        reject_unknown_keys(data, valid, "policy")
        return cls(**data)


def _mlp_shapes(prefix: str, n_in: int, arch: tuple[int, ...]) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    prev = n_in
    for i, width in enumerate(arch):  # Linear, Tanh, Linear, Tanh, ...: the Linear layers are 0, 2, 4, ...
        out[f"{prefix}.{2 * i}.weight"], out[f"{prefix}.{2 * i}.bias"] = (width, prev), (width,)
        prev = width
    return out


def _extractor_shapes(prefix: str, spec: PolicySpec, enc: EncodingConfig) -> dict[str, tuple[int, ...]]:
    d = spec.d_model
    out = {
        f"{prefix}.job_in.weight": (d, enc.job_features),
        f"{prefix}.job_in.bias": (d,),
        f"{prefix}.group_in.weight": (d, enc.group_features),
        f"{prefix}.group_in.bias": (d,),
        f"{prefix}.glob_in.weight": (d, enc.global_features),
        f"{prefix}.glob_in.bias": (d,),
    }
    for i in range(spec.n_layers):
        p = f"{prefix}.encoder.layers.{i}"
        out |= {
            f"{p}.self_attn.in_proj_weight": (3 * d, d),
            f"{p}.self_attn.in_proj_bias": (3 * d,),
            f"{p}.self_attn.out_proj.weight": (d, d),
            f"{p}.self_attn.out_proj.bias": (d,),
            f"{p}.linear1.weight": (2 * d, d),
            f"{p}.linear1.bias": (2 * d,),
            f"{p}.linear2.weight": (d, 2 * d),
            f"{p}.linear2.bias": (d,),
            f"{p}.norm1.weight": (d,),
            f"{p}.norm1.bias": (d,),
            f"{p}.norm2.weight": (d,),
            f"{p}.norm2.bias": (d,),
        }
    return out


def features_dim(spec: PolicySpec, enc: EncodingConfig) -> int:
    """Width of the features the MLP heads read."""
    if spec.kind == "attention":
        return (1 + enc.window + enc.max_types) * spec.d_model
    return enc.window * enc.job_features + enc.max_types * enc.group_features + enc.global_features + enc.n_actions


def param_shapes(
    spec: PolicySpec, enc: EncodingConfig, n_in: int | None = None, n_actions: int | None = None
) -> dict[str, tuple[int, ...]]:
    """Name -> shape of every array in the weights of ``spec`` over ``enc`` (the torch policy's ``state_dict``);
    ``n_in`` and ``n_actions`` replace the encoding's input width and action count (a selector's, whose
    observation and actions are its own: :mod:`engine.rl.selector`).

    Raises ``EngineError`` if the network would have more than :data:`MAX_PARAMS` parameters.
    """
    n_in, last = features_dim(spec, enc) if n_in is None else n_in, spec.net_arch[-1]
    n_actions = enc.n_actions if n_actions is None else n_actions
    out: dict[str, tuple[int, ...]] = {}
    if spec.kind == "attention":  # SB3 keeps the actor's and the critic's extractors, and an alias of the first
        for prefix in ("features_extractor", "pi_features_extractor", "vf_features_extractor"):
            out |= _extractor_shapes(prefix, spec, enc)
    out |= _mlp_shapes("mlp_extractor.policy_net", n_in, spec.net_arch)
    out |= _mlp_shapes("mlp_extractor.value_net", n_in, spec.net_arch)
    out |= {
        "action_net.weight": (n_actions, last),
        "action_net.bias": (n_actions,),
        "value_net.weight": (1, last),
        "value_net.bias": (1,),
    }
    n = sum(math.prod(s) for s in out.values())
    if n > MAX_PARAMS:
        raise EngineError(f"the network would have {n:,} parameters; at most {MAX_PARAMS:,} are allowed")
    return out


# ``_sum(x, axis=-1, keepdims=True)`` is ``x.sum(axis=-1, keepdims=True)`` without the method's Python wrapper:
# the same reduction, a microsecond less per call (an agent calls the policy at every start).
_sum, _max = np.add.reduce, np.maximum.reduce


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``torch.nn.LayerNorm`` over the last axis (eps 1e-5, biased variance), rows of ``x`` independent."""
    inv_d = 1.0 / x.shape[-1]
    centred = x - _sum(x, axis=-1, keepdims=True) * inv_d
    return centred / np.sqrt(_sum(centred * centred, axis=-1, keepdims=True) * inv_d + 1e-5) * w + b


class NumpyPolicy:
    """The actor of a trained policy, from its weights (name -> float32 array, see :func:`param_shapes`).

    Stateless and read-only after construction, so one instance may serve any number of runs at once.
    """

    def __init__(self, spec: PolicySpec, enc: EncodingConfig, weights: Mapping[str, np.ndarray]) -> None:
        self.spec, self.enc = spec, enc
        #: The observation parts it reads (``_hidden``: the attention extractor reads no global features).
        self.reads = OBSERVATION_PARTS if spec.kind == "mlp" else ("jobs", "groups")

        def w(name: str, transpose: bool = False) -> np.ndarray:
            a = np.array(weights[name], dtype=np.float64)
            a = np.ascontiguousarray(a.T) if transpose else a
            a.setflags(write=False)
            return a

        self._pi = [
            (w(f"mlp_extractor.policy_net.{2 * i}.weight", True), w(f"mlp_extractor.policy_net.{2 * i}.bias"))
            for i in range(len(spec.net_arch))
        ]
        self._head = (w("action_net.weight", True), w("action_net.bias"))
        if spec.kind == "attention":
            p = "pi_features_extractor"
            self._embed = {k: (w(f"{p}.{k}_in.weight", True), w(f"{p}.{k}_in.bias")) for k in ("job", "group")}
            self._layers = []
            for i in range(spec.n_layers):
                q = f"{p}.encoder.layers.{i}"
                self._layers.append(
                    (
                        w(f"{q}.self_attn.in_proj_weight", True),
                        w(f"{q}.self_attn.in_proj_bias"),
                        w(f"{q}.self_attn.out_proj.weight", True),
                        w(f"{q}.self_attn.out_proj.bias"),
                        w(f"{q}.linear1.weight", True),
                        w(f"{q}.linear1.bias"),
                        w(f"{q}.linear2.weight", True),
                        w(f"{q}.linear2.bias"),
                        w(f"{q}.norm1.weight"),
                        w(f"{q}.norm1.bias"),
                        w(f"{q}.norm2.weight"),
                        w(f"{q}.norm2.bias"),
                    )
                )

    def _hidden(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        """The first actor layer's pre-activation."""
        weight_t, bias = self._pi[0]
        if self.spec.kind == "mlp":  # SB3's CombinedExtractor: every part flattened, in the Dict space's key order
            return np.concatenate([np.asarray(obs[k], dtype=np.float64).ravel() for k in sorted(obs)]) @ weight_t + bias
        # Feature 0 of a job or group slot is "present". The global token counts as empty, as in the torch
        # extractor the shipped weights were trained with (it tests a zero against 0.5): its features never
        # reach the policy. Kept so that decisions stay the trained policy's. Empty tokens are masked out of
        # attention and their outputs zeroed, so only the present ones are computed (rows are independent).
        jobs, groups = np.asarray(obs["jobs"], dtype=np.float64), np.asarray(obs["groups"], dtype=np.float64)
        job_rows, group_rows = (jobs[:, 0] >= 0.5).nonzero()[0], (groups[:, 0] >= 0.5).nonzero()[0]
        nj, ng = len(job_rows), len(group_rows)
        if (nj and job_rows[-1] != nj - 1) or (ng and group_rows[-1] != ng - 1):
            raise EngineError("an observation's job and GPU-type slots must be filled from the first (as encode does)")
        e = self._embed  # the present rows are a prefix: read as views
        x = np.concatenate([jobs[:nj] @ e["job"][0] + e["job"][1], groups[:ng] @ e["group"][0] + e["group"][1]])
        d, h = self.spec.d_model, self.spec.n_heads
        dh, n = d // h, x.shape[0]
        scale = 1.0 / math.sqrt(dh)
        for in_w, in_b, out_w, out_b, w1, b1, w2, b2, n1w, n1b, n2w, n2b in self._layers:
            qkv = (x @ in_w + in_b).reshape(n, 3, h, dh).transpose(1, 2, 0, 3)  # (q/k/v, head, token, dh)
            scores = (qkv[0] * scale) @ qkv[1].transpose(0, 2, 1)
            scores = np.exp(scores - _max(scores, axis=-1, keepdims=True))
            attn = (scores / _sum(scores, axis=-1, keepdims=True)) @ qkv[2]
            x = _layer_norm(x + (attn.transpose(1, 0, 2).reshape(n, d) @ out_w + out_b), n1w, n1b)
            x = _layer_norm(x + (np.maximum(x @ w1 + b1, 0.0) @ w2 + b2), n2w, n2b)
        window = self.enc.window
        tokens = np.zeros((1 + window + self.enc.max_types, d))  # token 0 is the global one
        tokens[1 : 1 + nj], tokens[1 + window : 1 + window + ng] = x[:nj], x[nj:]
        return tokens.ravel() @ weight_t + bias

    def logits(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        """The action logits for one observation (every action of the window, in one pass)."""
        x = np.tanh(self._hidden(obs))
        for weight_t, bias in self._pi[1:]:
            x = np.tanh(x @ weight_t + bias)
        return x @ self._head[0] + self._head[1]

    def act(self, obs: Mapping[str, np.ndarray], mask: np.ndarray) -> int:
        """The most likely allowed action (ties: the lowest index, as ``torch.argmax``)."""
        return int(np.argmax(np.where(mask, self.logits(obs), -np.inf)))

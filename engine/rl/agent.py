"""The ``rl:<name>`` scheduler: a trained policy from ``models/`` (or, for names not shipped there, from the
folder of models trained in the app, :func:`user_models_dir`) behind the ordinary scheduler protocol.

Loading treats every file as hostile and never unpickles anything:

* the card ``models/<name>.json`` is JSON (at most :data:`MAX_CARD_BYTES`); its policy and encoding are checked
  for type and bounds (:class:`~engine.rl.inference.PolicySpec`, :class:`~engine.rl.encoding.EncodingConfig`),
  and the shapes of every weight array follow from them, so a card asking for a huge network is refused before
  anything is allocated;
* files are opened without following symbolic links and must be regular files directly in the models folder
  (no FIFOs, devices or links to elsewhere); names are plain (no paths);
* the weights file (NumPy ``.npz``, at most :data:`MAX_WEIGHTS_BYTES`) must have the card's SHA-256; each array's
  header is read and checked (little-endian float32, the expected shape) before its data, which must be finite.

Every failure is a :class:`ModelError` whose message names the model and the file, never a server path.

At each decision point the scheduler repeats: encode the state (the same :mod:`engine.rl.encoding` functions
the environment uses), score every action of the window in one NumPy pass (:class:`~engine.rl.inference.
NumpyPolicy`) and take the most likely allowed one, decode it into a ``Start`` (after its preemptions, for the
``"evict"`` rule), until the policy chooses *wait* or nothing more can start. Decisions are deterministic.
Loaded policies are read-only and cached per process, so runs of one agent never wait for each other.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import stat
import zipfile
import zlib
from pathlib import Path
from typing import Any, Iterator, Mapping, Protocol

import numpy as np

from engine.errors import EngineError
from engine.io import atomic_write_bytes, atomic_write_json
from engine.rl.encoding import (
    OBSERVATION_PARTS,
    EncodingConfig,
    RulePlacements,
    Snapshot,
    decision_point,
    elastic_sizer,
    encode,
)
from engine.rl.inference import NumpyPolicy, PolicySpec, param_shapes
from engine.rl.selector import SelectorScheduler, card_options, check_policies, selector_input_dim
from engine.schedulers.elastic import ElasticGreedy
from engine.sim.state import ClusterState, Decision

MODELS_DIR = Path(__file__).resolve().parents[2] / "models"
#: Environment variable naming the folder of models trained from the app (default ``runs/models/``, git-ignored).
USER_MODELS_ENV = "ENGINE_USER_MODELS"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
#: The weights format written by training and the only one loaded (``.npz``: NumPy arrays, no pickles).
WEIGHTS_FORMAT = "npz"
MAX_CARD_BYTES = 4 * 2**20
MAX_WEIGHTS_BYTES = 80 * 2**20
_NPY_HEADER_BYTES = 4096  # room allowed per array for the .npy header and the zip entry


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


class Policy(Protocol):
    def act(self, obs: Mapping[str, np.ndarray], mask: np.ndarray) -> int: ...


def _read_regular(path: Path, limit: int, what: str) -> bytes:
    """The bytes of ``path``, a regular file (not a link, FIFO or device) of at most ``limit`` bytes."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise ModelError(f"{what}: file {path.name} is missing") from None
    except OSError:  # ELOOP: a symbolic link; or unreadable
        raise ModelError(f"{what}: file {path.name} is a symbolic link or not readable; refused") from None
    try:
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise ModelError(f"{what}: {path.name} is not a regular file; refused")
            if st.st_size > limit:
                raise ModelError(f"{what}: {path.name} has {st.st_size:,} bytes, more than the {limit:,} allowed")
            data = f.read(limit + 1)
    except OSError as exc:
        raise ModelError(f"{what}: {path.name} could not be read ({type(exc).__name__})") from None
    if len(data) > limit:
        raise ModelError(f"{what}: {path.name} is larger than the {limit:,} bytes allowed")
    return data


def model_names(models_dir: Path | None = None) -> list[str]:
    """Names of the models with a card in ``models_dir`` (default ``models/``): plain names, regular files."""
    return sorted(
        p.stem
        for p in Path(models_dir or MODELS_DIR).glob("*.json")
        if _NAME.match(p.stem) and not p.is_symlink() and p.is_file()
    )


def read_card(name: str, models_dir: Path | None = None) -> dict[str, Any]:
    """The card of model ``name`` (JSON only; nothing is executed), with its keys' types checked."""
    models_dir = Path(models_dir or MODELS_DIR)
    if not isinstance(name, str) or not _NAME.match(name):
        raise ModelError(f"model name {str(name)[:100]!r}: use letters, digits, '.', '_' or '-' (no paths)")
    if not (models_dir / f"{name}.json").exists() and not (models_dir / f"{name}.json").is_symlink():
        raise ModelError(f"no model {name!r}; available: {', '.join(model_names(models_dir)) or 'none'}")
    data = _read_regular(models_dir / f"{name}.json", MAX_CARD_BYTES, f"model card {name}")
    try:
        card = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ModelError(f"model card {name}: not readable JSON ({str(exc)[:200]})") from None
    if not isinstance(card, dict):
        raise ModelError(f"model card {name}: expected a JSON object, got {type(card).__name__}")
    for key, kind in (("weights", str), ("sha256", str), ("policy", dict), ("encoding", dict)):
        if key not in card:
            raise ModelError(f"model card {name}: missing key {key!r}")
        if not isinstance(card[key], kind):
            raise ModelError(
                f"model card {name}: {key} must be a {'string' if kind is str else 'JSON object'}, "
                f"got {type(card[key]).__name__}"
            )
    if not _SHA256.match(card["sha256"]):
        raise ModelError(f"model card {name}: sha256 must be 64 lowercase hex digits")
    return card


def write_weights(arrays: Mapping[str, np.ndarray], path: Path) -> None:
    """Write weights (name -> array, stored as float32) as an uncompressed ``.npz`` (what :func:`load_weights`
    reads)."""
    buf = io.BytesIO()
    np.savez(buf, **{k: np.ascontiguousarray(v, dtype="<f4") for k, v in arrays.items()})  # type: ignore[arg-type]
    atomic_write_bytes(path, buf.getvalue())


def export_model(models_dir: Path, name: str, weights: bytes, card: Mapping[str, Any]) -> dict[str, Any]:
    """Write model ``name``'s ``weights`` (the bytes of an ``.npz``) and ``card`` into ``models_dir`` so that a kill
    at any moment leaves the old pair (card and the weights it names) or the new pair, each readable: the
    weights go to a file the current card does not name (``NAME.npz``, or ``NAME.<sha256 prefix>.npz`` when the
    current card names ``NAME.npz``), then the new card, naming them with their SHA-256, replaces the old one
    in one rename (the commit), then the old weights file is removed. Returns the card as written."""
    sha = hashlib.sha256(weights).hexdigest()
    card_path = Path(models_dir) / f"{name}.json"
    old = _weights_named_by(card_path, name)
    file = f"{name}.{sha[:16]}.npz" if old == f"{name}.npz" else f"{name}.npz"
    atomic_write_bytes(Path(models_dir) / file, weights)
    written = {**card, "weights": file, "sha256": sha}
    atomic_write_json(card_path, written, allow_nan=True)
    if old is not None and old != file:
        (Path(models_dir) / old).unlink(missing_ok=True)
    return written


def _weights_named_by(card_path: Path, name: str) -> str | None:
    """The weights file the card at ``card_path`` names, if it is one :func:`export_model` writes for model
    ``name`` (so removing it never touches another model's file); ``None`` if none or unreadable."""
    try:
        weights = json.loads(_read_regular(card_path, MAX_CARD_BYTES, "model card")).get("weights")
    except (ModelError, ValueError, RecursionError, AttributeError):
        return None
    ours = isinstance(weights, str) and re.fullmatch(re.escape(name) + r"(\.[0-9a-f]{16})?\.npz", weights)
    return weights if ours else None


def load_weights(path: Path, sha256: str, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` at ``path`` after checking its SHA-256: exactly the names of ``shapes``, each
    little-endian float32 of that shape and finite. Anything else is a ``ModelError``; nothing is unpickled."""
    path = Path(path)
    what = f"weights {path.name}"
    limit = min(MAX_WEIGHTS_BYTES, sum(4 * math.prod(s) + _NPY_HEADER_BYTES for s in shapes.values()) + 2**16)
    data = _read_regular(path, limit, what)
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise ModelError(
            f"{what}: SHA-256 {digest[:16]}... does not match the card's {sha256[:16]}...; "
            "refusing to load an altered file"
        )
    out: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            for info in z.infolist():
                key = info.filename[:-4]
                if not info.filename.endswith(".npy") or key not in shapes or key in out:
                    raise ModelError(f"{what}: unexpected entry {info.filename[:100]!r}; refused")
                shape = shapes[key]
                n_bytes = 4 * math.prod(shape)
                if info.file_size > n_bytes + _NPY_HEADER_BYTES:
                    raise ModelError(f"{what}: entry {key} is larger than a {shape} float32 array; refused")
                with z.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    header = (
                        np.lib.format.read_array_header_1_0
                        if version == (1, 0)
                        else np.lib.format.read_array_header_2_0
                    )
                    got_shape, fortran, dtype = header(f)
                    if dtype != np.dtype("<f4") or fortran or tuple(got_shape) != shape:
                        raise ModelError(f"{what}: {key} is {dtype} {tuple(got_shape)}, expected float32 {shape}")
                    raw = f.read(n_bytes + 1)
                if len(raw) != n_bytes:
                    raise ModelError(f"{what}: {key} holds {len(raw)} bytes of data, expected {n_bytes}")
                arr = np.frombuffer(raw, dtype="<f4").reshape(shape)
                if not np.isfinite(arr).all():
                    raise ModelError(f"{what}: {key} holds values that are not finite")
                out[key] = arr
    except ModelError:
        raise
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        zlib.error,
        ValueError,
        OSError,
        EOFError,
        NotImplementedError,
        RuntimeError,
        TypeError,
    ) as exc:  # a corrupt archive or .npy header
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"{what}: not a plain array archive ({first})") from None
    missing = [k for k in shapes if k not in out]
    if missing:
        raise ModelError(f"{what}: missing {len(missing)} arrays the card's network needs, e.g. {missing[0]!r}")
    return out


class RLScheduler:
    """A trained agent as a :class:`~engine.sim.state.Scheduler` (build it with :func:`load_agent`).

    ``policy`` answers ``act(observation, mask) -> action``: a :class:`~engine.rl.inference.NumpyPolicy` for
    ``rl:`` schedulers (or, in training, :class:`engine.rl.policies.TorchPolicy`).
    """

    def __init__(self, name: str, card: dict[str, Any], policy: Policy, encoding: EncodingConfig) -> None:
        self.name = f"rl:{name}"
        self.card = card
        self.policy = policy
        self.encoding = encoding
        self._placements = RulePlacements()
        self._sizer: ElasticGreedy | None = None  # set by reset for a run with elastic jobs (elastic_start)

    def reset(self, state: ClusterState) -> None:
        """The policy is a function of the current state; only the placement rules (and, with ``elastic_start``,
        the elastic sizing) start anew."""
        self._placements = RulePlacements()
        self._sizer = elastic_sizer(self.encoding, state)

    def act(self, obs: Mapping[str, np.ndarray], mask: np.ndarray) -> int:
        """The most likely allowed action for one observation."""
        return self.policy.act(obs, mask)

    def decide(self, state: ClusterState) -> Iterator[Decision]:
        enc = self.encoding
        reads = getattr(self.policy, "reads", OBSERVATION_PARTS)  # a policy may read fewer parts

        def choose(snap: Snapshot) -> int:
            return self.act(encode(state, enc, snap, reads), snap.mask) if snap.mask[:-1].any() else enc.wait_action

        return decision_point(state, enc, choose, self._sizer, self._placements)


def model_spec(name: str, card: Mapping[str, Any]) -> tuple[PolicySpec, EncodingConfig, dict[str, tuple[int, ...]]]:
    """The card's network, encoding and weight shapes, checked (``ModelError`` if bad or too large); a card
    with a ``selector`` list (registered, non-oracle schedulers) is a selector's (:mod:`engine.rl.selector`)."""
    try:
        enc = EncodingConfig.from_dict(card["encoding"])
        spec = PolicySpec.from_dict(card["policy"])
        if "selector" not in card:
            return spec, enc, param_shapes(spec, enc)
        k = len(check_policies(card["selector"], "selector"))
        card_options(card)
        if spec.kind != "mlp":
            raise EngineError(f"a selector's policy.kind must be 'mlp', got {spec.kind!r}")
        return spec, enc, param_shapes(spec, enc, selector_input_dim(enc, k), k)
    except (EngineError, TypeError, ValueError) as exc:
        raise ModelError(f"model card {name}: {exc}") from None


def load_model_weights(
    name: str, card: Mapping[str, Any], models_dir: Path, shapes: Mapping[str, tuple[int, ...]]
) -> dict[str, np.ndarray]:
    """The SHA-256-checked weights of the model ``name`` whose card is ``card`` (file beside the card)."""
    weights = card["weights"]
    if not _NAME.match(weights) or not weights.endswith(".npz"):
        raise ModelError(
            f"model card {name}: weights must be a plain .npz file name beside the card, got {weights[:100]!r}"
        )
    if card.get("format", WEIGHTS_FORMAT) != WEIGHTS_FORMAT:
        raise ModelError(
            f"model card {name}: unsupported weights format {str(card.get('format'))[:50]!r}; "
            f"expected {WEIGHTS_FORMAT!r} (pickled weights are never loaded)"
        )
    return load_weights(Path(models_dir) / weights, card["sha256"], shapes)


_POLICIES: dict[tuple[str, str, str], NumpyPolicy] = {}


def load_agent(name: str, models_dir: Path | None = None) -> RLScheduler | SelectorScheduler:
    """Build the scheduler ``rl:<name>`` from ``models_dir/<name>.json`` and its weights (hash checked).

    The policy is cached per (folder, name, card): the card is read again on every call, so an edited card
    loads afresh; the cached policy is read-only and may serve any number of runs at once.
    """
    models_dir = Path(models_dir or home_of(name))
    card = read_card(name, models_dir)
    spec, enc, shapes = model_spec(name, card)
    key = (
        str(models_dir.resolve()),
        name,
        json.dumps(
            [
                card["weights"],
                card["sha256"],
                card["policy"],
                card["encoding"],
                card.get("format"),
                card.get("selector"),
            ],
            sort_keys=True,
        ),
    )
    policy = _POLICIES.get(key)
    if policy is None:
        policy = NumpyPolicy(spec, enc, load_model_weights(name, card, models_dir, shapes))
        if len(_POLICIES) >= 32:
            _POLICIES.clear()
        _POLICIES[key] = policy
    if "selector" in card:
        return SelectorScheduler(name, card, policy, enc, card["selector"])
    return RLScheduler(name, card, policy, enc)

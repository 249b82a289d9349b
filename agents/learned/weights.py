"""Saving and loading slot policies: weights only, never pickles.

A saved policy is two files with a common stem:

* ``<stem>.npz`` - the network's state dict as plain float32 arrays, read with
  ``numpy.load(..., allow_pickle=False)``, so loading cannot run code (and needs neither
  torch nor SB3: :func:`load_network` gives a numpy network that decides directly);
* ``<stem>.json`` - what is needed to rebuild the network (:data:`FORMAT`, ``algo``,
  ``action_mode``, ``embed_dim``, ``hidden_dim``, ``max_jobs``, the observation's feature
  names) plus free-form ``training`` notes (the command, reward, steps, ...).

No parameter depends on the slot count, so a policy may be rebuilt for another
``max_jobs``. SB3 ``.zip`` files written by ``shockwave-gym train`` (``model.zip``) also
load, through SB3 itself, with an :class:`UntrustedFileWarning`: SB3 unpickles part of a zip
with cloudpickle, which can run arbitrary code, so load only zips you made or trust.
``shockwave-gym train`` always writes the weights-only pair next to ``model.zip``.
"""

from __future__ import annotations

import base64
import json
import warnings
import zipfile
from pathlib import Path

import numpy as np

from shockwave_agents.learned.inference import NumpySlotNetwork, head_kind_for
from shockwave_gym.errors import InputError
from shockwave_gym.interface.observation import (
    CLUSTER_FEATURE_NAMES,
    JOB_FEATURE_NAMES,
    observation_signature,
)

FORMAT = "shockwave-gym-slot-policy"
FORMAT_VERSION = 1
_MODE_BY_HEAD = {"score": "priority", "binary": "select", "bernoulli": "select", "pick": "sequential"}
#: SB3 registers the shared encoder under these aliases too; only ``features_extractor.`` is stored.
_ALIASES = ("pi_features_extractor.", "vf_features_extractor.")


class UntrustedFileWarning(UserWarning):
    """Loading this file runs the unpickler; only load files you trust."""


def build_policy(algo: str, action_mode: str, max_jobs: int, *, embed_dim: int = 64, hidden_dim: int = 128):
    """A freshly initialised torch slot policy for the env's spaces (learning rate 0).
    Sets torch to one thread (small networks run far slower on two)."""
    import torch

    from shockwave_agents.learned.policy import policy_class
    from shockwave_gym.interface.actions import make_action_mode
    from shockwave_gym.interface.observation import observation_space

    torch.set_num_threads(1)
    space = make_action_mode(action_mode, max_jobs).space()
    return policy_class(algo)(observation_space(max_jobs), space, lambda _: 0.0, embed_dim=embed_dim, hidden_dim=hidden_dim)


def policy_meta(policy, algo: str, action_mode: str, training: dict | None = None) -> dict:
    """The JSON description of ``policy`` written by :func:`save_policy`."""
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "algo": algo,
        "action_mode": action_mode,
        "embed_dim": policy.embed_dim,
        "hidden_dim": policy.hidden_dim,
        "max_jobs": policy.max_jobs,
        "job_features": list(JOB_FEATURE_NAMES),
        "cluster_features": list(CLUSTER_FEATURE_NAMES),
        "observation_signature": observation_signature(),
        "training": dict(training or {}),
    }


def state_arrays(policy) -> dict[str, np.ndarray]:
    """The policy's state dict as float32 numpy arrays, without SB3's duplicate aliases."""
    return {key: value.detach().cpu().numpy().astype(np.float32)
            for key, value in policy.state_dict().items() if not key.startswith(_ALIASES)}


def save_policy(policy, stem: str | Path, *, algo: str, action_mode: str, training: dict | None = None) -> tuple[Path, Path]:
    """Write ``<stem>.npz`` and ``<stem>.json``; returns both paths."""
    stem = _stem(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    weights_path, meta_path = stem.with_suffix(".npz"), stem.with_suffix(".json")
    with open(weights_path, "wb") as handle:  # a handle: np.savez would append ".npz" to odd stems
        np.savez(handle, **state_arrays(policy))
    meta_path.write_text(json.dumps(policy_meta(policy, algo, action_mode, training), indent=2) + "\n")
    return weights_path, meta_path


def read_meta(path: str | Path) -> dict:
    """The JSON of a saved policy (``.json``, ``.npz``, the common stem or its directory), checked."""
    meta_path = _stem(path).with_suffix(".json")
    if not meta_path.is_file():
        raise InputError(f"{meta_path}: policy description not found (expected next to the .npz weights)")
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(f"{meta_path}: not valid JSON ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise InputError(f"{meta_path}: not a {FORMAT} description")
    if meta.get("format_version") != FORMAT_VERSION:
        raise InputError(f"{meta_path}: format_version {meta.get('format_version')!r} is not supported (expected {FORMAT_VERSION})")
    if meta.get("job_features") != list(JOB_FEATURE_NAMES) or meta.get("cluster_features") != list(CLUSTER_FEATURE_NAMES):
        raise InputError(
            f"{meta_path}: the policy was trained on other observation features "
            f"({meta.get('job_features')}, {meta.get('cluster_features')}); retrain it for this version"
        )
    if meta.get("observation_signature") != observation_signature():
        raise InputError(
            f"{meta_path}: the policy was trained on another version of the observation "
            f"(signature {meta.get('observation_signature')!r}, this version "
            f"{observation_signature()!r}: a feature's bounds or scaling changed); retrain it"
        )
    for key in ("algo", "action_mode", "embed_dim", "hidden_dim", "max_jobs"):
        if key not in meta:
            raise InputError(f"{meta_path}: missing {key!r}")
    return meta


def read_state(path: str | Path) -> dict[str, np.ndarray]:
    """The weight arrays of a saved policy (no unpickling: ``allow_pickle=False``)."""
    weights_path = _stem(path).with_suffix(".npz")
    if not weights_path.is_file():
        raise InputError(f"{weights_path}: policy weights not found")
    try:
        with np.load(weights_path, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except (ValueError, OSError, zipfile.BadZipFile) as exc:  # truncated, or object arrays
        raise InputError(f"{weights_path}: not a weights-only .npz ({exc})") from None


def load_network(path: str | Path, *, max_jobs: int | None = None) -> tuple[NumpySlotNetwork, dict]:
    """(numpy network, description) of a saved policy, for ``max_jobs`` slots (default: the
    slots it was trained with). Needs neither torch nor SB3."""
    meta = read_meta(path)
    state = read_state(path)
    kind = head_kind_for(meta["algo"], meta["action_mode"])
    try:
        network = NumpySlotNetwork(state, kind, int(meta["max_jobs"] if max_jobs is None else max_jobs))
    except (KeyError, ValueError) as exc:
        raise InputError(f"{_stem(path).with_suffix('.npz')}: weights do not fit the described network ({exc})") from None
    return network, meta


def load_policy(path: str | Path, *, max_jobs: int | None = None) -> tuple[object, dict]:
    """(torch policy, description) of a saved policy, rebuilt for ``max_jobs`` slots (for
    fine-tuning or inspection). A ``.zip`` goes to :func:`load_sb3_zip`."""
    import torch

    if Path(path).suffix == ".zip":
        return load_sb3_zip(path, max_jobs=max_jobs)
    meta = read_meta(path)
    state = read_state(path)
    policy = build_policy(meta["algo"], meta["action_mode"], int(meta["max_jobs"] if max_jobs is None else max_jobs),
                          embed_dim=int(meta["embed_dim"]), hidden_dim=int(meta["hidden_dim"]))
    tensors = {key: torch.from_numpy(np.array(value)) for key, value in state.items()}
    for key in list(tensors):
        if key.startswith("features_extractor."):
            for alias in _ALIASES:
                tensors[alias + key.removeprefix("features_extractor.")] = tensors[key]
    try:
        policy.load_state_dict(tensors)
    except RuntimeError as exc:
        raise InputError(f"{_stem(path).with_suffix('.npz')}: weights do not fit the described network ({exc})") from None
    return policy.eval(), meta


def load_sb3_zip(path: str | Path, *, max_jobs: int | None = None) -> tuple[object, dict]:
    """(torch policy, description) from an SB3 zip of a slot policy, with an
    :class:`UntrustedFileWarning` (SB3 unpickles parts of it)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    warnings.warn(
        f"loading {path} through stable-baselines3, which unpickles parts of the zip and can "
        "run arbitrary code: load only zips you made or trust. The weights-only policy.npz/.json "
        "written next to it by `shockwave-gym train` loads without unpickling.",
        UntrustedFileWarning,
        stacklevel=2,
    )
    policy_name = _zip_policy_class_name(path)
    import torch

    torch.set_num_threads(1)
    if policy_name == "MaskableSlotPolicy":
        from sb3_contrib import MaskablePPO as algo_class

        algo = "maskable_ppo"
    elif policy_name == "SlotPolicy":
        from stable_baselines3 import PPO as algo_class

        algo = "ppo"
    else:
        raise InputError(f"{path}: not a slot policy trained by shockwave-gym")
    policy = algo_class.load(path, device="cpu").policy
    meta = policy_meta(policy, algo, _MODE_BY_HEAD[policy.head_kind], {"loaded_from": str(path)})
    if max_jobs is not None and max_jobs != policy.max_jobs:
        resized = build_policy(algo, meta["action_mode"], max_jobs, embed_dim=policy.embed_dim, hidden_dim=policy.hidden_dim)
        resized.load_state_dict(policy.state_dict())
        policy, meta["max_jobs"] = resized, max_jobs
    return policy.eval(), meta


def _zip_policy_class_name(path: Path) -> str:
    """The policy class named in an SB3 zip, read from the pickle's bytes without
    unpickling (a global reference is plain ``module`` and ``name`` text in the opcodes)."""
    try:
        with zipfile.ZipFile(path) as archive:
            data = json.loads(archive.read("data"))
        serialized = base64.b64decode(data["policy_class"][":serialized:"])
    except (zipfile.BadZipFile, KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{path}: not an SB3 model zip ({exc})") from None
    for name in ("MaskableSlotPolicy", "SlotPolicy"):  # the longer name first: it contains the other
        if b"shockwave_agents.learned.policy" in serialized and name.encode() in serialized:
            return name
    return ""


def _stem(path: str | Path) -> Path:
    path = Path(path)
    if path.is_dir():
        return path / "policy"
    return path.with_suffix("") if path.suffix in (".npz", ".json") else path

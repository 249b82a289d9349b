"""Saving and loading slot policies: weights only, never pickles.

A saved policy is two files with a common stem:

* ``<stem>.npz`` - the network's state dict as plain float32 arrays, read with
  ``numpy.load(..., allow_pickle=False)``, so loading cannot run code (and needs neither
  torch nor SB3: :func:`load_network` gives a numpy network that decides directly);
* ``<stem>.json`` - what is needed to rebuild the network (:data:`FORMAT`, ``algo``,
  ``action_mode``, ``embed_dim``, ``hidden_dim``, ``max_jobs``, ``obs_version`` (the
  observation layout; files without it read version 1), the layout's feature names and
  signature), for a policy with the linear skip term ``linear_skip: true`` and the
  ``prior`` it started from (:mod:`~shockwave_agents.learned.priors`; files without
  ``linear_skip`` have no skip term and no ``action_net.skip.*`` arrays), for a policy of
  elastic traces (it reads the observation's ``elastic`` entry and gives a score and a
  GPU-count preference per slot: ``ppo`` in ``priority`` mode only) ``elastic_counts``, the
  number of GPU counts it chooses among (files without it are rigid), plus free-form
  ``training`` notes (the command, reward, steps, ...).

No parameter depends on the slot count, so a policy may be rebuilt for another
``max_jobs``. SB3 ``.zip`` files written by ``shockwave-gym train`` (``model.zip``) load,
through SB3 itself, only with an explicit ``trust=True`` (agent option ``trust=true``,
``shockwave-gym train --trust``): SB3 unpickles part of a zip with cloudpickle, which can run
arbitrary code, so load only zips you made. ``shockwave-gym train`` always writes the
weights-only pair next to ``model.zip``.

Loading checks the pair against each other and refuses, with one :class:`PolicyFileError`
naming the file and the field (JSON key or array name): a missing or malformed JSON, an
unknown ``algo`` or ``action_mode``, ``max_jobs`` outside 1..:data:`MAX_SLOTS`,
``embed_dim``/``hidden_dim`` outside 1..:data:`MAX_WIDTH`, a ``linear_skip`` that is not a
boolean, an unknown ``prior`` (or one without ``linear_skip: true``), missing, extra,
non-float or wrongly shaped arrays, and NaN or infinite weights.
"""

from __future__ import annotations

import base64
import json
import warnings
import zipfile
from pathlib import Path

import numpy as np

from shockwave_agents.learned.inference import NumpySlotNetwork, head_kind_for, policy_obs_version
from shockwave_agents.learned.priors import check_prior
from shockwave_gym.errors import InputError
from shockwave_gym.interface.observation import (
    DEFAULT_OBSERVATION_VERSION,
    OBSERVATION_VERSIONS,
    feature_names,
    observation_signature,
)

FORMAT = "shockwave-gym-slot-policy"
FORMAT_VERSION = 1
_MODE_BY_HEAD = {"score": "priority", "binary": "select", "bernoulli": "select", "pick": "sequential",
                 "elastic": "priority"}
#: SB3 registers the shared encoder under these aliases too; only ``features_extractor.`` is stored.
_ALIASES = ("pi_features_extractor.", "vf_features_extractor.")


#: Largest accepted ``max_jobs`` (observation slots). Far above any real cluster's queue
#: (the bundled traces have at most 900 jobs); each decision allocates O(max_jobs) floats,
#: so a value like 10**12 is a typo, refused rather than exhausting memory.
MAX_SLOTS = 65_536
#: Largest accepted ``embed_dim`` / ``hidden_dim`` (shipped policies use 32..128).
MAX_WIDTH = 4_096
#: The algorithms and the action modes each can drive.
ACTION_MODES_BY_ALGO = {"ppo": ("priority", "select", "sequential"), "maskable_ppo": ("select", "sequential")}


class UntrustedFileWarning(UserWarning):
    """Loading this file runs the unpickler; only load files you trust."""


class PolicyFileError(InputError):
    """A saved policy is malformed: ``file: field: message`` (the field is a JSON key or an
    array name in the ``.npz``)."""

    def __init__(self, file: str | Path, field: str, message: str):
        self.file, self.field, self.message = str(file), field, message
        super().__init__(f"{self.file}: {field}: {message}")

    def __reduce__(self):
        return (type(self), (self.file, self.field, self.message))


class UntrustedZipError(InputError):
    """An SB3 ``.zip`` was given without ``trust``: loading it would unpickle (run code)."""


def build_policy(algo: str, action_mode: str, max_jobs: int, *, embed_dim: int = 64, hidden_dim: int = 128,
                 obs_version: int = DEFAULT_OBSERVATION_VERSION, prior: str | None = None, encoder: dict | None = None,
                 elastic: bool = False):
    """A freshly initialised torch slot policy for the env's spaces (learning rate 0), for
    observation version ``obs_version``, with the linear skip term started from ``prior``
    (None: no skip term; :mod:`~shockwave_agents.learned.priors`), the ``encoder``
    described by :func:`encoder_options` (None: the MLP one) and, with ``elastic``, the
    spaces of elastic traces. Sets torch to one thread (small networks run far slower on two)."""
    import torch

    from shockwave_agents.learned.attention import policy_class
    from shockwave_gym.interface.modes import make_action_mode
    from shockwave_gym.interface.observation import observation_space

    torch.set_num_threads(1)
    space = make_action_mode(action_mode, max_jobs, elastic=elastic).space()
    options = dict(encoder or {"encoder": "mlp"})
    policy = policy_class(algo, options.pop("encoder"))(observation_space(max_jobs, obs_version, elastic=elastic), space, lambda _: 0.0,
                                                        embed_dim=embed_dim, hidden_dim=hidden_dim, prior=prior, **options)
    policy.obs_version = int(obs_version)
    return policy


def policy_meta(policy, algo: str, action_mode: str, training: dict | None = None) -> dict:
    """The JSON description of ``policy`` written by :func:`save_policy`."""
    version = getattr(policy, "obs_version", None) or policy_obs_version(policy)
    jobs, cluster = feature_names(version)
    skip = {}
    if getattr(policy, "prior", None) is not None:
        skip = {"linear_skip": True, "prior": policy.prior}
    if getattr(policy, "encoder", "mlp") == "attention":  # the MLP encoder's files carry no key
        skip.update(encoder="attention", num_heads=policy.num_heads, num_layers=policy.num_layers)
    if policy.head_kind == "elastic":  # rigid policies' files carry no key
        skip["elastic_counts"] = int(policy.observation_space["elastic"].shape[1]) // 2
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "algo": algo,
        "action_mode": action_mode,
        "embed_dim": policy.embed_dim,
        "hidden_dim": policy.hidden_dim,
        "max_jobs": policy.max_jobs,
        "obs_version": version,
        "job_features": list(jobs),
        "cluster_features": list(cluster),
        "observation_signature": observation_signature(version),
        **skip,
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
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{meta_path}: not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise InputError(f"{meta_path}: not a {FORMAT} description (expected a JSON object, got {type(meta).__name__})")
    if meta.get("format") != FORMAT:
        raise PolicyFileError(meta_path, "format", f"must be {FORMAT!r}, got {meta.get('format')!r}")
    if meta.get("format_version") != FORMAT_VERSION:
        raise PolicyFileError(meta_path, "format_version", f"{meta.get('format_version')!r} is not supported (expected {FORMAT_VERSION})")
    version = meta.setdefault("obs_version", 1)  # files written before versions existed read version 1
    if isinstance(version, bool) or version not in OBSERVATION_VERSIONS:
        raise PolicyFileError(meta_path, "obs_version", f"must be one of {', '.join(map(str, OBSERVATION_VERSIONS))}, got {version!r}")
    jobs, cluster = feature_names(version)
    if meta.get("job_features") != list(jobs) or meta.get("cluster_features") != list(cluster):
        raise InputError(
            f"{meta_path}: the policy was trained on other observation features "
            f"({meta.get('job_features')}, {meta.get('cluster_features')}); retrain it for this version"
        )
    if meta.get("observation_signature") != observation_signature(version):
        raise InputError(
            f"{meta_path}: the policy was trained on another version of the observation "
            f"(signature {meta.get('observation_signature')!r}, this version's obs_version {version} "
            f"{observation_signature(version)!r}: a feature's bounds or scaling changed); retrain it"
        )
    for key in ("algo", "action_mode", "embed_dim", "hidden_dim", "max_jobs"):
        if key not in meta:
            raise PolicyFileError(meta_path, key, "missing")
    check_algo_mode(meta["algo"], meta["action_mode"], meta_path)
    for key in ("embed_dim", "hidden_dim"):
        _bounded_int(meta[key], MAX_WIDTH, meta_path, key)
    check_max_jobs(meta["max_jobs"], meta_path)
    check_skip(meta, meta_path)
    check_encoder(meta, meta_path)
    check_elastic(meta, meta_path)
    return meta


def check_elastic(meta: dict, where: str | Path) -> None:
    """``elastic_counts`` (optional) is the number of GPU counts of the elastic modes, on a
    ``ppo`` ``priority`` policy with the MLP encoder."""
    if "elastic_counts" not in meta:
        return
    from shockwave_gym.jobs import GANG_SIZES

    if type(meta["elastic_counts"]) is not int or meta["elastic_counts"] != len(GANG_SIZES):
        raise PolicyFileError(where, "elastic_counts", f"must be {len(GANG_SIZES)} (the counts {GANG_SIZES}), "
                                                       f"got {meta['elastic_counts']!r}")
    if (meta["algo"], meta["action_mode"], meta.get("encoder", "mlp")) != ("ppo", "priority", "mlp"):
        raise PolicyFileError(where, "elastic_counts", "an elastic policy is a ppo priority policy with the mlp "
                                                       f"encoder, got {meta['algo']} {meta['action_mode']} {meta.get('encoder', 'mlp')}")


def is_elastic(meta: dict) -> bool:
    """Whether a checked description is an elastic policy's."""
    return "elastic_counts" in meta


#: Largest accepted attention ``num_heads`` / ``num_layers``.
MAX_ATTENTION = 64


def check_encoder(meta: dict, where: str | Path) -> None:
    """``encoder`` (optional) is ``mlp`` or ``attention``; an attention policy's
    ``num_heads`` (dividing ``embed_dim``) and ``num_layers`` are integers in 1..:data:`MAX_ATTENTION`."""
    encoder = meta.get("encoder", "mlp")
    if encoder not in ("mlp", "attention"):
        raise PolicyFileError(where, "encoder", f"must be mlp or attention, got {encoder!r}")
    if encoder == "attention":
        for key in ("num_heads", "num_layers"):
            _bounded_int(meta.get(key), MAX_ATTENTION, where, key)
        if int(meta["embed_dim"]) % int(meta["num_heads"]):
            raise PolicyFileError(where, "num_heads", f"{meta['num_heads']} does not divide embed_dim {meta['embed_dim']}")


def encoder_options(meta: dict) -> dict:
    """The encoder a checked description asks for, as :func:`build_policy`'s ``encoder``."""
    if meta.get("encoder", "mlp") != "attention":
        return {"encoder": "mlp"}
    return {"encoder": "attention", "num_heads": int(meta["num_heads"]), "num_layers": int(meta["num_layers"])}


def check_skip(meta: dict, where: str | Path) -> None:
    """``linear_skip`` (optional) is a boolean, and ``prior`` (optional) one of
    :data:`~shockwave_agents.learned.priors.PRIORS` beside ``linear_skip: true``."""
    skip = meta.get("linear_skip", False)
    if not isinstance(skip, bool):
        raise PolicyFileError(where, "linear_skip", f"must be true or false, got {skip!r}")
    if "prior" in meta:
        prior = meta["prior"]
        try:
            check_prior(prior)
        except ValueError as exc:
            raise PolicyFileError(where, "prior", str(exc)) from None
        if prior is None:
            raise PolicyFileError(where, "prior", "must name a prior; leave the key out for none")
        if not skip:
            raise PolicyFileError(where, "prior", f"{prior!r} names the start of a linear skip term, but linear_skip is not true")


def check_algo_mode(algo, action_mode, where: str | Path) -> None:
    """``algo`` and ``action_mode`` name a slot policy this version can run."""
    if not isinstance(algo, str) or algo not in ACTION_MODES_BY_ALGO:
        raise PolicyFileError(where, "algo", f"must be one of {', '.join(ACTION_MODES_BY_ALGO)}, got {algo!r}")
    modes = ACTION_MODES_BY_ALGO[algo]
    if not isinstance(action_mode, str) or action_mode not in modes:
        raise PolicyFileError(where, "action_mode", f"must be one of {', '.join(modes)} for algo {algo!r}, got {action_mode!r}")


def check_max_jobs(value, where: str | Path, field: str = "max_jobs") -> int:
    """``value`` as an observation-slot count in 1..:data:`MAX_SLOTS`, else
    :class:`PolicyFileError` naming ``where`` (a file) and ``field``."""
    return _bounded_int(value, MAX_SLOTS, where, field)


def _bounded_int(value, limit: int, where: str | Path, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= limit:
        raise PolicyFileError(where, field, f"must be an integer in 1..{limit:,}, got {value!r}")
    return int(value)


def expected_shapes(meta: dict) -> dict[str, tuple[int, ...]]:
    """The state-dict arrays (name -> shape) of the network ``meta`` describes."""
    embed, hidden = int(meta["embed_dim"]), int(meta["hidden_dim"])
    job_names, cluster_names = feature_names(meta.get("obs_version", 1))
    job_in = len(job_names) + 2 * int(meta.get("elastic_counts", 0)) + 1 + len(cluster_names)
    shapes: dict[str, tuple[int, ...]] = {}
    attention = meta.get("encoder", "mlp") == "attention"
    if meta["algo"] == "ppo" and meta["action_mode"] == "priority":
        # the Gaussian's shared log-std, or the Plackett-Luce head's temperature
        shapes["log_temperature" if attention else "log_std"] = (1,)
    for layer in range(int(meta["num_layers"]) if attention else 0):
        prefix = f"features_extractor.attention.{layer}"
        shapes.update({f"{prefix}.norm1.weight": (embed,), f"{prefix}.norm1.bias": (embed,),
                       f"{prefix}.norm2.weight": (embed,), f"{prefix}.norm2.bias": (embed,),
                       f"{prefix}.attn.in_proj_weight": (3 * embed, embed), f"{prefix}.attn.in_proj_bias": (3 * embed,),
                       f"{prefix}.attn.out_proj.weight": (embed, embed), f"{prefix}.attn.out_proj.bias": (embed,),
                       f"{prefix}.ff.0.weight": (hidden, embed), f"{prefix}.ff.0.bias": (hidden,),
                       f"{prefix}.ff.2.weight": (embed, hidden), f"{prefix}.ff.2.bias": (embed,)})
    for name, width in (("job_mlp", job_in), ("context_mlp", 2 * embed + len(cluster_names)),
                        ("mix_mlp", 2 * embed)):
        prefix = f"features_extractor.{name}"
        shapes.update({f"{prefix}.0.weight": (hidden, width), f"{prefix}.0.bias": (hidden,),
                       f"{prefix}.2.weight": (embed, hidden), f"{prefix}.2.bias": (embed,)})
    shapes.update({"mlp_extractor.value_mlp.0.weight": (hidden, 2 * embed), "mlp_extractor.value_mlp.0.bias": (hidden,)})
    outs = 2 if head_kind_for(meta["algo"], meta["action_mode"], is_elastic(meta)) in ("binary", "elastic") else 1
    shapes.update({"action_net.slot_out.weight": (outs, embed), "action_net.slot_out.bias": (outs,)})
    if meta.get("linear_skip", False):
        shapes.update({"action_net.skip.weight": (1, len(job_names)), "action_net.skip.bias": (1,)})
    if meta["action_mode"] == "sequential":
        shapes.update({"action_net.end_out.weight": (1, embed), "action_net.end_out.bias": (1,)})
    shapes.update({"value_net.weight": (1, hidden), "value_net.bias": (1,)})
    return shapes


def check_state(state: dict[str, np.ndarray], meta: dict, weights_path: str | Path) -> None:
    """Every array ``meta``'s network needs is present, float, of the right shape and finite;
    no other array is present. Raises :class:`PolicyFileError` naming the array."""
    expected = expected_shapes(meta)
    meta_name = Path(weights_path).with_suffix(".json").name
    described = (f"weights do not fit the described network ({meta_name}: algo {meta['algo']!r}, action_mode "
                 f"{meta['action_mode']!r}, embed_dim {meta['embed_dim']}, hidden_dim {meta['hidden_dim']})")
    for key, shape in expected.items():
        if key not in state:
            raise PolicyFileError(weights_path, key, f"missing: {described}")
        value = state[key]
        if not np.issubdtype(value.dtype, np.floating):
            raise PolicyFileError(weights_path, key, f"must hold floats, got dtype {value.dtype}")
        if value.shape != shape:
            raise PolicyFileError(weights_path, key, f"shape {value.shape}, expected {shape}: {described}")
        bad = int(np.size(value) - np.count_nonzero(np.isfinite(value)))
        if bad:
            raise PolicyFileError(weights_path, key, f"{bad} non-finite value(s) (NaN or inf); weights must be finite")
    extra = sorted(set(state) - set(expected))
    if extra:
        raise PolicyFileError(weights_path, extra[0], f"unexpected array: {described}")


def read_checked(path: str | Path) -> tuple[dict, dict[str, np.ndarray]]:
    """(description, weight arrays) of a saved policy, both checked against each other:
    each array's declared dtype, shape and stored size before it is read (:mod:`~shockwave_agents.learned.npz`),
    then its values."""
    from shockwave_agents.learned.npz import read_declared

    meta = read_meta(path)
    weights_path = _stem(path).with_suffix(".npz")
    if not weights_path.is_file():
        raise InputError(f"{weights_path}: policy weights not found")
    expected = expected_shapes(meta)
    meta_name = weights_path.with_suffix(".json").name
    described = (f"weights do not fit the described network ({meta_name}: algo {meta['algo']!r}, action_mode "
                 f"{meta['action_mode']!r}, embed_dim {meta['embed_dim']}, hidden_dim {meta['hidden_dim']})")
    def error(field: str, message: str, fit: bool = False) -> PolicyFileError:
        return PolicyFileError(weights_path, field, f"{message}: {described}" if fit else message)

    try:
        state = read_declared(weights_path, expected, error)
    except PolicyFileError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:  # truncated, not a zip
        raise InputError(f"{weights_path}: not a weights-only .npz ({exc})") from None
    check_state(state, meta, weights_path)
    return meta, state


def load_network(path: str | Path, *, max_jobs: int | None = None) -> tuple[NumpySlotNetwork, dict]:
    """(numpy network, description) of a saved policy, for ``max_jobs`` slots (default: the
    slots it was trained with). Needs neither torch nor SB3, except for an attention policy,
    which decides with torch (:class:`~shockwave_agents.learned.inference.TorchSlotNetwork`)."""
    meta, state = read_checked(path)
    if meta.get("encoder") == "attention":
        from shockwave_agents.learned.inference import TorchSlotNetwork

        policy, meta = load_policy(path, max_jobs=max_jobs)
        return TorchSlotNetwork(policy), meta
    kind = head_kind_for(meta["algo"], meta["action_mode"], is_elastic(meta))
    if max_jobs is not None:
        check_max_jobs(max_jobs, _stem(path).with_suffix(".json"), "max_jobs (agent option)")
    try:
        network = NumpySlotNetwork(state, kind, int(meta["max_jobs"] if max_jobs is None else max_jobs), int(meta["obs_version"]))
    except (KeyError, ValueError) as exc:
        raise InputError(f"{_stem(path).with_suffix('.npz')}: weights do not fit the described network ({exc})") from None
    return network, meta


def meta_prior(meta: dict) -> str | None:
    """The prior to rebuild a described policy with: its ``prior``, ``"zero"`` for a skip
    term of unknown start, None without one (the loaded weights replace the start anyway)."""
    if not meta.get("linear_skip", False):
        return None
    return meta.get("prior", "zero")


def load_policy(path: str | Path, *, max_jobs: int | None = None, trust: bool = False) -> tuple[object, dict]:
    """(torch policy, description) of a saved policy, rebuilt for ``max_jobs`` slots (for
    fine-tuning or inspection). A ``.zip`` goes to :func:`load_sb3_zip` (refused unless
    ``trust``)."""
    import torch

    if Path(path).suffix == ".zip":
        return load_sb3_zip(path, max_jobs=max_jobs, trust=trust)
    meta, state = read_checked(path)
    if max_jobs is not None:
        check_max_jobs(max_jobs, _stem(path).with_suffix(".json"), "max_jobs (requested)")
    policy = build_policy(meta["algo"], meta["action_mode"], int(meta["max_jobs"] if max_jobs is None else max_jobs),
                          embed_dim=int(meta["embed_dim"]), hidden_dim=int(meta["hidden_dim"]),
                          obs_version=int(meta["obs_version"]), prior=meta_prior(meta), encoder=encoder_options(meta),
                          elastic=is_elastic(meta))
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


def load_sb3_zip(path: str | Path, *, max_jobs: int | None = None, trust: bool = False) -> tuple[object, dict]:
    """(torch policy, description) from an SB3 zip of a slot policy.

    SB3 unpickles parts of the zip, and unpickling can run any code the file's author chose,
    so this refuses with :class:`UntrustedZipError` unless ``trust`` is true (agent option
    ``trust=true``; ``shockwave-gym train --init-from X.zip --trust``); trusted loads still
    warn (:class:`UntrustedFileWarning`). No check of the bytes can tell a genuine zip from a
    crafted one, so there is none short of that explicit choice."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    if trust is not True:
        raise UntrustedZipError(
            f"{path}: refusing to load an SB3 .zip without trust: loading it unpickles part of the "
            "file, which can run arbitrary code. Load the weights-only policy.npz/.json written next to "
            "it by `shockwave-gym train` instead, or, for a zip you made yourself, pass the agent option "
            "trust=true (shockwave-gym train: --trust)"
        )
    if max_jobs is not None:
        check_max_jobs(max_jobs, path, "max_jobs (requested)")
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
    if policy_name.startswith("Maskable"):
        from sb3_contrib import MaskablePPO as algo_class

        algo = "maskable_ppo"
    elif policy_name:
        from stable_baselines3 import PPO as algo_class

        algo = "ppo"
    else:
        raise InputError(f"{path}: not a slot policy trained by shockwave-gym")
    policy = algo_class.load(path, device="cpu").policy
    meta = policy_meta(policy, algo, _MODE_BY_HEAD[policy.head_kind], {"loaded_from": str(path)})
    if max_jobs is not None and max_jobs != policy.max_jobs:
        resized = build_policy(algo, meta["action_mode"], max_jobs, embed_dim=policy.embed_dim, hidden_dim=policy.hidden_dim,
                               obs_version=meta["obs_version"], prior=getattr(policy, "prior", None),
                               encoder=encoder_options(meta), elastic=is_elastic(meta))
        resized.load_state_dict(policy.state_dict())
        policy, meta["max_jobs"] = resized, max_jobs
    return policy.eval(), meta


def _zip_policy_class_name(path: Path) -> str:
    """The policy class named in an SB3 zip, read from the pickle's bytes without
    unpickling (a global reference is plain ``module`` and ``name`` text in the opcodes).
    This only picks PPO or MaskablePPO for a *trusted* zip: a crafted pickle can contain
    these names and still run code, so it is no safety check (``trust`` is)."""
    try:
        with zipfile.ZipFile(path) as archive:
            data = json.loads(archive.read("data"))
        serialized = base64.b64decode(data["policy_class"][":serialized:"])
    except (zipfile.BadZipFile, KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{path}: not an SB3 model zip ({exc})") from None
    # the longer names first: they contain the others
    for module, names in ((b"shockwave_agents.learned.attention", ("MaskableAttentionSlotPolicy", "AttentionSlotPolicy")),
                          (b"shockwave_agents.learned.policy", ("MaskableSlotPolicy", "SlotPolicy"))):
        for name in names:
            if module in serialized and name.encode() in serialized:
                return name
    return ""


def _stem(path: str | Path) -> Path:
    path = Path(path)
    if path.is_dir():
        return path / "policy"
    return path.with_suffix("") if path.suffix in (".npz", ".json") else path

"""Deterministic forward passes of the slot policy for single decisions.

:class:`NumpySlotNetwork` computes, from the weights alone (a state dict of numpy arrays),
exactly what ``policy.action_outputs(obs)`` computes for one observation
(:mod:`~shockwave_agents.learned.policy`), in float32 numpy over the occupied slots only.
It needs neither torch nor SB3, so shipped policies load and decide in well under a
millisecond (in torch, per-operation overhead dominates such small networks).
:class:`TorchSlotNetwork` offers the same interface over a live torch policy (used while
training, when the weights change between calls). Tests check that the two agree.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from shockwave_gym import portable_math
from shockwave_gym.interface.observation import OBSERVATION_VERSIONS, feature_names

#: OpenBLAS entry points that set its thread count (numpy's bundled build, then a system one).
_BLAS_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads")
_blas_limited = False


def limit_blas_threads() -> bool:
    """Run numpy's OpenBLAS on one thread in this process (once; True if it was found).

    The slot network's matrices are tiny (tens of rows by 64-128 columns), where OpenBLAS's
    threaded GEMM gains nothing, and on a shared machine its threads wait for each other:
    measured on this project's 2-core machine under load, one decision took 37-72 ms with
    OpenBLAS's default threads and 0.1 ms on one thread. Like ``torch.set_num_threads(1)``
    in the RL code, this is process-wide; numpy's other uses on a 2-core machine lose little."""
    global _blas_limited
    if _blas_limited:
        return True
    import ctypes
    import glob
    import os

    libs = sorted(glob.glob(os.path.join(os.path.dirname(np.__file__) + ".libs", "*openblas*")))
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _BLAS_SETTERS:
            setter = getattr(lib, name, None)
            if setter is not None:
                setter(1)
                _blas_limited = True
                return True
    return False


#: Layers of each Linear/ReLU stack in the state dict (every Linear is followed by ReLU).
_STACKS = ("job_mlp", "context_mlp", "mix_mlp")
_ENCODER = "features_extractor."


def head_kind_for(algo: str, action_mode: str, elastic: bool = False) -> str:
    """The policy head of an (algorithm, action mode) pair (see ``policy.HEAD_KINDS``);
    ``elastic``: the policy also chooses GPU counts (``priority`` mode only)."""
    if action_mode == "priority":
        return "elastic" if elastic else "score"
    if action_mode == "select":
        return "binary" if algo == "maskable_ppo" else "bernoulli"
    if action_mode == "sequential":
        return "pick"
    raise ValueError(f"unknown action mode {action_mode!r}")


def _stack(state: Mapping[str, np.ndarray], prefix: str) -> list[tuple[np.ndarray, np.ndarray]]:
    layers, index = [], 0
    while f"{prefix}.{index}.weight" in state:
        layers.append((np.ascontiguousarray(state[f"{prefix}.{index}.weight"].T, dtype=np.float32),
                       np.asarray(state[f"{prefix}.{index}.bias"], dtype=np.float32)))
        index += 2  # Linear, ReLU, Linear, ReLU
    if not layers:
        raise KeyError(f"no layers under {prefix!r}")
    return layers


def _relu_stack(layers, x: np.ndarray) -> np.ndarray:
    for weight, bias in layers:
        x = x @ weight
        x += bias
        np.maximum(x, 0.0, out=x)
    return x



def policy_obs_version(policy) -> int:
    """The observation version a torch slot policy reads, from its input widths."""
    widths = (int(policy.observation_space["jobs"].shape[1]), int(policy.observation_space["cluster"].shape[0]))
    for version in OBSERVATION_VERSIONS:
        jobs, cluster = feature_names(version)
        if widths == (len(jobs), len(cluster)):
            return version
    raise ValueError(f"no observation version has {widths[0]} job and {widths[1]} cluster features")


class NumpySlotNetwork:
    """Per-slot outputs of a slot policy from its weights, with numpy.

    ``state`` maps the torch state-dict names (``features_extractor.job_mlp.0.weight``, ...,
    ``action_net.slot_out.weight``) to arrays; ``kind`` is the head kind. A state with
    ``action_net.skip.weight`` / ``.bias`` has the linear skip term
    (:mod:`~shockwave_agents.learned.priors`), added to each occupied slot's pre-activation
    (the bit-1 logit for ``binary``); without them the network has none.
    """

    def __init__(self, state: Mapping[str, np.ndarray], kind: str, max_jobs: int, obs_version: int | None = None):
        self.kind, self.max_jobs = kind, int(max_jobs)
        self.obs_version = obs_version  # the observation layout the weights read (None: unknown)
        limit_blas_threads()
        self.job, self.context, self.mix = (_stack(state, _ENCODER + name) for name in _STACKS)
        self.slot_weight = np.ascontiguousarray(state["action_net.slot_out.weight"].T, dtype=np.float32)
        self.slot_bias = np.asarray(state["action_net.slot_out.bias"], dtype=np.float32)
        expected_width = 2 if kind in ("binary", "elastic") else 1
        if self.slot_weight.shape[1] != expected_width:
            raise ValueError(f"a {kind} head has {expected_width} output(s) per slot, the weights have {self.slot_weight.shape[1]}")
        self.skip = None
        if "action_net.skip.weight" in state:
            skip_weight = np.asarray(state["action_net.skip.weight"], dtype=np.float32)
            if skip_weight.ndim != 2 or skip_weight.shape[0] != 1:
                raise ValueError(f"the skip term has one output per slot, the weights have shape {skip_weight.shape}")
            self.skip = (np.ascontiguousarray(skip_weight.T), np.asarray(state["action_net.skip.bias"], dtype=np.float32))
        self.end = None
        if kind == "pick":
            self.end = (np.asarray(state["action_net.end_out.weight"], dtype=np.float32)[0],
                        float(np.asarray(state["action_net.end_out.bias"])[0]))

    @classmethod
    def from_policy(cls, policy, max_jobs: int | None = None) -> NumpySlotNetwork:
        """A snapshot of a torch slot policy's current weights."""
        state = {key: value.detach().cpu().numpy() for key, value in policy.state_dict().items()}
        return cls(state, policy.head_kind, policy.max_jobs if max_jobs is None else max_jobs, policy_obs_version(policy))

    def outputs(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        """Same layout as ``policy.action_outputs``: scores (M,), bit logits (2M,),
        Bernoulli logits (M,), pick logits (M + 1,) or elastic scores then count
        preferences (2M,). Empty slots score 0; their logits are the output bias (the env
        ignores or masks them)."""
        valid = np.asarray(obs["job_valid"]).astype(bool)
        rows = np.flatnonzero(valid)
        cluster = np.asarray(obs["cluster"], dtype=np.float32)
        width = obs["jobs"].shape[1]
        extra = obs["elastic"].shape[1] if self.kind == "elastic" else 0  # after the job features
        x = np.empty((rows.size, width + extra + 1 + cluster.size), dtype=np.float32)
        x[:, :width] = obs["jobs"][rows]
        if extra:
            x[:, width:width + extra] = obs["elastic"][rows]
        x[:, width + extra] = obs["picked"][rows]
        x[:, width + extra + 1:] = cluster
        h = _relu_stack(self.job, x)
        pooled = np.zeros(2 * h.shape[1], dtype=np.float32)
        if rows.size:
            pooled[: h.shape[1]] = h.mean(axis=0)
            pooled[h.shape[1]:] = h.max(axis=0)
        context = _relu_stack(self.context, np.concatenate([pooled, cluster])[None, :])[0]
        mixed_in = np.empty((rows.size, 2 * h.shape[1]), dtype=np.float32)
        mixed_in[:, : h.shape[1]] = h
        mixed_in[:, h.shape[1]:] = context
        z = _relu_stack(self.mix, mixed_in)
        full = np.empty((self.max_jobs, self.slot_weight.shape[1]), dtype=np.float32)
        full[:] = self.slot_bias
        full[rows] = z @ self.slot_weight + self.slot_bias
        if self.skip is not None:
            column = 1 if self.kind == "binary" else 0
            full[rows, column] += (x[:, :width] @ self.skip[0] + self.skip[1])[:, 0]
        if self.kind == "score":
            return portable_math.tanh(full[:, 0]) * valid
        if self.kind == "elastic":
            return (portable_math.tanh(full) * valid[:, None]).T.ravel()
        if self.kind == "binary":
            return full.ravel()
        if self.kind == "bernoulli":
            return full[:, 0]
        return np.append(full[:, 0], np.float32(context @ self.end[0] + self.end[1]))


class TorchSlotNetwork:
    """The :class:`NumpySlotNetwork` interface over a live torch slot policy."""

    def __init__(self, policy):
        self.policy, self.kind, self.max_jobs = policy, policy.head_kind, policy.max_jobs
        self.obs_version = policy_obs_version(policy)

    def outputs(self, obs: Mapping[str, np.ndarray]) -> np.ndarray:
        import torch

        tensors = {key: torch.from_numpy(np.asarray(value, dtype=np.float32)).unsqueeze(0) for key, value in obs.items()}
        with torch.inference_mode():
            return self.policy.action_outputs(tensors)[0].numpy()

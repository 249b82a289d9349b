"""Exact comparison of nested env outputs, random valid vector actions and the two vector-env
backends, shared by the vector env tests."""

from __future__ import annotations

import numpy as np
import pytest

from shockwave_gym.batch import jit as batch_jit


def assert_same(a, b, where: str) -> None:
    """Exact equality of nested dicts / arrays / scalars, dtypes and NaNs included."""
    assert type(a) is type(b), (where, type(a), type(b))
    if isinstance(a, tuple | list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), (where, sorted(a), sorted(b))
        for key in a:
            assert_same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, np.ndarray):
        assert a.shape == b.shape and a.dtype == b.dtype, (where, a.shape, b.shape, a.dtype, b.dtype)
        if a.dtype == object:
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                assert_same(x, y, f"{where}[{i}]")
        else:
            assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), (where, a, b)
    else:
        assert a == b or (a != a and b != b), (where, a, b)


def random_actions(mode: str, masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if mode == "priority":
        return rng.uniform(-1, 1, masks.shape).astype(np.float32)
    if mode == "select":
        return ((rng.random((masks.shape[0], masks.shape[1] // 2)) < 0.5) & masks[:, 1::2]).astype(np.int8)
    # a cluster whose episode just ended may have no legal action (its next step resets it)
    return np.array([rng.choice(np.flatnonzero(row)) if row.any() else row.size - 1 for row in masks], dtype=np.int64)


#: The native vector env runs the compiled kernels: its tests need numba (without it,
#: gym.make_vec gives K single envs, tested in tests/test_env_vector.py checks).
BACKENDS = [pytest.param(True, id="compiled", marks=pytest.mark.skipif(not batch_jit.AVAILABLE, reason="numba missing"))]


def step_with_single_envs(vec, singles, mode: str, steps: int, *, seed: int = 7, masks: bool = False) -> dict:
    """Reset ``vec`` with ``seed`` and each single env ``i`` with ``seed + i``, then step them
    ``steps`` times with random valid actions, asserting every output (and, with ``masks``,
    the action masks) equal; returns the vector env's first observation."""
    from shockwave_gym.testing.env import random_valid_action

    first, _ = vec.reset(seed=seed)
    single_obs = [env.reset(seed=seed + i)[0] for i, env in enumerate(singles)]
    for key in first:
        assert_same(first[key], np.stack([o[key] for o in single_obs]), key)
    rng = np.random.default_rng(1)
    for _ in range(steps):
        if masks:
            assert_same(vec.action_masks(), np.stack([env.unwrapped.action_masks() for env in singles]), "masks")
        actions = [random_valid_action(env, rng, mode) for env in singles]
        obs, rewards, terminated, truncated, _ = vec.step(np.stack(actions))
        outs = [env.step(a) for env, a in zip(singles, actions, strict=True)]
        for key in obs:
            assert_same(obs[key], np.stack([o[0][key] for o in outs]), key)
        assert rewards.tolist() == [o[1] for o in outs]
        assert terminated.tolist() == [o[2] for o in outs] and truncated.tolist() == [o[3] for o in outs]
    return first

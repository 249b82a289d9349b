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

"""portable_math gives the C library's bits, whatever numpy's kernels on this processor do."""

from __future__ import annotations

import math

import numpy as np
import pytest

from shockwave_gym import portable_math

NAMES = ("log", "exp", "log1p", "log2", "tanh")


def _inputs(name: str) -> np.ndarray:
    rng = np.random.default_rng(7)
    if name == "exp":
        return rng.uniform(-50.0, 50.0, 20000)
    if name == "tanh":
        return rng.uniform(-5.0, 5.0, 20000)
    return rng.uniform(1e-9, 1e4, 20000)


@pytest.mark.parametrize("name", NAMES)
def test_every_value_is_the_c_librarys(name):
    x = _inputs(name)
    expected = np.array([getattr(math, name)(v) for v in x.tolist()])
    got = getattr(portable_math, name)(x)
    assert got.dtype == np.float64 and np.array_equal(got, expected)
    # 2-D input, and out= in place
    grid = x[:400].reshape(20, 20).copy()
    assert np.array_equal(getattr(portable_math, name)(grid), expected[:400].reshape(20, 20))
    assert getattr(portable_math, name)(grid, out=grid) is grid
    assert np.array_equal(grid, expected[:400].reshape(20, 20))


@pytest.mark.parametrize("name", NAMES)
def test_the_elementwise_path_is_the_c_library_too(name):
    """The path taken where numpy's ufunc disagrees with the probe (AVX-512 machines)."""
    x = _inputs(name)[:3000]
    apply = portable_math._elementwise(getattr(math, name))
    assert np.array_equal(apply(x), np.array([getattr(math, name)(v) for v in x.tolist()]))
    assert float(apply(np.float64(x[0]))) == getattr(math, name)(x[0])


def test_numpy_is_used_only_where_it_agrees():
    for name in NAMES:
        probe = _inputs(name)
        same = np.array_equal(getattr(np, name)(probe), [getattr(math, name)(v) for v in probe.tolist()])
        if not same:  # this processor's numpy kernel differs: the fallback must be on
            assert not portable_math.uses_numpy(name), name

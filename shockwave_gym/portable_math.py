"""Logarithms, exponentials and tanh over float64 arrays that give the same bits on every
processor.

numpy picks a ufunc's inner loop at run time from the processor's features. On x86-64 processors
with AVX-512, float64 ``log``, ``exp``, ``log1p``, ``log2`` and ``tanh`` run vectorised kernels
that differ from the C library's scalar functions in the last bit for a share of inputs (measured
on one such processor: ``log`` on 0.04% of a uniform sample, ``exp``, ``log1p`` 4.6%, ``tanh``
7.9%); on processors without AVX-512 numpy calls the C library's scalar function. A last-bit
difference in a program coefficient or a feature can change a planner's choice, so an agent's
results, and a published table, would depend on the processor.

Each function here computes what the C library's scalar function gives (the one Python's
:mod:`math` and numba's compiled kernels call). On first use per function and process it checks
numpy's ufunc against :mod:`math` on a fixed probe of inputs spanning the ranges the project uses;
if every value agrees, it calls the ufunc (fast, the common case), otherwise it evaluates the
C library's function element by element.

What can still differ: the C library itself (glibc selects an FMA or a non-FMA variant of some
functions by processor; other C libraries have their own implementations).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache

import numpy as np

#: Probe inputs: logarithmically spaced over the ranges the project's code passes, plus a few
#: hand-picked values.
_PROBE = np.concatenate([np.geomspace(1e-12, 1e12, 4001), np.linspace(0.0, 40.0, 4001), [1.0, 2.0, 0.5]])
_EXP_PROBE = np.concatenate([np.linspace(-700.0, 700.0, 8001), np.linspace(-1.0, 1.0, 2001)])
_TANH_PROBE = np.concatenate([np.linspace(-20.0, 20.0, 8001), np.geomspace(1e-12, 1.0, 2001)])


def _elementwise(scalar: Callable[[float], float]) -> Callable[..., np.ndarray]:
    def apply(x, out=None):
        values = np.asarray(x, dtype=np.float64)
        result = np.fromiter(map(scalar, values.ravel().tolist()), dtype=np.float64, count=values.size)
        result = result.reshape(values.shape)
        if out is None:
            return result
        out[...] = result
        return out

    return apply


@cache
def _pick(name: str) -> Callable[..., np.ndarray]:
    ufunc, scalar = getattr(np, name), getattr(math, name)
    probe = {"exp": _EXP_PROBE, "tanh": _TANH_PROBE}.get(name, _PROBE)
    if name in ("log", "log2"):
        probe = probe[probe > 0]
    expected = np.array([scalar(v) for v in probe.tolist()], dtype=np.float64)
    with np.errstate(all="ignore"):
        agrees = np.array_equal(ufunc(probe), expected)
    return ufunc if agrees else _elementwise(scalar)


def uses_numpy(name: str) -> bool:
    """Whether ``name`` ("log", "exp", ...) runs numpy's ufunc on this processor."""
    return _pick(name) is getattr(np, name)


def log(x, out=None):
    """Natural logarithm, the C library's bits."""
    return _pick("log")(x, out=out)


def exp(x, out=None):
    """Exponential, the C library's bits."""
    return _pick("exp")(x, out=out)


def log1p(x, out=None):
    """log(1 + x), the C library's bits."""
    return _pick("log1p")(x, out=out)


def log2(x, out=None):
    """Base-2 logarithm, the C library's bits."""
    return _pick("log2")(x, out=out)


def tanh(x, out=None):
    """Hyperbolic tangent, the C library's bits."""
    return _pick("tanh")(x, out=out)

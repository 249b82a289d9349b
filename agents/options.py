"""Checks of agent options: the keyword arguments of the agents' constructors, given by
:func:`shockwave_agents.make_agent` or ``--agent-opt key=value`` (a value that is not JSON
arrives as a bare-word string, so ``oracle=no`` is the string ``"no"``). A bad value raises
:class:`~shockwave_gym.errors.InputError` naming the option, which the CLI reports in one line.
"""

from __future__ import annotations

import math

import numpy as np

from shockwave_gym.config import require_finite
from shockwave_gym.errors import InputError


def flag(name: str, value: object) -> bool:
    """``value`` as a bool: ``True`` or ``False`` (a numpy bool too), or the integer 0 or 1
    (JSON's ``backfill=0``); anything else, a string such as ``"no"`` included, raises
    :class:`InputError` naming ``name``."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer) and value in (0, 1):
        return bool(value)
    raise InputError(f"{name} must be true or false, got {value!r}")


def number(name: str, value: object, *, low: float, high: float | None = None) -> float:
    """``value`` as a float: a finite real (not a bool) in ``[low, high]``
    (:func:`~shockwave_gym.config.require_finite`'s rule), else :class:`InputError` naming
    ``name`` and the range (a string such as ``"abc"`` included)."""
    try:
        return require_finite(value, name, low=low, low_inclusive=True, high=high)
    except InputError:
        where = f">= {low:g}" if high is None else f"in [{low:g}, {high:g}]"
        raise InputError(f"{name} must be a finite number {where}, got {value!r}") from None


def increasing_positive(name: str, value: object) -> list[float]:
    """``value`` as a list of floats: a list, tuple or 1-D array (possibly empty) of finite
    numbers > 0 in strictly increasing order, else :class:`InputError` naming ``name``."""
    if isinstance(value, np.ndarray) and value.ndim == 1:
        value = value.tolist()
    if not isinstance(value, list | tuple):
        raise InputError(f"{name} must be a list of positive numbers in increasing order, got {value!r}")
    numbers = [isinstance(t, int | float | np.integer | np.floating) and not isinstance(t, bool | np.bool_)
               for t in value]
    if not all(numbers) or not all(math.isfinite(t) for t in value):
        raise InputError(f"{name} must hold finite numbers, got {value!r}")
    floats = [float(t) for t in value]
    if any(t <= 0 for t in floats) or floats != sorted(set(floats)):
        raise InputError(f"{name} must be positive and strictly increasing, got {value!r}")
    return floats

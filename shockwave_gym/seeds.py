"""The one seed rule: every seed (agents, episodes, the generator, training) is an integer
in ``[0, 2**32)``.

NumPy's generators and the solvers accept that range everywhere; a negative seed used to
crash some agents while others took it. :func:`check_seed` gives the same message for every
caller.
"""

from __future__ import annotations

from shockwave_gym.errors import InputError

#: Seeds are integers ``0 <= seed < SEED_LIMIT``.
SEED_LIMIT = 2**32


def seed_problem(value: object) -> str | None:
    """Why ``value`` is not a valid seed, or ``None`` when it is."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"must be an integer in [0, 2**32), got {value!r}"
    if not 0 <= value < SEED_LIMIT:
        return f"must be an integer in [0, 2**32), got {value}"
    return None


def check_seed(value: object, name: str = "seed") -> int:
    """``value`` if it is a valid seed; else :class:`~shockwave_gym.errors.InputError`."""
    problem = seed_problem(value)
    if problem is not None:
        raise InputError(f"{name} {problem}")
    return value  # type: ignore[return-value]

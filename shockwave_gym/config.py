"""Cluster and round parameters: the one home of their defaults and of their checks.

The CLI, the harness, the env and the runner all take their defaults from here. Semantics
of each parameter: docs/SEMANTICS.md, "Round rules (R1–R5)".
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from shockwave_gym.errors import InputError

#: Round length (R2).
DEFAULT_ROUND_S = 120.0
#: Seconds a job loses when it (re)starts (R3); 0 disables the overhead.
DEFAULT_RESTART_OVERHEAD_S = 20.0
#: A (re)started job pays the overhead only when it runs for more than this share of the
#: round (R3): 115 s of a 120 s round. A short final piece never pays.
DEFAULT_RESTART_MIN_RUN_SHARE = 115.0 / 120.0
#: Rounds after which an episode is truncated: far beyond any sensible episode, so only a
#: scheduler that idles forever (or a pathological trace) is cut short.
DEFAULT_MAX_ROUNDS = 100_000


def require_positive_int(value, name: str) -> int:
    """``value`` as an ``int`` when it is an integer >= 1 (Python or numpy, not ``bool``);
    otherwise :class:`InputError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise InputError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _require_finite(value, name: str, *, low: float, low_inclusive: bool, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise InputError(f"{name} must be a finite number, got {value!r}")
    if value < low or (value == low and not low_inclusive) or (high is not None and value > high):
        bound = f"{'>=' if low_inclusive else '>'} {low:g}" + (f" and <= {high:g}" if high is not None else "")
        raise InputError(f"{name} must be {bound}, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class SimConfig:
    """Cluster and round parameters (seconds). See the module constants for defaults."""

    gpus: int
    round_s: float = DEFAULT_ROUND_S
    restart_overhead_s: float = DEFAULT_RESTART_OVERHEAD_S
    restart_min_run_share: float = DEFAULT_RESTART_MIN_RUN_SHARE

    def __post_init__(self):
        object.__setattr__(self, "gpus", require_positive_int(self.gpus, "gpus"))
        _require_finite(self.round_s, "round_s", low=0.0, low_inclusive=False)
        _require_finite(self.restart_overhead_s, "restart_overhead_s", low=0.0, low_inclusive=True)
        _require_finite(self.restart_min_run_share, "restart_min_run_share", low=0.0, low_inclusive=True, high=1.0)
        if self.restart_overhead_s >= self.round_s:
            raise InputError("restart_overhead_s must be shorter than a round")

    @property
    def restart_threshold_s(self) -> float:
        """A (re)started job pays the overhead only when it would run longer than this (R3)."""
        return self.round_s * self.restart_min_run_share

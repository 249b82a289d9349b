"""Cluster and round parameters: the one home of their defaults and of their checks.

The CLI, the harness, the env and the runner all take their defaults from here. Semantics
of each parameter: docs/SEMANTICS.md, "Round rules (R1–R5)".
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from shockwave_gym.cluster import MAX_GPUS, ClusterSpec
from shockwave_gym.errors import InputError

#: Round length (R2).
DEFAULT_ROUND_S = 120.0
#: Longest round (one day): longer rounds overflow nothing but make no schedule.
MAX_ROUND_S = 86_400.0
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
    """Cluster and round parameters (seconds). See the module constants for defaults.

    ``SimConfig(gpus=N)`` is the homogeneous cluster of N V100s (the paper's), simulated by
    :class:`~shockwave_gym.simulator.Simulator`. ``SimConfig(cluster=spec)`` (a
    :class:`~shockwave_gym.cluster.ClusterSpec`, any mix of types) takes the heterogeneous
    path (:mod:`shockwave_gym.hetero_simulator`, docs/HETEROGENEOUS.md), even when ``spec``
    has one type; ``gpus`` is then the cluster's total (giving both and disagreeing is an
    error).
    """

    gpus: int | None = None
    round_s: float = DEFAULT_ROUND_S
    restart_overhead_s: float = DEFAULT_RESTART_OVERHEAD_S
    restart_min_run_share: float = DEFAULT_RESTART_MIN_RUN_SHARE
    cluster: ClusterSpec | None = None

    def __post_init__(self):
        if self.cluster is not None:
            if not isinstance(self.cluster, ClusterSpec):
                raise InputError(f"cluster must be a ClusterSpec, got {type(self.cluster).__name__}")
            if self.gpus is None:
                object.__setattr__(self, "gpus", self.cluster.total)
            elif require_positive_int(self.gpus, "gpus") != self.cluster.total:
                raise InputError(
                    f"gpus={self.gpus} disagrees with cluster {self.cluster} ({self.cluster.total} GPUs)"
                )
        elif self.gpus is None:
            raise InputError("SimConfig needs gpus (a homogeneous V100 cluster) or cluster (a ClusterSpec)")
        object.__setattr__(self, "gpus", require_positive_int(self.gpus, "gpus"))
        if self.gpus > MAX_GPUS:
            raise InputError(f"gpus must be at most {MAX_GPUS:,}, got {self.gpus}")
        _require_finite(self.round_s, "round_s", low=0.0, low_inclusive=False, high=MAX_ROUND_S)
        _require_finite(self.restart_overhead_s, "restart_overhead_s", low=0.0, low_inclusive=True)
        _require_finite(self.restart_min_run_share, "restart_min_run_share", low=0.0, low_inclusive=True, high=1.0)
        if self.restart_overhead_s >= self.round_s:
            raise InputError("restart_overhead_s must be shorter than a round")

    @property
    def heterogeneous(self) -> bool:
        """True when the run takes the heterogeneous path (a ``cluster`` was given)."""
        return self.cluster is not None

    @property
    def cluster_spec(self) -> ClusterSpec:
        """The cluster: ``cluster``, or ``gpus`` V100s for a homogeneous config."""
        return self.cluster if self.cluster is not None else ClusterSpec.homogeneous(self.gpus)

    @property
    def restart_threshold_s(self) -> float:
        """A (re)started job pays the overhead only when it would run longer than this (R3)."""
        return self.round_s * self.restart_min_run_share

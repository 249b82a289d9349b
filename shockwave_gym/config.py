"""Cluster and round parameters: the one home of their defaults and of their checks.

The round parameters (:data:`ROUND_PARAMETERS`: ``round_s``, ``restart_overhead_s``,
``restart_min_run_share``, ``max_rounds``) are declared with their defaults once, as the
fields of :class:`SimConfig`. Every entry point (``shockwave-gym run`` / ``compare``,
:func:`~shockwave_gym.harness.evaluate`, the harness grid, ``ClusterEnv`` / ``gym.make`` and
the vector env) takes them as ``None``-defaulted keywords ("SimConfig's default"), gathers
the given ones with :func:`round_options` and builds its :class:`SimConfig` from them, so
no signature repeats a default. Semantics of each parameter: docs/SEMANTICS.md, "Round
rules (R1–R5)".
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from shockwave_gym.cluster import MAX_GPUS, ClusterSpec
from shockwave_gym.errors import InputError

#: Longest round (one day): longer rounds overflow nothing but make no schedule.
MAX_ROUND_S = 86_400.0


def require_positive_int(value, name: str) -> int:
    """``value`` as an ``int`` when it is an integer >= 1 (Python or numpy, not ``bool``);
    otherwise :class:`InputError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise InputError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def require_finite(value, name: str, *, low: float, low_inclusive: bool, high: float | None = None) -> float:
    """``value`` as a ``float`` when it is a finite real (not ``bool``) within the bounds;
    otherwise :class:`InputError` naming ``name``."""
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
    #: Round length (R2).
    round_s: float = 120.0
    #: Seconds a job loses when it (re)starts (R3); 0 disables the overhead.
    restart_overhead_s: float = 20.0
    #: A (re)started job pays the overhead only when it runs for more than this share of
    #: the round (R3): 115 s of a 120 s round. A short final piece never pays.
    restart_min_run_share: float = 115.0 / 120.0
    cluster: ClusterSpec | None = None
    #: Rounds after which an episode is truncated: far beyond any sensible episode, so only
    #: a scheduler that idles forever (or a pathological trace) is cut short. It does not
    #: change a round's semantics, only when the runner or the env stops.
    max_rounds: int = 100_000

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
        object.__setattr__(self, "max_rounds", require_positive_int(self.max_rounds, "max_rounds"))
        require_finite(self.round_s, "round_s", low=0.0, low_inclusive=False, high=MAX_ROUND_S)
        require_finite(self.restart_overhead_s, "restart_overhead_s", low=0.0, low_inclusive=True)
        require_finite(self.restart_min_run_share, "restart_min_run_share", low=0.0, low_inclusive=True, high=1.0)
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


#: The round parameters, in the order the CLI and the docs list them.
ROUND_PARAMETERS = ("round_s", "restart_overhead_s", "restart_min_run_share", "max_rounds")

# Aliases of SimConfig's defaults, for code that names one (never redeclared).
DEFAULT_ROUND_S: float = SimConfig.round_s
DEFAULT_RESTART_OVERHEAD_S: float = SimConfig.restart_overhead_s
DEFAULT_RESTART_MIN_RUN_SHARE: float = SimConfig.restart_min_run_share
DEFAULT_MAX_ROUNDS: int = SimConfig.max_rounds


def round_options(**given) -> dict:
    """The round parameters a caller set: ``given`` without its ``None`` values (``None``
    means "SimConfig's default"). Keys must be in :data:`ROUND_PARAMETERS`. The result is
    passed whole, as ``SimConfig(gpus=..., cluster=..., **options)``; values are checked there."""
    unknown = sorted(set(given) - set(ROUND_PARAMETERS))
    if unknown:
        raise InputError(f"unknown round parameter(s) {', '.join(unknown)}; known: {', '.join(ROUND_PARAMETERS)}")
    return {name: given[name] for name in ROUND_PARAMETERS if given.get(name) is not None}


def round_defaults() -> dict:
    """Every round parameter's default, read from :class:`SimConfig`'s fields."""
    return {name: getattr(SimConfig, name) for name in ROUND_PARAMETERS}

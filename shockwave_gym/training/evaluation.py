"""Quick evaluation of a slot policy on held-out traces, in this process (no harness).

Used for the periodic evaluation during training and for the final ``eval.json``; the
harness (:func:`shockwave_gym.evaluate`) is the tool for full comparisons.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from shockwave_gym.config import SimConfig, round_options
from shockwave_gym.runner import run_episode

#: Core metrics (:func:`shockwave_gym.metrics.compute_metrics`) kept per trace and averaged.
EVAL_METRICS = (
    "avg_jct_s", "makespan_s", "worst_ftf", "unfair_fraction", "worst_ftf_themis",
    "unfair_fraction_themis", "geomean_jct_s", "utilization", "rounds", "rho_mean",
)


def evaluate_agent(agent, traces: Sequence, gpus: int | Sequence, *, max_rounds: int | None = None,
                   regimes: Sequence | None = None) -> dict:
    """Metrics of ``agent`` on each trace, their means over traces, and decision latency
    (total decision wall time / rounds) in milliseconds. ``gpus`` is one cluster size for
    every trace or one per trace (validation sets mix cluster sizes); a per-trace
    :class:`~shockwave_gym.cluster.ClusterSpec` runs that trace on the heterogeneous cluster.
    ``regimes``: per trace, its :class:`~shockwave_gym.regimes.Regime` (None: exact lengths)."""
    from shockwave_gym.cluster import ClusterSpec

    sizes = [int(gpus)] * len(traces) if isinstance(gpus, (int, np.integer)) else [
        g if isinstance(g, ClusterSpec) else int(g) for g in gpus]
    if len(sizes) != len(traces):
        raise ValueError(f"{len(sizes)} cluster sizes for {len(traces)} traces")
    regimes = [None] * len(traces) if regimes is None else list(regimes)
    per_trace, decision_s, rounds = {}, 0.0, 0
    for trace, size, regime in zip(traces, sizes, regimes, strict=True):
        where = dict(gpus=size.total, cluster=size) if isinstance(size, ClusterSpec) else dict(gpus=size)
        config = SimConfig(**where, **round_options(max_rounds=max_rounds))
        outcome = run_episode(trace, agent, config, progress=False, regime=regime)
        per_trace[trace.name] = {key: _plain(outcome.metrics.get(key)) for key in EVAL_METRICS}
        per_trace[trace.name].update(  # what a scored task's cost needs (shockwave_gym.tasks)
            completed_jobs=_plain(outcome.metrics.get("completed_jobs")), num_jobs=trace.num_jobs, gpus=config.gpus,
            truncated=bool(outcome.metrics.get("truncated")), first_arrival_s=trace.first_arrival_s,
            round_s=config.round_s)
        decision_s += outcome.decision_wall_s
        rounds += int(outcome.metrics.get("rounds") or 0)
    means = {}
    for key in EVAL_METRICS:
        values = [row[key] for row in per_trace.values()]
        means[key] = None if any(v is None for v in values) else float(np.mean(values))
    means["decision_ms_per_round"] = 1000.0 * decision_s / max(rounds, 1)
    return {"mean": means, "per_trace": per_trace}


def _plain(value):
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value

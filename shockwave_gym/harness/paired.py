"""Paired statistics: an agent against a named baseline, trace by trace.

Per trace the ratio ``m_agent / m_baseline`` (same trace, same cluster: the pairing). Per suite
the geometric mean of the ratios with a percentile bootstrap confidence interval over the
suite's traces (:func:`scipy.stats.bootstrap`; the ratios carry the pairing, so resampling the
traces resamples pairs). Overall: the interquartile mean (IQM: the mean of the middle 50%,
:func:`scipy.stats.trim_mean` with 25% cut at each end) of the suites' mean log ratios,
exponentiated (a ratio again), with a
*stratified* bootstrap: each suite's traces are resampled within the suite, independently,
and the IQM recomputed (the approach of Agarwal et al., "Deep reinforcement learning at the
edge of the statistical precipice", NeurIPS 2021; here with scipy's resampler, one sample per
suite). Suites count equally, whatever their number of traces, and one outlying suite moves the
IQM little.

With 5 traces per suite a percentile interval is coarse (it cannot be wider than the range of
the 5 ratios' resampled geometric means); it says how much the suite's traces disagree, not
more. Resampling uses a fixed seed, so the same inputs give the same interval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from shockwave_gym import portable_math

#: resamples of every bootstrap
N_RESAMPLES = 4000
CONFIDENCE = 0.95
SEED = 0
IQM_CUT = 0.25


@dataclass(frozen=True)
class Interval:
    """A point estimate with its bootstrap interval (``low``/``high`` NaN when undefined)."""

    value: float
    low: float
    high: float
    n: int

    def as_dict(self) -> dict:
        return {"value": self.value, "low": self.low, "high": self.high, "n": self.n}


def paired_ratios(agent: Mapping[str, float], baseline: Mapping[str, float]) -> dict[str, float]:
    """Trace -> ``agent[trace] / baseline[trace]`` over the traces both have (finite, baseline > 0)."""
    out = {}
    for trace, value in agent.items():
        base = baseline.get(trace)
        if base is not None and value is not None and math.isfinite(value) and math.isfinite(base) and base > 0:
            out[trace] = value / base
    return out


def geomean(values: Sequence[float]) -> float:
    values = np.asarray(values, dtype=np.float64)
    return float(portable_math.exp(portable_math.log(values).mean())) if values.size else math.nan


def _log_mean(x, axis=-1):
    return portable_math.log(x).mean(axis=axis)


def ratio_interval(ratios: Sequence[float], confidence: float = CONFIDENCE, n_resamples: int = N_RESAMPLES,
                   seed: int = SEED) -> Interval:
    """Geometric mean of per-trace ratios with a percentile bootstrap interval over the traces
    (no interval for fewer than 2 traces; a zero-width one when every ratio is equal)."""
    from scipy import stats

    data = np.asarray(ratios, dtype=np.float64)
    n = int(data.size)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0)
    value = geomean(data)
    if n < 2:
        return Interval(value, math.nan, math.nan, n)
    if np.all(data == data[0]):
        return Interval(value, value, value, n)
    res = stats.bootstrap((data,), _log_mean, vectorized=True, confidence_level=confidence,
                          n_resamples=n_resamples, method="percentile", rng=np.random.default_rng(seed))
    return Interval(value, float(portable_math.exp(res.confidence_interval.low)), float(portable_math.exp(res.confidence_interval.high)), n)


def iqm(values: Sequence[float]) -> float:
    """Interquartile mean: the mean after cutting 25% at each end (:func:`scipy.stats.trim_mean`)."""
    from scipy import stats

    return float(stats.trim_mean(np.asarray(values, dtype=np.float64), IQM_CUT))


def mean_interval(values: Sequence[float], confidence: float = CONFIDENCE, n_resamples: int = N_RESAMPLES,
                  seed: int = SEED) -> Interval:
    """Arithmetic mean over the traces with a percentile bootstrap interval (NaN values, an
    unfinished episode's metric, left out; no interval for fewer than 2 values)."""
    from scipy import stats

    data = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=np.float64)
    n = int(data.size)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0)
    value = math.fsum(data) / n
    if n < 2:
        return Interval(value, math.nan, math.nan, n)
    if np.all(data == data[0]):
        return Interval(value, value, value, n)
    res = stats.bootstrap((data,), np.mean, vectorized=True, confidence_level=confidence,
                          n_resamples=n_resamples, method="percentile", rng=np.random.default_rng(seed))
    return Interval(value, float(res.confidence_interval.low), float(res.confidence_interval.high), n)


def stratified_iqm_interval(per_suite: Mapping[str, Sequence[float]], *, geometric: bool = True,
                                 confidence: float = CONFIDENCE, n_resamples: int = N_RESAMPLES,
                                 seed: int = SEED) -> Interval:
    """IQM over suites of each suite's mean (geometric: of ratios, as a ratio; else arithmetic),
    with a stratified bootstrap: each suite's values resampled within the suite. A suite of one
    value enters every resample as that value; suites without a finite value are left out.
    ``n`` is the number of values."""
    from scipy import stats

    samples = [np.asarray([v for v in values if math.isfinite(v)], dtype=np.float64) for values in per_suite.values()]
    samples = [portable_math.log(s) if geometric else s for s in samples if s.size]
    if not samples:
        return Interval(math.nan, math.nan, math.nan, 0)
    n = sum(int(s.size) for s in samples)
    back = np.exp if geometric else float

    def finish(x: float) -> float:
        return float(back(x))

    value = finish(iqm([s.mean() for s in samples]))
    varying = [s for s in samples if s.size >= 2 and not np.all(s == s[0])]
    if not varying:
        return Interval(value, math.nan, math.nan, n) if all(s.size < 2 for s in samples) else Interval(value, value, value, n)
    fixed = np.array([s.mean() for s in samples if s.size < 2 or np.all(s == s[0])], dtype=np.float64)

    def statistic(*resampled, axis=-1):
        means = [s.mean(axis=axis) for s in resampled]
        shape = means[0].shape
        means += [np.broadcast_to(m, shape) for m in fixed]
        return stats.trim_mean(np.stack(means, axis=0), IQM_CUT, axis=0)

    res = stats.bootstrap(tuple(varying), statistic, vectorized=True, paired=False, confidence_level=confidence,
                          n_resamples=n_resamples, method="percentile", rng=np.random.default_rng(seed))
    return Interval(value, finish(res.confidence_interval.low), finish(res.confidence_interval.high), n)


def seed_iqm_interval(per_seed: Mapping[str, Sequence[float]], confidence: float = CONFIDENCE,
                      n_resamples: int = N_RESAMPLES, seed: int = SEED) -> Interval:
    """IQM over training seeds of each seed's geometric mean of per-trace ratios, where every
    seed played the same traces in the same order: the bootstrap resamples traces, one draw
    shared by all seeds (paired), so the spread between traces is kept whole. ``n`` is the
    number of traces."""
    from scipy import stats

    rows = np.asarray([list(values) for values in per_seed.values()], dtype=np.float64)
    logs = portable_math.log(rows)
    n = int(rows.shape[1])
    value = float(np.exp(iqm(logs.mean(axis=1))))
    if n < 2:
        return Interval(value, math.nan, math.nan, n)
    if np.all(logs == logs[:, :1]):
        return Interval(value, value, value, n)

    def statistic(*resampled, axis=-1):
        return stats.trim_mean(np.stack([r.mean(axis=axis) for r in resampled], axis=0), IQM_CUT, axis=0)

    res = stats.bootstrap(tuple(logs), statistic, vectorized=True, paired=True, confidence_level=confidence,
                          n_resamples=n_resamples, method="percentile", rng=np.random.default_rng(seed))
    return Interval(value, float(np.exp(res.confidence_interval.low)), float(np.exp(res.confidence_interval.high)), n)

"""The leaderboard's tables: per suite and overall rows with bootstrap intervals.

Per suite (one trace = one sample, its generator seed):

- makespan and avg JCT in seconds: the mean over the suite's traces (no interval: traces of a
  suite differ in load, so the spread of raw seconds says little about an agent);
- makespan, avg JCT and the balanced task's cost (docs/TASKS.md) as ratios to the reference
  agent (FIFO) **on the same trace**: the geometric mean of the paired per-trace ratios with a
  95% percentile bootstrap interval over the traces
  (:func:`~shockwave_gym.harness.paired.ratio_interval`);
- the fairness measures and unfair shares: the mean with a 95% percentile bootstrap interval
  over the traces (:func:`~shockwave_gym.harness.paired.mean_interval`).

Overall, suites count equally: each column is the interquartile mean over suites of the suites'
means (geometric for the ratios), with a stratified bootstrap that resamples each suite's traces
within the suite (:func:`~shockwave_gym.harness.paired.stratified_iqm_interval`); a suite of
one trace (``canonical``) enters every resample as its one value. No interval pools the traces of
different suites as if they were one sample.

Resampling is seeded, so the same cells give the same tables byte for byte.
"""

from __future__ import annotations

import math

import pandas as pd

from shockwave_gym.harness.paired import (
    Interval,
    mean_interval,
    paired_ratios,
    ratio_interval,
    stratified_iqm_interval,
)

#: Reference agent of the ratios.
REFERENCE = "fifo"
#: Ratio columns: (column, metric it divides).
RATIOS = {"makespan_ratio": "makespan_s", "avg_jct_ratio": "avg_jct_s", "balanced_ratio": "balanced_cost"}
#: Columns shown as plain means (no interval).
PLAIN = frozenset({"makespan_s", "avg_jct_s"})

#: (column, heading, format) of a suite's table, in order.
SUITE_METRICS: tuple[tuple[str, str, str], ...] = (
    ("makespan_s", "makespan (s)", "{:,.0f}"),
    ("avg_jct_s", "avg JCT (s)", "{:,.0f}"),
    ("makespan_ratio", f"makespan ×{REFERENCE}", "{:.3f}"),
    ("avg_jct_ratio", f"avg JCT ×{REFERENCE}", "{:.3f}"),
    ("balanced_ratio", f"balanced ×{REFERENCE}", "{:.3f}"),
    ("rho_mean", "mean ρ", "{:.2f}"),
    ("rho_p95", "p95 ρ", "{:.2f}"),
    ("worst_ftf", "worst FTF ρ static", "{:.2f}"),
    ("worst_ftf_themis", "worst FTF ρ contention", "{:.2f}"),
    ("unfair_fraction", "unfair static", "{:.1%}"),
    ("unfair_fraction_themis", "unfair contention", "{:.1%}"),
)
#: The Overall table: every column but raw seconds (not comparable across cluster sizes).
OVERALL_METRICS: tuple[tuple[str, str, str], ...] = tuple(m for m in SUITE_METRICS if m[0] not in PLAIN)


def add_task_costs(results: pd.DataFrame, traces) -> None:
    """Add each cell's ``balanced_cost`` (the balanced task's cost, docs/TASKS.md) to
    ``results``, from its metrics and its trace's first arrival."""
    from shockwave_gym.tasks import TASKS

    first = {trace.name: trace.first_arrival_s for trace in traces}
    results["balanced_cost"] = [
        TASKS["balanced"].cost(row, first_arrival_s=first[row["trace"]], round_s=row["round_s"])
        for row in results.to_dict("records")]


def format_interval(interval: Interval, fmt: str) -> str:
    """``"0.912 [0.884, 0.941]"``; ``"0.912"`` without an interval; ``"n/a"`` without data."""
    if math.isnan(interval.value):
        return "n/a"
    if math.isnan(interval.low):
        return fmt.format(interval.value)
    return f"{fmt.format(interval.value)} [{fmt.format(interval.low)}, {fmt.format(interval.high)}]"


def _plain_mean(values) -> Interval:
    data = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    return Interval(math.fsum(data) / len(data) if data else math.nan, math.nan, math.nan, len(data))


def _per_trace(cells: pd.DataFrame, column: str) -> dict[str, float]:
    return {trace: float(value) for trace, value in zip(cells["trace"], cells[column], strict=True)}


def _values(cells: pd.DataFrame, reference: pd.DataFrame, column: str) -> list[float]:
    """Per trace of ``cells``: the column's values, or for a ratio column the paired ratios."""
    if column in RATIOS:
        metric = RATIOS[column]
        return list(paired_ratios(_per_trace(cells, metric), _per_trace(reference, metric)).values())
    return [float(v) for v in cells[column]]


def _sort_key(row: dict, column: str) -> tuple[float, str]:
    value = row[column].value
    return (math.inf if math.isnan(value) else value, row["agent"])


def suite_rows(results: pd.DataFrame, suite: str, reference: str = REFERENCE) -> list[dict]:
    """One row per agent for ``suite``: each column's :class:`Interval` and ``n``; sorted by
    mean avg JCT."""
    frame = results[results["suite"] == suite]
    ref = frame[frame["agent"] == reference]
    rows = []
    for agent, cells in frame.groupby("agent", sort=False):
        row = {"agent": agent, "n": len(cells)}
        for column, _, _ in SUITE_METRICS:
            values = _values(cells, ref, column)
            row[column] = _plain_mean(values) if column in PLAIN else (
                ratio_interval(values) if column in RATIOS else mean_interval(values))
        rows.append(row)
    return sorted(rows, key=lambda row: _sort_key(row, "avg_jct_s"))


def overall_rows(results: pd.DataFrame, reference: str = REFERENCE) -> list[dict]:
    """One row per agent over every suite (IQM over suites, stratified bootstrap); empty if
    ``reference`` was not run. Sorted by avg JCT ×reference."""
    if results[results["agent"] == reference].empty:
        return []
    suites = list(dict.fromkeys(results["suite"]))
    rows = []
    for agent in dict.fromkeys(results["agent"]):
        mine = results[results["agent"] == agent]
        row = {"agent": agent, "n": len(mine)}
        for column, _, _ in OVERALL_METRICS:
            per_suite = {}
            for suite in suites:
                cells = mine[mine["suite"] == suite]
                ref = results[(results["suite"] == suite) & (results["agent"] == reference)]
                per_suite[suite] = _values(cells, ref, column)
            row[column] = stratified_iqm_interval(per_suite, geometric=column in RATIOS)
        rows.append(row)
    return sorted(rows, key=lambda row: _sort_key(row, "avg_jct_ratio"))

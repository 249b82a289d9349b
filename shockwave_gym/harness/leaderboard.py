"""The leaderboard: every agent on a fixed split of the task suites (docs/SUITES.md), through
:func:`~shockwave_gym.harness.api.evaluate` (so it is resumable and runs on either backend),
summarised per suite and overall as a mean with a 95% Student-t confidence interval over the
split's traces.

One trace of a suite is one sample (its generator seed); every agent plays it with agent
seed 0. The interval is ``mean ± t(0.975, n-1) · s / sqrt(n)``, ``s`` the sample standard
deviation over the suite's ``n`` traces (no interval for ``n = 1``).

The overall rows pool every trace of the split: makespan and avg JCT as ratios to the
reference agent (FIFO) on the same trace, since raw seconds are not comparable across cluster
sizes; FTF, unfair fractions and decision latency as they are.

Outputs (:func:`write_leaderboard`): ``LEADERBOARD.md`` (the tables, each row with the command
that reproduces it) and ``LEADERBOARD.csv`` beside it (one row per cell, floats written with
``repr`` so they read back exactly).
"""

from __future__ import annotations

import csv
import io
import math
import platform
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from shockwave_gym.errors import InputError
from shockwave_gym.harness.agent_specs import is_labelled, parse_agent_spec
from shockwave_gym.harness.store import write_atomic
from shockwave_gym.traces.suites import (
    SplitEntry,
    entry_trace,
    get_suite,
    resolve_suites,
    split_entries,
)

#: ``--quick``: the first traces of a few cheap suites (CI): two each, so those rows still have
#: an interval, and the authors' canonical trace alone.
QUICK_SUITES: dict[str, int] = {"small-light": 2, "medium-nominal": 2, "static-only": 2, "canonical": 1}
#: Reference agent of the overall ratios.
REFERENCE = "fifo"

#: (column, heading, format) of the leaderboard's metrics, in table order.
METRICS: tuple[tuple[str, str, str], ...] = (
    ("makespan_s", "makespan (s)", "{:,.0f}"),
    ("avg_jct_s", "avg JCT (s)", "{:,.0f}"),
    ("worst_ftf", "worst FTF ρ static", "{:.2f}"),
    ("worst_ftf_themis", "worst FTF ρ Themis", "{:.2f}"),
    ("unfair_fraction", "unfair static", "{:.1%}"),
    ("unfair_fraction_themis", "unfair Themis", "{:.1%}"),
    ("decision_ms", "decision (ms/round)", "{:.2f}"),
)
#: Overall table: makespan and JCT relative to the reference on the same trace.
OVERALL_METRICS: tuple[tuple[str, str, str], ...] = (
    ("makespan_ratio", f"makespan ×{REFERENCE}", "{:.3f}"),
    ("avg_jct_ratio", f"avg JCT ×{REFERENCE}", "{:.3f}"),
    *METRICS[2:],
)
#: Per-cell columns of LEADERBOARD.csv (all deterministic but the timing ones).
CSV_COLUMNS = ("suite", "trace", "trace_seed", "agent", "gpus", "makespan_s", "avg_jct_s", "worst_ftf",
               "worst_ftf_themis", "unfair_fraction", "unfair_fraction_themis", "rounds", "completed_jobs",
               "decision_ms", "wall_s")


@dataclass(frozen=True)
class LeaderboardRun:
    """What was run: the split's entries, the agent specs as typed, and the results frame
    (one row per cell, with ``suite``, ``trace_seed`` and ``decision_ms`` columns)."""

    split: str
    quick: bool
    suites: tuple[str, ...] | None
    agents: tuple[str, ...]
    entries: tuple[SplitEntry, ...]
    results: pd.DataFrame
    wall_s: float
    cells_run: int


def leaderboard_entries(split: str = "test", suites: str | Iterable[str] | None = None,
                        quick: bool = False) -> list[SplitEntry]:
    """The traces a leaderboard runs: the split's fixed list (``quick``: the
    :data:`QUICK_SUITES` subset), optionally restricted to ``suites``."""
    chosen = [s.name for s in resolve_suites(suites)]
    if quick:
        entries = []
        for name in QUICK_SUITES:
            if name in chosen:
                entries += split_entries([name], split)[:QUICK_SUITES[name]]
        if not entries:
            raise InputError(f"--quick runs only {', '.join(QUICK_SUITES)}; none of them is in --suites")
        return entries
    return split_entries(chosen, split)


def agent_commands(agents: Iterable[str]) -> dict[str, str]:
    """Label -> the ``--agents NAME`` / ``--agent SPEC`` words that select that agent alone."""
    from shockwave_agents import available_agents

    words: dict[str, str] = {}
    for item in agents:
        if is_labelled(item):
            label, _, _ = parse_agent_spec(item)
            words[label] = f"--agent {shlex.quote(item)}"
            continue
        for name in (part.strip() for part in item.split(",")):
            for one in available_agents() if name == "all" else [name] if name else []:
                label = one.rpartition(":")[2] if ":" in one else one
                words.setdefault(label, f"--agents {shlex.quote(one)}")
    return words


def run_leaderboard(split: str = "test", *, suites: str | Iterable[str] | None = None,
                    agents: Iterable[str] = ("all",), quick: bool = False, out: str | Path = "leaderboard_out",
                    backend: str = "process", workers: int | None = None, force: bool = False,
                    progress: bool | None = None, agent_options: Mapping[str, dict] | None = None) -> LeaderboardRun:
    """Run every agent on the split's traces (resumable: cells saved in ``out`` are reused)."""
    import time

    from shockwave_gym.harness.api import evaluate

    if split == "train":
        raise InputError("the leaderboard runs a fixed split: validation or test")
    agents = tuple(agents)
    entries = leaderboard_entries(split, suites, quick)
    traces = [entry_trace(entry) for entry in entries]
    gpus = {trace.name: get_suite(entry.suite).gpus for entry, trace in zip(entries, traces, strict=True)}
    start = time.perf_counter()
    results = evaluate(list(agents), traces, gpus=gpus, seeds=(0,), out=out, backend=backend, workers=workers,
                       force=force, reference=REFERENCE, figures=False, progress=progress,
                       command=leaderboard_command(split, suites, quick, None), agent_options=agent_options)
    wall_s = time.perf_counter() - start
    by_trace = {entry.trace_name: entry for entry in entries}
    results["suite"] = [by_trace[name].suite for name in results["trace"]]
    results["trace_seed"] = ["" if by_trace[name].seed is None else str(by_trace[name].seed) for name in results["trace"]]
    results["decision_ms"] = 1000.0 * results["decision_wall_s"] / results["rounds"].clip(lower=1)
    run_now = results.attrs.get("run_now", set())  # new cells and stored ones recomputed (not trusted)
    cells_run = sum(key in run_now for key in results["key_hash"])
    chosen = None if suites is None else tuple(s.name for s in resolve_suites(suites))
    return LeaderboardRun(split, quick, chosen, agents, tuple(entries), results, wall_s, cells_run)


def leaderboard_command(split: str, suites, quick: bool, agent_words: str | None) -> str:
    """The command line that runs (and so reproduces) one selection."""
    words = ["shockwave-gym", "leaderboard", "--split", split]
    if quick:
        words.append("--quick")
    if suites is not None:
        names = [s.name for s in resolve_suites(suites)]
        words += ["--suites", ",".join(names)]
    text = shlex.join(words)
    return f"{text} {agent_words}" if agent_words else text


# -- statistics --------------------------------------------------------------------------

def t_interval(values: Iterable[float], confidence: float = 0.95) -> tuple[float, float, int]:
    """(mean, half-width, n) of a Student-t interval; half-width NaN for n < 2; NaN values
    (an unfinished episode's metric) are left out."""
    from scipy import stats

    data = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    n = len(data)
    if n == 0:
        return math.nan, math.nan, 0
    mean = math.fsum(data) / n
    if n < 2:
        return mean, math.nan, n
    variance = math.fsum((x - mean) ** 2 for x in data) / (n - 1)
    return mean, float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * math.sqrt(variance / n), n


def format_interval(mean: float, half: float, fmt: str) -> str:
    """``"12,345 ± 678"``; ``"12,345"`` without an interval; ``"n/a"`` without data."""
    if math.isnan(mean):
        return "n/a"
    if math.isnan(half):
        return fmt.format(mean)
    return f"{fmt.format(mean)} ± {fmt.format(half)}"


def suite_rows(results: pd.DataFrame, suite: str) -> list[dict]:
    """One row per agent for ``suite``: each metric's (mean, half-width), and n; sorted by
    mean avg JCT."""
    rows = []
    frame = results[results["suite"] == suite]
    for agent, cells in frame.groupby("agent", sort=False):
        row = {"agent": agent, "n": len(cells)}
        for column, _, _ in METRICS:
            mean, half, _ = t_interval(cells[column])
            row[column] = (mean, half)
        rows.append(row)
    return sorted(rows, key=lambda r: (math.inf if math.isnan(r["avg_jct_s"][0]) else r["avg_jct_s"][0], r["agent"]))


def overall_rows(results: pd.DataFrame, reference: str = REFERENCE) -> list[dict]:
    """One row per agent over every trace: makespan and JCT as ratios to ``reference`` on the
    same trace (empty if ``reference`` was not run)."""
    ref = results[results["agent"] == reference].set_index("trace")
    if ref.empty:
        return []
    rows = []
    for agent, cells in results.groupby("agent", sort=False):
        cells = cells[cells["trace"].isin(ref.index)]
        ratios = {
            "makespan_ratio": cells["makespan_s"].to_numpy() / ref.loc[cells["trace"], "makespan_s"].to_numpy(),
            "avg_jct_ratio": cells["avg_jct_s"].to_numpy() / ref.loc[cells["trace"], "avg_jct_s"].to_numpy(),
        }
        row = {"agent": agent, "n": len(cells)}
        for column, _, _ in OVERALL_METRICS:
            mean, half, _ = t_interval(ratios[column] if column in ratios else cells[column])
            row[column] = (mean, half)
        rows.append(row)
    return sorted(rows, key=lambda r: (r["avg_jct_ratio"][0], r["agent"]))


# -- writing -----------------------------------------------------------------------------

def _table(rows: list[dict], metrics, commands: dict[str, str]) -> list[str]:
    head = "| agent | " + " | ".join(h for _, h, _ in metrics) + " | n | command |"
    lines = [head, "|" + "---|" * (len(metrics) + 3)]
    for row in rows:
        cells = [format_interval(*row[column], fmt) for column, _, fmt in metrics]
        lines.append(f"| `{row['agent']}` | " + " | ".join(cells) + f" | {row['n']} | `{commands[row['agent']]}` |")
    return lines


def leaderboard_markdown(run: LeaderboardRun) -> str:
    """LEADERBOARD.md for ``run``."""
    results = run.results
    words = agent_commands(run.agents)
    suites = list(dict.fromkeys(entry.suite for entry in run.entries))
    full = leaderboard_command(run.split, run.suites, run.quick, None)
    agent_flags = "" if run.agents == ("all",) else " ".join(
        f"--agent {shlex.quote(item)}" if is_labelled(item) else f"--agents {shlex.quote(item)}" for item in run.agents)
    lines = [
        f"# Leaderboard: {run.split} split{' (quick subset)' if run.quick else ''}",
        "",
        "<!-- generated by `shockwave-gym leaderboard`; do not edit by hand -->",
        "",
        f"Every agent on the {run.split} split of the task suites ([SUITES.md](SUITES.md)): "
        f"{len(run.entries)} traces in {len(suites)} suites, agent seed 0, through the evaluation harness "
        "([HARNESS.md](HARNESS.md)). Regenerate the whole file with",
        "",
        "```sh",
        f"{full}{' ' + agent_flags if agent_flags else ''} --out leaderboard_out --doc docs/LEADERBOARD.md",
        "```",
        "",
        "(resumable: a re-run reuses the cells saved in `--out`; `--backend ray` runs the same cells on Ray). "
        "Each row's command runs that row alone (it writes `leaderboard_out/LEADERBOARD.md`).",
        "",
        "**Statistics.** Each cell is a mean with a 95% confidence interval over the suite's traces "
        "(one trace per generator seed): mean ± t(0.975, n−1)·s/√n, Student's t, s the sample standard "
        "deviation, n the number of traces. Lower is better for every metric. ρ is finish-time fairness "
        "(JCT / (isolated time × contention)); *static* uses the paper's contention max(1, N/G), *Themis* "
        "the mean number of jobs active during the job's life ([METRICS.md](METRICS.md)); *unfair* is the "
        "share of jobs with ρ > 1.05. *Decision* is the agent's wall time per round in milliseconds "
        "(machine-dependent). The other agents' numbers reproduce exactly. Shockwave's three variants "
        "can differ between runs on a loaded machine ([SUITES.md](SUITES.md), \"Cost\", has measured cases): "
        "a main solve that reaches the planner's wall-clock limit (`time_limit_s`, 10 s) keeps the best "
        "plan found by then, which depends on the machine's speed. For reproducible Shockwave cells, "
        "lift the limits: `--agent shockwave-exact=shockwave:time_limit_s=1000,rank_time_limit_s=1000` "
        "(slower, and not the default agent). "
        "Rows are sorted by avg JCT.",
        "",
        f"Generated on `{platform.node()}` ({platform.machine()}, Python {platform.python_version()}): "
        f"{len(results)} cells, this run {run.wall_s / 60:.1f} min wall ({run.cells_run} cells run, "
        f"the rest reused from `--out`); the cells' own wall times sum to "
        f"{results['wall_s'].sum() / 60:.1f} min. Per-cell numbers: [LEADERBOARD.csv](LEADERBOARD.csv).",
        "",
    ]
    overall = overall_rows(results)
    if overall:
        lines += [
            "## Overall",
            "",
            f"All {len(run.entries)} traces pooled; makespan and avg JCT are ratios to `{REFERENCE}` on the same trace.",
            "",
            *_table(overall, OVERALL_METRICS, {a: f"{full} {w}" for a, w in words.items()}),
            "",
        ]
    for suite in suites:
        info = get_suite(suite)
        names = [e.trace_name for e in run.entries if e.suite == suite]
        command = leaderboard_command(run.split, [suite], run.quick, None)
        lines += [
            f"## {suite}",
            "",
            f"`{info.cluster}` ({info.gpus} GPUs), {info.load} load; {info.stresses}. "
            f"Traces: {', '.join(f'`{n}`' for n in names)}.",
            "",
            *_table(suite_rows(results, suite), METRICS, {a: f"{command} {w}" for a, w in words.items()}),
            "",
        ]
    return "\n".join(lines)


def leaderboard_csv(results: pd.DataFrame) -> str:
    """One row per cell; floats as ``repr`` (exact), empty for NaN."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for record in results.to_dict("records"):
        row = []
        for column in CSV_COLUMNS:
            value = record[column]
            if isinstance(value, float):
                row.append("" if math.isnan(value) else repr(value))
            else:
                row.append("" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value))
        writer.writerow(row)
    return buffer.getvalue()


def write_leaderboard(run: LeaderboardRun, doc: str | Path) -> tuple[Path, Path]:
    """Write ``doc`` (markdown) and the per-cell CSV beside it (same stem, ``.csv``)."""
    doc = Path(doc)
    doc.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(doc, leaderboard_markdown(run))
    csv_path = doc.with_suffix(".csv")
    write_atomic(csv_path, leaderboard_csv(run.results))
    return doc, csv_path

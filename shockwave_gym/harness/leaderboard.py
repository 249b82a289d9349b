"""The leaderboard: every agent on a fixed split of the task suites (docs/SUITES.md), through
:func:`~shockwave_gym.harness.api.evaluate` (so it is resumable and runs on either backend),
summarised per suite and overall (:mod:`~shockwave_gym.harness.board_stats`: paired ratios to
FIFO with bootstrap intervals per suite, an interquartile mean over suites with a stratified
bootstrap overall).

One trace of a suite is one sample (its generator seed); every agent plays it with agent
seed 0.

Outputs (:func:`write_leaderboard`): ``LEADERBOARD.md`` (the tables, each row with the command
that reproduces it) and ``LEADERBOARD.csv`` beside it (one row per cell, floats written with
``repr`` so they read back exactly) hold only results a re-run reproduces byte for byte on any
machine at any load; the machine-dependent figures (decision latency, wall times, host) go to
``LEADERBOARD_TIMING.csv`` beside them (:data:`TIMING_COLUMNS`).
"""

from __future__ import annotations

import csv
import io
import math
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from shockwave_gym.errors import InputError
from shockwave_gym.harness.agent_specs import is_labelled, parse_agent_spec
from shockwave_gym.harness.board_stats import (
    OVERALL_METRICS,
    REFERENCE,
    SUITE_METRICS,
    add_task_costs,
    format_interval,
    overall_rows,
    suite_rows,
)
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
#: Per-cell columns of LEADERBOARD.csv: results only, reproduced byte for byte by a re-run.
CSV_COLUMNS = ("suite", "trace", "trace_seed", "agent", "gpus", "makespan_s", "avg_jct_s", "rho_mean", "rho_p95",
               "rho_max", "rho_over_1_05", "rho_over_1_25", "gang_ftf_mean", "gang_ftf_p95", "gang_ftf_max",
               "gang_ftf_over_1_05", "worst_ftf", "worst_ftf_themis", "unfair_fraction", "unfair_fraction_themis",
               "rounds", "completed_jobs")
#: Per-cell columns of LEADERBOARD_TIMING.csv: what depends on the machine and its load
#: (``decision_ms`` the agent's wall time per round, ``wall_s`` the cell's, ``host`` where it ran).
TIMING_COLUMNS = ("suite", "trace", "agent", "decision_ms", "wall_s", "host")
#: Name of the timing file, beside the markdown.
TIMING_SUFFIX = "_TIMING.csv"


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
    #: cells an agent cannot play (a learned policy outside the exact regime): (suite, trace,
    #: agent) -> the reason; left out of the results and of every aggregate
    not_applicable: Mapping[tuple[str, str, str], str] = field(default_factory=dict)


def leaderboard_entries(split: str = "test", suites: str | Iterable[str] | None = None,
                        quick: bool = False) -> list[SplitEntry]:
    """The traces a leaderboard runs: the split's fixed list (``quick``: the
    :data:`QUICK_SUITES` subset), optionally restricted to ``suites``."""
    chosen = [s.name for s in resolve_suites(suites) if suites is not None or s.leaderboard]
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
    from shockwave_gym.harness.api import CellsFailed

    agents = tuple(agents)
    entries = leaderboard_entries(split, suites, quick)
    traces = [entry_trace(entry) for entry in entries]
    gpus = {trace.name: get_suite(entry.suite).gpus for entry, trace in zip(entries, traces, strict=True)}
    # each suite's cluster types and information regime reach its cells (absent: V100s, exact)
    clusters = {e.trace_name: e.cluster for e in entries if get_suite(e.suite).heterogeneous}
    regimes = {e.trace_name: e.regime for e in entries if not get_suite(e.suite).exact}
    by_trace = {entry.trace_name: entry for entry in entries}
    start = time.perf_counter()
    not_applicable: dict[tuple[str, str, str], str] = {}
    try:
        results = evaluate(list(agents), traces, gpus=gpus, seeds=(0,), out=out, backend=backend, workers=workers,
                           force=force, reference=REFERENCE, figures=False, progress=progress,
                           command=leaderboard_command(split, suites, quick, None), agent_options=agent_options,
                           cluster=clusters or None, regime=regimes or None)
    except CellsFailed as failed:
        for label, error in failed.errors.items():
            agent, trace, _ = label.rsplit(" / ", 2)
            # a refusal (harness.cells): "cannot run in the 'unknown' regime: ..." on a regime
            # suite, "cannot run on this cluster: ..." on a typed one; the first clause is the reason
            if (trace not in regimes and trace not in clusters) or not error.startswith(f"agent {agent!r} cannot run "):
                raise
            reason = error.splitlines()[0].removeprefix(f"agent {agent!r} ").split(";")[0]
            not_applicable[(by_trace[trace].suite, trace, agent)] = reason
        results = failed.results
        if results.empty:
            raise InputError(f"no cell can run: {'; '.join(sorted(set(not_applicable.values())))}") from None
    wall_s = time.perf_counter() - start
    results["suite"] = [by_trace[name].suite for name in results["trace"]]
    results["trace_seed"] = ["" if by_trace[name].seed is None else str(by_trace[name].seed) for name in results["trace"]]
    results["decision_ms"] = 1000.0 * results["decision_wall_s"] / results["rounds"].clip(lower=1)
    add_task_costs(results, traces)
    run_now = results.attrs.get("run_now", set())  # new cells and stored ones recomputed (not trusted)
    cells_run = sum(key in run_now for key in results["key_hash"])
    chosen = None if suites is None else tuple(s.name for s in resolve_suites(suites))
    return LeaderboardRun(split, quick, chosen, agents, tuple(entries), results, wall_s, cells_run, not_applicable)


def _complete_suites(run: LeaderboardRun) -> list[str]:
    """The suites in which no cell is :attr:`LeaderboardRun.not_applicable`."""
    missing = {suite for suite, _, _ in run.not_applicable}
    return [suite for suite in dict.fromkeys(e.suite for e in run.entries) if suite not in missing]


def _complete_agents(run: LeaderboardRun) -> list[str]:
    """The agents that played every cell."""
    missing = {agent for _, _, agent in run.not_applicable}
    return [agent for agent in dict.fromkeys(run.results["agent"]) if agent not in missing]


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


# -- writing -----------------------------------------------------------------------------

def _table(rows: list[dict], metrics, commands: dict[str, str]) -> list[str]:
    head = "| agent | " + " | ".join(h for _, h, _ in metrics) + " | n | command |"
    lines = [head, "|" + "---|" * (len(metrics) + 3)]
    for row in rows:
        cells = [format_interval(row[column], fmt) for column, _, fmt in metrics]
        lines.append(f"| `{row['agent']}` | " + " | ".join(cells) + f" | {row['n']} | `{commands[row['agent']]}` |")
    return lines


def leaderboard_markdown(run: LeaderboardRun) -> str:
    """LEADERBOARD.md for ``run``: the preamble, the Overall table (when the reference agent
    ran), then one table per suite."""
    results = run.results
    words = agent_commands(run.agents)
    suites = list(dict.fromkeys(entry.suite for entry in run.entries))
    full = leaderboard_command(run.split, run.suites, run.quick, None)
    lines = _preamble(run, len(suites), full)
    if run.quick:
        lines += [quick_note(), ""]
    complete = _complete_suites(run)
    overall = overall_rows(results[results["suite"].isin(complete)])
    if overall:
        scope = f"{len(suites)} suites, {len(run.entries)} traces"
        if run.not_applicable:
            traces = sum(e.suite in complete for e in run.entries)
            scope = (f"The {len(complete)} suite{'s' if len(complete) != 1 else ''}, {traces} traces, in which every "
                     "agent runs (the suites with *n/a* rows are in the next table, without those agents)")
        lines += [
            "## Overall",
            "",
            f"{scope}; each column the IQM over suites with a stratified "
            f"bootstrap interval; makespan, avg JCT and the balanced task's cost as paired ratios to `{REFERENCE}` "
            "on the same trace.",
            "",
            *_table(overall, OVERALL_METRICS, {a: f"{full} {w}" for a, w in words.items()}),
            "",
        ]
        if run.not_applicable:
            agents = _complete_agents(run)
            every = overall_rows(results[results["agent"].isin(agents)])
            lines += [
                "## Overall, every suite",
                "",
                f"{len(suites)} suites, {len(run.entries)} traces, the agents that run in every suite; as above.",
                "",
                *_table(every, OVERALL_METRICS, {a: f"{full} {w}" for a, w in words.items()}),
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
            *_table(suite_rows(results, suite), SUITE_METRICS, {a: f"{command} {w}" for a, w in words.items()}),
            *_not_applicable_rows(run, suite, {a: f"{command} {w}" for a, w in words.items()}),
            "",
        ]
    return "\n".join(lines)


def _not_applicable_rows(run: LeaderboardRun, suite: str, commands: dict[str, str]) -> list[str]:
    """The rows of the agents that cannot play ``suite`` (*n/a*, n = 0) and a footnote with
    each one's reason; nothing when every agent played it."""
    by_reason: dict[str, list[str]] = {}
    for (where, _, agent), reason in run.not_applicable.items():
        if where == suite and agent not in by_reason.setdefault(reason, []):
            by_reason[reason].append(agent)
    if not by_reason:
        return []
    blanks = " | ".join("n/a" for _ in SUITE_METRICS)
    agents = list(dict.fromkeys(agent for names in by_reason.values() for agent in names))
    lines = [f"| `{agent}` | {blanks} | 0 | `{commands[agent]}` |" for agent in agents]
    notes = "; ".join(f"{', '.join(f'`{a}`' for a in names)}: {reason}" for reason, names in by_reason.items())
    return [*lines, "", f"*n/a*: not applicable, not counted in any aggregate ({notes})."]


def _preamble(run: LeaderboardRun, num_suites: int, full: str) -> list[str]:
    """LEADERBOARD.md's title, the command that regenerates it, and the paragraphs on the
    statistics and on reproducibility (``full``: the command of the whole selection)."""
    agent_flags = "" if run.agents == ("all",) else " ".join(
        f"--agent {shlex.quote(item)}" if is_labelled(item) else f"--agents {shlex.quote(item)}" for item in run.agents)
    return [
        f"# Leaderboard: {run.split} split{' (quick subset)' if run.quick else ''}",
        "",
        "<!-- generated by `shockwave-gym leaderboard`; do not edit by hand -->",
        "",
        f"Every agent on the {run.split} split of the task suites ([SUITES.md](SUITES.md)): "
        f"{len(run.entries)} traces in {num_suites} suites, agent seed 0, through the evaluation harness "
        "([HARNESS.md](HARNESS.md)). Regenerate the whole file with",
        "",
        "```sh",
        f"{full}{' ' + agent_flags if agent_flags else ''} --out leaderboard_out --doc docs/LEADERBOARD.md",
        "```",
        "",
        "(resumable: a re-run reuses the cells saved in `--out`; `--backend ray` runs the same cells on Ray). "
        "Each row's command runs that row alone (it writes `leaderboard_out/LEADERBOARD.md`).",
        "",
        "**Statistics.** Lower is better for every metric; each interval is a 95% percentile bootstrap "
        "(seeded). Per suite, one trace per generator seed: makespan and avg JCT in seconds are plain "
        f"means; *×{REFERENCE}* is the geometric mean of the agent's per-trace ratio to `{REFERENCE}` on the "
        "same trace (paired), with its interval over the traces; *balanced* is the balanced task's cost "
        "(avg JCT, fair-share ρ and makespan with fixed weights, [TASKS.md](TASKS.md)); every other column "
        "is a mean over the "
        "traces with its interval. **Overall**, suites count equally: each column is the interquartile "
        "mean (IQM) over suites of the suites' means, with a stratified bootstrap that resamples each "
        "suite's traces within the suite (Agarwal et al., NeurIPS 2021); no interval pools traces of "
        "different suites. *Mean ρ* and *p95 ρ* are "
        "the fair-share ρ = JCT / T_fair, T_fair a job's time in the policy-independent fluid equal-share "
        "reference ([METRICS.md](METRICS.md), the metric card); the `fair-share` agent runs that reference in "
        "rounds, so its row shows what rounds and restarts cost by themselves. The Shockwave paper's two "
        "measures follow, ρ = JCT / (isolated time × contention), gang-blind: *static* uses the contention "
        "max(1, N/G), *contention* the mean number of jobs active during the job's life; *unfair* is the "
        "share of jobs with ρ > 1.05. Rows are sorted by avg JCT.",
        "",
        "**Reproducibility.** This file and [LEADERBOARD.csv](LEADERBOARD.csv) (one row per cell) hold "
        "only results: a re-run writes them byte for byte, at any machine load (Shockwave's solves stop "
        "on work limits, not on the clock: [SOLVERS.md](SOLVERS.md), \"Work limits\"). Decision latency "
        "(the agent's wall time per round) and wall times depend on the machine; they are in "
        f"[LEADERBOARD_TIMING.csv](LEADERBOARD{TIMING_SUFFIX}), written by the same command.",
        "",
    ]


def quick_note() -> str:
    """What a ``--quick`` interval means: few traces per suite, so it says little."""
    sizes = sorted({n for n in QUICK_SUITES.values() if n > 1})
    return (f"**Quick subset.** n = {', '.join(map(str, sizes))} traces per suite (1 for `canonical`): a "
            f"bootstrap interval over {sizes[0]} traces only spans their values. It checks that the pipeline "
            "runs; it is not a figure to report. Run the full split for numbers (docs/REPORTING.md).")


def summary_text(run: LeaderboardRun) -> str:
    """The leaderboard in brief for the terminal: the Overall table (or, when the reference
    was not run, each suite's) without the command column."""
    complete = _complete_suites(run)
    overall = overall_rows(run.results[run.results["suite"].isin(complete)])
    if overall:
        traces = sum(e.suite in complete for e in run.entries)
        blocks = [(f"Overall ({traces} traces; IQM over suites; makespan, JCT and balanced cost as ratios to {REFERENCE})",
                   overall, OVERALL_METRICS)]
        if run.not_applicable:
            blocks[0] = (blocks[0][0].replace("traces;", f"traces of the {len(complete)} suites every agent runs;"),
                         overall, OVERALL_METRICS)
    else:
        suites = dict.fromkeys(entry.suite for entry in run.entries)
        blocks = [(suite, suite_rows(run.results, suite), SUITE_METRICS) for suite in suites]
    lines = []
    for title, rows, metrics in blocks:
        table = [["agent", *(h for _, h, _ in metrics), "n"]]
        table += [[row["agent"], *(format_interval(row[c], fmt) for c, _, fmt in metrics), str(row["n"])]
                  for row in rows]
        widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
        lines += ["", title + " (95% bootstrap interval in brackets; lower is better):"]
        lines += ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in table]
    if run.not_applicable:
        agents = sorted({agent for _, _, agent in run.not_applicable})
        lines += ["", f"Not applicable, left out: {len(run.not_applicable)} cells of {', '.join(agents)} "
                      "(outside the exact regime, or on a cluster they cannot schedule; LEADERBOARD.md lists "
                      "them with the reason)."]
    if run.quick:
        lines += ["", quick_note().replace("**", "")]
    return "\n".join(lines[1:])


def _csv_text(results: pd.DataFrame, columns: tuple[str, ...]) -> str:
    """One row per cell of ``columns``; floats as ``repr`` (exact), empty for NaN or None."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for record in results.to_dict("records"):
        row = []
        for column in columns:
            value = record[column]
            if isinstance(value, float):
                row.append("" if math.isnan(value) else repr(value))
            else:
                row.append("" if value is None else str(value))
        writer.writerow(row)
    return buffer.getvalue()


def leaderboard_csv(results: pd.DataFrame) -> str:
    """LEADERBOARD.csv: one row per cell of :data:`CSV_COLUMNS` (results only)."""
    return _csv_text(results, CSV_COLUMNS)


def timing_csv(results: pd.DataFrame) -> str:
    """LEADERBOARD_TIMING.csv: one row per cell of :data:`TIMING_COLUMNS` (machine dependent)."""
    return _csv_text(results, TIMING_COLUMNS)


def timing_path(doc: str | Path) -> Path:
    """The timing file beside ``doc``: ``LEADERBOARD.md`` -> ``LEADERBOARD_TIMING.csv``."""
    doc = Path(doc)
    return doc.with_name(doc.stem + TIMING_SUFFIX)


def output_paths(doc: str | Path) -> tuple[Path, Path, Path]:
    """The files :func:`write_leaderboard` writes for ``doc``: the markdown, the per-cell CSV
    beside it (same stem, ``.csv``) and the timing CSV (:func:`timing_path`)."""
    doc = Path(doc)
    return doc, doc.with_suffix(".csv"), timing_path(doc)


def write_leaderboard(run: LeaderboardRun, doc: str | Path) -> tuple[Path, Path, Path]:
    """Write :func:`output_paths` of ``doc``: the markdown, the per-cell CSV, the timing CSV."""
    doc, csv_path, timing = output_paths(doc)
    doc.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(doc, leaderboard_markdown(run))
    write_atomic(csv_path, leaderboard_csv(run.results))
    write_atomic(timing, timing_csv(run.results))
    return doc, csv_path, timing

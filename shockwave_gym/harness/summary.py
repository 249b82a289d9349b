"""The paper-style summary: each agent's metrics, averaged over seeds, relative to a
reference agent (``value / reference value``; lower is better for all of them).

Fairness comes first as the fair-share ρ = JCT / T_fair (``rho_*``; T_fair from the
policy-independent fluid equal-share reference, ``docs/METRICS.md``) with the gang-aware
contention ρ (``gang_ftf_*``), then the Shockwave paper's two measures side by side: static
contention ``max(1, N/G)`` (``worst_ftf``, ``unfair_fraction``) and the contention of the jobs
active during each job's life (``*_themis``); both leave out the gang.

Printed with rich by the CLI, as three blocks per trace that fit 80 columns (agent names and
ratios are never cut), and written as one table in ``summary.md``.
"""

from __future__ import annotations

import math

import pandas as pd

#: The headline metrics: (column, heading, how to show a value): makespan and JCT, the
#: fair-share ρ's mean and p95, and the paper's two static-contention figures. The figures
#: draw these.
HEADLINE = (
    ("makespan_s", "makespan (s)", "{:,.0f}"),
    ("avg_jct_s", "avg JCT (s)", "{:,.0f}"),
    ("rho_mean", "mean ρ (fair share)", "{:.2f}"),
    ("rho_p95", "p95 ρ (fair share)", "{:.2f}"),
    ("worst_ftf", "worst FTF ρ (paper, static)", "{:.2f}"),
    ("unfair_fraction", "unfair (paper, static ρ>1.05)", "{:.1%}"),
)
#: The fair-share ρ and the gang-aware contention ρ: (column, heading in summary.md,
#: heading on a terminal, format). Shown before the paper's measures.
FAIR_SHARE = (
    ("rho_mean", "ρ mean", "ρ\nmean", "{:.2f}"),
    ("rho_p95", "ρ p95", "ρ\np95", "{:.2f}"),
    ("rho_max", "ρ max", "ρ\nmax", "{:.2f}"),
    ("rho_over_1_05", "ρ>1.05", "ρ\n>1.05", "{:.1%}"),
    ("rho_over_1_25", "ρ>1.25", "ρ\n>1.25", "{:.1%}"),
    ("gang_ftf_mean", "gang-aware ρ mean", "gang ρ\nmean", "{:.2f}"),
)
#: The Shockwave paper's two measures, static first: (column, heading in summary.md, heading
#: on a terminal). "contention": N replaced by the mean number of active jobs in each job's life.
FAIRNESS = (
    ("worst_ftf", "worst FTF ρ static", "worst ρ\nstatic"),
    ("worst_ftf_themis", "worst FTF ρ contention", "worst ρ\ncontention"),
    ("unfair_fraction", "unfair (ρ>1.05) static", "unfair\nstatic"),
    ("unfair_fraction_themis", "unfair (ρ>1.05) contention", "unfair\ncontention"),
)
#: Every metric shown with a ratio to the reference, and its format.
RATIOED = (
    ("makespan_s", "{:,.0f}"),
    ("avg_jct_s", "{:,.0f}"),
    ("avg_jct_admission_s", "{:,.0f}"),
    ("rho_mean", "{:.2f}"),
    ("rho_p95", "{:.2f}"),
    ("worst_ftf", "{:.2f}"),
    ("worst_ftf_themis", "{:.2f}"),
    ("unfair_fraction", "{:.1%}"),
    ("unfair_fraction_themis", "{:.1%}"),
)
#: Shown without ratios.
EXTRA = (("utilization", "util.", "{:.1%}"), ("wall_s", "wall (s)", "{:.1f}"))
_FORMATS = dict(RATIOED) | {column: fmt for column, _, fmt in EXTRA}
#: The fair-share columns summary.md shows as plain values (the rest carry ratios).
_PLAIN = tuple(column for column, _, _, _ in FAIR_SHARE if column not in _FORMATS)

#: What the table's words mean, one short line each (printed under it and in summary.md).
LEGEND = (
    "ρ (fair share) = JCT / T_fair, T_fair = time in the fluid equal-share reference.",
    "gang-aware ρ = JCT / (isolated time × max(1, n × gang / G)).",
    "paper's ρ = JCT / (isolated time × contention); unfair: share with ρ > 1.05.",
    "static: contention max(1, N/G) (N jobs in the trace, G GPUs); contention:",
    "N = the mean count of jobs active in the job's life. Both leave out the gang.",
    "n: seeds run (an agent that does not use the seed runs once).",
)
#: summary.md only: the JCT from admission (the terminal table keeps 80 columns).
ADMISSION_LEGEND = ("avg JCT from admission: JCT counted from the round boundary at which a job "
                    "is admitted, an extra view (avg JCT counts from arrival, the authors' basis).")


def choose_reference(agents: list[str], reference: str | None) -> tuple[str, str]:
    """The agent to normalise to, and a note saying why when it is not the one asked for."""
    if not agents:
        raise ValueError("no agents in the results")
    if reference in agents:
        return reference, ""
    return agents[0], (
        f"reference agent {reference!r} is not among the results; normalised to "
        f"the first agent, {agents[0]!r}"
    )


def summarise(results: pd.DataFrame, reference: str) -> pd.DataFrame:
    """One row per (trace, agent): seed-mean metrics, ``<metric>_rel`` ratios to
    ``reference`` on the same trace (NaN where the reference value is 0 or missing), and
    the number of seeds (``seeds``). Keeps the order in which traces and agents first appear."""
    columns = [c for c, _ in RATIOED] + list(_PLAIN) + [c for c, _, _ in EXTRA]
    frame = results.copy()
    for column in columns:
        frame[column] = pd.to_numeric(frame[column], errors="coerce") if column in frame else math.nan
    grouped = frame.groupby(["trace", "agent"], sort=False)
    table = grouped[columns].mean()
    table["seeds"] = grouped["seed"].nunique()
    table = table.reset_index()
    for column, _ in RATIOED:
        ref = table[table["agent"] == reference].set_index("trace")[column]
        denominator = table["trace"].map(ref)
        table[f"{column}_rel"] = (table[column] / denominator).where(denominator > 0)
    return table


def _value(value, fmt: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return fmt.format(value)


def _with_ratio(record: dict, column: str, template: str) -> str:
    """``value`` and its ratio to the reference, e.g. ``template="{} (×{})"``."""
    return template.format(_value(record[column], _FORMATS[column]), _value(record[f"{column}_rel"], "{:.2f}"))


def summary_markdown(table: pd.DataFrame, reference: str, note: str = "", *, command: str = "") -> str:
    """``summary.md``: the table, what it is relative to, and how to regenerate it."""
    header = (["trace", "agent", "makespan (s)", "avg JCT (s)", "avg JCT from admission (s)"]
              + [heading for _, heading, _, _ in FAIR_SHARE]
              + [heading for _, heading, _ in FAIRNESS]
              + [heading for _, heading, _ in EXTRA] + ["n"])
    rows = []
    for record in table.to_dict("records"):
        row = [str(record["trace"]), str(record["agent"])]
        row += [_with_ratio(record, column, "{} (×{})") for column in ("makespan_s", "avg_jct_s", "avg_jct_admission_s")]
        row += [_with_ratio(record, column, "{} (×{})") if column in _FORMATS else _value(record[column], fmt)
                for column, _, _, fmt in FAIR_SHARE]
        row += [_with_ratio(record, column, "{} (×{})") for column, _, _ in FAIRNESS]
        row += [_value(record[column], fmt) for column, _, fmt in EXTRA]
        rows.append(row + [str(record["seeds"])])
    lines = ["# Head-to-head summary", ""]
    lines.append(
        f"Mean over seeds; (×r) = value / value of **{reference}** on the same trace "
        "(lower is better). " + " ".join((*LEGEND, ADMISSION_LEGEND))
    )
    if note:
        lines += ["", f"Note: {note}."]
    lines += ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    if command:
        lines += ["", "Regenerate with:", "", "```bash", command, "```"]
    return "\n".join(lines) + "\n"


#: Agent names up to this long always stay on one line; longer ones fold.
NAME_WIDTH = 24


def _block(title: str, headings: list[str], rows: list[list[str]], bold: list[bool]):
    """A rich table without vertical rules, two spaces between columns. Number columns are
    as wide as their longest cell and never cut; an agent name longer than
    :data:`NAME_WIDTH` folds onto a second line rather than being cut."""
    from rich import box
    from rich.table import Table

    out = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False,
                pad_edge=False, padding=(0, 0, 0, 1))
    for index, heading in enumerate(headings):
        longest = max(len(text) for text in [*heading.split("\n"), *(row[index] for row in rows)])
        if index == 0:
            out.add_column(heading, overflow="fold", min_width=min(longest, NAME_WIDTH))
        else:
            out.add_column(heading, justify="right", no_wrap=True, min_width=longest)
    for row, strong in zip(rows, bold, strict=True):
        out.add_row(*row, style="bold" if strong else None)
    return out


def print_summary(table: pd.DataFrame, reference: str, note: str = "", console=None) -> None:
    """Print the table with rich (plain text when not on a terminal): per trace, a block of
    makespan, JCT and utilization, a block of the fair-share ρ (values), then a block of the
    paper's two measures."""
    from rich.console import Console

    console = console or Console()
    console.print(f"mean of n seeds; ×r: r = value / {reference}'s value (lower is better)")
    for trace, rows in table.groupby("trace", sort=False):
        records = rows.to_dict("records")
        bold = [record["agent"] == reference for record in records]
        speed = [
            [str(r["agent"]), _with_ratio(r, "makespan_s", "{} ×{}"), _with_ratio(r, "avg_jct_s", "{} ×{}"),
             *(_value(r[column], fmt) for column, _, fmt in EXTRA), str(r["seeds"])]
            for r in records
        ]
        console.print(_block(f"{trace}: makespan, JCT, utilization", ["agent", "makespan (s)", "avg JCT (s)", "util.", "wall (s)", "n"],
                             speed, bold))
        fair_share = [[str(r["agent"]), *(_value(r[column], fmt) for column, _, _, fmt in FAIR_SHARE)]
                      for r in records]
        console.print()
        console.print(_block(f"{trace}: fair-share ρ = JCT / T_fair, and the gang-aware ρ",
                             ["agent", *(heading for _, _, heading, _ in FAIR_SHARE)], fair_share, bold))
        fairness = [[str(r["agent"]), *(_with_ratio(r, column, "{} ×{}") for column, _, _ in FAIRNESS)]
                    for r in records]
        console.print()
        console.print(_block(f"{trace}: the Shockwave paper's two measures",
                             ["agent", *(heading for _, _, heading in FAIRNESS)], fairness, bold))
        console.print()
    for line in LEGEND:
        console.print(line)
    if note:
        console.print(f"note: {note}")

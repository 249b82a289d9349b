"""The paper-style summary: each agent's metrics, averaged over seeds, relative to a
reference agent (``value / reference value``; lower is better for all of them).

Finish-time fairness is shown in both variants side by side (``docs/METRICS.md``): the
paper's static contention ``max(1, N/G)`` (``worst_ftf``, ``unfair_fraction``) and the
Themis-style contention of the jobs active during each job's life (``*_themis``).

Printed with rich by the CLI, as two blocks per trace that fit 80 columns (agent names and
ratios are never cut), and written as one table in ``summary.md``.
"""

from __future__ import annotations

import math

import pandas as pd

#: The paper's four headline metrics: (column, heading, how to show a value). The figures
#: draw these.
HEADLINE = (
    ("makespan_s", "makespan (s)", "{:,.0f}"),
    ("avg_jct_s", "avg JCT (s)", "{:,.0f}"),
    ("worst_ftf", "worst FTF ρ", "{:.2f}"),
    ("unfair_fraction", "unfair (ρ>1.05)", "{:.1%}"),
)
#: Both FTF variants, static first: (column, heading in summary.md, heading on a terminal).
FAIRNESS = (
    ("worst_ftf", "worst FTF ρ static", "worst ρ\nstatic"),
    ("worst_ftf_themis", "worst FTF ρ Themis", "worst ρ\nThemis"),
    ("unfair_fraction", "unfair (ρ>1.05) static", "unfair\nstatic"),
    ("unfair_fraction_themis", "unfair (ρ>1.05) Themis", "unfair\nThemis"),
)
#: Every metric shown with a ratio to the reference, and its format.
RATIOED = (
    ("makespan_s", "{:,.0f}"),
    ("avg_jct_s", "{:,.0f}"),
    ("avg_jct_admission_s", "{:,.0f}"),
    ("worst_ftf", "{:.2f}"),
    ("worst_ftf_themis", "{:.2f}"),
    ("unfair_fraction", "{:.1%}"),
    ("unfair_fraction_themis", "{:.1%}"),
)
#: Shown without ratios.
EXTRA = (("utilization", "util.", "{:.1%}"), ("wall_s", "wall (s)", "{:.1f}"))
_FORMATS = dict(RATIOED) | {column: fmt for column, _, fmt in EXTRA}

#: What the table's words mean, one short line each (printed under it and in summary.md).
LEGEND = (
    "ρ = JCT / (isolated time × contention); unfair = share of jobs with ρ > 1.05.",
    "static: contention max(1, N/G), the paper's (N jobs in the trace, G GPUs).",
    "Themis: as static, with N = the mean count of jobs active in the job's life.",
    "n: seeds run (an agent that does not use the seed runs once).",
)
#: summary.md only: the JCT on the authors' basis (the terminal table keeps 80 columns).
ADMISSION_LEGEND = ("avg JCT from admission: JCT counted from the round boundary at which a job "
                    "is admitted, the authors' basis (avg JCT counts from arrival).")


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
    columns = [c for c, _ in RATIOED] + [c for c, _, _ in EXTRA]
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
              + [heading for _, heading, _ in FAIRNESS]
              + [heading for _, heading, _ in EXTRA] + ["n"])
    rows = []
    for record in table.to_dict("records"):
        row = [str(record["trace"]), str(record["agent"])]
        row += [_with_ratio(record, column, "{} (×{})") for column in ("makespan_s", "avg_jct_s", "avg_jct_admission_s")]
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
    makespan, JCT and utilization, then a block of both FTF variants."""
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
        fairness = [[str(r["agent"]), *(_with_ratio(r, column, "{} ×{}") for column, _, _ in FAIRNESS)]
                    for r in records]
        console.print()
        console.print(_block(f"{trace}: finish-time fairness ρ, both variants",
                             ["agent", *(heading for _, _, heading in FAIRNESS)], fairness, bold))
        console.print()
    for line in LEGEND:
        console.print(line)
    if note:
        console.print(f"note: {note}")

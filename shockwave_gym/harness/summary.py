"""The paper-style summary: each agent's metrics, averaged over seeds, relative to a
reference agent (``value / reference value``; lower is better for all four).

Printed with rich by the CLI and written as ``summary.md``.
"""

from __future__ import annotations

import math

import pandas as pd

#: The paper's four headline metrics: (column, heading, how to show a value).
HEADLINE = (
    ("makespan_s", "makespan (s)", "{:,.0f}"),
    ("avg_jct_s", "avg JCT (s)", "{:,.0f}"),
    ("worst_ftf", "worst FTF ρ", "{:.2f}"),
    ("unfair_fraction", "unfair (ρ>1.05)", "{:.1%}"),
)
#: Shown after the headline metrics, without ratios.
EXTRA = (("utilization", "util.", "{:.1%}"), ("wall_s", "wall (s)", "{:.1f}"))


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
    the number of seeds. Keeps the order in which traces and agents first appear."""
    columns = [c for c, _, _ in HEADLINE + EXTRA]
    frame = results.copy()
    for column in columns:
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    grouped = frame.groupby(["trace", "agent"], sort=False)
    table = grouped[columns].mean()
    table["seeds"] = grouped["seed"].nunique()
    table = table.reset_index()
    for column, _, _ in HEADLINE:
        ref = table[table["agent"] == reference].set_index("trace")[column]
        denominator = table["trace"].map(ref)
        table[f"{column}_rel"] = (table[column] / denominator).where(denominator > 0)
    return table


def _cell(value, fmt: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return fmt.format(value)


def _rows(table: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Header and text cells; a headline cell reads ``value (×ratio)``."""
    header = ["trace", "agent"] + [heading for _, heading, _ in HEADLINE + EXTRA] + ["seeds"]
    rows = []
    for record in table.to_dict("records"):
        row = [str(record["trace"]), str(record["agent"])]
        for column, _, fmt in HEADLINE:
            row.append(f"{_cell(record[column], fmt)} (×{_cell(record[f'{column}_rel'], '{:.2f}')})")
        row += [_cell(record[column], fmt) for column, _, fmt in EXTRA]
        rows.append(row + [str(record["seeds"])])
    return header, rows


def summary_markdown(table: pd.DataFrame, reference: str, note: str = "", *, command: str = "") -> str:
    """``summary.md``: the table, what it is relative to, and how to regenerate it."""
    header, rows = _rows(table)
    lines = ["# Head-to-head summary", ""]
    lines.append(
        f"Mean over seeds; (×r) = value / value of **{reference}** on the same trace "
        "(lower is better). FTF ρ uses the paper's static contention max(1, N/G)."
    )
    if note:
        lines += ["", f"Note: {note}."]
    lines += ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    if command:
        lines += ["", "Regenerate with:", "", "```bash", command, "```"]
    return "\n".join(lines) + "\n"


def print_summary(table: pd.DataFrame, reference: str, note: str = "", console=None) -> None:
    """Print the table with rich (plain text when not on a terminal)."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    header, rows = _rows(table)
    out = Table(title=f"value (× value of {reference}; lower is better), mean over seeds")
    for index, heading in enumerate(header):
        out.add_column(heading, justify="left" if index < 2 else "right")
    for row, record in zip(rows, table.to_dict("records"), strict=True):
        out.add_row(*row, style="bold" if record["agent"] == reference else None)
    console.print(out)
    if note:
        console.print(f"note: {note}")

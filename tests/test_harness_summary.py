"""The summary table: the fair-share rho first, the paper's two FTF measures side by side, and a
terminal table that is readable at 80 columns (agent names and ratios never cut)."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from helpers import harness_agents as helpers
from rich.console import Console

from shockwave_agents import available_agents, registry
from shockwave_gym.harness import evaluate
from shockwave_gym.harness.summary import print_summary, summarise, summary_markdown

#: What `make demo` compares: every available built-in agent (`--agents all`).
DEMO_AGENTS = [name for name in available_agents() if registry.registered_factory(name) is None]
DEMO_TRACE = "canonical-analogue-120"


def demo_like_results(agents: list[str]) -> pd.DataFrame:
    """One row per agent with values as wide as a 120-job trace gives (and wider)."""
    rows = []
    for index, agent in enumerate(agents):
        rows.append({
            "trace": DEMO_TRACE, "agent": agent, "seed": 0,
            "makespan_s": 26_008.0 + 9_000 * index, "avg_jct_s": 12_088.0 - 300 * index,
            "worst_ftf": 1.44 + 0.71 * index, "worst_ftf_themis": 2.18 + 1.3 * index,
            "unfair_fraction": min(1.0, 0.283 + 0.06 * index), "unfair_fraction_themis": 0.917 - 0.03 * index,
            "rho_mean": 1.08 + 0.3 * index, "rho_p95": 1.9 + 0.5 * index, "rho_max": 3.1 + 0.9 * index,
            "rho_over_1_05": min(1.0, 0.31 + 0.04 * index), "rho_over_1_25": min(1.0, 0.12 + 0.05 * index),
            "gang_ftf_mean": 0.97 + 0.2 * index,
            "utilization": 0.9 - 0.01 * index, "wall_s": 176.4 if agent.startswith("shockwave") else 0.7,
        })
    return pd.DataFrame(rows)


def render(results: pd.DataFrame, reference: str = "shockwave") -> tuple[str, pd.DataFrame]:
    stream = io.StringIO()
    console = Console(file=stream, width=80, color_system=None, force_terminal=False)
    table = summarise(results, reference)
    print_summary(table, reference, console=console)
    return stream.getvalue(), table


def agent_lines(text: str, agent: str) -> list[str]:
    return [line for line in text.splitlines() if line.split()[:1] == [agent]]


def check_readable_at_80(text: str, table: pd.DataFrame) -> None:
    lines = text.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80, max(lines, key=len)
    assert "…" not in text
    for record in table.to_dict("records"):
        time_line, fair_share_line, fairness_line = agent_lines(text, record["agent"])  # one line per block
        shown = [f"{record['rho_mean']:.2f}", f"{record['rho_p95']:.2f}", f"{record['rho_max']:.2f}",
                 f"{record['rho_over_1_05']:.1%}", f"{record['rho_over_1_25']:.1%}", f"{record['gang_ftf_mean']:.2f}"]
        assert fair_share_line.split()[1:] == shown, (fair_share_line, shown)
        # every value with its full ratio, e.g. "26,008 ×1.00", "31.7% ×1.12"
        assert f"{record['makespan_s']:,.0f} ×{record['makespan_s_rel']:.2f}" in time_line
        assert f"{record['avg_jct_s']:,.0f} ×{record['avg_jct_s_rel']:.2f}" in time_line
        expected = [f"{record['worst_ftf']:.2f} ×{record['worst_ftf_rel']:.2f}",
                    f"{record['worst_ftf_themis']:.2f} ×{record['worst_ftf_themis_rel']:.2f}",
                    f"{record['unfair_fraction']:.1%} ×{record['unfair_fraction_rel']:.2f}",
                    f"{record['unfair_fraction_themis']:.1%} ×{record['unfair_fraction_themis_rel']:.2f}"]
        positions = [fairness_line.find(cell) for cell in expected]
        assert -1 not in positions and positions == sorted(positions), (fairness_line, expected)


def test_demo_table_fits_80_columns_with_every_agent_name_and_ratio_whole():
    assert len(DEMO_AGENTS) >= 10 and "shockwave-normalized" in DEMO_AGENTS
    text, table = render(demo_like_results(DEMO_AGENTS))
    check_readable_at_80(text, table)
    shockwaves = [a for a in DEMO_AGENTS if a.startswith("shockwave")]
    assert len(shockwaves) >= 2 and all(len(agent_lines(text, a)) == 3 for a in shockwaves)
    assert "static" in text and "contention" in text and "Themis" not in text and "T_fair" in text


def test_extreme_values_still_fit():
    results = demo_like_results(DEMO_AGENTS)
    results.loc[1, ["makespan_s", "avg_jct_s"]] = [9_876_543.0, 8_765_432.0]
    results.loc[2, ["worst_ftf", "worst_ftf_themis", "unfair_fraction"]] = [123.45, 678.9, 1.0]
    text, table = render(results)
    check_readable_at_80(text, table)


def test_a_name_too_long_for_the_column_is_folded_not_cut():
    name = "my-own-agent-with-a-very-long-descriptive-name-v2"
    text, _ = render(demo_like_results(["shockwave", "fifo", name]))
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 80
    assert name in "".join(line.split()[0] for line in text.splitlines() if line.strip())


@pytest.fixture(scope="module")
def cheap_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("summary")
    agents = ["fifo", *[a for a in helpers.CHEAP_BUILTINS if a in DEMO_AGENTS]]
    frame = evaluate(agents, helpers.TRACE, seeds=0, workers=1, out=out, progress=False, figures=False)
    return out, frame


def test_real_results_are_readable_at_80_columns(cheap_run):
    _, frame = cheap_run
    text, table = render(frame, reference="fifo")
    check_readable_at_80(text, table)


def test_summary_md_reports_the_fair_share_rho_first_then_both_paper_measures(cheap_run):
    out, frame = cheap_run
    lines = (out / "summary.md").read_text().splitlines()
    header = next(line for line in lines if line.startswith("| trace |")).strip("| ").split(" | ")
    static, themis = header.index("worst FTF ρ static"), header.index("worst FTF ρ contention")
    unfair, unfair_themis = header.index("unfair (ρ>1.05) static"), header.index("unfair (ρ>1.05) contention")
    assert themis == static + 1 and unfair_themis == unfair + 1
    rho_mean, rho_max = header.index("ρ mean"), header.index("ρ max")
    assert rho_mean < rho_max < static and not any("Themis" in h for h in header)
    for row in frame.to_dict("records"):
        line = next(text for text in lines if text.startswith(f"| {helpers.TRACE} | {row['agent']} |"))
        cells = line.strip("| ").split(" | ")
        assert cells[static].startswith(f"{row['worst_ftf']:.2f} (×")
        assert cells[themis].startswith(f"{row['worst_ftf_themis']:.2f} (×")
        assert cells[unfair].startswith(f"{row['unfair_fraction']:.1%} (×")
        assert cells[unfair_themis].startswith(f"{row['unfair_fraction_themis']:.1%} (×")
        assert cells[rho_mean].startswith(f"{row['rho_mean']:.2f} (×")
        assert cells[rho_max] == f"{row['rho_max']:.2f}"
    # the two variants really differ on this trace: the columns are not copies
    assert (frame["worst_ftf"] != frame["worst_ftf_themis"]).any()


def test_summary_md_of_the_demo_names_every_agent(tmp_path):
    text = summary_markdown(summarise(demo_like_results(DEMO_AGENTS), "shockwave"), "shockwave")
    for agent in DEMO_AGENTS:
        assert f"| {DEMO_TRACE} | {agent} |" in text

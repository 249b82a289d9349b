"""The leaderboard: statistics, the command, and docs/LEADERBOARD.md against a re-run."""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import pytest

from shockwave_gym.cli import main
from shockwave_gym.errors import InputError
from shockwave_gym.harness import evaluate
from shockwave_gym.harness.board_stats import SUITE_METRICS, format_interval
from shockwave_gym.harness.leaderboard import (
    CSV_COLUMNS,
    QUICK_SUITES,
    TIMING_COLUMNS,
    leaderboard_entries,
)
from shockwave_gym.harness.paired import Interval, mean_interval, ratio_interval
from shockwave_gym.regimes import Regime
from shockwave_gym.traces.suites import entry_trace, get_suite, split_entries

DOCS = Path(__file__).resolve().parent.parent / "docs"
#: Deterministic metrics: a re-run must give these exactly.
EXACT = ("makespan_s", "avg_jct_s", "worst_ftf", "worst_ftf_themis", "unfair_fraction", "unfair_fraction_themis",
         "rounds", "completed_jobs")


def test_interval_format_and_the_bootstrap_mean():
    assert format_interval(Interval(0.9123, 0.8841, 0.9412, 5), "{:.3f}") == "0.912 [0.884, 0.941]"
    assert format_interval(Interval(1234.5, math.nan, math.nan, 1), "{:,.0f}") == "1,234"
    assert format_interval(Interval(math.nan, math.nan, math.nan, 0), "{:.1%}") == "n/a"
    values = [1.0, 2.0, 4.0, 7.0, 11.0]
    got = mean_interval(values)
    assert (got.value, got.n) == (5.0, 5) and 1.0 <= got.low < 5.0 < got.high <= 11.0
    assert mean_interval(values) == got  # seeded
    one = mean_interval([3.0, float("nan")])
    assert one.value == 3.0 and math.isnan(one.low) and one.n == 1


def test_quick_subset_and_bad_suites():
    quick = leaderboard_entries("test", None, quick=True)
    assert [e.suite for e in quick] == [s for s, k in QUICK_SUITES.items() for _ in range(k)]
    assert "authors-canonical-120" in [e.trace_name for e in quick]
    assert leaderboard_entries("test") == split_entries(None, "test")  # every suite is on the leaderboard
    with pytest.raises(InputError, match="unknown suite"):
        leaderboard_entries("test", "small-nope")
    with pytest.raises(InputError, match="none of them"):
        leaderboard_entries("test", "gang-heavy", quick=True)


def _md_row(text: str, suite: str, agent: str) -> list[str]:
    section = text.split(f"\n## {suite}\n", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        if line.startswith(f"| `{agent}` |"):
            return [cell.strip() for cell in line.strip("|").split("|")]
    raise AssertionError(f"no row for {agent} in {suite}")


def _balanced(row: dict, suite: str) -> float:
    """The balanced task's cost of a CSV row (docs/TASKS.md), its trace's first arrival from the split."""
    from shockwave_gym.tasks import TASKS

    split = row["trace"].rsplit("-", 2)[1] if "-validation-" in row["trace"] else "test"
    entry = next(e for e in split_entries([suite], split) if e.trace_name == row["trace"])
    first = min(job.arrival_s for job in entry_trace(entry).jobs)
    metrics = {key: float(row[key]) for key in ("avg_jct_s", "rho_mean", "makespan_s")}
    metrics.update(num_jobs=int(row["completed_jobs"]), gpus=int(row["gpus"]), truncated=False)
    return TASKS["balanced"].cost(metrics, first_arrival_s=first, round_s=120.0)


def _check_rows(md: str, rows: list[dict], suite: str, agent: str) -> None:
    """The markdown row of (suite, agent) is recomputed from the CSV's cells: plain means of
    the seconds, paired bootstrap ratios to FIFO, bootstrap means of the rest."""
    cells = [r for r in rows if r["suite"] == suite and r["agent"] == agent]
    fifo = {r["trace"]: r for r in rows if r["suite"] == suite and r["agent"] == "fifo"}
    shown = _md_row(md, suite, agent)
    assert shown[0] == f"`{agent}`"
    for position, (column, _, fmt) in enumerate(SUITE_METRICS, start=1):
        if column == "balanced_ratio":
            expected = ratio_interval([_balanced(r, suite) / _balanced(fifo[r["trace"]], suite) for r in cells])
        elif column.endswith("_ratio"):
            metric = column.replace("_ratio", "_s")
            expected = ratio_interval([float(r[metric]) / float(fifo[r["trace"]][metric]) for r in cells])
        else:
            values = [float(r[column]) if r[column] else math.nan for r in cells]
            expected = mean_interval(values)
            if column in ("makespan_s", "avg_jct_s"):
                expected = Interval(expected.value, math.nan, math.nan, expected.n)
        assert shown[position] == format_interval(expected, fmt), column
    assert shown[-2] == str(len(cells))
    assert f"--suites {suite}" in shown[-1] and agent in shown[-1]


@pytest.mark.parametrize("suite, agent, trace", [
    ("small-light", "fifo", "small-light-test-0"),
    ("canonical", "srtf", "authors-canonical-120"),
])
def test_docs_leaderboard_rows_match_a_rerun_of_two_cells(tmp_path, suite, agent, trace):
    md = (DOCS / "LEADERBOARD.md").read_text()
    rows = list(csv.DictReader((DOCS / "LEADERBOARD.csv").open()))
    _check_rows(md, rows, suite, agent)
    saved = next(r for r in rows if r["trace"] == trace and r["agent"] == agent)
    entry = next(e for e in split_entries([suite], "test") if e.trace_name == trace)
    rerun = evaluate(agent, [entry_trace(entry)], gpus={trace: get_suite(suite).gpus}, workers=1,
                     progress=False, figures=False).iloc[0]
    for column in EXACT:
        assert float(saved[column]) == float(rerun[column]), column


def test_docs_leaderboard_covers_the_test_split_and_every_agent():
    from shockwave_agents import available_agents, registry
    from shockwave_gym.harness.leaderboard import leaderboard_entries

    rows = list(csv.DictReader((DOCS / "LEADERBOARD.csv").open()))
    assert {r["trace"] for r in rows} == {e.trace_name for e in leaderboard_entries("test")}
    assert "elastic-nominal" in {r["suite"] for r in rows}
    shipped = {name for name in available_agents() if registry.registered_factory(name) is None}  # not test agents
    assert shipped <= {r["agent"] for r in rows}


def test_leaderboard_command_writes_tables_and_resumes(tmp_path, capsys):
    out, doc = tmp_path / "lb", tmp_path / "doc" / "LB.md"
    argv = ["leaderboard", "--split", "validation", "--suites", "small-light", "--agents", "fifo", "srtf",
            "--agent", "mine=fifo:backfill=false", "--workers", "1", "--out", str(out), "--quiet", "--doc", str(doc)]
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith("15 cells (15 run now)")
    md = (out / "LEADERBOARD.md").read_text()
    assert md == doc.read_text()
    rows = list(csv.DictReader((out / "LEADERBOARD.csv").open()))
    assert len(rows) == 15 and {r["agent"] for r in rows} == {"fifo", "srtf", "mine"}
    assert tuple(rows[0]) == CSV_COLUMNS and "decision (ms" not in md and "Generated on" not in md
    timing = list(csv.DictReader((out / "LEADERBOARD_TIMING.csv").open()))
    assert tuple(timing[0]) == TIMING_COLUMNS and [(r["trace"], r["agent"]) for r in timing] == \
        [(r["trace"], r["agent"]) for r in rows]
    assert all(float(r["decision_ms"]) >= 0 and float(r["wall_s"]) > 0 for r in timing)
    assert (doc.parent / "LB_TIMING.csv").read_text() == (out / "LEADERBOARD_TIMING.csv").read_text()
    for agent in ("fifo", "srtf", "mine"):
        _check_rows(md, rows, "small-light", agent)
    assert "--agent mine=fifo:backfill=false" in _md_row(md, "small-light", "mine")[-1]
    assert ("shockwave-gym leaderboard --split validation --suites small-light --agents fifo --agents srtf "
            "--agent mine=fifo:backfill=false --out leaderboard_out") in md
    assert "## Overall" in md and re.search(r"\| `fifo` \| 1\.000 \[1\.000, 1\.000\] \| 1\.000 \[1\.000, 1\.000\] \|", md)
    # resumable: the second run computes nothing and writes the same numbers
    assert main(argv) == 0
    assert "(0 run now)" in capsys.readouterr().out
    assert list(csv.DictReader((out / "LEADERBOARD.csv").open())) == rows


def test_leaderboard_rejects_the_train_split_and_unknown_agents(tmp_path, capsys):
    assert main(["leaderboard", "--split", "train", "--out", str(tmp_path / "a")]) == 2
    assert main(["leaderboard", "--quick", "--agents", "nope", "--out", str(tmp_path / "b")]) == 2
    assert "unknown agent 'nope'" in capsys.readouterr().err


def test_leaderboard_runs_unchanged_on_the_ray_backend(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray", reason="Ray is not installed (the optional 'ray' extra: make install)")
    import os

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(Path(__file__).resolve().parent.parent),
                                                                    os.environ.get("PYTHONPATH", "")])))
    common = ["leaderboard", "--quick", "--agents", "fifo", "las", "--quiet"]
    assert main([*common, "--backend", "ray", "--workers", "2", "--out", str(tmp_path / "ray")]) == 0
    assert not ray.is_initialized()
    assert main([*common, "--workers", "1", "--out", str(tmp_path / "pool")]) == 0

    def exact(path):
        return [{k: r[k] for k in ("trace", "agent", *EXACT)} for r in csv.DictReader(path.open())]

    assert exact(tmp_path / "ray" / "LEADERBOARD.csv") == exact(tmp_path / "pool" / "LEADERBOARD.csv")


def test_labelled_agent_adds_to_the_default_set_and_stdout_shows_the_table(tmp_path, capsys, monkeypatch):
    import shockwave_agents

    # "every available agent", shrunk to two so the test stays fast; the CLI resolves it as usual
    monkeypatch.setattr(shockwave_agents, "available_agents", lambda: ["fifo", "srtf"])
    out = tmp_path / "lb"
    argv = ["leaderboard", "--split", "validation", "--suites", "small-light", "--agent", "mine=fifo:backfill=false",
            "--workers", "1", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    stdout = capsys.readouterr().out
    assert stdout.startswith("15 cells (15 run now)")
    rows = list(csv.DictReader((out / "LEADERBOARD.csv").open()))
    assert {r["agent"] for r in rows} == {"fifo", "srtf", "mine"}
    md = (out / "LEADERBOARD.md").read_text()
    assert "## Overall" in md and "--agents all --agent mine=fifo:backfill=false" in md
    # the Overall table on stdout, one line per agent, FIFO's ratios exactly 1
    assert "Overall (5 traces; IQM over suites; makespan, JCT and balanced cost as ratios to fifo" in stdout
    table = {line.split()[0]: line for line in stdout.splitlines()[2:] if line.split()}
    assert set(table) >= {"agent", "fifo", "srtf", "mine"}
    assert table["fifo"].split()[1:4] == ["1.000", "[1.000,", "1.000]"]


def test_quick_output_says_n_and_that_the_interval_is_wide(tmp_path, capsys):
    argv = ["leaderboard", "--quick", "--suites", "small-light", "--agents", "fifo", "srtf", "--workers", "1",
            "--out", str(tmp_path / "q"), "--quiet"]
    assert main(argv) == 0
    stdout = capsys.readouterr().out
    assert "n = 2 traces per suite" in stdout and "bootstrap interval over 2 traces only spans" in stdout
    assert "n = 2 traces per suite" in (tmp_path / "q" / "LEADERBOARD.md").read_text()


def test_leaderboard_help_shows_a_single_percent_sign(capsys):
    assert main(["leaderboard", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "95% bootstrap" in text and "%%" not in text


def test_reporting_page_quotes_the_pinned_split_digests_and_the_statistics():
    from shockwave_gym.traces.suites import split_digest

    page = (DOCS / "REPORTING.md").read_text(encoding="utf-8")
    assert f"`{split_digest(None, 'test')}` (test)" in page
    assert f"`{split_digest(None, 'validation')}` (validation)" in page
    assert "stratified" in page and "Student" not in page and min(QUICK_SUITES.values()) == 1
    for words in ("split", "suite version", "table", "command", "commit"):
        assert words in page.split("\n\n")[1]  # named up front


def test_regime_and_heterogeneous_suites_carry_their_cluster_and_regime_and_learned_cells_are_not_applicable(
        tmp_path, capsys):
    out = tmp_path / "lb"
    argv = ["leaderboard", "--split", "validation", "--suites", "hetero-mixed-unknown,small-light",
            "--agents", "fifo", "ppo", "--workers", "1", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("15 cells (15 run now)") and "Not applicable, left out: 5 cells of ppo" in printed
    md = (out / "LEADERBOARD.md").read_text()
    assert _md_row(md, "hetero-mixed-unknown", "ppo")[:3] == ["`ppo`", "n/a", "n/a"]
    assert "`ppo`: cannot run in the 'unknown' regime" in md
    # the Overall table counts only the suite every agent runs; the next one every suite
    overall = md.split("## Overall\n", 1)[1].split("\n## ", 1)[0]
    assert "The 1 suite, 5 traces" in overall and "| `ppo` |" in overall
    every = md.split("## Overall, every suite\n", 1)[1].split("\n## ", 1)[0]
    assert "2 suites, 10 traces" in every and "| `ppo` |" not in every and "| `fifo` |" in every
    rows = list(csv.DictReader((out / "LEADERBOARD.csv").open()))
    assert {(r["suite"], r["agent"]) for r in rows} == {
        ("hetero-mixed-unknown", "fifo"), ("small-light", "fifo"), ("small-light", "ppo")}
    # each cell ran on its suite's cluster and in its trace's regime (same numbers as by hand)
    results = (out / "results.csv").read_text()
    assert "v100=8,p100=8,k80=8" in results
    entry = split_entries("hetero-mixed-unknown", "validation")[0]
    by_hand = evaluate("fifo", [entry_trace(entry)], cluster=entry.cluster, regime=entry.regime, workers=1,
                       progress=False, figures=False).iloc[0]
    saved = next(r for r in rows if r["trace"] == entry.trace_name)
    assert float(saved["avg_jct_s"]) == float(by_hand["avg_jct_s"])
    # by name alone, a regime suite's trace takes its suite's cluster and regime too
    by_name = evaluate("srtf", [entry.trace_name], workers=1, progress=False, figures=False).iloc[0]
    assert int(by_name["gpus"]) == 24 and by_name["cluster"] == str(entry.cluster)
    same = evaluate("srtf", [entry_trace(entry)], cluster=entry.cluster, regime=entry.regime, workers=1,
                    progress=False, figures=False).iloc[0]
    exact = evaluate("srtf", [entry_trace(entry)], regime=Regime(), workers=1, progress=False,
                     figures=False).iloc[0]
    assert by_name["avg_jct_s"] == same["avg_jct_s"] != exact["avg_jct_s"]
    # resumable: nothing to recompute but the n/a cells, and the same file
    assert main(argv) == 0
    assert "(0 run now)" in capsys.readouterr().out
    assert (out / "LEADERBOARD.md").read_text() == md


def test_a_suite_off_the_leaderboard_runs_only_when_named(monkeypatch):
    import dataclasses

    from shockwave_gym.harness import leaderboard

    real = leaderboard.resolve_suites

    def resolve(suites):
        return [dataclasses.replace(s, leaderboard=False) if s.name == "elastic-nominal" else s for s in real(suites)]

    monkeypatch.setattr(leaderboard, "resolve_suites", resolve)
    off = [e for e in split_entries(None, "test") if e.suite == "elastic-nominal"]
    assert off and len(leaderboard_entries("test")) == len(split_entries(None, "test")) - len(off)
    assert leaderboard_entries("test", "elastic-nominal") == off  # named, it runs

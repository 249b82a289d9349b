"""The published ``shockwave-distilled`` vs ``shockwave`` figures: docs/TRAINING.md's table is
the one rendered from docs/data/distilled_vs_shockwave.json, every ratio in the data is the
quotient of the raw figures stored beside it, and the 1.05 / 1.25 rule is applied to the
suite's geometric mean and to every trace as documented."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs" / "data" / "distilled_vs_shockwave.json"
DOC = ROOT / "docs" / "TRAINING.md"
# the acceptance limits as the issue states them (not read from the script under test)
MAKESPAN, RHO = 1.05, 1.25


def _script():
    spec = importlib.util.spec_from_file_location("distilled_vs_shockwave", ROOT / "benchmarks" / "distilled_vs_shockwave.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def data() -> dict:
    return json.loads(DATA.read_text())


def test_the_doc_table_is_the_one_rendered_from_the_saved_data(data):
    script = _script()
    text = DOC.read_text()
    assert text.count(script.BEGIN) == 1 and text.count(script.END) == 1
    published = text.split(script.BEGIN)[1].split(script.END)[0].strip()
    assert published == script.render_table(data).strip()
    for suite, row in data["suites"].items():  # each suite's figures appear in its row
        line = next(line for line in published.splitlines() if line.startswith(f"| `{suite}` |"))
        assert f"{row['geomean_ratio']['makespan']:.3f}" in line and f"{row['worst_trace_ratio']['worst_rho']:.3f}" in line


def test_the_saved_ratios_and_verdicts_follow_from_the_raw_figures(data):
    assert data["limits"] == {"makespan": MAKESPAN, "worst_rho": RHO}
    assert data["metrics"]["worst_rho"].startswith("rho_max")
    passing_mean = passing_all = 0
    for row in data["suites"].values():
        ratios = []
        for trace in row["traces"].values():
            mine, theirs = trace["distilled"], trace["shockwave"]
            ratio = {key: mine[key] / theirs[key] for key in ("makespan", "worst_rho")}
            assert trace["ratio"] == pytest.approx(ratio, rel=1e-12)
            assert trace["pass"] == (ratio["makespan"] <= MAKESPAN and ratio["worst_rho"] <= RHO)
            ratios.append(ratio)
        for key in ("makespan", "worst_rho"):
            mean = math.exp(sum(math.log(r[key]) for r in ratios) / len(ratios))
            assert row["geomean_ratio"][key] == pytest.approx(mean, rel=1e-12)
            assert row["worst_trace_ratio"][key] == pytest.approx(max(r[key] for r in ratios), rel=1e-12)
        mean = row["geomean_ratio"]
        assert row["pass_suite_mean"] == (mean["makespan"] <= MAKESPAN and mean["worst_rho"] <= RHO)
        assert row["pass_per_trace"] == all(t["pass"] for t in row["traces"].values())
        passing_mean += row["pass_suite_mean"]
        passing_all += row["pass_per_trace"]
    assert data["suites_passing"] == {"suite_mean": passing_mean, "per_trace": passing_all, "of": len(data["suites"])}


def test_the_data_covers_every_test_suite_and_trace_in_both_agents():
    from shockwave_gym.traces.suites import split_entries

    data = json.loads(DATA.read_text())
    entries = split_entries(None, "test")
    assert data["split"] == "test"
    assert {e.suite for e in entries} == set(data["suites"])
    assert {e.trace_name for e in entries} == {t for row in data["suites"].values() for t in row["traces"]}


def _rows(pairs):
    """(suite, trace, agent, makespan, rho) rows: ``pairs`` maps trace -> (distilled, shockwave)
    (makespan, rho) tuples, all in suite ``s``."""
    for trace, (mine, theirs) in pairs.items():
        yield ("s", trace, "shockwave-distilled", *mine)
        yield ("s", trace, "shockwave", *theirs)


def test_the_rule_reads_the_suite_mean_and_every_trace_apart():
    script = _script()
    # makespan ratios 1.10 and 0.99: the geomean 1.0435 passes, one trace fails
    report = script.summarise(_rows({"a": ((110.0, 1.0), (100.0, 1.0)), "b": ((99.0, 1.0), (100.0, 1.0))}))
    row = report["suites"]["s"]
    assert row["geomean_ratio"]["makespan"] == pytest.approx(math.sqrt(1.10 * 0.99))
    assert row["worst_trace_ratio"]["makespan"] == pytest.approx(1.10)
    assert row["pass_suite_mean"] and not row["pass_per_trace"]
    assert [t["pass"] for t in row["traces"].values()] == [False, True]
    assert report["suites_passing"] == {"suite_mean": 1, "per_trace": 0, "of": 1}


@pytest.mark.parametrize(("makespan", "rho", "ok"), [
    (105.0, 1.25, True),     # both at the limit
    (105.1, 1.0, False),     # makespan 1.001 over
    (100.0, 1.2501, False),  # worst rho over
])
def test_the_limits_are_inclusive_and_both_must_hold(makespan, rho, ok):
    row = _script().summarise(_rows({"a": ((makespan, rho), (100.0, 1.0))}))["suites"]["s"]
    assert row["pass_suite_mean"] is ok and row["pass_per_trace"] is ok


def test_the_raw_figures_are_the_published_leaderboard_cells(data):
    """Both agents' figures are the leaderboard's own cells (docs/LEADERBOARD.csv), so the
    comparison is of the shipped policy and the published Shockwave runs."""
    import csv

    cells = {(r["trace"], r["agent"]): r for r in csv.DictReader((ROOT / "docs" / "LEADERBOARD.csv").open())}
    for row in data["suites"].values():
        for name, trace in row["traces"].items():
            for side, agent in (("distilled", "shockwave-distilled"), ("shockwave", "shockwave")):
                cell = cells[(name, agent)]
                assert trace[side]["makespan"] == pytest.approx(float(cell["makespan_s"]), rel=1e-9)
                assert trace[side]["worst_rho"] == pytest.approx(float(cell["rho_max"]), rel=1e-9)

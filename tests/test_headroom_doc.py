"""docs/HEADROOM.md is generated from docs/data/headroom.json by benchmarks/headroom.py: the page
must be the render of the saved JSON, the JSON's scores and intervals must follow from its own
per-trace figures, and the references must be what the page says they are."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from helpers.scripts import load_benchmark

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "data" / "headroom.json"


def _benchmark():
    return load_benchmark("headroom")


@pytest.fixture(scope="module")
def data() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


def test_the_page_is_the_render_of_the_saved_json(data):
    assert (ROOT / "docs" / "HEADROOM.md").read_text(encoding="utf-8") == _benchmark().render(data)


def test_the_saved_summary_follows_from_the_per_trace_figures(data):
    bench = _benchmark()
    recomputed = bench.summarise(data["traces"])
    assert json.loads(json.dumps(recomputed)) == {"scores": data["scores"],
                                                  "jct_short_of_reference": data["jct_short_of_reference"]}
    assert json.loads(json.dumps(bench.reference_costs(data["traces"]))) == data["reference_cost"]
    assert json.loads(json.dumps(bench.pareto_points(data["traces"]))) == data["pareto"]


def test_every_suite_has_its_pareto_figure(data):
    bench = _benchmark()
    for suite in dict.fromkeys(t["suite"] for t in data["traces"]):
        path = ROOT / "docs" / "img" / bench.figure_name(suite)
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", path


def test_the_json_covers_the_whole_test_split_on_each_suites_cluster_and_regime(data):
    from shockwave_gym.harness.leaderboard import leaderboard_entries
    from shockwave_gym.traces.suites import get_suite

    entries = leaderboard_entries("test")  # the leaderboard's suites (elastic-nominal is not yet)
    assert [(t["suite"], t["trace"]) for t in data["traces"]] == [(e.suite, e.trace_name) for e in entries]
    for trace, entry in zip(data["traces"], entries, strict=True):
        suite = get_suite(entry.suite)
        assert trace["cluster"] == (str(suite.cluster_spec) if suite.heterogeneous else None)
        regime = entry.regime
        assert trace["regime"] == (None if regime is None else {
            "knowledge": regime.knowledge, "early_endings": regime.early_endings, "seed": regime.seed})
        assert {"fifo", "srtf", "wsrpt", "gittins", "fair-share", "gavel"} <= set(trace["metrics"])
        assert ("exact_metrics" in trace) == (regime is not None and regime.knowledge != "exact")


def test_every_reference_is_the_better_construction_and_beats_its_rules(data):
    bench = _benchmark()
    from shockwave_gym.tasks import TASKS

    for trace in data["traces"]:
        for task in TASKS:
            value, _, method = bench.reference_cost(trace, task)
            timing = dict(first_arrival_s=trace["first_arrival_s"], round_s=trace["round_s"])
            cost = {"rollout": TASKS[task].cost(trace["reference"][task]["metrics"], **timing),
                    "shockwave-oracle": TASKS[task].cost(trace["shockwave_oracle"]["metrics"], **timing)}
            assert value == min(cost.values()) and method == min(cost, key=lambda k: (cost[k], k != "rollout"))
            ref = trace["reference"][task]
            assert ref["rollout"] <= ref["portfolio_best"]
            # on the same true jobs the portfolio's rules from the start are these agents' cells
            # (lengths exact: the suite's own cells, else the exact-lengths cells)
            cells = trace["metrics"] if "exact_metrics" not in trace else trace["exact_metrics"]
            rules = ["fifo", "srtf", "wsrpt", "las"] + (["fair-share"] if task != "jct" else []) + (
                ["max-rho"] if task == "balanced" else [])
            for rule in rules:
                if rule in cells:
                    mine = TASKS[task].cost(cells[rule], first_arrival_s=trace["first_arrival_s"],
                                            round_s=trace["round_s"])
                    assert value <= mine * (1 + 1e-12) + 1e-9, (trace["trace"], task, rule)


def test_the_exact_lengths_reference_is_the_best_classical_where_lengths_are_known(data):
    for table in data["scores"].values():
        for suite, row in table.items():
            regime = next(t["regime"] for t in data["traces"] if t["suite"] == suite)
            if row["best_classical"] is None:
                continue
            best = row["scores"][row["best_classical"]]
            if regime is None or regime["knowledge"] == "exact":
                assert row["exact_reference"] == row["best_classical"] and row["exact_score"] == best
            elif row["information"] is not None:
                assert math.isclose(row["information"]["value"], row["exact_score"]["value"] - best["value"],
                                    rel_tol=1e-9, abs_tol=1e-12)


def test_exact_lengths_runs_are_the_base_suites_cells_on_the_same_jobs(data):
    """A regime variant without early endings replays its base suite's traces: its classical
    agents' runs with exact lengths must be the base suite's own cells, trace by trace (a run
    left in the variant's regime would make the information column zero)."""
    by_suite: dict = {}
    for record in data["traces"]:
        by_suite.setdefault(record["suite"], []).append(record)
    checked = 0
    for suite, records in by_suite.items():
        regime = records[0]["regime"]
        if regime is None or regime.get("knowledge") == "exact" or regime.get("early_endings"):
            continue
        base = by_suite[records[0]["base"]]
        for variant, original in zip(records, base, strict=True):
            assert variant["exact_metrics"], suite
            for agent, metrics in variant["exact_metrics"].items():
                assert metrics == original["metrics"][agent], (suite, variant["trace"], agent)
                checked += 1
            assert variant["metrics"]["wsrpt"] != original["metrics"]["wsrpt"], (suite, variant["trace"])
    assert checked >= 5 * 5 * 10

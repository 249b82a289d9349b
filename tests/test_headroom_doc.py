"""docs/HEADROOM.md is generated from docs/data/headroom.json by benchmarks/headroom.py: the page
must be the render of the saved JSON, and the JSON's scores and intervals must follow from its
own per-trace figures."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "data" / "headroom.json"


def _benchmark():
    spec = importlib.util.spec_from_file_location("headroom", ROOT / "benchmarks" / "headroom.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def data() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


def test_the_page_is_the_render_of_the_saved_json(data):
    assert (ROOT / "docs" / "HEADROOM.md").read_text(encoding="utf-8") == _benchmark().render(data)


def test_the_saved_summary_follows_from_the_per_trace_figures(data):
    bench = _benchmark()
    recomputed = bench.summarise(data["traces"], data["baseline"])
    assert json.loads(json.dumps(recomputed)) == {"scores": data["scores"], "paired": data["paired"]}
    assert json.loads(json.dumps(bench.reference_cost(data["traces"]))) == data["reference_cost"]


def test_the_json_covers_the_whole_test_split_and_every_reference_beats_its_portfolio(data):
    from shockwave_gym.harness.leaderboard import leaderboard_entries

    assert [t["trace"] for t in data["traces"]] == [e.trace_name for e in leaderboard_entries("test")]
    for trace in data["traces"]:
        assert {"fifo", "srtf", "wsrpt", "fair-share", "gavel"} <= set(trace["metrics"])
        for objective in ("avg_jct_s", "makespan_s", "rho_mean"):
            ref = trace["reference"][objective]
            assert ref["value"] == min(ref["rollout"], ref["shockwave_oracle"])  # the better construction
            assert ref["method"] == ("shockwave-oracle" if ref["shockwave_oracle"] < ref["rollout"] else "rollout")
            assert ref["rollout"] <= ref["portfolio_best"]
            for rule in ("fifo", "srtf", "wsrpt"):  # the predicted-time rules are the agents' own cells
                assert ref["value"] <= trace["metrics"][rule][objective] * (1 + 1e-12)
        fair = trace["reference"]["rho_mean"]["value"]
        assert fair <= trace["metrics"]["fair-share"]["rho_mean"] * (1 + 1e-12)

"""docs/METRICS.md, "Every agent under every measure", is generated from the saved JSON of
benchmarks/fairness_table.py: the doc must match that JSON, and the JSON must be whole."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.scripts import load_benchmark

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "data" / "fairness_table.json"
BEGIN, END = "<!-- fairness-table:begin -->", "<!-- fairness-table:end -->"


def _benchmark():
    return load_benchmark("fairness_table")


def test_the_docs_section_is_the_render_of_the_saved_json():
    data = json.loads(DATA.read_text(encoding="utf-8"))
    doc = (ROOT / "docs" / "METRICS.md").read_text(encoding="utf-8")
    section = doc.split(BEGIN, 1)[1].split(END, 1)[0]
    assert section.strip() == _benchmark().render(data).strip()


def test_the_saved_json_covers_every_group_and_its_rankings_follow_its_rows():
    bench = _benchmark()
    data = json.loads(DATA.read_text(encoding="utf-8"))
    assert data["groups"] == [name for name, _ in bench.BUNDLED] + [f"{s} (test)" for s in bench.SUITES]
    for group in data["groups"]:
        rows = [r for r in data["rows"] if r["group"] == group]
        agents = {r["agent"] for r in rows}
        assert bench.REFERENCE_LABEL in agents and "fair-share" in agents and "gavel" in agents
        for row in rows:
            assert set(bench.METRICS) <= set(row)
    assert bench.rankings(data["rows"]) == {"rankings": data["rankings"], "ranking_changes": data["ranking_changes"]}


def test_render_puts_every_agent_in_order_of_mean_rho():
    bench = _benchmark()
    rows = [{"group": "g", "agent": a, "traces": 1, **{k: v for k in bench.METRICS}} for a, v in (("b", 2.0), ("a", 1.0))]
    data = {"round_s": 120.0, "restart_overhead_s": 20.0, "groups": ["g"], "metrics": list(bench.METRICS), "rows": rows,
            **bench.rankings(rows)}
    text = bench.render(data)
    assert text.index("| `a` |") < text.index("| `b` |")
    assert data["rankings"]["g"]["rho_mean"] == ["a", "b"] and data["ranking_changes"] == []

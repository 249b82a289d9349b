"""The typed-fairness benchmark's renderers, which docs/SHOCKWAVE_HETERO.md's tables come from:
the saved outputs render to the tables the page shows."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("shockwave_hetero_fairness",
                                              ROOT / "benchmarks" / "shockwave_hetero_fairness.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
PAGE = (ROOT / "docs" / "SHOCKWAVE_HETERO.md").read_text(encoding="utf-8")


def test_the_six_trace_table_on_the_page_is_the_saved_outputs_rendering():
    table = bench.render([str(ROOT / "docs" / "data" / "shockwave_hetero_fair_issue36.json")], "gavel",
                         ["before", "no-front", "shockwave"])
    assert table.splitlines()[0] == "| trace | gavel | before | no-front | shockwave |"
    assert len(table.splitlines()) == 2 + 6
    assert table in PAGE


def test_the_suite_table_on_the_page_is_the_saved_compare_outputs_rendering():
    table = bench.render_suite(str(ROOT / "docs" / "data" / "shockwave_hetero_mixed_issue36.json"))
    assert "| `shockwave (before)` |" in table and "| `gavel` |" in table
    assert "| `gavel (before)` |" not in table  # gavel's rows are the same before and after
    assert table in PAGE


def test_only_keeps_the_named_columns_in_order(tmp_path):
    metrics = {"makespan_s": 100.0, "rho_mean": 1.0, "rho_over_1_05": 0.5, "unfair_fraction": 0.1}
    cells = [{"trace": "t", "variant": v, "metrics": {**metrics, "rho_mean": r}}
             for v, r in (("gavel", 1.2), ("a", 1.1), ("b", 1.3))]
    path = tmp_path / "out.json"
    path.write_text(json.dumps({"cells": cells}))
    table = bench.render([str(path)], "gavel", ["b"])
    assert table.splitlines()[0] == "| trace | gavel | b |"
    assert "**" not in table  # b is less fair than gavel: not bold
    assert "**100 / 1.100" in bench.render([str(path)], "gavel", ["a"])

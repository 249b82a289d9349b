"""Reference pages state what is true now: docs/BENCHMARKS.md's tables are generated from the
benchmarks' saved runs (docs/data/benchmarks/), and no reference page dates a figure to a run
or a machine in words (history goes to CHANGELOG.md)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("benchmark_docs", ROOT / "scripts" / "benchmark_docs.py")
benchmark_docs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(benchmark_docs)

PAGE = ROOT / "docs" / "BENCHMARKS.md"
RECORDS = sorted(p.stem for p in (ROOT / "docs" / "data" / "benchmarks").glob("*.json"))

#: Phrases that date a figure to a run, a machine or a moment of the project's history.
DATING_PHRASES = (
    "earlier machine", "slower machine", "faster machine", "quieter machine", "before this change",
    "before this work", "after this work", "that day", "this session", "last session", "the earlier",
    "an earlier run", "last run", "previous run", "the run before", "on this machine",
)
REFERENCE_PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "CHANGELOG.md")]


def test_every_table_matches_its_saved_run():
    text = PAGE.read_text()
    blocks = {m.group("name"): m.group(0) for m in benchmark_docs.BLOCK.finditer(text)}
    # every saved run has its table, every table its file (a derived table: its run's file)
    assert sorted(blocks) == sorted([*RECORDS, *benchmark_docs.DERIVED])
    assert set(benchmark_docs.DERIVED.values()) <= set(RECORDS)
    for name, block in blocks.items():
        assert block == benchmark_docs.render(name), f"docs/BENCHMARKS.md table {name} is stale: " \
            "run `python scripts/benchmark_docs.py write`"


@pytest.mark.parametrize("name", RECORDS)
def test_each_saved_run_names_its_command_date_and_machine(name):
    record = benchmark_docs.load(name)
    assert record["command"].startswith(".venv/bin/python benchmarks/")
    script = record["command"].split()[1]
    assert (ROOT / script).exists(), script
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", record["date"])
    assert record["machine"]
    assert ("output" in record) != ("table" in record)
    if "output" in record:  # the script's own JSON, turned into the table by TABLES
        assert name in benchmark_docs.TABLES
    columns, rows = benchmark_docs.table_of(name, record)
    assert rows and all(len(row) == len(columns) for row in rows)
    line = benchmark_docs.render(name).splitlines()[1]
    assert record["command"] in line and record["date"] in line and record["machine"] in line


def test_a_hand_edited_figure_is_caught(tmp_path, monkeypatch):
    """The check is not vacuous: a figure changed in the page (or in its file) no longer
    matches."""
    name = RECORDS[0]
    record = benchmark_docs.load(name)
    block = benchmark_docs.render(name, record)
    columns, rows = benchmark_docs.table_of(name, record)
    figure = str(rows[0][-1])
    tampered_page = PAGE.read_text().replace(block, block.replace(f"| {figure} |", "| 0.001 |", 1))
    assert tampered_page != PAGE.read_text()
    assert benchmark_docs.rewritten(tampered_page) == PAGE.read_text()
    assert benchmark_docs.rewritten(tampered_page) != tampered_page


def test_saved_outputs_rebuild_their_tables():
    """Where the script's JSON was saved, the table is computed from it (not stored twice)."""
    for name in RECORDS:
        record = json.loads((ROOT / "docs" / "data" / "benchmarks" / f"{name}.json").read_text())
        if "output" in record:
            assert "table" not in record
            assert record["output"].get("benchmark", name) == name


@pytest.mark.parametrize("page", REFERENCE_PAGES, ids=lambda p: p.name)
def test_reference_pages_do_not_date_figures(page):
    text = " ".join(page.read_text().split()).lower()  # phrases broken over lines count too
    found = [phrase for phrase in DATING_PHRASES if phrase in text]
    assert found == [], f"{page.relative_to(ROOT)}: {found} (history goes to CHANGELOG.md)"


def test_readme_speed_section_holds_links_not_figures():
    readme = (ROOT / "README.md").read_text()
    speed = readme.split("## Speed", 1)[1].split("\n## ", 1)[0]
    assert "docs/BENCHMARKS.md#" in speed
    assert not re.search(r"\d[\d,.]*\s*(×|x\b|steps/s| s\b)", speed), speed

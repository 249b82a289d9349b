"""docs/TRACES.md shows a trace card per import adapter, generated from its fixture.

To refresh them after a change: ``python tests/test_traces_import_docs.py`` rewrites the
blocks between the ``cards`` and ``bundled-cards`` markers.
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "TRACES.md"
DATA = ROOT / "tests" / "data" / "real_traces"
FIXTURES = {
    "philly": ["philly_cluster_job_log.json"],
    "helios": ["helios_cluster_log.csv"],
    "acme": ["acme_trace_kalos.csv"],
    "pai": ["pai_job_table.csv", "pai_task_table.csv"],
}
BEGIN, END = "<!-- cards:begin -->\n", "<!-- cards:end -->"
TABLE_BEGIN, TABLE_END = "<!-- bundled-cards:begin -->\n", "<!-- bundled-cards:end -->"


def _run(argv: list[str]) -> str:
    from shockwave_gym.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue()


def render_cards(workdir: Path) -> str:
    """The markdown block of the four cards, from the fixtures as they are now."""
    blocks = []
    for fmt, files in FIXTURES.items():
        out = workdir / f"{fmt}.jsonl"
        _run(["import-trace", "--format", fmt, *(str(DATA / f) for f in files), "--out", str(out)])
        card = _run(["describe-trace", str(out), "--gpus", "32"])
        shown = " ".join(f"tests/data/real_traces/{f}" for f in files)
        blocks.append(f"`import-trace --format {fmt} {shown} --out {fmt}.jsonl`\n\n```text\n{card}```\n")
    return "\n".join(blocks)


def render_bundled_table() -> str:
    """One row per bundled trace, from ``describe-trace NAME --json`` (its own cluster size)."""
    import json

    from shockwave_gym.traces import bundled_traces

    rows = ["| trace | GPUs | jobs | arrivals / h | gangs 1 / 2 / 4 / 8 | isolated s p50 / p90 / max | busy GPUs | offered load |",
            "|---|---|---|---|---|---|---|---|"]
    for name in bundled_traces():
        card = json.loads(_run(["describe-trace", name, "--json"]))
        gangs = " / ".join(str(card["gang_mix"].get(str(g), 0)) for g in (1, 2, 4, 8))
        iso = card["isolated_s"]
        rows.append(f"| `{name}` | {card.get('gpus', '-')} | {card['jobs']} | {card['arrivals_per_hour']:g} | {gangs} | "
                    f"{iso['p50']:g} / {iso['p90']:g} / {iso['max']:g} | {card['busy_gpus']:g} | {card.get('offered_load', '-')} |")
    return "\n".join(rows) + "\n"


def _between(begin: str, end: str) -> str:
    text = DOC.read_text()
    return text[text.index(begin) + len(begin):text.index(end)]


def test_docs_cards_match_the_generated_cards(tmp_path):
    assert _between(BEGIN, END) == render_cards(tmp_path)


def test_docs_bundled_table_matches_describe_trace():
    assert _between(TABLE_BEGIN, TABLE_END) == render_bundled_table()


def _replace(text: str, begin: str, end: str, body: str) -> str:
    return text[:text.index(begin) + len(begin)] + body + text[text.index(end):]


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        cards = render_cards(Path(tmp))
    text = _replace(DOC.read_text(), BEGIN, END, cards)
    DOC.write_text(_replace(text, TABLE_BEGIN, TABLE_END, render_bundled_table()))

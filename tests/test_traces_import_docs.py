"""docs/TRACES.md shows a trace card per import adapter, generated from its fixture.

To refresh the cards after a change: ``python tests/test_traces_import_docs.py`` rewrites
the block between the ``cards`` markers.
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


def _documented() -> str:
    text = DOC.read_text()
    return text[text.index(BEGIN) + len(BEGIN):text.index(END)]


def test_docs_cards_match_the_generated_cards(tmp_path):
    assert _documented() == render_cards(tmp_path)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        cards = render_cards(Path(tmp))
    text = DOC.read_text()
    DOC.write_text(text[:text.index(BEGIN) + len(BEGIN)] + cards + text[text.index(END):])

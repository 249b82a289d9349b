"""Leaderboard cells are byte-reproducible: a re-run beside a CPU-burning process writes the
same LEADERBOARD.md and LEADERBOARD.csv as a run without it (one Shockwave cell among them)."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

from shockwave_gym.harness.leaderboard import (
    CSV_COLUMNS,
    run_leaderboard,
    timing_path,
    write_leaderboard,
)

DOCS = Path(__file__).resolve().parent.parent / "docs"
#: small-light-test-1 is the trace on which a wall-clock solver limit made Shockwave's cell
#: depend on machine load; small-light-test-0's FIFO row is checked against the published CSV.
AGENTS = ("fifo", "shockwave")


def _run(out: Path) -> tuple[bytes, bytes, str]:
    run = run_leaderboard("test", suites="small-light", agents=AGENTS, quick=True, out=out / "cells",
                          workers=1, force=True, progress=False)
    doc, csv_path, timing = write_leaderboard(run, out / "LEADERBOARD.md")
    assert timing == timing_path(doc) and timing.exists()
    return doc.read_bytes(), csv_path.read_bytes(), timing.read_text()


def test_cells_are_byte_identical_beside_a_cpu_burner(tmp_path):
    quiet_md, quiet_csv, _ = _run(tmp_path / "quiet")
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        loaded_md, loaded_csv, loaded_timing = _run(tmp_path / "loaded")
    finally:
        burner.kill()
        burner.wait()
    assert loaded_csv == quiet_csv
    assert loaded_md == quiet_md
    rows = list(csv.DictReader(quiet_csv.decode().splitlines()))
    assert {(r["trace"], r["agent"]) for r in rows} == {
        (f"small-light-test-{i}", agent) for i in (0, 1) for agent in AGENTS}
    assert tuple(rows[0]) == CSV_COLUMNS
    assert len(loaded_timing.splitlines()) == len(rows) + 1


def test_fifo_row_is_the_published_rows_results(tmp_path):
    """FIFO's cell (no solver) is byte for byte the published CSV row's result columns."""
    run = run_leaderboard("test", suites="small-light", agents=("fifo",), quick=True, out=tmp_path / "cells",
                          workers=1, force=True, progress=False)
    _, csv_path, _ = write_leaderboard(run, tmp_path / "LEADERBOARD.md")
    ours = {line.split(",")[1]: line for line in csv_path.read_text().splitlines()[1:]}
    published = (DOCS / "LEADERBOARD.csv").read_text().splitlines()
    width = len(CSV_COLUMNS)
    for line in published[1:]:
        fields = line.split(",")
        if fields[0] == "small-light" and fields[3] == "fifo" and fields[1] in ours:
            assert ",".join(fields[:width]) == ours.pop(fields[1])
    assert not ours, f"no published row for {sorted(ours)}"

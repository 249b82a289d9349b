"""Leaderboard cells are byte-reproducible: a re-run beside a CPU-burning process writes the
same LEADERBOARD.md and LEADERBOARD.csv as a run without it, and the same result columns as the
published docs/LEADERBOARD.csv (Shockwave cells among them)."""

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
#: depend on machine load.
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
    _assert_published(loaded_csv.decode())


def _assert_published(text: str) -> None:
    """Every row's result columns are byte for byte the published CSV's row of that cell (the
    published file was written on another processor: Shockwave's cells do not depend on it)."""
    ours = {(line.split(",")[1], line.split(",")[3]): line for line in text.splitlines()[1:]}
    width = len(CSV_COLUMNS)
    for line in (DOCS / "LEADERBOARD.csv").read_text().splitlines()[1:]:
        fields = line.split(",")
        key = (fields[1], fields[3])
        if fields[0] == "small-light" and key in ours:
            assert ",".join(fields[:width]) == ours.pop(key), key
    assert not ours, f"no published row for {sorted(ours)}"

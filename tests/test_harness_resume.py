"""Kill `shockwave-gym compare` mid-way (Ctrl-C, or a hard crash), re-run the same command,
and check that the resumed run recomputes only the unfinished cells and ends with exactly
the results of uninterrupted runs."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import harness_agents as helpers

SLOW_AGENTS = ("slow_fifo", "slow_lifo", "slow_random")
CELLS = len(SLOW_AGENTS) * len(helpers.SEEDS)


def command(out: Path) -> list[str]:
    agents = ",".join(helpers.module_spec(name) for name in SLOW_AGENTS)
    return [sys.executable, "-m", "shockwave_gym.cli", "compare", "--agents", agents,
            "--traces", helpers.TRACE, "--seeds", *map(str, helpers.SEEDS), "--workers", "2",
            "--out", str(out), "--no-figures"]


def saved(out: Path) -> dict[Path, tuple[bytes, int]]:
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (out / "cells").rglob("*.json")}


def stop_midway(out: Path, sig: int) -> subprocess.CompletedProcess:
    """Start the comparison, wait until two cells are saved, then send ``sig`` to its whole
    process group (as a terminal's Ctrl-C does, or as a crash of everything)."""
    process = subprocess.Popen(command(out), env=helpers.subprocess_env(), start_new_session=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (out / "cells").exists() or len(saved(out)) < 2:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"comparison ended or stalled before two cells were saved: {process.communicate()}")
        time.sleep(0.02)
    os.killpg(process.pid, sig)
    stdout, stderr = process.communicate(timeout=30)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "crash"])
def test_resume_after_interrupt_recomputes_only_unfinished_cells(tmp_path, sig):
    out = tmp_path / "out"
    stopped = stop_midway(out, sig)
    if sig == signal.SIGINT:
        assert stopped.returncode == 130, stopped.stderr
        assert "interrupted" in stopped.stderr
    else:
        assert stopped.returncode == -signal.SIGKILL
    kept = saved(out)
    assert 2 <= len(kept) < CELLS, "the interruption did not land mid-way"
    assert not list(out.rglob("*.tmp")), "a half-written file survived"
    assert not (out / "results.csv").exists()

    resumed = subprocess.run(command(out), env=helpers.subprocess_env(), capture_output=True,
                             text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming: {len(kept)} of {CELLS} cells already saved" in resumed.stderr
    assert resumed.stderr.count(": done in ") == CELLS - len(kept)  # only the rest ran
    after = saved(out)
    assert len(after) == CELLS
    assert {p: after[p] for p in kept} == kept  # finished cells untouched, byte for byte

    with open(out / "results.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["agent"], int(r["seed"])) for r in rows] == [(a, s) for a in SLOW_AGENTS for s in helpers.SEEDS]
    for row in rows:  # identical to uninterrupted, direct runs of the same decisions
        direct = helpers.direct_metrics(helpers.SLOW_EQUIVALENT[row["agent"]](), int(row["seed"]))
        for key in helpers.COMPARED:
            assert float(row[key]) == direct[key], (row["agent"], row["seed"], key)

"""A killed `compare` leaves no process behind, and two runs cannot share one --out.

Both start a real `shockwave-gym compare --workers 2` on slow test agents (a few seconds per
cell) in its own session, so that whatever survives can still be cleaned up afterwards."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import harness_agents as helpers

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")

SLOW_AGENTS = ("slow_fifo", "slow_lifo", "slow_random")


def compare_command(out: Path, agents=SLOW_AGENTS) -> list[str]:
    spec = ",".join(helpers.module_spec(name) for name in agents)
    return [sys.executable, "-m", "shockwave_gym.cli", "compare", "--agents", spec,
            "--traces", helpers.TRACE, "--seeds", *map(str, helpers.SEEDS), "--workers", "2",
            "--out", str(out), "--no-figures"]


def start(out: Path) -> subprocess.Popen:
    return subprocess.Popen(compare_command(out), env=helpers.subprocess_env(), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def stat(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state, start time) of ``pid`` from /proc, or None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) "
    return int(fields[1]), fields[0], int(fields[19])


def descendants(root: int) -> dict[int, int]:
    """pid -> start time of every live descendant of ``root``."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (info := stat(int(entry.name))) is not None:
            children.setdefault(info[0], []).append(int(entry.name))
    found, todo = {}, [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if (info := stat(child)) is not None and info[1] != "Z":
                found[child] = info[2]
                todo.append(child)
    return found


def alive(processes: dict[int, int]) -> dict[int, str]:
    """Those of ``processes`` (pid -> start time) still running (zombies count as gone),
    with their command lines."""
    left = {}
    for pid, started in processes.items():
        info = stat(pid)
        if info is not None and info[1] != "Z" and info[2] == started:
            try:
                left[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
    return left


def saved(out: Path) -> list[Path]:
    return list((out / "cells").rglob("*.json")) if (out / "cells").exists() else []


def wait_for_running_cells(process: subprocess.Popen, out: Path) -> None:
    """Until one cell is saved: the pool is up and its workers are in their next cells."""
    deadline = time.monotonic() + 90
    while not saved(out):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"compare ended or stalled before a cell was saved: {process.communicate()}")
        time.sleep(0.02)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "kill-TERM"])
def test_killing_compare_leaves_no_descendant_alive(tmp_path, sig):
    out = tmp_path / "out"
    process = start(out)
    try:
        wait_for_running_cells(process, out)
        family = descendants(process.pid)
        commands = alive(family).values()
        assert sum("multiprocessing" in c and "spawn_main" in c for c in commands) == 2, commands
        assert any("resource_tracker" in c for c in commands), commands
        os.kill(process.pid, sig)  # the main process only, as `kill` from a shell does
        process.wait(timeout=30)
        deadline = time.monotonic() + 5
        while alive(family) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert alive(family) == {}, "survived the kill"
        assert len(saved(out)) < len(SLOW_AGENTS) * len(helpers.SEEDS)  # it was killed mid-way
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # whatever survived a failing run
        process.communicate()


def test_second_run_on_the_same_out_fails_naming_the_holder_and_the_lock_dies_with_it(tmp_path):
    out = tmp_path / "out"
    first = start(out)
    try:
        wait_for_running_cells(first, out)
        second = subprocess.run(compare_command(out, agents=("slow_fifo",)), env=helpers.subprocess_env(),
                                capture_output=True, text=True, timeout=60)
        assert second.returncode == 2
        assert second.stderr.strip() == (
            f"shockwave-gym: error: --out {out}: in use by another compare run (pid {first.pid}); "
            "wait for it to finish or choose another --out"
        )
        assert first.poll() is None  # the first run goes on, undisturbed
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(first.pid, signal.SIGKILL)
        first.communicate()
    # the lock died with its holder: the next run on this --out proceeds
    third = subprocess.run([sys.executable, "-m", "shockwave_gym.cli", "compare", "--agents", "fifo",
                            "--traces", helpers.TRACE, "--out", str(out), "--no-figures", "--quiet"],
                           env=helpers.subprocess_env(), capture_output=True, text=True, timeout=120)
    assert third.returncode == 0, third.stderr


"""``shockwave-gym run`` through the installed console script, as a real subprocess.

The acceptance run: FIFO replays the authors' canonical trace (bundled as
``authors-canonical-120``, whose default cluster is 32 GPUs) with the built-in V100 table,
and every one of the 120 jobs completes, reported through the JSON contract.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from shockwave_gym.cli.run_command import RUN_JSON_KEYS

SCRIPT = Path(sys.executable).parent / "shockwave-gym"

pytestmark = pytest.mark.skipif(not SCRIPT.is_file(), reason=f"console script not installed at {SCRIPT}")

# three small jobs valid under the built-in V100 table (TSV, the authors' 12 columns)
SMALL_TRACE = "".join(
    "\t".join([job_type, "cmd", "dir", "--steps", "1", iterations, gang, mode, "1", "-1", "0", arrival]) + "\n"
    for job_type, iterations, gang, mode, arrival in [
        ("LM (batch size 80)", "3000", "1", "accordion", "0"),
        ("ResNet-18 (batch size 64)", "4000", "2", "gns", "30"),
        ("Transformer (batch size 32)", "900", "1", "static", "400"),
    ]
)


def strict_json(text: str) -> dict:
    def reject(constant: str):
        raise ValueError(f"non-finite {constant} in the JSON output")

    return json.loads(text, parse_constant=reject)


def run_cli(*args: str, cwd: Path, stderr=subprocess.PIPE) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(SCRIPT), "run", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=stderr,
        text=True, timeout=120, env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


@pytest.fixture
def small_trace(tmp_path: Path) -> Path:
    path = tmp_path / "small.trace"
    path.write_text(SMALL_TRACE, encoding="utf-8")
    return path


def test_fifo_replays_the_canonical_trace_through_the_json_contract(tmp_path):
    proc = run_cli("--agent", "fifo", "--trace", "authors-canonical-120", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout  # exactly one JSON object, nothing else
    record = strict_json(lines[0])
    assert list(record)[: len(RUN_JSON_KEYS)] == list(RUN_JSON_KEYS)
    assert record["agent"] == "fifo" and record["gpus"] == 32 and record["trace"] == "authors-canonical-120"
    assert record["num_jobs"] == 120 and record["completed_jobs"] == 120
    assert record["truncated"] is False
    for key in ("makespan_s", "avg_jct_s", "geomean_jct_s", "worst_ftf", "worst_ftf_themis", "wall_s"):
        assert isinstance(record[key], float) and record[key] > 0, key
    for key in ("unfair_fraction", "unfair_fraction_themis", "utilization"):
        assert 0.0 <= record[key] <= 1.0, key
    # the last arrival is at 5,011 s and the trace holds ~635k GPU-seconds of work on 32 GPUs
    assert 635_000 / 32 < record["makespan_s"] < 100_000
    assert record["utilization"] == pytest.approx(635_249 / (32 * record["makespan_s"]), rel=1e-3)
    assert record["geomean_jct_s"] <= record["avg_jct_s"] < record["makespan_s"]
    assert record["rounds"] >= record["makespan_s"] / 120


def test_non_finite_metrics_are_null(tmp_path, small_trace):
    # one round: nothing completes, so makespan, JCTs and FTFs have no value
    proc = run_cli("--agent", "fifo", "--trace", str(small_trace), "--gpus", "4",
                   "--max-rounds", "1", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    record = strict_json(proc.stdout)
    assert record["truncated"] is True and record["completed_jobs"] == 0 and record["rounds"] == 1
    for key in ("makespan_s", "avg_jct_s", "geomean_jct_s", "worst_ftf", "unfair_fraction",
                "worst_ftf_themis", "unfair_fraction_themis"):
        assert record[key] is None, key
    assert '"makespan_s": null' in proc.stdout


def test_malformed_trace_exits_2_naming_file_line_and_field(tmp_path, small_trace):
    lines = SMALL_TRACE.splitlines()
    cols = lines[1].split("\t")
    cols[11] = "-5"  # negative arrival on line 2
    bad = tmp_path / "bad.trace"
    bad.write_text("\n".join([lines[0], "\t".join(cols), lines[2]]) + "\n", encoding="utf-8")
    proc = run_cli("--agent", "fifo", "--trace", str(bad), "--gpus", "4", "--json", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert f"{bad}:2:arrival" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_gang_larger_than_cluster_exits_2(tmp_path, small_trace):
    proc = run_cli("--agent", "fifo", "--trace", str(small_trace), "--gpus", "1", "--json", cwd=tmp_path)
    assert proc.returncode == 2
    assert f"{small_trace}:2:gang" in proc.stderr and proc.stdout == ""


def test_unwritable_output_is_refused_before_the_episode(tmp_path, small_trace):
    # the per-job CSV could not be written: refused up front (exit 2), so no episode runs
    unwritable = tmp_path / "missing-dir" / "jobs.csv"
    proc = run_cli("--agent", "fifo", "--trace", str(small_trace), "--gpus", "4", "--json",
                   "--jobs-csv", str(unwritable), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "--jobs-csv" in proc.stderr and "missing-dir" in proc.stderr


def test_readable_table_without_json(tmp_path, small_trace):
    proc = run_cli("--agent", "fifo", "--trace", str(small_trace), "--gpus", "4", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    with pytest.raises(json.JSONDecodeError):
        json.loads(proc.stdout)
    rows = dict(line.split(None, 1) for line in proc.stdout.splitlines() if line.strip())
    for key in RUN_JSON_KEYS:
        assert key in rows, key
    assert rows["completed_jobs"].strip() == "3" and rows["agent"].strip() == "fifo"


def test_progress_bar_only_on_a_terminal_stderr(tmp_path, small_trace):
    args = ("--agent", "fifo", "--trace", str(small_trace), "--gpus", "4", "--json")
    piped = run_cli(*args, cwd=tmp_path)
    assert piped.returncode == 0 and "jobs" not in piped.stderr  # no bar into a pipe
    leader, follower = pty.openpty()
    try:
        on_tty = run_cli(*args, cwd=tmp_path, stderr=follower)
        os.close(follower)
        follower = -1
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    assert on_tty.returncode == 0
    assert len(on_tty.stdout.splitlines()) == 1 and strict_json(on_tty.stdout)["completed_jobs"] == 3
    assert b"3/3 jobs" in b"".join(chunks)


@pytest.mark.parametrize("rounds", ["0", "-1"])
def test_core_bug_non_positive_max_rounds_is_invalid_input(tmp_path, small_trace, rounds):
    # Currently `--max-rounds 0` silently means "unlimited" (`args.max_rounds or DEFAULT`)
    # and `--max-rounds -1` prints a 0-round "truncated" result with exit 0. Both are
    # invalid input: exit 2 with a message naming the option, nothing on stdout.
    proc = run_cli("--agent", "fifo", "--trace", str(small_trace), "--gpus", "4",
                   "--max-rounds", rounds, "--json", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "max-rounds" in proc.stderr

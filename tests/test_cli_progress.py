"""Long runs: progress lines on a non-terminal stderr, and SIGINT/SIGTERM partial results.

``shockwave-gym run`` prints ``round R, t=..., done D/N jobs, elapsed ..s`` to stderr every
``--progress-every-s`` seconds when stderr is not a terminal; a SIGINT or SIGTERM stops the
episode after the current round, writes what finished (``--json`` with ``"partial": true``
and the signal, ``--jobs-csv`` with the finished jobs only, ``--timeline-csv`` with the rounds
played) and exits 130 / 143. The runner's hooks (``on_round``, ``should_stop``) are tested
directly too.
"""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from shockwave_agents import make_agent
from shockwave_gym.config import SimConfig
from shockwave_gym.runner import ProgressLines, RoundStatus, run_episode
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import BUNDLED_GPUS, load_trace

PROGRESS = re.compile(r"^round (\d+), t=[\d,]+s, done (\d+)/(\d+) jobs, elapsed [\d.]+s$")
#: Timing fields differ between any two runs; everything else must be identical.
WALL_KEYS = {"wall_s", "episode_wall_s", "decision_wall_s", "decision_ms_per_round"}
#: ~15k rounds of FIFO on 900 jobs: long enough to interrupt, short if the signal is lost.
LONG_RUN = ["--agent", "fifo", "--trace", "scale-900", "--round-s", "2", "--restart-overhead-s", "0"]


def cli(*args: str):
    return [sys.executable, "-m", "shockwave_gym.cli", *args]


def _without_wall(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in WALL_KEYS}


def test_runner_hooks_observe_and_stop_without_changing_the_schedule():
    throughputs = ThroughputTable.load(None)
    trace = load_trace("teaching-12", throughputs, gpus=BUNDLED_GPUS["teaching-12"])
    config = SimConfig(gpus=BUNDLED_GPUS["teaching-12"])
    plain = run_episode(trace, make_agent("fifo"), config, throughputs, progress=False)
    seen: list[RoundStatus] = []
    watched = run_episode(trace, make_agent("fifo"), config, throughputs, progress=False, on_round=seen.append)
    assert _without_wall(watched.metrics) == _without_wall(plain.metrics) and not watched.stopped
    assert [s.round_index for s in seen] == list(range(1, plain.metrics["rounds"] + 1))
    assert seen[-1].num_done == seen[-1].num_jobs == 12
    assert all(a.time_s < b.time_s and a.num_done <= b.num_done for a, b in zip(seen, seen[1:], strict=False))

    at_once = run_episode(trace, make_agent("fifo"), config, throughputs, progress=False, should_stop=lambda: True)
    assert at_once.stopped and at_once.metrics["rounds"] == 0 and at_once.metrics["completed_jobs"] == 0
    stopped = run_episode(trace, make_agent("fifo"), config, throughputs, progress=False,
                          on_round=(later := []).append, should_stop=lambda: len(later) >= 5)
    assert stopped.stopped and stopped.metrics["rounds"] == 5 and stopped.metrics["truncated"]
    assert stopped.result.round_start_s.tolist() == plain.result.round_start_s[:5].tolist()


def test_progress_lines_are_rate_limited():
    class Sink(list):
        def write(self, text):
            self.append(text)

        def flush(self):
            pass

    sink = Sink()
    lines = ProgressLines(1.0, sink)
    for k, elapsed in enumerate([0.2, 0.9, 1.0, 1.5, 1.99, 2.0, 2.5, 3.1], start=1):
        lines(RoundStatus(k, 120.0 * k, k // 2, 9, elapsed))
    assert [PROGRESS.match(line.rstrip("\n")).group(1) for line in sink] == ["3", "6", "8"]
    assert sink[0] == "round 3, t=360s, done 1/9 jobs, elapsed 1.0s\n"
    with pytest.raises(ValueError):
        ProgressLines(0)


def test_piped_stderr_gets_progress_lines_and_the_same_results(tmp_path):
    run = ["run", "--agent", "fifo", "--trace", "teaching-12", "--json"]
    proc = subprocess.run(cli(*run, "--progress-every-s", "0.000001"), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.strip().splitlines()
    matches = [PROGRESS.match(line) for line in lines]
    assert lines and all(matches), proc.stderr
    rounds = [int(m.group(1)) for m in matches]
    assert rounds == sorted(rounds) and matches[-1].group(2) == matches[-1].group(3) == "12"
    record = json.loads(proc.stdout)
    assert rounds[-1] == record["rounds"] and "partial" not in record

    quiet = subprocess.run(cli(*run, "--progress-every-s", "0"), capture_output=True, text=True, timeout=120)
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert _without_wall(json.loads(quiet.stdout)) == _without_wall(record)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_writes_partial_results_and_exits_128_plus_signal(tmp_path, signum, code):
    jobs_csv, timeline_csv = tmp_path / "jobs.csv", tmp_path / "timeline.csv"
    proc = subprocess.Popen(
        cli("run", *LONG_RUN, "--json", "--progress-every-s", "0.2",
            "--jobs-csv", str(jobs_csv), "--timeline-csv", str(timeline_csv)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    seen = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # wait until some jobs have finished
            line = proc.stderr.readline()
            if not line:
                break
            seen.append(line)
            match = PROGRESS.match(line.rstrip("\n"))
            if match and int(match.group(2)) > 0:
                proc.send_signal(signum)
                break
        stdout, rest = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = "".join(seen) + rest
    assert match and int(match.group(2)) > 0, stderr
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr and f"{signal.Signals(signum).name} received" in stderr

    record = json.loads(stdout)
    assert record["partial"] is True and record["signal"] == signal.Signals(signum).name
    assert record["truncated"] is True and 0 < record["completed_jobs"] < record["num_jobs"] == 900
    with open(jobs_csv, newline="") as handle:
        jobs = list(csv.DictReader(handle))
    assert len(jobs) == record["completed_jobs"]
    assert all(row["completion_s"] and float(row["jct_s"]) > 0 for row in jobs)
    with open(timeline_csv, newline="") as handle:
        timeline = list(csv.DictReader(handle))
    assert len(timeline) == record["rounds"] >= int(match.group(1))


def test_plain_progress_says_when_it_starts_and_keeps_talking_while_no_cell_finishes():
    import io
    import threading

    from shockwave_gym.harness.progress import Progress

    stream = io.StringIO()  # not a terminal: plain lines
    with Progress(3, enabled=None, stream=stream, heartbeat_s=0.2) as bar:
        bar.note("running 3 cell(s)")
        threading.Event().wait(0.75)  # a long first cell
        bar.cell_done("fifo / t / seed 0", 0.7)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "running 3 cell(s)"
    beats = [line for line in lines if "still running" in line]
    assert len(beats) >= 2 and beats[0].startswith("[0/3] still running: 3 cell(s) left (elapsed ")
    assert lines[-1].startswith("[1/3] fifo / t / seed 0: done in 0.7 s")
    quiet = io.StringIO()
    with Progress(3, enabled=False, stream=quiet, heartbeat_s=0.1):
        threading.Event().wait(0.3)
    assert quiet.getvalue() == ""


def test_compare_into_a_pipe_prints_a_start_line_before_any_cell_finishes(tmp_path):
    completed = subprocess.run(cli("compare", "--agents", "fifo,srtf", "--traces", "teaching-12", "--workers", "1",
                                   "--no-figures", "--out", str(tmp_path / "c")),
                               capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    lines = [line for line in completed.stderr.splitlines() if line.strip()]
    assert lines[0].startswith("running 2 cell(s), longest first (first: ")
    assert [line.split()[0] for line in lines[1:3]] == ["[1/2]", "[2/2]"]

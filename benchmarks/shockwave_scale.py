"""Shockwave at scale: whole ``shockwave-gym run`` processes of the faithful ``shockwave`` agent.

Run as ``.venv/bin/python benchmarks/shockwave_scale.py``. Three cases, each one CLI process
(start-up included) timed by wall clock and by the child's CPU time (user + sys, from
``resource.getrusage(RUSAGE_CHILDREN)``; other work on a shared machine inflates it less),
with the 1-minute load average before and after:

- ``canonical``: the authors' canonical trace (``authors-canonical-120``, 32 GPUs), target
  <= 8 s; its metrics are compared with the figures of the planner before this work
  (``--agent-opt rank_method=mip``, measured in the same run), each within 1% (``--no-baseline`` skips that run);
- ``scale-900``: the bundled 900-job trace on 256 GPUs, target <= 60 s;
- ``scale-2000``: a generated 2,000-job trace on 512 GPUs, target <= 300 s, made with
  ``shockwave-gym generate-trace --jobs 2000 --seed 2000 --arrival-rate-per-hour 1440``
  (the arrival rate scaled with the cluster, as for the bundled ``scale-*`` traces).

Targets are for a quiet machine; the JSON says whether each was met on this one, with the
load, so a loaded run can be judged by its CPU time. Prints one JSON object. Options:
``--cases canonical,scale-900``, ``--no-baseline``, and ``--counts-mip-baseline scale-900,scale-2000``:
those cases are also run with ``--agent-opt counts_method=mip`` (every counts program solved
by HiGHS, the planner before the exact counts solver), and the JSON gives the wall-clock
ratio (before / now) of the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

METRICS = ("makespan_s", "avg_jct_s", "worst_ftf", "unfair_fraction")
GENERATE_2000 = ["generate-trace", "--jobs", "2000", "--seed", "2000", "--arrival-rate-per-hour", "1440",
                 "--name", "scale-2000"]
CASES = {  # name: (trace, gpus, target wall seconds)
    "canonical": ("authors-canonical-120", 32, 8.0),
    "scale-900": ("scale-900", 256, 60.0),
    "scale-2000": (None, 512, 300.0),
}
#: The planner as it was before re-ranking by local search.
BEFORE = ["--agent-opt", "rank_method=mip"]
#: The planner as it was before the exact counts solver (agents/shockwave/exact_counts.py).
COUNTS_MIP = ["--agent-opt", "counts_method=mip"]


def cli() -> str:
    return str(Path(sys.executable).parent / "shockwave-gym")


def run_cli(trace: str, gpus: int, extra: list[str]) -> dict:
    """One ``shockwave-gym run --json`` process: wall, CPU, load, metrics, planner summary."""
    load_before = os.getloadavg()[0]
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    completed = subprocess.run(
        [cli(), "run", "--agent", "shockwave", "--trace", trace, "--gpus", str(gpus), "--json", *extra],
        capture_output=True, text=True, check=False,
    )
    wall = time.perf_counter() - start
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode != 0:
        raise RuntimeError(f"shockwave-gym run failed: {completed.stderr[-2000:]}")
    record = json.loads(completed.stdout)
    stats = record["planner_stats"]
    return {
        "wall_s": wall,
        "cpu_s": (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime),
        "load_average_1min": [load_before, os.getloadavg()[0]],
        "metrics": {key: record[key] for key in METRICS},
        "rounds": record["rounds"],
        "progress_lines": sum(1 for line in completed.stderr.splitlines() if line.startswith("round ")),
        "planner": {key: stats[key] for key in (
            "plans", "paths", "statuses", "limit_hits", "exact_solves", "jobs", "solve_s", "rank_s", "plan_s",
            "warnings")},
    }


def trace_for(name: str, workdir: Path) -> str:
    trace = CASES[name][0]
    if trace is not None:
        return trace
    out = workdir / "scale-2000.jsonl"
    subprocess.run([cli(), *GENERATE_2000, "--out", str(out)], check=True, capture_output=True)
    return str(out)


def compare(now: dict, before: dict) -> dict:
    """Relative change of each metric (unfair fraction: in points as well)."""
    change = {key: now[key] / before[key] - 1.0 for key in METRICS if before[key]}
    change["unfair_fraction_points"] = now["unfair_fraction"] - before["unfair_fraction"]
    return change


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated: " + ", ".join(CASES))
    parser.add_argument("--no-baseline", action="store_true", help="skip the before-this-work canonical run")
    parser.add_argument("--counts-mip-baseline", default="", metavar="CASES",
                        help="comma-separated cases also run with counts_method=mip (HiGHS for every counts program)")
    args = parser.parse_args(argv)
    names = [name for name in args.cases.split(",") if name]
    counts_mip = [name for name in args.counts_mip_baseline.split(",") if name]
    unknown = sorted((set(names) | set(counts_mip)) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s) {unknown}; known: {sorted(CASES)}")
    record: dict = {"benchmark": "shockwave_scale", "generate_2000": "shockwave-gym " + " ".join(GENERATE_2000),
                    "cases": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            trace, gpus, target = trace_for(name, Path(tmp)), CASES[name][1], CASES[name][2]
            row = run_cli(trace, gpus, [])
            row.update({"trace": CASES[name][0] or "generated scale-2000", "gpus": gpus, "target_wall_s": target,
                        "target_met_here": row["wall_s"] <= target})
            if name == "canonical" and not args.no_baseline:
                before = run_cli(trace, gpus, BEFORE)
                row["before"] = {"options": " ".join(BEFORE), **before}
                row["change_vs_before"] = compare(row["metrics"], before["metrics"])
                row["within_1pct_of_before"] = all(
                    abs(row["change_vs_before"][key]) <= 0.01 for key in METRICS if key in row["change_vs_before"])
            if name in counts_mip:
                before = run_cli(trace, gpus, COUNTS_MIP)
                row["counts_mip"] = {"options": " ".join(COUNTS_MIP), **before,
                                     "wall_ratio_before_over_now": before["wall_s"] / row["wall_s"]}
                row["change_vs_counts_mip"] = compare(row["metrics"], before["metrics"])
            record["cases"][name] = row
            print(f"{name}: {row['wall_s']:.1f} s wall, {row['cpu_s']:.1f} s CPU, load {row['load_average_1min'][0]:.1f}, "
                  f"{row['planner']['plans']} plans (target {target:.0f} s)", file=sys.stderr)
    print(json.dumps(record, allow_nan=False, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())

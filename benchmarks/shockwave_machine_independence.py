"""Shockwave's results do not depend on the machine's threads or load.

Run as ``.venv/bin/python benchmarks/shockwave_machine_independence.py [--burners 4]``. For every
Shockwave variant of the agent table and three traces (the authors' canonical trace and two traces
generated with seeds outside every suite's splits), it runs ``shockwave-gym run`` in child
processes that differ only in their thread settings (``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` = 1 in one, 4 in the other), first on the machine as
it is, then beside ``--burners`` CPU-burning processes (0: skip that pass). It compares every
metric of the JSON record except the wall-clock fields (the planner's solve, build, rank and
plan times among them), and every byte of the per-job CSV.

Prints one JSON object: each pass's 1-minute load average at its end, per cell the headline
figures and the digest of each run's results, and ``all_identical``. Exits 1 when two runs of a
cell differ.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

VARIANTS = ("shockwave", "shockwave-normalized", "shockwave-fair")
#: Seeds far from every suite's split seeds, so these traces are held out by construction.
GENERATED = (("generated-60", 60, 91001, 24), ("generated-120", 120, 91002, 32))
TIMING_KEYS = frozenset({"wall_s", "episode_wall_s", "decision_wall_s"})
#: The planner's own wall-time statistics inside ``planner_stats``.
PLANNER_TIMING_KEYS = frozenset({"solve_s", "build_s", "rank_s", "plan_s"})
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
HEADLINE = ("makespan_s", "avg_jct_s", "worst_ftf", "unfair_fraction", "rho_mean", "rounds")


def cli() -> str:
    return str(Path(sys.executable).parent / "shockwave-gym")


def generate(folder: Path) -> list[tuple[str, str, int]]:
    """(label, trace argument, GPUs) of the three traces."""
    traces = [("authors-canonical-120", "authors-canonical-120", 32)]
    for label, jobs, seed, gpus in GENERATED:
        path = folder / f"{label}.jsonl"
        subprocess.run([cli(), "generate-trace", "--jobs", str(jobs), "--seed", str(seed),
                        "--gpus", str(gpus), "--out", str(path)], check=True, capture_output=True)
        traces.append((label, str(path), gpus))
    return traces


def run_once(agent: str, trace: str, gpus: int, threads: int, folder: Path) -> tuple[str, dict]:
    """Digest of one run's results (the metrics, timing fields dropped, and the per-job CSV) and
    its headline figures."""
    env = dict(os.environ)
    env.update({name: str(threads) for name in THREAD_VARS})
    jobs_csv = folder / f"jobs-{threads}.csv"
    done = subprocess.run([cli(), "run", "--agent", agent, "--trace", trace, "--gpus", str(gpus),
                           "--json", "--jobs-csv", str(jobs_csv)],
                          env=env, capture_output=True, text=True, check=True)
    record = {key: value for key, value in json.loads(done.stdout).items() if key not in TIMING_KEYS}
    stats = record.get("planner_stats") or {}
    record["planner_stats"] = {key: value for key, value in stats.items() if key not in PLANNER_TIMING_KEYS}
    digest = hashlib.sha256(json.dumps(record, sort_keys=True).encode())
    digest.update(jobs_csv.read_bytes())
    headline = {key: record[key] for key in HEADLINE}
    return digest.hexdigest()[:16], headline


def one_pass(traces, folder: Path, burners: int) -> tuple[dict, float]:
    """(agent, trace) -> digests by thread count, and the load average at the end."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(burners)]
    digests, headlines = {}, {}
    try:
        for label, trace, gpus in traces:
            for agent in VARIANTS:
                for threads in (1, 4):
                    digest, headline = run_once(agent, trace, gpus, threads, folder)
                    digests.setdefault((agent, label, gpus), {})[f"threads_{threads}"] = digest
                    headlines[(agent, label, gpus)] = headline
        load = os.getloadavg()[0]
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    return {key: {**digests[key], "headline": headlines[key]} for key in digests}, load


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burners", type=int, default=4, help="CPU-burning processes of the loaded pass (0: none)")
    args = parser.parse_args(argv)
    passes = {"as_is": 0, **({"loaded": args.burners} if args.burners > 0 else {})}
    results, loads = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        traces = generate(Path(tmp))
        for name, burners in passes.items():
            results[name], loads[name] = one_pass(traces, Path(tmp), burners)
    cells = []
    for (agent, label, gpus), first in results["as_is"].items():
        digests = {f"{name}_{key}": value for name, by_key in results.items()
                   for key, value in by_key[(agent, label, gpus)].items() if key != "headline"}
        cells.append({"agent": agent, "trace": label, "gpus": gpus, **first["headline"], "digests": digests,
                      "identical": len(set(digests.values())) == 1})
    identical = all(cell["identical"] for cell in cells)
    print(json.dumps({"benchmark": "shockwave_machine_independence", "burners": args.burners,
                      "load_1min_at_end": {name: round(load, 2) for name, load in loads.items()},
                      "cells": cells, "all_identical": identical}, indent=2))
    return 0 if identical else 1


if __name__ == "__main__":
    raise SystemExit(main())

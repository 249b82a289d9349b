"""Shockwave's results do not depend on the machine's threads or load.

Run as ``.venv/bin/python benchmarks/shockwave_machine_independence.py [--burners N]``. For every
Shockwave variant of the agent table and three traces (the authors' canonical trace and two traces
generated with seeds outside every suite's splits), it runs ``shockwave-gym run`` in two child
processes that differ only in their thread settings (``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` = 1 in one, 4 in the other) and compares the
results: every metric of the JSON record except the wall-clock fields, and every byte of the
per-job CSV. With ``--burners N`` the runs share the machine with N CPU-burning processes, so the
comparison is also one between a quiet and a loaded machine when the script is run both ways.

Prints one JSON object: the machine's 1-minute load average before and after, per cell the digest
of each run's results and whether they are identical, and ``all_identical``. Exits 1 when a pair
differs.
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
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


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


def run_once(agent: str, trace: str, gpus: int, threads: int, folder: Path) -> str:
    """Digest of one run's results: the metrics (timing fields dropped) and the per-job CSV."""
    env = dict(os.environ)
    env.update({name: str(threads) for name in THREAD_VARS})
    jobs_csv = folder / f"jobs-{threads}.csv"
    done = subprocess.run([cli(), "run", "--agent", agent, "--trace", trace, "--gpus", str(gpus),
                           "--json", "--jobs-csv", str(jobs_csv)],
                          env=env, capture_output=True, text=True, check=True)
    record = {key: value for key, value in json.loads(done.stdout).items() if key not in TIMING_KEYS}
    digest = hashlib.sha256(json.dumps(record, sort_keys=True).encode())
    digest.update(jobs_csv.read_bytes())
    return digest.hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burners", type=int, default=0, help="CPU-burning processes beside the runs")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.burners)]
    cells = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            for label, trace, gpus in generate(folder):
                for agent in VARIANTS:
                    one = run_once(agent, trace, gpus, 1, folder)
                    four = run_once(agent, trace, gpus, 4, folder)
                    cells.append({"agent": agent, "trace": label, "gpus": gpus,
                                  "threads_1": one, "threads_4": four, "identical": one == four})
        load_after = os.getloadavg()[0]
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    identical = all(cell["identical"] for cell in cells)
    print(json.dumps({"benchmark": "shockwave_machine_independence", "burners": args.burners,
                      "load_1min_before": round(load_before, 2), "load_1min_after": round(load_after, 2),
                      "cells": cells, "all_identical": identical}, indent=2))
    return 0 if identical else 1


if __name__ == "__main__":
    raise SystemExit(main())

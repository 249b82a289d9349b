"""Harness: wall time of one grid in this process (baseline) and in the default 2-worker pool.

    .venv/bin/python benchmarks/harness_workers.py

Grid: the cheap built-in agents that exist (up to four) x canonical-analogue-120 x seeds 0 and 1
(seed-free agents run once, so one cell each), no output directory. Prints one JSON object; ``speedup`` = in-process wall / pool wall
(the pool pays for starting its ``spawn`` workers). Timings on a shared 2-core machine are
noisy: ``load_avg_1min`` says how busy it was.
"""

from __future__ import annotations

import json
import os
import time

from shockwave_agents import available_agents
from shockwave_gym.harness import evaluate
from shockwave_gym.harness.backends import DEFAULT_WORKERS

TRACE = "canonical-analogue-120"
SEEDS = (0, 1)
CHEAP = ("fifo", "srtf", "las", "gavel", "mst", "gandiva_fair")


def timed(agents: list[str], workers: int) -> tuple[float, list[float]]:
    start = time.perf_counter()
    frame = evaluate(agents, TRACE, seeds=SEEDS, workers=workers, progress=False)
    return time.perf_counter() - start, frame["makespan_s"].tolist()


def main() -> None:
    agents = [name for name in CHEAP if name in available_agents()][:4]
    serial_s, serial_makespans = timed(agents, 1)
    pool_s, pool_makespans = timed(agents, DEFAULT_WORKERS)
    print(json.dumps({
        "benchmark": "harness_workers",
        "trace": TRACE,
        "agents": agents,
        # seed-free agents run one seed only (the harness says so), so count the rows
        "cells": len(serial_makespans),
        "baseline": "workers=1 (cells run in this process)",
        "serial_wall_s": round(serial_s, 3),
        "pool_workers": DEFAULT_WORKERS,
        "pool_wall_s": round(pool_s, 3),
        "speedup": round(serial_s / pool_s, 3),
        "identical_results": serial_makespans == pool_makespans,
        "cpu_count": os.cpu_count(),
        "load_avg_1min": round(os.getloadavg()[0], 2),
    }))


if __name__ == "__main__":
    main()

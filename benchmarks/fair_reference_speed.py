"""Cost of the fair-share reference (``shockwave_gym.fair_reference``) on large workloads.

Run as ``.venv/bin/python benchmarks/fair_reference_speed.py [--repeats N]``. Prints one JSON
object: per workload the CPU seconds of one uncached ``fluid_completion_s`` call (median and
best of ``--repeats``), the ratio to the 1 s target (< 1 meets it), and the ratio to a baseline
measured in the same run: ``numpy.sort`` of the same arrivals once per event (two events per
job), the cost of re-sorting the active set at every event, which the reference's per-gang
heaps avoid.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import numpy as np

from shockwave_gym.fair_reference import fluid_completion_s

TARGET_S = 1.0

WORKLOADS = {
    # name: (jobs, GPUs, gang sizes)
    "2000 jobs, gangs 1/2/4/8, 32 GPUs": (2000, 32, (1, 2, 4, 8)),
    "2000 jobs, 32 distinct gangs, 64 GPUs": (2000, 64, tuple(range(1, 33))),
}


def _instance(jobs: int, gangs: tuple[int, ...], seed: int = 7):
    rng = np.random.default_rng(seed)
    arrival = np.sort(rng.uniform(0, 3e5, jobs))
    gang = rng.choice(np.array(gangs), jobs)
    work = rng.uniform(100, 3e4, jobs)
    return arrival, gang, work


def _cpu_s(call, *args) -> float:
    start = time.process_time()
    call(*args)
    return time.process_time() - start


def _sorts(arrival: np.ndarray, count: int) -> None:
    for _ in range(count):
        np.sort(arrival)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    rows = {}
    for name, (jobs, gpus, gangs) in WORKLOADS.items():
        arrival, gang, work = _instance(jobs, gangs)
        times = [_cpu_s(fluid_completion_s, arrival, gang, work, gpus) for _ in range(args.repeats)]
        # baseline: one sort of the arrivals per job (2 events per job: arrival and completion)
        base = [_cpu_s(_sorts, arrival, 2 * jobs) for _ in range(args.repeats)]
        median = statistics.median(times)
        rows[name] = {
            "cpu_s_median": round(median, 4),
            "cpu_s_best": round(min(times), 4),
            "ratio_to_target": round(median / TARGET_S, 4),
            "ratio_to_sort_per_event": round(median / statistics.median(base), 3),
        }
    print(json.dumps({"benchmark": "fair_reference_speed", "machine": platform.machine(),
                      "python": platform.python_version(), "target_s": TARGET_S, "workloads": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

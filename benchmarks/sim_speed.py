"""Simulator speed: FIFO episodes on the canonical trace and on the bundled 900-job trace.

Run as ``.venv/bin/python benchmarks/sim_speed.py [--repeats N]``. Prints one JSON object:
per workload the episode wall time (``run_episode``: simulator construction + every round +
metrics; trace loading reported apart), rounds and rounds/s, the ratio of the wall time to
its target (canonical < 0.2 s, 900 jobs < 2 s; ratio < 1 meets it), and the ratio of
rounds/s to CartPole-v1 steps/s measured in the same run (the baseline of a cheap env).

The canonical trace is the authors' (bundled as ``authors-canonical-120``, with the built-in
V100 table: their figures). The machine is shared: timings are the median and the best of ``--repeats`` runs.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time

import numpy as np

from shockwave_agents import make_agent
from shockwave_gym.runner import run_episode
from shockwave_gym.simulator import SimConfig
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import BUNDLED_GPUS, load_trace

TARGET_CANONICAL_S = 0.2
TARGET_SCALE_900_S = 2.0


def time_fifo(trace, gpus: int, table: ThroughputTable, repeats: int) -> dict:
    walls, rounds = [], None
    run_episode(trace, make_agent("fifo"), SimConfig(gpus=gpus), table)  # warm-up
    for _ in range(repeats):
        outcome = run_episode(trace, make_agent("fifo"), SimConfig(gpus=gpus), table)
        walls.append(outcome.wall_s)
        rounds = outcome.metrics["rounds"]
        completed = outcome.metrics["completed_jobs"]
    median = statistics.median(walls)
    return {
        "jobs": len(trace.jobs),
        "gpus": gpus,
        "completed_jobs": completed,
        "rounds": rounds,
        "episode_wall_s_median": median,
        "episode_wall_s_best": min(walls),
        "rounds_per_s_median": rounds / median,
    }


def cartpole_steps_per_s(steps: int) -> float:
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, 2, size=steps)
    start = time.perf_counter()
    for action in actions:
        _, _, terminated, truncated, _ = env.step(int(action))
        if terminated or truncated:
            env.reset()
    elapsed = time.perf_counter() - start
    env.close()
    return steps / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cartpole-steps", type=int, default=50_000)
    args = parser.parse_args(argv)

    table = ThroughputTable.builtin("v100")
    source, name = "authors' canonical trace (bundled authors-canonical-120), built-in v100 table", "authors-canonical-120"
    start = time.perf_counter()
    canonical_trace = load_trace(name, table, gpus=32)
    canonical_load_s = time.perf_counter() - start
    canonical = time_fifo(canonical_trace, 32, table, args.repeats)
    canonical.update(trace=source, trace_load_s=canonical_load_s)

    builtin = ThroughputTable.builtin_v100()
    start = time.perf_counter()
    scale_trace = load_trace("scale-900", builtin, gpus=BUNDLED_GPUS["scale-900"])
    scale_load_s = time.perf_counter() - start
    scale = time_fifo(scale_trace, BUNDLED_GPUS["scale-900"], builtin, args.repeats)
    scale.update(trace="bundled scale-900", trace_load_s=scale_load_s)

    cartpole = cartpole_steps_per_s(args.cartpole_steps)
    for result, target in ((canonical, TARGET_CANONICAL_S), (scale, TARGET_SCALE_900_S)):
        result["target_wall_s"] = target
        result["wall_to_target_ratio"] = result["episode_wall_s_median"] / target
        result["meets_target"] = result["episode_wall_s_median"] < target
        result["rounds_per_s_to_cartpole_steps_per_s"] = result["rounds_per_s_median"] / cartpole

    print(json.dumps({
        "benchmark": "sim_speed",
        "agent": "fifo",
        "repeats": args.repeats,
        "baseline": "CartPole-v1 env.step() on random actions, same process and run",
        "cartpole_steps_per_s": cartpole,
        "canonical": canonical,
        "scale_900": scale,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

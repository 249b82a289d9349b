"""Training throughput: env steps/s while PPO and MaskablePPO train the slot policy with 2
env worker processes (SubprocVecEnv), on ``Generated-v0``-style traces (12 GPUs, 20-40 jobs).

    .venv/bin/python benchmarks/train_speed.py [--timesteps 4096] [--envs 2]

Runs ``shockwave_gym.training.train.train`` (the code behind ``shockwave-gym train``) for
PPO/priority, MaskablePPO/sequential and MaskablePPO/select, with periodic evaluation and
checkpoints pushed past the end, and reports env steps per second of ``model.learn``
(sequential mode counts sub-steps). Baseline, measured in the same run: random valid
actions on the same env in this one process, no learning. Toy figures from the project's start (~4k
steps/s PPO, ~200 MaskablePPO on MultiBinary) are quoted for context only. Prints one JSON
object on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time

import gymnasium as gym
import numpy as np

import shockwave_gym  # noqa: F401  (registers the ids)
from shockwave_gym.training.train import TrainConfig, train
from shockwave_gym.training.workload import TrainingTraceSource, Workload

RUNS = (("ppo", "priority"), ("maskable_ppo", "sequential"), ("maskable_ppo", "select"))


def random_steps_per_s(mode: str, steps: int) -> float:
    """Baseline: random valid actions on the training env, one process, no learning."""
    env = gym.make("shockwave_gym/Generated-v0", trace=TrainingTraceSource(Workload()), gpus=12, action_mode=mode, max_jobs=40)
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    start = time.perf_counter()
    for _ in range(steps):
        if mode == "sequential":
            legal = np.flatnonzero(env.unwrapped.action_masks())
            action = np.int64(rng.choice(legal))
        elif mode == "select":
            action = (rng.uniform(size=40) < 0.5).astype(np.int8)
        else:
            action = rng.uniform(-1, 1, 40).astype(np.float32)
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timesteps", type=int, default=4096)
    parser.add_argument("--envs", type=int, default=2)
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for algo, mode in RUNS:
            config = TrainConfig(
                out=os.path.join(scratch, f"{algo}-{mode}"), algo=algo, action_mode=mode, timesteps=args.timesteps,
                envs=args.envs, eval_every=10 * args.timesteps, checkpoint_every=10 * args.timesteps,
                progress_every_s=1e9, eval_seeds=(1001,),
            )
            report = train(config)
            baseline = random_steps_per_s(mode, 2000)
            results[f"{algo}/{mode}"] = {
                "env_steps_per_s": report["env_steps_per_s"],
                "timesteps": report["timesteps"],
                "learn_wall_s": report["wall_s"],
                "baseline_random_actions_steps_per_s": baseline,
                "ratio_to_baseline": report["env_steps_per_s"] / baseline,
            }
            print(f"{algo}/{mode}: {report['env_steps_per_s']:,.0f} env steps/s (random actions: {baseline:,.0f})",
                  file=sys.stderr, flush=True)
    print(json.dumps({
        "benchmark": "train_speed",
        "command": "python benchmarks/train_speed.py " + " ".join(sys.argv[1:]),
        "envs": args.envs,
        "network": {"embed_dim": 32, "hidden_dim": 64, "n_steps": 256, "batch_size": 256, "n_epochs": 4},
        "results": results,
        "baseline": "random valid actions on the same env, one process, no learning (same run)",
        "spec_context": "toy figures from the project's start, not this run: PPO ~4k steps/s, MaskablePPO on MultiBinary ~200 steps/s",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_average_1min": os.getloadavg()[0]},
    }, indent=1))


if __name__ == "__main__":
    main()

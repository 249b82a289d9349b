"""Training throughput: env steps/s while PPO and MaskablePPO train the slot policy on
``Generated-v0``-style traces (12 GPUs, 20-40 jobs), through the old path (``--vec subproc``:
one SubprocVecEnv worker per env, 2 workers) and the new default (``--vec native``: K
clusters in the native vector env, one process, the policy batched over them), in one run.

    .venv/bin/python benchmarks/train_speed.py [--timesteps 4096] [--envs 2] [--native-envs 16]

Runs ``shockwave_gym.training.train.train`` (the code behind ``shockwave-gym train``) for
PPO/priority, MaskablePPO/sequential and MaskablePPO/select on both paths, same
hyperparameters (``TrainConfig``'s defaults: a 512-step rollout summed over the envs, i.e. 256
per env with 2 workers and 32 per env with 16 clusters, minibatches of 256, 10 epochs; each
run's resolved values are in its JSON row), with periodic evaluation and
checkpoints pushed past the end, and reports env steps per second of ``model.learn`` and its
wall-time split between rollouts and PPO's update (:class:`PhaseClock`)
(sequential mode counts sub-steps) and the new path's ratio to the old one. Target (issue
13): PPO >= 4x the old path. Baseline, measured in the same run: random valid
actions on the same env in this one process, no learning. Toy figures from the project's start (~4k
steps/s PPO, ~200 MaskablePPO on MultiBinary) are quoted for context only. Prints one JSON
object on stdout.

``--paired BEFORE_DIR`` instead compares two versions of the code in one run (issue 35): PPO /
priority on the native vector env (16 clusters by default), the code in ``BEFORE_DIR`` (a
source tree holding ``shockwave_gym/`` and ``shockwave_agents/``, e.g. ``git archive main
shockwave_gym agents`` unpacked with ``agents`` linked as ``shockwave_agents``) with its MLP
policy, then this tree with the MLP policy and with the attention policy (``--policy
attention``), each its own process, ``--repeats`` rounds interleaved, after one warm-up run
per tree (numba compiles the env's kernels once per tree). Run it under ``nice`` as a whole:
every run inherits the same priority. Reports env steps/s per run, their medians, the
after/before ratio of the MLP policy's medians, and the rollout/update split::

    nice .venv/bin/python benchmarks/train_speed.py --paired /tmp/before --repeats 3
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
TARGET_PPO_RATIO = 4.0


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


class PhaseClock:
    """Wall seconds inside SB3's ``collect_rollouts`` (the rollouts: policy forward
    passes and env steps) and ``train`` (the update), accumulated while installed: the split
    that says what bounds a run. Installed around one ``train()`` call of this benchmark."""

    def __init__(self):
        self.seconds = {"rollout": 0.0, "update": 0.0}
        self._saved = []

    def _timed(self, owner, name, phase):
        original = owner.__dict__[name]

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[phase] += time.perf_counter() - start

        self._saved.append((owner, name, original))
        setattr(owner, name, timed)

    def __enter__(self):
        from sb3_contrib import MaskablePPO
        from stable_baselines3 import PPO
        from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm

        self._timed(OnPolicyAlgorithm, "collect_rollouts", "rollout")
        self._timed(MaskablePPO, "collect_rollouts", "rollout")
        self._timed(PPO, "train", "update")
        self._timed(MaskablePPO, "train", "update")
        return self

    def __exit__(self, *exc):
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)


#: The paired comparison's runs: (label, which tree, TrainConfig fields beyond the common ones).
PAIRED_RUNS = (("before/mlp", "before", {}), ("after/mlp", "after", {}), ("after/attention", "after", {"policy": "attention"}))


def child_run(spec: dict) -> dict:
    """One timed ``train()`` in this process (the code on ``sys.path``): PPO / priority."""
    import shockwave_agents.learned.policy as policy_module

    with tempfile.TemporaryDirectory() as scratch:
        config = TrainConfig(out=scratch, algo="ppo", action_mode="priority", timesteps=spec["timesteps"],
                             envs=spec["envs"], vec="native", eval_every=10 * spec["timesteps"],
                             checkpoint_every=10 * spec["timesteps"], progress_every_s=1e9, eval_seeds=(1001,),
                             **spec["extra"])
        with PhaseClock() as clock:
            report = train(config)
    return {"env_steps_per_s": report["env_steps_per_s"], "timesteps": report["timesteps"],
            "learn_wall_s": round(report["wall_s"], 2), "code": os.path.dirname(os.path.dirname(policy_module.__file__)),
            "wall_s_per_8192_steps": {phase: round(seconds * 8192 / report["timesteps"], 3)
                                      for phase, seconds in clock.seconds.items()},
            "load_average_1min_at_end": os.getloadavg()[0]}


def paired(before: str, repeats: int, envs: int, timesteps: int) -> dict:
    """Before and after in one run (module docstring)."""
    import statistics
    import subprocess

    roots = {"before": os.path.abspath(before), "after": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}

    def run(tree: str, extra: dict, steps: int) -> dict:
        spec = json.dumps({"timesteps": steps, "envs": envs, "extra": extra})
        env = {**os.environ, "PYTHONPATH": roots[tree]}
        done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", spec], env=env,
                              capture_output=True, text=True, check=True, cwd=roots[tree])
        return json.loads(done.stdout)

    for tree in roots:  # warm-up: compile (and cache) each tree's numba kernels
        run(tree, {}, 1024)
    runs = {label: [] for label, _, _ in PAIRED_RUNS}
    for _ in range(repeats):
        for label, tree, extra in PAIRED_RUNS:
            runs[label].append(run(tree, extra, timesteps))
            print(f"{label}: {runs[label][-1]['env_steps_per_s']:,.0f} env steps/s", file=sys.stderr, flush=True)
    median = {label: statistics.median(r["env_steps_per_s"] for r in rows) for label, rows in runs.items()}
    return {"median_env_steps_per_s": median, "mlp_after_over_before": median["after/mlp"] / median["before/mlp"],
            "attention_over_mlp_after": median["after/attention"] / median["after/mlp"], "runs": runs}


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(child_run(json.loads(sys.argv[2]))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timesteps", type=int, default=4096)
    parser.add_argument("--envs", type=int, default=2, help="worker processes of the old (subproc) path")
    parser.add_argument("--native-envs", type=int, default=16, help="clusters of the new (native) path")
    parser.add_argument("--skip-old-select", action="store_true", help="skip the slow old-path MaskablePPO/select run")
    parser.add_argument("--paired", metavar="BEFORE_DIR", default=None,
                        help="compare the code in BEFORE_DIR with this tree instead (PPO / priority, native)")
    parser.add_argument("--repeats", type=int, default=3, help="--paired: interleaved rounds")
    args = parser.parse_args()
    if args.paired:
        timesteps = max(args.timesteps, 2 * 256 * args.native_envs)
        print(json.dumps({
            "benchmark": "train_speed_paired",
            "command": "python benchmarks/train_speed.py " + " ".join(sys.argv[1:]),
            "native_envs": args.native_envs, "timesteps": timesteps, "target": "MLP policy after >= 2x before",
            **paired(args.paired, args.repeats, args.native_envs, timesteps),
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                        "load_average_1min_at_start": os.getloadavg()[0]},
        }, indent=1))
        return
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for algo, mode in RUNS:
            row = {}
            for vec, envs in (("subproc", args.envs), ("native", args.native_envs)):
                if vec == "subproc" and mode == "select" and args.skip_old_select:
                    continue
                # 8,192 steps with 16 clusters (16 rollouts of 512), more with more envs
                timesteps = max(args.timesteps, 2 * 256 * envs)
                config = TrainConfig(
                    out=os.path.join(scratch, f"{algo}-{mode}-{vec}"), algo=algo, action_mode=mode, timesteps=timesteps,
                    envs=envs, vec=vec, eval_every=10 * timesteps, checkpoint_every=10 * timesteps,
                    progress_every_s=1e9, eval_seeds=(1001,),
                )
                with PhaseClock() as clock:
                    report = train(config)
                # the hyperparameters as the run resolved them (train() fills in the defaults)
                row[vec] = {"envs": envs, "env_steps_per_s": report["env_steps_per_s"], "timesteps": report["timesteps"],
                            "learn_wall_s": report["wall_s"], "n_steps_per_env": config.n_steps,
                            "rollout_steps": config.n_steps * config.envs, "batch_size": config.batch_size,
                            "n_epochs": config.n_epochs, "embed_dim": config.embed_dim, "hidden_dim": config.hidden_dim,
                            "wall_s_per_8192_steps": {phase: round(seconds * 8192 / report["timesteps"], 3)
                                                     for phase, seconds in clock.seconds.items()}}
                print(f"{algo}/{mode} {vec} x{envs}: {report['env_steps_per_s']:,.0f} env steps/s",
                      file=sys.stderr, flush=True)
            baseline = random_steps_per_s(mode, 2000)
            row["baseline_random_actions_steps_per_s"] = baseline
            if "subproc" in row:
                row["native_over_subproc"] = row["native"]["env_steps_per_s"] / row["subproc"]["env_steps_per_s"]
            results[f"{algo}/{mode}"] = row
    print(json.dumps({
        "benchmark": "train_speed",
        "command": "python benchmarks/train_speed.py " + " ".join(sys.argv[1:]),
        "envs": {"subproc": args.envs, "native": args.native_envs},
        "target": f"PPO native >= {TARGET_PPO_RATIO}x subproc",
        "meets_target": bool(results["ppo/priority"].get("native_over_subproc", 0.0) >= TARGET_PPO_RATIO),
        "results": results,
        "baseline": "random valid actions on the same env, one process, no learning (same run)",
        "spec_context": "toy figures from the project's start, not this run: PPO ~4k steps/s, MaskablePPO on MultiBinary ~200 steps/s",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_average_1min": os.getloadavg()[0]},
    }, indent=1))


if __name__ == "__main__":
    main()

"""RL training of a slot policy with PPO or MaskablePPO on freshly generated traces.

What :func:`train` does (``shockwave-gym train`` is a thin wrapper):

* ``envs`` clusters of ``shockwave_gym/Generated-v0``: by default (``vec="native"``) all in
  this process, stepped in one batched pass by the native vector env through
  :class:`~shockwave_gym.training.vec_adapter.NativeVecEnv`, so the policy's forward pass is
  batched over them; with ``vec="subproc"``, one ``SubprocVecEnv`` worker process per env
  (``torch.set_num_threads(1)`` and ``OMP_NUM_THREADS=1`` everywhere: two threads on a
  2-core machine make small ops far slower). Each episode draws a fresh trace from
  :class:`~shockwave_gym.training.workload.TrainingTraceSource` (random load and mix,
  seeds >= 2**32);
* every ``eval_every`` steps, the deterministic policy plays the held-out traces (seeds
  below 2**32, never trained on) beside FIFO's reference figures;
* progress lines on stderr (no TensorBoard), a checkpoint every ``checkpoint_every`` steps,
  and ``out/best_policy.npz`` + ``.json``: the weights with the lowest held-out avg JCT so far;
* at the end ``out/model.zip`` (SB3, for resuming), the weights-only ``out/policy.npz`` +
  ``out/policy.json`` (what agents load) and ``out/eval.json`` (final held-out metrics,
  the evaluation history and throughput in env steps/s).

Worker processes start with ``forkserver``, so a script calling :func:`train` with
``envs > 1`` needs the usual ``if __name__ == "__main__":`` guard.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
import torch

from shockwave_gym.errors import InputError
from shockwave_gym.training.workload import (
    TrainingTraceSource,
    Workload,
    held_out_traces,
    require_positive_ints,
)

ALGOS = ("ppo", "maskable_ppo")
VEC_KINDS = ("native", "subproc")
#: Default number of envs per vectorisation: clusters batched in one process, or workers.
DEFAULT_ENVS = {"native": 16, "subproc": 2}
DEFAULT_ACTION_MODE = {"ppo": "priority", "maskable_ppo": "sequential"}


@dataclass
class TrainConfig:
    """Everything a training run depends on (written into ``eval.json``)."""

    out: str
    algo: str = "ppo"
    action_mode: str | None = None  # default: priority for PPO, sequential for MaskablePPO
    reward: str | dict = "default"
    timesteps: int = 100_000
    envs: int | None = None  # default: DEFAULT_ENVS[vec]
    vec: str = "native"  # "native" (batched, one process) or "subproc" (one worker per env)
    seed: int = 0
    workload: Workload = field(default_factory=Workload)
    max_jobs: int | None = None  # default: the workload's largest job count
    embed_dim: int = 32
    hidden_dim: int = 64
    n_steps: int = 256  # per env and rollout
    batch_size: int = 256
    n_epochs: int = 4
    learning_rate: float = 3e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    ent_coef: float = 0.0
    clip_range: float = 0.2
    log_std_init: float = -0.5  # PPO's Gaussian over priority scores (ignored by MaskablePPO)
    eval_every: int = 10_000
    eval_seeds: tuple[int, ...] = (1001, 1002, 1003)
    checkpoint_every: int = 50_000
    init_from: str | None = None
    #: Allow ``init_from`` to be an SB3 ``.zip`` (unpickled: it can run code). CLI ``--trust``.
    trust_init: bool = False
    progress_every_s: float = 15.0
    command: str = ""

    def __post_init__(self) -> None:
        if self.algo not in ALGOS:
            raise InputError(f"algo must be one of {', '.join(ALGOS)}, got {self.algo!r}")
        if self.action_mode is None:
            self.action_mode = DEFAULT_ACTION_MODE[self.algo]
        if self.vec not in VEC_KINDS:
            raise InputError(f"vec must be one of {', '.join(VEC_KINDS)}, got {self.vec!r}")
        if self.envs is None:
            self.envs = DEFAULT_ENVS[self.vec]
        if self.algo == "maskable_ppo" and self.action_mode == "priority":
            raise InputError("maskable_ppo needs a maskable action mode (select or sequential); use ppo for priority")
        require_positive_ints(self, ("timesteps", "envs", "n_steps", "batch_size", "n_epochs", "eval_every", "checkpoint_every"))
        if self.max_jobs is None:
            self.max_jobs = self.workload.max_num_jobs
        if self.init_from and str(self.init_from).endswith(".zip") and self.trust_init is not True:
            raise InputError(
                f"--init-from {self.init_from}: refusing an SB3 .zip without --trust: loading it unpickles "
                "part of the file, which can run arbitrary code. Start from the weights-only policy.npz/.json "
                "next to it, or pass --trust for a zip you made yourself"
            )

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["workload"] = self.workload.to_dict()
        return data


def make_env(rank: int, config: TrainConfig):
    """One training env (runs inside a worker process)."""
    torch.set_num_threads(1)
    import gymnasium as gym

    import shockwave_gym  # noqa: F401  (registers the ids)

    return gym.make(
        "shockwave_gym/Generated-v0",
        trace=TrainingTraceSource(config.workload),
        gpus=config.workload.gpus,
        action_mode=config.action_mode,
        reward=config.reward,
        max_jobs=config.max_jobs,
    )


def make_vec_env(config: TrainConfig):
    """The training ``VecEnv``: the native batched one, or ``SubprocVecEnv`` / ``DummyVecEnv``."""
    if config.vec == "native":
        from shockwave_gym.env.registration import ENV_IDS
        from shockwave_gym.training.vec_adapter import NativeVecEnv

        return NativeVecEnv(
            config.envs, trace=TrainingTraceSource(config.workload), gpus=config.workload.gpus,
            action_mode=config.action_mode, reward=config.reward, max_jobs=config.max_jobs,
            max_episode_steps=ENV_IDS["shockwave_gym/Generated-v0"][1],
        )
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    factories = [partial(make_env, rank, config) for rank in range(config.envs)]
    return SubprocVecEnv(factories) if config.envs > 1 else DummyVecEnv(factories)


def build_model(config: TrainConfig, env):
    """A fresh PPO / MaskablePPO with the slot policy (optionally starting from weights)."""
    from shockwave_agents.learned.policy import policy_class

    if config.algo == "ppo":
        from stable_baselines3 import PPO as algo_class
    else:
        from sb3_contrib import MaskablePPO as algo_class
    policy_kwargs = {"embed_dim": config.embed_dim, "hidden_dim": config.hidden_dim}
    if config.algo == "ppo":
        policy_kwargs["log_std_init"] = config.log_std_init
    model = algo_class(
        policy_class(config.algo), env,
        n_steps=config.n_steps, batch_size=config.batch_size, n_epochs=config.n_epochs,
        learning_rate=config.learning_rate, gamma=config.gamma, gae_lambda=config.gae_lambda,
        ent_coef=config.ent_coef, clip_range=config.clip_range, seed=config.seed, device="cpu", verbose=0,
        policy_kwargs=policy_kwargs,
    )
    # An explicit silent logger: SB3's default one makes an empty /tmp/SB3-<date> directory
    # per run; progress is ours (shockwave_gym.training.progress).
    from stable_baselines3.common.logger import Logger

    model.set_logger(Logger(folder=None, output_formats=[]))
    if config.init_from:
        from shockwave_agents.learned.weights import load_policy

        start, meta = load_policy(config.init_from, max_jobs=config.max_jobs, trust=config.trust_init)
        if start.head_kind != model.policy.head_kind or (meta["embed_dim"], meta["hidden_dim"]) != (config.embed_dim, config.hidden_dim):
            raise InputError(
                f"--init-from {config.init_from}: a {meta['action_mode']} policy with embed/hidden "
                f"{meta['embed_dim']}/{meta['hidden_dim']} cannot start a {config.action_mode} run with "
                f"{config.embed_dim}/{config.hidden_dim}"
            )
        model.policy.load_state_dict(start.state_dict())
    return model


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def train(config: TrainConfig) -> dict:
    """Train, evaluate and save under ``config.out``; returns the ``eval.json`` content."""
    from shockwave_gym.training.progress import TrainingMonitor

    os.environ["OMP_NUM_THREADS"] = "1"  # inherited by the worker processes
    torch.set_num_threads(1)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    eval_traces = held_out_traces(config.eval_seeds, num_jobs=config.workload.max_num_jobs,
                                  arrival_rates_per_hour=eval_rates(config.workload),
                                  max_duration_h=config.workload.max_duration_h)
    env = make_vec_env(config)
    try:
        model = build_model(config, env)
        monitor = TrainingMonitor(config, eval_traces, out)
        log(f"[train] {config.algo} / {config.action_mode} / reward {config.reward!r}: {config.timesteps:,} steps "
            f"on {config.envs} env(s) ({config.vec}), {config.workload.gpus} GPUs, {config.workload.num_jobs_range[0]}-"
            f"{config.workload.num_jobs_range[1]} jobs per episode; out {out}")
        start = time.perf_counter()
        model.learn(total_timesteps=config.timesteps, callback=monitor)
        wall_s = time.perf_counter() - start
    finally:
        env.close()
    model.save(out / "model.zip")
    training = {"command": config.command, "algo": config.algo, "action_mode": config.action_mode,
                "reward": config.reward, "timesteps": int(model.num_timesteps), "seed": config.seed,
                "workload": config.workload.to_dict()}
    from shockwave_agents.learned.weights import save_policy

    save_policy(model.policy, out / "policy", algo=config.algo, action_mode=config.action_mode, training=training)
    final = monitor.evaluate_now(int(model.num_timesteps), final=True)
    report = {
        "config": config.to_dict(),
        "timesteps": int(model.num_timesteps),
        "wall_s": wall_s,
        "env_steps_per_s": model.num_timesteps / wall_s,
        "episodes": monitor.episodes,
        "eval_traces": [{"name": t.name, "num_jobs": t.num_jobs} for t in eval_traces],
        "final": final,
        "best": monitor.best,
        "fifo": monitor.fifo,
        "history": monitor.history,
    }
    (out / "eval.json").write_text(json.dumps(report, indent=2) + "\n")
    log(f"[train] done in {wall_s:,.0f} s ({report['env_steps_per_s']:,.0f} env steps/s); wrote "
        f"{out / 'model.zip'}, {out / 'policy.npz'}, {out / 'policy.json'}, {out / 'eval.json'}")
    return report


def eval_rates(workload: Workload) -> tuple[float, ...]:
    """Arrival rates of the held-out traces: a third, two thirds and all the way up the
    workload's range (the busier end is where schedulers differ)."""
    lo, hi = workload.arrival_rate_range_per_hour
    return tuple(float(v) for v in np.round(lo + (hi - lo) * np.array([1 / 3, 2 / 3, 1.0]), 3))

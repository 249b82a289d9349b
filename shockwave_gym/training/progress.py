"""The training callbacks: :class:`TrainingMonitor` (``shockwave-gym train``: progress,
periodic validation, best-checkpoint selection, checkpoints) and :class:`LearnProgress`
(progress lines alone, for a plain Stable-Baselines3 ``model.learn``).

Every ``eval_every`` steps the deterministic policy plays the validation traces; the
evaluation's score (:mod:`~shockwave_gym.training.selection`, ``config.select``: ratios to
FIFO on the same traces, lower is better) decides whether the weights become
``out/best_policy.npz`` + ``.json``, the ones :func:`~shockwave_gym.training.train.train`
finally writes as ``out/policy.*``."""

from __future__ import annotations

import time
from collections import deque
from pathlib import Path

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from shockwave_agents.learned.adapter import PolicyAgent
from shockwave_agents.learned.inference import TorchSlotNetwork
from shockwave_gym.training.evaluation import evaluate_agent
from shockwave_gym.training.lines import Heartbeat
from shockwave_gym.training.lines import log as _log


class LearnProgress(BaseCallback):
    """Progress lines on stderr for any SB3 ``model.learn(..., callback=LearnProgress())``:
    steps, steps/s and episodes every ``every_s`` seconds, and a ``still <phase>`` line
    when a stretch without steps (the first steps' compilation, a PPO update) outlasts it.
    Flushed line by line, so a pipe or a log shows them as they come."""

    def __init__(self, every_s: float = 15.0):
        super().__init__(verbose=0)
        self.every_s = float(every_s)
        self.episodes = 0
        self._heartbeat: Heartbeat | None = None
        self._start = self._last = 0.0
        self._total = 0

    def _on_training_start(self) -> None:
        self._start = self._last = time.perf_counter()
        self._total = int(self.locals.get("total_timesteps", 0))
        self._heartbeat = Heartbeat(self.every_s, self._total, "collecting the first rollout")
        self._heartbeat.steps = lambda: int(self.num_timesteps)
        self._heartbeat.__enter__()
        _log(f"[learn] {self._total:,} steps; a line every {self.every_s:g} s")

    def _on_rollout_start(self) -> None:
        if self._heartbeat is not None and self.num_timesteps > 0:
            self._heartbeat.phase = "collecting a rollout"

    def _on_rollout_end(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.phase = "updating the policy"

    def _on_step(self) -> bool:
        self.episodes += int(np.sum(self.locals.get("dones", 0)))
        now = time.perf_counter()
        if now - self._last >= self.every_s:
            self._last = now
            rate = self.num_timesteps / max(now - self._start, 1e-9)
            _log(f"[learn] {self.num_timesteps:,}/{self._total:,} steps, {rate:,.0f} steps/s, "
                 f"{self.episodes} episodes, elapsed {now - self._start:,.0f} s")
        return True

    def _on_training_end(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.__exit__(None, None, None)
        _log(f"[learn] done: {self.num_timesteps:,} steps in {time.perf_counter() - self._start:,.0f} s")


class TrainingMonitor(BaseCallback):
    """Prints a progress line every ``config.progress_every_s`` seconds, evaluates the
    deterministic policy on ``eval_traces`` every ``config.eval_every`` steps and saves a
    checkpoint (SB3 zip + weights-only pair) every ``config.checkpoint_every`` steps."""

    def __init__(self, config, eval_traces: list, out: Path, eval_gpus: list[int] | None = None,
                 heartbeat: Heartbeat | None = None, eval_regimes: list | None = None):
        super().__init__(verbose=0)
        self.heartbeat = heartbeat
        self.config, self.eval_traces, self.out = config, eval_traces, Path(out)
        self.eval_regimes = eval_regimes  # per validation trace (None: exact lengths)
        self.eval_gpus = [config.workload.gpus] * len(eval_traces) if eval_gpus is None else list(eval_gpus)
        self.fifo_per_trace: dict = {}
        self.fifo_score: float | None = None
        self.episodes = 0
        self.recent_returns: deque[float] = deque(maxlen=50)
        self.recent_jct_s: deque[float] = deque(maxlen=50)
        self.history: list[dict] = []
        self.fifo: dict | None = None
        self.best: dict | None = None
        self._returns = None
        self._next_eval = config.eval_every
        self._next_checkpoint = config.checkpoint_every
        self._last_print = 0.0
        self._start = 0.0

    def _on_training_start(self) -> None:
        from shockwave_agents.fifo import FifoAgent

        self._start = self._last_print = time.perf_counter()
        self._returns = np.zeros(self.training_env.num_envs)
        self._phase(f"evaluating fifo on the {len(self.eval_traces)} validation traces")
        self._set_steps()
        fifo = evaluate_agent(FifoAgent(), self.eval_traces, self.eval_gpus, regimes=self.eval_regimes)
        from shockwave_gym.training.selection import score

        self.fifo, self.fifo_per_trace = fifo["mean"], fifo["per_trace"]
        self.fifo_score = score(self.config.select, self.fifo_per_trace, self.fifo_per_trace)
        _log(f"[eval] fifo on {len(self.eval_traces)} validation traces: {_summary(self.fifo)}; "
             f"{self.config.select} score {_number(self.fifo_score)}")
        self._phase("collecting the first rollout (its first steps may compile the native env's loops)")

    def _phase(self, text: str) -> None:
        if self.heartbeat is not None:
            self.heartbeat.phase = text

    def _set_steps(self) -> None:
        if self.heartbeat is not None:
            self.heartbeat.steps = lambda: int(self.num_timesteps)

    def _on_rollout_start(self) -> None:
        if self.num_timesteps > 0:
            self._phase("collecting a rollout")

    def _on_rollout_end(self) -> None:
        self._phase("updating the policy (a PPO update over the rollout)")

    def _on_step(self) -> bool:
        self._returns += self.locals["rewards"]
        for index, (done, info) in enumerate(zip(self.locals["dones"], self.locals["infos"], strict=True)):
            if done:
                self.episodes += 1
                self.recent_returns.append(float(self._returns[index]))
                self._returns[index] = 0.0
                jct = (info.get("metrics") or {}).get("avg_jct_s")
                if jct is not None and np.isfinite(jct):
                    self.recent_jct_s.append(float(jct))
        steps = self.num_timesteps
        if steps >= self._next_eval:
            self._next_eval += self.config.eval_every
            self.evaluate_now(steps)
        if steps >= self._next_checkpoint:
            self._next_checkpoint += self.config.checkpoint_every
            self.checkpoint(steps)
        now = time.perf_counter()
        if now - self._last_print >= self.config.progress_every_s:
            self._last_print = now
            rate = steps / max(now - self._start, 1e-9)
            returns = f"{np.mean(self.recent_returns):.3f}" if self.recent_returns else "n/a"
            jct = f"{np.mean(self.recent_jct_s):,.0f} s" if self.recent_jct_s else "n/a"
            _log(f"[train] {steps:,}/{self.config.timesteps:,} steps, {rate:,.0f} steps/s, "
                 f"{self.episodes} episodes, return {returns}, training avg JCT {jct}")
        return True

    def evaluate_now(self, steps: int, *, final: bool = False) -> dict:
        """Deterministic policy on the validation traces; appended to ``history``; the best
        score so far (``config.select``) is saved as ``best_policy``."""
        from shockwave_gym.training.selection import score

        self._phase("evaluating the policy on the validation traces")
        policy = self.model.policy
        was_training = policy.training
        agent = PolicyAgent(TorchSlotNetwork(policy), self.config.action_mode, obs_version=self.config.obs_version)
        result = evaluate_agent(agent, self.eval_traces, self.eval_gpus, regimes=self.eval_regimes)
        policy.train(was_training)
        value = score(self.config.select, result["per_trace"], self.fifo_per_trace)
        result["score"] = value
        self.history.append({"timesteps": steps, "score": value, **result["mean"]})
        if value is not None and (self.best is None or value < self.best["score"]):
            self.best = {"timesteps": steps, "score": value, **result["mean"]}
            self._save_weights(self.out / "best_policy", steps)
        label = "final" if final else f"{steps:,} steps"
        _log(f"[eval] {label}: {_summary(result['mean'])}; {self.config.select} score {_number(value)} "
             f"(fifo {_number(self.fifo_score)}, lower is better)")
        self._phase("saving the final weights" if final else "collecting a rollout")
        return result

    def checkpoint(self, steps: int) -> None:
        folder = self.out / "checkpoints"
        folder.mkdir(parents=True, exist_ok=True)
        self.model.save(folder / f"model_{steps}.zip")
        self._save_weights(folder / f"policy_{steps}", steps)
        _log(f"[ckpt] {folder / f'model_{steps}.zip'}")

    def _save_weights(self, stem: Path, steps: int) -> None:
        from shockwave_agents.learned.weights import save_policy

        training = training_notes(self.config, steps)
        save_policy(self.model.policy, stem, algo=self.config.algo, action_mode=self.config.action_mode, training=training)


def training_notes(config, steps: int) -> dict:
    """The ``training`` block of a saved policy's JSON: how it was made."""
    c = config
    where = {"suites": c.suites, "val_traces": c.val_traces} if c.suites is not None else {"workload": c.workload.to_dict()}
    return {"command": c.command, "algo": c.algo, "action_mode": c.action_mode, "reward": c.reward, "timesteps": steps,
            "seed": c.seed, **where, "select": c.select, "obs_version": c.obs_version, "skip_trivial": c.skip_trivial,
            **({"prior": c.prior, "log_std_init": c.log_std_init} if c.prior is not None else {})}


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _summary(mean: dict) -> str:
    def fmt(key, spec):
        value = mean.get(key)
        return "n/a" if value is None else format(value, spec)

    return (f"avg JCT {fmt('avg_jct_s', ',.0f')} s, makespan {fmt('makespan_s', ',.0f')} s, "
            f"worst FTF {fmt('worst_ftf', '.2f')}, unfair {fmt('unfair_fraction', '.1%')} "
            f"(Themis rho: {fmt('unfair_fraction_themis', '.1%')})")

"""RL training of a slot policy with PPO or MaskablePPO on task suites or generated traces.

What :func:`train` does (``shockwave-gym train`` is a thin wrapper):

* the training clusters (:mod:`~shockwave_gym.training.tasks`): with ``suites``, at least
  one cluster per suite, each on its suite's cluster size, drawing fresh traces from the
  suite's train split; otherwise ``envs`` clusters on a generated ``workload``
  (:class:`~shockwave_gym.training.workload.TrainingTraceSource`, seeds >= 2**32). By
  default (``vec="native"``) all clusters run in this process, stepped in one batched pass
  by the native vector env through :class:`~shockwave_gym.training.vec_adapter.NativeVecEnv`,
  so the policy's forward pass is batched over them; with ``vec="subproc"``, one
  ``SubprocVecEnv`` worker process per cluster (``torch.set_num_threads(1)`` and
  ``OMP_NUM_THREADS=1`` everywhere: two threads on a 2-core machine make small ops far
  slower);
* every ``eval_every`` steps, the deterministic policy plays the validation traces (the
  suites' validation split, or held-out generated seeds below 2**32; never trained on) beside FIFO's figures on the same traces, and the
  evaluation's score (``select``: ``jct`` or ``fair``, :mod:`~shockwave_gym.training.selection`)
  picks the best weights so far, saved as ``out/best_policy.npz`` + ``.json``;
* the slot policy is ``policy="mlp"`` (MLP pooling) or ``"attention"`` (self-attention with a
  Plackett-Luce head in priority mode, :mod:`shockwave_agents.learned.attention`);
* progress lines on stderr (no TensorBoard) and a checkpoint every ``checkpoint_every`` steps;
* at the end ``out/policy.npz`` + ``out/policy.json``: the weights-only policy agents load
  (``--agent ppo --agent-opt path=out``), which is the **best validation checkpoint** (the
  final weights when no evaluation ran), ``out/final_policy.*`` (the last weights),
  ``out/model.zip`` (SB3, the last weights, for resuming) and ``out/eval.json`` (the
  selected and final validation metrics, the evaluation history, throughput).

The defaults are the settings that measured best (docs/TRAINING.md): 512-step rollouts in
total (one cluster per suite, or one cluster for a workload), 10 epochs per rollout,
``gamma=0.995`` per round (``discount="rounds"``: a step that covered n rounds is discounted
by ``gamma ** n``, :mod:`~shockwave_gym.training.discounting`; ``"steps"``: per env step),
and the JCT reward scaled by 0.1 (``{"jct": 0.1}``), which keeps per-round rewards near unit
scale. ``task=`` (a scored task, :mod:`shockwave_gym.tasks`)
replaces the reward by the task's weights scaled by 0.1 and selects checkpoints on its cost.

Worker processes start with ``forkserver``, so a script calling :func:`train` with
``vec="subproc"`` and ``envs > 1`` needs the usual ``if __name__ == "__main__":`` guard.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import torch

from shockwave_gym.errors import InputError
from shockwave_gym.interface.observation import DEFAULT_OBSERVATION_VERSION
from shockwave_gym.training.lines import Heartbeat, log
from shockwave_gym.training.workload import Workload, require_positive_ints, require_workload_unused

ALGOS = ("ppo", "maskable_ppo")
VEC_KINDS = ("native", "single", "subproc")
#: Default number of envs per vectorisation: clusters batched in one process, stepped one
#: after the other in one process, or workers.
DEFAULT_ENVS = {"native": 1, "single": 1, "subproc": 2}
#: The default reward: the JCT term scaled by 0.1 (docs/TRAINING.md, "Defaults").
DEFAULT_REWARD = {"jct": 0.1}
#: A scored task's reward (``task=``) is its weights divided by this, like the default's 0.1.
TASK_REWARD_DIVISOR = 10
#: Default rollout length summed over the envs (PPO's ``n_steps`` x ``envs``).
ROLLOUT_STEPS = 512
DEFAULT_ACTION_MODE = {"ppo": "priority", "maskable_ppo": "sequential"}


@dataclass
class TrainConfig:
    """Everything a training run depends on (written into ``eval.json``)."""

    out: str
    algo: str = "ppo"
    action_mode: str | None = None  # default: priority for PPO, sequential for MaskablePPO
    #: None: DEFAULT_REWARD, or the task's weights / TASK_REWARD_DIVISOR with ``task``
    reward: str | dict | None = None
    #: A scored task (shockwave_gym.tasks: jct, fairness, balanced): sets the reward and the
    #: checkpoint selection; None: ``reward`` and ``select`` as given.
    task: str | None = None
    timesteps: int = 100_000
    envs: int | None = None  # default: one per suite, or DEFAULT_ENVS[vec] for a workload
    #: "native" (batched, one process), "single" (single envs one after the other in this
    #: process: what the native env cannot batch) or "subproc" (one worker per env)
    vec: str = "native"
    seed: int = 0
    #: Train on these suites' train split and validate on their validation split (a comma
    #: list, ``in-distribution`` or ``all``: shockwave_gym.training.tasks); None: ``workload``.
    suites: str | None = None
    val_traces: int = 2  # validation traces per suite
    workload: Workload = field(default_factory=Workload)
    max_jobs: int | None = None  # default: the largest job count of the training/validation traces
    #: Observation layout of the training envs (and of the saved policy).
    obs_version: int = DEFAULT_OBSERVATION_VERSION
    #: Rounds without a decision run inside the step (the env's ``skip_trivial``).
    skip_trivial: bool = True
    #: The slot policy: "mlp" (MLP encoder with mean/max pooling; a Gaussian over scores in
    #: priority mode) or "attention" (self-attention encoder; a Plackett-Luce ordering in
    #: priority mode): shockwave_agents.learned.policy / .attention.
    policy: str = "mlp"
    embed_dim: int = 32
    hidden_dim: int = 64
    n_steps: int | None = None  # per env and rollout; default: 512 in total (ceil(512 / envs) each)
    batch_size: int | None = None  # default: the rollout split into minibatches of at most 256 (see tasks())
    n_epochs: int = 10
    learning_rate: float = 3e-4
    gamma: float = 0.995
    #: "rounds": the discount between two decisions is gamma ** (rounds the step covered)
    #: (semi-MDP, shockwave_gym.training.discounting); "steps": gamma per env step.
    discount: str = "rounds"
    gae_lambda: float = 0.95
    ent_coef: float = 0.0
    clip_range: float = 0.2
    #: PPO's Gaussian over priority scores (ignored by MaskablePPO); default -0.5, or
    #: priors.PRIOR_LOG_STD_INIT (-2) with a prior. The attention policy's Plackett-Luce head
    #: starts its log-temperature here (its logits are divided by exp of it).
    log_std_init: float | None = None
    #: Start of the policy's linear skip term: None (no skip term) or one of
    #: shockwave_agents.learned.priors.PRIORS (e.g. "srtf": the initial policy is SRTF;
    #: training learns a residual).
    prior: str | None = None
    eval_every: int = 10_000
    eval_seeds: tuple[int, ...] = (1001, 1002, 1003)
    #: checkpoint selection objective (shockwave_gym.training.selection); None: the task's, else jct
    select: str | None = None
    checkpoint_every: int = 50_000
    init_from: str | None = None
    #: Allow ``init_from`` to be an SB3 ``.zip`` (unpickled: it can run code). CLI ``--trust``.
    trust_init: bool = False
    progress_every_s: float = 15.0
    #: ``vec="native"``: draw the next episodes' traces and build their tables in one worker
    #: process beside the learner (True, False, or "auto": when two CPUs are usable); the
    #: episodes are the same either way (shockwave_gym/env/vector/prefetch.py).
    prefetch: bool | str = "auto"
    command: str = ""

    def __post_init__(self) -> None:
        if self.algo not in ALGOS:
            raise InputError(f"algo must be one of {', '.join(ALGOS)}, got {self.algo!r}")
        if self.action_mode is None:
            self.action_mode = DEFAULT_ACTION_MODE[self.algo]
        from shockwave_agents.learned.priors import PRIOR_LOG_STD_INIT, check_prior

        try:
            check_prior(self.prior)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        if self.log_std_init is None:
            self.log_std_init = -0.5 if self.prior is None else PRIOR_LOG_STD_INIT
        if not (self.prefetch == "auto" or isinstance(self.prefetch, bool)):
            raise InputError(f"prefetch must be True, False or 'auto', got {self.prefetch!r}")
        from shockwave_gym.training.discounting import check_discount

        check_discount(self.discount)
        if self.policy not in ("mlp", "attention"):
            raise InputError(f"policy must be mlp or attention, got {self.policy!r}")
        if self.vec not in VEC_KINDS:
            raise InputError(f"vec must be one of {', '.join(VEC_KINDS)}, got {self.vec!r}")
        if self.envs is None and self.suites is None:
            self.envs = DEFAULT_ENVS[self.vec]
        self._resolve_task()
        from shockwave_gym.training.selection import check_objective

        check_objective(self.select)
        if self.algo == "maskable_ppo" and self.action_mode == "priority":
            raise InputError("maskable_ppo needs a maskable action mode (select or sequential); use ppo for priority")
        require_positive_ints(self, ("timesteps", "n_epochs", "eval_every", "checkpoint_every", "val_traces",
                                     "embed_dim", "hidden_dim"))
        require_positive_ints(self, [name for name in ("envs", "n_steps", "batch_size", "max_jobs") if getattr(self, name) is not None])
        self._check_numbers()
        if self.init_from and str(self.init_from).endswith(".zip") and self.trust_init is not True:
            raise InputError(
                f"--init-from {self.init_from}: refusing an SB3 .zip without --trust: loading it unpickles "
                "part of the file, which can run arbitrary code. Start from the weights-only policy.npz/.json "
                "next to it, or pass --trust for a zip you made yourself"
            )

    def _check_numbers(self) -> None:
        """The learner's real-valued settings, each finite and in its range."""
        from shockwave_gym.config import require_finite

        require_finite(self.learning_rate, "learning_rate (--learning-rate)", low=0.0, low_inclusive=False)
        require_finite(self.gamma, "gamma (--gamma)", low=0.0, low_inclusive=False, high=1.0)
        require_finite(self.gae_lambda, "gae_lambda", low=0.0, low_inclusive=True, high=1.0)
        require_finite(self.ent_coef, "ent_coef (--ent-coef)", low=0.0, low_inclusive=True)
        require_finite(self.clip_range, "clip_range", low=0.0, low_inclusive=False)
        require_finite(self.log_std_init, "log_std_init (--log-std-init)", low=-math.inf, low_inclusive=True)
        require_finite(self.progress_every_s, "progress_every_s (--progress-every-s)", low=0.0, low_inclusive=True)
        require_workload_unused(self.suites, self.workload)

    def _resolve_task(self) -> None:
        """Fill in ``reward`` and ``select`` from ``task`` (or their defaults)."""
        if self.task is None:
            self.reward = dict(DEFAULT_REWARD) if self.reward is None else self.reward
            self.select = "jct" if self.select is None else self.select
            return
        from shockwave_gym.tasks import get_task

        task = get_task(self.task)
        if self.reward is not None:
            raise InputError(f"--task {task.name} sets the reward ({task.reward}); drop --reward or --task")
        self.reward = {term: weight / TASK_REWARD_DIVISOR for term, weight in task.weights.items()}
        self.select = task.name if self.select is None else self.select
        if self.vec == "native":
            from shockwave_gym.env.options import needs_single_envs

            reason = needs_single_envs({"reward": self.reward})
            if reason is not None:
                raise InputError(f"--task {task.name}: the native vector env (--vec native) does not batch "
                                 f"{reason}; train it with --vec single (this process) or --vec subproc")

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["workload"] = self.workload.to_dict()
        return data


    def tasks(self):
        """The :class:`~shockwave_gym.training.tasks.TaskSet` of this run; fills in ``envs``,
        ``max_jobs`` and ``n_steps`` where they were left to their defaults."""
        from shockwave_gym.training.tasks import suite_tasks, workload_tasks

        if self.suites is not None:
            tasks = suite_tasks(self.suites, envs=self.envs, val_traces=self.val_traces, max_jobs=self.max_jobs,
                                obs_version=self.obs_version)
        else:
            tasks = workload_tasks(self.workload, envs=self.envs, eval_seeds=self.eval_seeds, max_jobs=self.max_jobs)
        if tasks.elastic and (self.algo, self.action_mode, self.policy) != ("ppo", "priority", "mlp"):
            raise InputError(f"elastic suites train --algo ppo --action-mode priority --policy mlp (a score and a GPU-count "
                             f"preference per slot), got --algo {self.algo} --action-mode {self.action_mode} --policy {self.policy}")
        self.envs, self.max_jobs = tasks.num_envs, tasks.max_jobs
        if self.n_steps is None:
            self.n_steps = -(-ROLLOUT_STEPS // self.envs)
        if self.batch_size is None:
            self.batch_size = default_batch_size(self.n_steps * self.envs)
        return tasks



def env_options(config: TrainConfig) -> dict:
    """The env arguments every training cluster shares."""
    return {"action_mode": config.action_mode, "reward": config.reward, "max_jobs": config.max_jobs,
            "obs_version": config.obs_version, "skip_trivial": config.skip_trivial}


def default_batch_size(rollout: int, largest: int = 256) -> int:
    """The rollout split into the fewest (at least two) equal minibatches of at most
    ``largest`` steps (512 -> 256, 513 -> 171), so no minibatch is a truncated remainder;
    ``largest`` when no split is even."""
    for parts in range(2, rollout + 1):
        if rollout % parts == 0 and rollout // parts <= largest:
            return rollout // parts
    return largest


def make_env(env_kwargs: dict, config: TrainConfig):
    """One training env (runs inside a worker process)."""
    torch.set_num_threads(1)
    import gymnasium as gym

    from shockwave_gym.env.cluster_env import ClusterEnv
    from shockwave_gym.env.registration import ENV_IDS

    env = ClusterEnv(**env_kwargs, **env_options(config))
    return gym.wrappers.TimeLimit(env, ENV_IDS["shockwave_gym/Generated-v0"][1])


def make_vec_env(config: TrainConfig, tasks):
    """The training ``VecEnv`` over ``tasks.env_kwargs`` (one cluster each): the native
    batched one, ``DummyVecEnv`` (``single``, or one env) or ``SubprocVecEnv``."""
    common = env_options(config)
    if config.vec == "native":
        from shockwave_gym.env.options import needs_single_envs

        reason = next((r for r in (needs_single_envs({**kw, **common}) for kw in tasks.env_kwargs) if r), None)
        if reason is not None:
            raise InputError(f"the native vector env (--vec native) does not batch {reason}; "
                             "train with --vec single (this process) or --vec subproc")
        from shockwave_gym.env.registration import ENV_IDS
        from shockwave_gym.training.vec_adapter import NativeVecEnv

        return NativeVecEnv.from_env_kwargs([{**kw, **common} for kw in tasks.env_kwargs],
                                            max_episode_steps=ENV_IDS["shockwave_gym/Generated-v0"][1],
                                            prefetch=config.prefetch)
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    factories = [partial(make_env, kw, config) for kw in tasks.env_kwargs]
    return SubprocVecEnv(factories) if len(factories) > 1 and config.vec == "subproc" else DummyVecEnv(factories)


def build_model(config: TrainConfig, env):
    """A fresh PPO / MaskablePPO with the slot policy (optionally starting from weights)."""
    from shockwave_agents.learned.attention import policy_class
    from shockwave_gym.training.discounting import algorithm_class

    algo_class = algorithm_class(config.algo, config.discount)
    policy_kwargs = {"embed_dim": config.embed_dim, "hidden_dim": config.hidden_dim, "prior": config.prior}
    if config.algo == "ppo":
        policy_kwargs["log_temperature_init" if config.policy == "attention" else "log_std_init"] = config.log_std_init
    model = algo_class(
        policy_class(config.algo, config.policy), env,
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
        if meta.get("obs_version", 1) != config.obs_version:
            raise InputError(f"--init-from {config.init_from}: an observation version {meta.get('obs_version', 1)} "
                             f"policy cannot start an --obs-version {config.obs_version} run")
        if (getattr(start, "prior", None) is None) != (config.prior is None):
            has = "has a linear skip term" if getattr(start, "prior", None) is not None else "has no linear skip term"
            raise InputError(
                f"--init-from {config.init_from}: the policy {has}; pass the same --prior it was trained with "
                f"(its policy.json: prior {meta.get('prior')!r}), got --prior {config.prior or 'none'}"
            )
        if start.encoder != config.policy:
            raise InputError(f"--init-from {config.init_from}: a {start.encoder} policy cannot start a --policy {config.policy} run")
        if start.head_kind != model.policy.head_kind or (meta["embed_dim"], meta["hidden_dim"]) != (config.embed_dim, config.hidden_dim):
            raise InputError(
                f"--init-from {config.init_from}: a {meta['action_mode']} policy with embed/hidden "
                f"{meta['embed_dim']}/{meta['hidden_dim']} cannot start a {config.action_mode} run with "
                f"{config.embed_dim}/{config.hidden_dim}"
            )
        model.policy.load_state_dict(start.state_dict())
    return model


def train(config: TrainConfig) -> dict:
    """Train, evaluate and save under ``config.out``; returns the ``eval.json`` content."""
    from shockwave_gym.training.progress import TrainingMonitor, training_notes

    os.environ["OMP_NUM_THREADS"] = "1"  # inherited by the worker processes
    torch.set_num_threads(1)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    with Heartbeat(config.progress_every_s, config.timesteps) as beat:
        every = f"; a line at least every {config.progress_every_s:g} s from here on" if config.progress_every_s > 0 else ""
        envs = "one env per suite" if config.envs is None else f"{config.envs} env(s)"
        log(f"[train] preparing the validation traces, {envs} ({config.vec}) and the model{every}")
        beat.phase = "preparing the validation traces, environments and model"
        tasks = config.tasks()
        eval_traces = tasks.val_traces
        env = make_vec_env(config, tasks)
        try:
            model = build_model(config, env)
            monitor = TrainingMonitor(config, eval_traces, out, eval_gpus=tasks.val_sizes, heartbeat=beat,
                                      eval_regimes=tasks.val_regimes)
            log(f"[train] {config.algo} / {config.action_mode} / reward {config.reward!r}: {config.timesteps:,} steps "
                f"on {config.envs} env(s) ({config.vec}), {tasks.description}; {config.max_jobs} slots; "
                f"validation on {len(eval_traces)} traces; out {out}")
            start = time.perf_counter()
            model.learn(total_timesteps=config.timesteps, callback=monitor)
            wall_s = time.perf_counter() - start
        finally:
            env.close()
        model.save(out / "model.zip")
        training = training_notes(config, int(model.num_timesteps))
        from shockwave_agents.learned.weights import save_policy

        save_policy(model.policy, out / "final_policy", algo=config.algo, action_mode=config.action_mode,
                    training=training)
        final = monitor.evaluate_now(int(model.num_timesteps), final=True)
    selected = select_policy(out, monitor.best, final["mean"], int(model.num_timesteps))
    report = {
        "config": config.to_dict(),
        "timesteps": int(model.num_timesteps),
        "wall_s": wall_s,
        "env_steps_per_s": model.num_timesteps / wall_s,
        "episodes": monitor.episodes,
        "eval_traces": [{"name": t.name, "num_jobs": t.num_jobs, "gpus": g} for t, g in zip(eval_traces, tasks.val_gpus, strict=True)],
        "selected": selected,
        "final": final,
        "best": monitor.best,
        "fifo": monitor.fifo,
        "history": monitor.history,
    }
    (out / "eval.json").write_text(json.dumps(report, indent=2) + "\n")
    log(f"[train] done in {wall_s:,.0f} s ({report['env_steps_per_s']:,.0f} env steps/s); wrote "
        f"{out / 'policy.npz'} + .json (the validation checkpoint of step {selected['timesteps']:,}), "
        f"{out / 'final_policy.npz'}, {out / 'model.zip'}, {out / 'eval.json'}")
    return report


def select_policy(out: Path, best: dict | None, final_mean: dict, final_steps: int) -> dict:
    """Write ``out/policy.*``: the best validation checkpoint (``out/best_policy.*``, which
    the final evaluation may itself have replaced), or the final weights if none was
    scored. Returns the selected checkpoint's validation metrics."""
    import shutil

    source = out / "best_policy" if best is not None and (out / "best_policy.npz").is_file() else out / "final_policy"
    for suffix in (".npz", ".json"):
        shutil.copyfile(source.with_suffix(suffix), (out / "policy").with_suffix(suffix))
    if source.name == "best_policy":
        return dict(best)
    return {"timesteps": final_steps, "score": None, **final_mean}

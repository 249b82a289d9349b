"""Behaviour cloning: distil a planner (Shockwave by default) into the slot policy.

1. **Record.** The teacher plays fresh training traces: the suites' train split, episode
   ``e`` on suite ``e mod len(suites)`` and its cluster size, or a generated workload
   (:class:`~shockwave_gym.training.workload.TrainingTraceSource`); seeds >= 2**32 either way. At every
   round the observation the env would show (the env's own
   :func:`~shockwave_gym.interface.observation.build_observation`) is stored with, per slot,
   whether the teacher ran that job. Optional DAgger iterations then let the *student* play
   while the teacher labels the states the student reaches.
2. **Clone.** The same network RL trains (:mod:`~shockwave_agents.learned.policy`) learns
   the per-slot "does the teacher run it" logits by binary cross-entropy over occupied
   slots. In ``priority`` mode the score is ``tanh(logit)``, so the env packs jobs by the
   student's confidence, capacity-feasible and work-conserving by construction.
3. **Fine-tune** (optional): PPO from the cloned weights
   (:func:`shockwave_gym.training.train.train` with ``init_from``).

Recordings are plain ``.npz`` arrays (read with ``allow_pickle=False``).
"""

from __future__ import annotations

import json
import sys
import time
import zipfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from shockwave_agents.base import Agent
from shockwave_gym.errors import InputError
from shockwave_gym.interface.observation import DEFAULT_OBSERVATION_VERSION, build_observation
from shockwave_gym.interface.slots import SlotMap
from shockwave_gym.runner import run_episode
from shockwave_gym.simulator import SimConfig
from shockwave_gym.training.workload import (
    TrainingTraceSource,
    Workload,
    require_positive_ints,
    require_workload_unused,
)
from shockwave_gym.view import ClusterView

OBS_KEYS = ("jobs", "job_valid", "picked", "cluster")
LOSSES = ("bce", "select")


@dataclass
class ImitationConfig:
    """A behaviour-cloning run (written into ``eval.json``)."""

    out: str
    teacher: str = "shockwave"
    teacher_options: dict = field(default_factory=dict)
    episodes: int = 40
    dagger_iterations: int = 0
    dagger_episodes: int = 10
    workload: Workload = field(default_factory=Workload)
    #: Record on these suites' train split (episode ``e`` plays suite ``e mod len(suites)``,
    #: on its cluster size) and evaluate on their validation split; None: ``workload``.
    suites: str | None = None
    val_traces: int = 2  # validation traces per suite
    #: ``bce``: per-slot binary cross-entropy; ``select``: that plus a selection term (each job
    #: the teacher ran against the log-sum-exp of the ones it left, so it outranks them all)
    loss: str = "bce"
    #: Fit on every recorded episode; by default the last 10% are held out for the reported
    #: validation loss, which after DAgger leaves out the student's newest rounds.
    fit_all: bool = False
    max_jobs: int | None = None
    algo: str = "ppo"
    action_mode: str = "priority"
    obs_version: int = DEFAULT_OBSERVATION_VERSION
    embed_dim: int = 64
    hidden_dim: int = 128
    epochs: int = 40
    batch_size: int = 256
    learning_rate: float = 1e-3
    seed: int = 0
    workers: int = 1
    eval_seeds: tuple[int, ...] = (1001, 1002, 1003)
    command: str = ""

    def __post_init__(self) -> None:
        if (self.algo, self.action_mode) not in (("ppo", "priority"), ("ppo", "select"), ("maskable_ppo", "select")):
            raise InputError(
                f"behaviour cloning supports ppo with priority or select, and maskable_ppo with select; "
                f"got {self.algo} with {self.action_mode}"
            )
        if not isinstance(self.fit_all, bool):
            raise InputError(f"fit_all must be true or false, got {self.fit_all!r}")
        if self.loss not in LOSSES:
            raise InputError(f"behaviour cloning loss must be one of {', '.join(LOSSES)}; got {self.loss!r}")
        require_positive_ints(self, ("episodes", "epochs", "batch_size", "workers", "dagger_episodes", "val_traces",
                                     "embed_dim", "hidden_dim"))
        from shockwave_gym.config import require_finite

        require_finite(self.learning_rate, "learning_rate (--bc-learning-rate)", low=0.0, low_inclusive=False)
        require_workload_unused(self.suites, self.workload)
        if self.max_jobs is None:
            self.max_jobs = self.tasks().max_jobs

    def tasks(self):
        """The :class:`~shockwave_gym.training.tasks.TaskSet` of the run (its clusters are the
        suites, or the workload, that episodes are recorded on)."""
        from shockwave_gym.training.tasks import suite_tasks, workload_tasks

        if self.suites is not None:
            return suite_tasks(self.suites, envs=None, val_traces=self.val_traces, max_jobs=self.max_jobs,
                               obs_version=self.obs_version, count_actions=False)
        return workload_tasks(self.workload, envs=1, eval_seeds=self.eval_seeds, max_jobs=self.max_jobs)

    def episode_task(self, episode: int) -> tuple:
        """(trace, gpus, regime) of recording episode ``episode``: a fresh train-split trace
        drawn from the RNG seeded by (run seed, episode); ``gpus`` is the suite's
        :class:`~shockwave_gym.cluster.ClusterSpec` for a heterogeneous suite; ``regime`` the
        :class:`~shockwave_gym.regimes.Regime` the suite runs that trace in (None: exact)."""
        rng = np.random.default_rng([self.seed, episode])
        if self.suites is None:
            return TrainingTraceSource(self.workload).sample(rng), self.workload.gpus, None
        from shockwave_gym.traces.suites import SuiteTraceSource
        from shockwave_gym.training.tasks import resolve_suite_names

        suites = resolve_suite_names(self.suites, self.obs_version)
        suite = suites[episode % len(suites)]
        source = SuiteTraceSource(suite, "train")
        trace = source.sample(rng)
        return trace, suite.cluster_spec if suite.heterogeneous else suite.gpus, source.regime_of(trace)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["workload"] = self.workload.to_dict()
        return data



class RecordingAgent(Agent):
    """Plays ``actor`` (the teacher, or a student in DAgger) and records the observation
    with the ``teacher``'s choice as per-slot labels."""

    def __init__(self, teacher, max_jobs: int, actor=None, obs_version: int = 1):
        self.teacher, self.actor = teacher, actor
        self.obs_version = int(obs_version)
        self.slots = SlotMap(max_jobs)
        self.samples: dict[str, list[np.ndarray]] = {key: [] for key in (*OBS_KEYS, "label")}
        self.dropped = 0  # teacher picks of queued jobs (no slot): not representable

    @property
    def name(self) -> str:
        return f"recording-{getattr(self.teacher, 'name', 'teacher')}"

    def reset(self, view: ClusterView, seed: int | None = None) -> None:
        self.slots.reset(view.num_jobs)
        self.teacher.reset(view, seed)
        if self.actor is not None:
            self.actor.reset(view, seed)

    def act(self, view: ClusterView):
        self.slots.update(view)
        obs = build_observation(view, self.slots, version=self.obs_version)
        action = self.teacher.act(view)
        chosen = np.asarray(list(action), dtype=np.int64)  # a Placement iterates its job ids
        label = np.isin(self.slots.slot_job, chosen) & (self.slots.slot_job >= 0)
        self.dropped += int(chosen.size - label.sum())
        for key in OBS_KEYS:
            self.samples[key].append(obs[key])
        self.samples["label"].append(label.astype(np.int8))
        return action if self.actor is None else self.actor.act(view)

    def arrays(self) -> dict[str, np.ndarray]:
        return {key: np.stack(values) for key, values in self.samples.items()}


def record_episode(config: ImitationConfig, episode: int, student_path: str | None = None) -> dict:
    """Record one training trace (episode ``episode`` of the run's seed); with
    ``student_path`` the student acts and the teacher only labels (DAgger)."""
    torch.set_num_threads(1)
    from shockwave_agents import make_agent

    trace, gpus, regime = config.episode_task(episode)
    actor = None
    if student_path is not None:
        from shockwave_agents.learned.adapter import PolicyAgent
        from shockwave_agents.learned.weights import load_network

        network, meta = load_network(student_path, max_jobs=config.max_jobs)
        actor = PolicyAgent(network, meta["action_mode"], obs_version=meta["obs_version"])
    recorder = RecordingAgent(make_agent(config.teacher, **config.teacher_options), config.max_jobs, actor,
                              obs_version=config.obs_version)
    where = dict(gpus=gpus) if isinstance(gpus, int) else dict(gpus=gpus.total, cluster=gpus)
    outcome = run_episode(trace, recorder, SimConfig(**where), seed=episode, progress=False, regime=regime)
    arrays = recorder.arrays()
    arrays["episode"] = np.full(arrays["label"].shape[0], episode, dtype=np.int64)
    return {"arrays": arrays, "trace": trace.name, "rounds": outcome.metrics["rounds"],
            "dropped": recorder.dropped, "teacher_wall_s": outcome.decision_wall_s}


def record(config: ImitationConfig, episodes: list[int], student_path: str | None = None) -> dict[str, np.ndarray]:
    """Record ``episodes`` (in ``config.workers`` processes) and concatenate them."""
    results = []
    start = time.perf_counter()
    if config.workers > 1:
        with ProcessPoolExecutor(config.workers) as pool:
            futures = [pool.submit(record_episode, config, e, student_path) for e in episodes]
            for future in futures:
                results.append(future.result())
                _progress(len(results), len(episodes), results[-1], start)
    else:
        for episode in episodes:
            results.append(record_episode(config, episode, student_path))
            _progress(len(results), len(episodes), results[-1], start)
    return {key: np.concatenate([r["arrays"][key] for r in results]) for key in results[0]["arrays"]}


def _progress(done: int, total: int, result: dict, start: float) -> None:
    print(f"[record] {done}/{total} episodes, {result['rounds']} rounds of {result['trace']} "
          f"(teacher {result['teacher_wall_s']:.1f} s), {time.perf_counter() - start:,.0f} s elapsed",
          file=sys.stderr, flush=True)


def save_dataset(arrays: dict[str, np.ndarray], path: str | Path) -> None:
    np.savez_compressed(path, **arrays)


def load_dataset(path: str | Path) -> dict[str, np.ndarray]:
    """A recording written by :func:`save_dataset`; anything else is one :class:`InputError`."""
    try:
        data = np.load(path, allow_pickle=False)
        arrays = None
        if isinstance(data, np.lib.npyio.NpzFile):
            with data:
                arrays = {key: data[key] for key in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:  # no archive (or a damaged one)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not an .npz archive"
        raise InputError(f"{path}: not a readable recording (an .npz written by train --algo bc): {reason}") from None
    if arrays is None:
        raise InputError(f"{path}: not a recording (an .npz archive written by train --algo bc), got an array")
    missing = [key for key in (*OBS_KEYS, "label", "episode") if key not in arrays]
    if missing:
        raise InputError(f"{path}: not a recording (missing {', '.join(missing)})")
    return arrays


def clone(policy, arrays: dict[str, np.ndarray], config: ImitationConfig) -> dict:
    """Fit ``policy``'s per-slot logits to the labels (BCE over occupied slots); returns the
    final training and validation loss and per-slot accuracy (last 10% of episodes held out,
    none with ``config.fit_all``)."""
    torch.manual_seed(config.seed)
    episodes = np.unique(arrays["episode"])
    held_out = len(episodes) > 1 and not config.fit_all
    val_episodes = episodes[-max(1, len(episodes) // 10):] if held_out else episodes[:0]
    is_val = np.isin(arrays["episode"], val_episodes)
    tensors = {key: torch.from_numpy(arrays[key].astype(np.float32)) for key in (*OBS_KEYS, "label")}
    train_idx, val_idx = np.flatnonzero(~is_val), np.flatnonzero(is_val)
    optimizer = torch.optim.Adam(policy.parameters(), lr=config.learning_rate)
    policy.train()
    generator = np.random.default_rng(config.seed)
    for epoch in range(config.epochs):
        order = generator.permutation(train_idx)
        for begin in range(0, order.size, config.batch_size):
            loss, _ = _loss(policy, tensors, torch.from_numpy(order[begin:begin + config.batch_size]), config.loss)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if epoch == config.epochs - 1 or (epoch + 1) % 10 == 0:
            report = {"epoch": epoch + 1, **_scores(policy, tensors, train_idx, "train", config.loss),
                      **_scores(policy, tensors, val_idx, "val", config.loss)}
            print("[clone] " + ", ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in report.items()),
                  file=sys.stderr, flush=True)
    policy.eval()
    return report


def _loss(policy, tensors: dict, index: torch.Tensor, kind: str = "bce") -> tuple[torch.Tensor, torch.Tensor]:
    """The cloning loss of samples ``index`` and the per-slot accuracy (logit > 0 iff the
    teacher ran the job). ``select`` adds :func:`selection_loss` to the BCE."""
    obs = {key: tensors[key][index] for key in OBS_KEYS}
    logits = policy.slot_logits(obs)
    valid, label = obs["job_valid"], tensors["label"][index]
    losses = torch.nn.functional.binary_cross_entropy_with_logits(logits, label, reduction="none")
    loss = (losses * valid).sum() / valid.sum().clamp(min=1.0)
    if kind == "select":
        loss = loss + selection_loss(logits, label * valid, valid * (1.0 - label))
    correct = (((logits > 0).float() == label).float() * valid).sum() / valid.sum().clamp(min=1.0)
    return loss, correct


def selection_loss(logits: torch.Tensor, picked: torch.Tensor, left: torch.Tensor) -> torch.Tensor:
    """Mean over the teacher's picks of -log sigmoid(logit_i - logsumexp(logits of the jobs it
    left)): small only when every picked job outranks every job left out, which is what the
    priority mode's packing needs (it runs jobs in score order). (B, M) tensors; picks of a
    round with nothing left out cost nothing."""
    # a finite stand-in for -inf keeps the gradient finite in a round with nothing left out
    rival = torch.logsumexp(logits.masked_fill(left <= 0, -1e4), dim=1, keepdim=True)
    per_pick = torch.nn.functional.softplus(rival - logits) * picked
    return per_pick.sum() / picked.sum().clamp(min=1.0)


def _scores(policy, tensors: dict, index: np.ndarray, prefix: str, kind: str = "bce") -> dict:
    if index.size == 0:
        return {}
    with torch.no_grad():
        loss, accuracy = _loss(policy, tensors, torch.from_numpy(index), kind)
    return {f"{prefix}_loss": float(loss), f"{prefix}_slot_accuracy": float(accuracy)}


def run_imitation(config: ImitationConfig, dataset: str | None = None) -> dict:
    """Record (or load ``dataset``), clone, optionally DAgger, evaluate; writes
    ``out/policy.npz``, ``out/policy.json``, ``out/dataset.npz`` and ``out/eval.json``."""
    from shockwave_agents import make_agent
    from shockwave_agents.learned.adapter import PolicyAgent
    from shockwave_agents.learned.inference import NumpySlotNetwork
    from shockwave_agents.learned.weights import build_policy, save_policy
    from shockwave_gym.training.evaluation import evaluate_agent

    torch.set_num_threads(1)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    arrays = load_dataset(dataset) if dataset else record(config, list(range(config.episodes)))
    torch.manual_seed(config.seed)  # the initial weights
    policy = build_policy(config.algo, config.action_mode, config.max_jobs,
                          embed_dim=config.embed_dim, hidden_dim=config.hidden_dim, obs_version=config.obs_version)
    training = {"command": config.command, "teacher": config.teacher, "algo": config.algo, "loss": config.loss,
                "action_mode": config.action_mode, "seed": config.seed, "obs_version": config.obs_version,
                **({"fit_all": True} if config.fit_all else {}),
                **({"suites": config.suites} if config.suites is not None else {"workload": config.workload.to_dict()})}
    fit = clone(policy, arrays, config)
    next_episode = int(arrays["episode"].max()) + 1
    for iteration in range(config.dagger_iterations):
        save_policy(policy, out / "policy", algo=config.algo, action_mode=config.action_mode, training=training)
        episodes = list(range(next_episode, next_episode + config.dagger_episodes))
        next_episode += config.dagger_episodes
        extra = record(config, episodes, student_path=str(out / "policy"))
        arrays = {key: np.concatenate([arrays[key], extra[key]]) for key in arrays}
        print(f"[dagger] iteration {iteration + 1}: {extra['label'].shape[0]} student rounds labelled", file=sys.stderr, flush=True)
        torch.manual_seed(config.seed)
        policy = build_policy(config.algo, config.action_mode, config.max_jobs,
                              embed_dim=config.embed_dim, hidden_dim=config.hidden_dim, obs_version=config.obs_version)
        fit = clone(policy, arrays, config)
    save_dataset(arrays, out / "dataset.npz")
    training.update(rounds=int(arrays["label"].shape[0]), episodes=int(np.unique(arrays["episode"]).size), fit=fit)
    save_policy(policy, out / "policy", algo=config.algo, action_mode=config.action_mode, training=training)
    wall_s = time.perf_counter() - start

    tasks = config.tasks()
    traces = tasks.val_traces
    student = evaluate_agent(PolicyAgent(NumpySlotNetwork.from_policy(policy), config.action_mode, name="distilled",
                                         obs_version=config.obs_version),
                             traces, tasks.val_sizes, regimes=tasks.val_regimes)
    teacher = evaluate_agent(make_agent(config.teacher, **config.teacher_options), traces, tasks.val_sizes,
                             regimes=tasks.val_regimes)
    report = {"config": config.to_dict(), "wall_s": wall_s, "rounds": training["rounds"], "fit": fit,
              "eval_traces": [t.name for t in traces], "student": student, "teacher": teacher}
    (out / "eval.json").write_text(json.dumps(report, indent=2) + "\n")
    s, t = student["mean"], teacher["mean"]
    print(f"[eval] student avg JCT {s['avg_jct_s']:,.0f} s, makespan {s['makespan_s']:,.0f} s, "
          f"{s['decision_ms_per_round']:.2f} ms/round | teacher avg JCT {t['avg_jct_s']:,.0f} s, "
          f"makespan {t['makespan_s']:,.0f} s, {t['decision_ms_per_round']:.2f} ms/round", file=sys.stderr, flush=True)
    return report

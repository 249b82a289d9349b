"""Cross-entropy search over the slot policy's linear skip term (``train --algo cem``).

A policy built with a prior (:mod:`~shockwave_agents.learned.priors`) starts with its deep
term's output layer at exactly 0, so in ``priority`` mode its order is decided by the skip
term alone: one weight per job feature (the bias shifts every score alike and leaves the
order unchanged). This search tunes those weights on whole episodes, the measure the
scheduler is judged on, instead of PPO's per-round gradient:

* **Training episodes**: the first ``train_traces`` fixed train-split seeds of each suite
  (never a validation or test trace), each on its suite's cluster and in the regime its
  suite seeds it with; FIFO plays them once.
* **Objective**: the task's selection score on those episodes
  (:func:`~shockwave_gym.training.selection.score`: the mean over episodes of the task's
  cost / FIFO's; lower is better).
* **Search**: the cross-entropy method. Iteration ``i`` draws ``population`` weight vectors
  from a diagonal Gaussian (the first is its mean), plays every training episode with each,
  and refits the Gaussian to the ``elite`` best (standard deviation floored at ``min_std``).
  The Gaussian starts at the prior's weights with standard deviation ``init_std``; the draws
  come from ``numpy.random.default_rng(seed)``, and the episodes are deterministic, so a run
  is a function of its config (``workers`` only splits the episodes among processes).
* **Selection**: after each iteration the vector with the iteration's best training score
  plays the validation traces (the suites' validation split, as ``train`` validates), and the
  run keeps the one with the best validation score over the run, the start included.

Writes ``out/policy.npz`` + ``out/policy.json`` (the PPO slot network with the chosen skip
weights and a zero deep term: any agent that loads a policy loads it; its ``training`` notes
say ``"search": "cem"``) and ``out/eval.json`` (the config, every iteration's scores, the
selected and FIFO validation metrics, wall time).
"""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from shockwave_gym.config import require_finite, require_positive_int
from shockwave_gym.errors import InputError
from shockwave_gym.interface.observation import DEFAULT_OBSERVATION_VERSION
from shockwave_gym.seeds import check_seed

#: The policy network every search result is saved as (its skip term decides).
ALGO, ACTION_MODE = "ppo", "priority"
#: Each setting's ``shockwave-gym train`` flag (for error messages).
FLAGS = {"train_traces": "--train-traces", "val_traces": "--val-traces", "iterations": "--cem-iterations",
         "population": "--cem-population", "elite": "--cem-elite", "workers": "--cem-workers",
         "embed_dim": "--embed-dim", "hidden_dim": "--hidden-dim", "max_jobs": "--max-jobs", "init_std": "--cem-std"}


@dataclass
class CEMConfig:
    """A cross-entropy search (written into ``eval.json``)."""

    out: str
    #: A scored task (shockwave_gym.tasks: jct, fairness, balanced): the objective.
    task: str = "jct"
    #: Search on these suites' fixed train seeds and select on their validation split.
    suites: str = ""
    train_traces: int = 4  # fixed train seeds per suite
    val_traces: int = 2  # validation traces per suite
    prior: str = "wsrpt"  # the start (shockwave_agents.learned.priors.PRIORS, not "zero")
    iterations: int = 20
    population: int = 16
    elite: int = 4
    init_std: float = 0.3
    min_std: float = 0.02
    seed: int = 0
    workers: int = 1
    obs_version: int = DEFAULT_OBSERVATION_VERSION
    max_jobs: int | None = None  # default: the largest job count of the training/validation traces
    embed_dim: int = 32
    hidden_dim: int = 64
    command: str = ""

    def __post_init__(self) -> None:
        from shockwave_agents.learned.priors import PRIORS
        from shockwave_gym.tasks import TASKS

        if self.task not in TASKS:
            raise InputError(f"the search needs a scored task (--task {' | '.join(TASKS)}), got {self.task!r}")
        if not isinstance(self.suites, str) or not self.suites.strip():
            raise InputError("the search plays fixed suite traces: give --suites")
        if self.prior not in PRIORS or self.prior == "zero":
            raise InputError(f"the search starts from a prior's skip term: --prior one of "
                             f"{', '.join(p for p in PRIORS if p != 'zero')}, got {self.prior!r}")
        for name in ("train_traces", "val_traces", "iterations", "population", "elite", "workers", "embed_dim",
                     "hidden_dim", *(("max_jobs",) if self.max_jobs is not None else ())):
            require_positive_int(getattr(self, name), f"{name} ({FLAGS[name]})")
        if self.elite > self.population:
            raise InputError(f"--cem-elite {self.elite} exceeds --cem-population {self.population}")
        for name in ("init_std", "min_std"):
            require_finite(getattr(self, name), f"{name}{f' ({FLAGS[name]})' if name in FLAGS else ''}", low=0.0,
                           low_inclusive=False, high=100.0)
        if self.min_std > self.init_std:
            raise InputError(f"min_std {self.min_std} exceeds init_std ({FLAGS['init_std']}) {self.init_std}")
        check_seed(self.seed, "seed (--seed)")
        if self.max_jobs is None:
            self.max_jobs = max(t.num_jobs for t in self.cases("train")[0] + self.cases("validation")[0])

    def cases(self, split: str) -> tuple[list, list, list]:
        """(traces, run-on sizes, regimes) of ``split``: the first ``train_traces`` fixed train
        seeds of each suite, or the first ``val_traces`` validation traces."""
        from shockwave_gym.traces.suites import suite_regime
        from shockwave_gym.training.tasks import resolve_suite_names, suite_tasks

        if split == "validation":
            tasks = suite_tasks(self.suites, envs=None, val_traces=self.val_traces, max_jobs=self.max_jobs,
                                obs_version=self.obs_version, count_actions=False)
            return tasks.val_traces, tasks.val_sizes, tasks.val_regimes or [None] * len(tasks.val_traces)
        traces, sizes, regimes = [], [], []
        for suite in resolve_suite_names(self.suites, self.obs_version):
            for index, seed in enumerate(suite.seeds("train", self.train_traces)):
                traces.append(suite.trace("train", seed, index))
                sizes.append(suite.cluster_spec if suite.heterogeneous else suite.gpus)
                regimes.append(suite_regime(suite, seed))
        return traces, sizes, regimes

    def to_dict(self) -> dict:
        return asdict(self)


# -- playing candidates (in this process or in workers) ----------------------------------------

class _Episodes:
    """A fixed list of episodes and a numpy copy of the network that plays them."""

    def __init__(self, state: dict, max_jobs: int, obs_version: int, cases: tuple):
        from shockwave_agents.learned.inference import NumpySlotNetwork

        self.net = NumpySlotNetwork(state, "score", max_jobs, obs_version)
        self.obs_version, self.cases = obs_version, cases

    def play(self, weights) -> dict:
        """:func:`~shockwave_gym.training.evaluation.evaluate_agent`'s result (per-trace
        metrics and their means) for the skip weights ``weights`` (``None``: FIFO)."""
        from shockwave_agents import make_agent
        from shockwave_agents.learned.adapter import PolicyAgent
        from shockwave_gym.training.evaluation import evaluate_agent

        if weights is None:
            agent = make_agent("fifo")
        else:
            self.net.skip = (np.asarray(weights, dtype=np.float32).reshape(-1, 1), self.net.skip[1])
            agent = PolicyAgent(self.net, ACTION_MODE, name="cem", obs_version=self.obs_version)
        traces, sizes, regimes = self.cases
        return evaluate_agent(agent, traces, sizes, regimes=regimes)


_WORKER: dict = {}


def _setup(*args) -> None:
    _WORKER["episodes"] = _Episodes(*args)


def _play(weights) -> dict:
    return _WORKER["episodes"].play(weights)["per_trace"]


def _split(cases: tuple, parts: int) -> list[tuple]:
    """``cases`` dealt into ``parts`` interleaved shares (suites spread over the workers)."""
    return [tuple(column[i::parts] for column in cases) for i in range(parts)]


class _Players:
    """Plays candidate vectors on the training episodes, split among ``workers`` processes
    (one episode share each; ``workers=1``: here)."""

    def __init__(self, state: dict, config: CEMConfig, cases: tuple):
        parts = min(config.workers, len(cases[0]))
        self.names = [trace.name for trace in cases[0]]
        self.local = _Episodes(state, config.max_jobs, config.obs_version, cases) if parts == 1 else None
        self.pools = [] if parts == 1 else [
            ProcessPoolExecutor(1, initializer=_setup, initargs=(state, config.max_jobs, config.obs_version, share))
            for share in _split(cases, parts)]

    def play(self, candidates: list) -> list[dict]:
        """Per candidate, its per-trace metrics."""
        if self.local is not None:
            return [self.local.play(c)["per_trace"] for c in candidates]
        futures = [[pool.submit(_play, c) for c in candidates] for pool in self.pools]
        merged = [{k: v for share in shares for k, v in share.result().items()} for shares in zip(*futures, strict=True)]
        return [{name: row[name] for name in self.names} for row in merged]  # the cases' order, as played here

    def close(self) -> None:
        for pool in self.pools:  # on an error or Ctrl-C, queued candidates are dropped, not played
            pool.shutdown(cancel_futures=True)


# -- the search -------------------------------------------------------------------------------

def _start(config: CEMConfig):
    """The prior's policy (torch, for saving) and its state arrays (numpy, for playing)."""
    import torch

    from shockwave_agents.learned.weights import build_policy

    torch.manual_seed(config.seed)
    policy = build_policy(ALGO, ACTION_MODE, config.max_jobs, embed_dim=config.embed_dim, hidden_dim=config.hidden_dim,
                          prior=config.prior, obs_version=config.obs_version)
    state = {key: value.detach().cpu().numpy() for key, value in policy.state_dict().items()}
    return policy, state


def _or_inf(value) -> float:
    """A score, or infinity for an episode set without one (an unfinished episode): never kept."""
    return float("inf") if value is None or not np.isfinite(value) else float(value)


def _check_scorable(task: str, fifo: dict, split: str) -> None:
    """The task's score (cost / FIFO's, per episode) needs FIFO's cost positive and finite on
    every episode; else no candidate could be scored, so the search is refused."""
    import math

    from shockwave_gym.tasks import get_task
    from shockwave_gym.training.selection import episode_cost

    costs = {name: episode_cost(get_task(task), row) for name, row in fifo.items()}
    bad = [name for name, cost in costs.items() if not (math.isfinite(cost) and cost > 0)]
    if bad:
        raise InputError(f"the {task} task's score divides by FIFO's cost, which is not positive on {len(bad)} "
                         f"{split} trace(s) ({', '.join(bad[:3])}{', ...' if len(bad) > 3 else ''}): search on "
                         "other suites (--suites) or another task")


def _label(iteration: int) -> str:
    return "the start" if iteration == 0 else f"iteration {iteration}'s best"


def _plain(value: float) -> float | None:
    return None if value == float("inf") else float(value)


def _save(policy, best: dict, config: CEMConfig) -> None:
    """``out/policy.*``: the prior's network with the kept skip weights and the run's notes."""
    import torch

    from shockwave_agents.learned.weights import save_policy

    with torch.no_grad():
        policy.action_net.skip.weight.copy_(torch.tensor(best["weights"], dtype=torch.float32).reshape(1, -1))
    training = {"command": config.command, "search": "cem", "task": config.task, "select": config.task,
                "suites": config.suites, "seed": config.seed, "prior": config.prior, "obs_version": config.obs_version,
                "iterations": config.iterations, "population": config.population, "train_traces": config.train_traces,
                "selected_iteration": best["iteration"]}
    save_policy(policy, Path(config.out) / "policy", algo=ALGO, action_mode=ACTION_MODE, training=training)


def _report(config: CEMConfig, wall_s: float, train_episodes: int, history: list, best: dict, fifo_val: dict,
            val_cases: tuple) -> dict:
    """``eval.json``: the config, every iteration's scores, the kept weights with their
    validation metrics (their decision time apart: it depends on the machine), FIFO's."""
    mean = dict(best["metrics"]["mean"])
    decision_ms = mean.pop("decision_ms_per_round")
    return {"config": config.to_dict(), "wall_s": wall_s, "selected_decision_ms_per_round": decision_ms,
            "episodes": (config.iterations * config.population + 1) * train_episodes,
            "history": history, "selected": {"iteration": best["iteration"], "score": _plain(best["val"]),
                                             "train_score": best["train"], "weights": best["weights"],
                                             "mean": mean, "per_trace": best["metrics"]["per_trace"]},
            "fifo": fifo_val, "eval_traces": [t.name for t in val_cases[0]]}


def run_cem(config: CEMConfig, log=None) -> dict:
    """The search (module docstring); returns the ``eval.json`` report."""
    import torch

    from shockwave_gym.training.selection import score

    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    torch.set_num_threads(1)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    policy, state = _start(config)
    mean = state["action_net.skip.weight"].astype(np.float64).ravel()
    std = np.full_like(mean, config.init_std)
    train_cases, val_cases = config.cases("train"), config.cases("validation")
    players = None
    try:
        players = _Players(state, config, train_cases)
        validation = _Episodes(state, config.max_jobs, config.obs_version, val_cases)  # played here
        fifo_train = players.play([None])[0]
        fifo_val = validation.play(None)
        _check_scorable(config.task, fifo_train, "train")
        _check_scorable(config.task, fifo_val["per_trace"], "validation")
        rng = np.random.default_rng(config.seed)

        def validate(weights):  # evaluate_agent's result and the task's score on the validation traces
            result = validation.play(weights)
            return result, _or_inf(score(config.task, result["per_trace"], fifo_val["per_trace"]))

        start_val, start_score = validate(mean)
        best = {"iteration": 0, "weights": mean.tolist(), "val": start_score, "metrics": start_val, "train": None}
        history = []
        for iteration in range(1, config.iterations + 1):
            draws = mean + std * rng.standard_normal((config.population, mean.size))
            draws[0] = mean
            scores = np.array([_or_inf(score(config.task, row, fifo_train)) for row in players.play(list(draws))])
            order = np.argsort(scores, kind="stable")
            finite = int(np.isfinite(scores).sum())
            if finite == 0:
                raise InputError(f"iteration {iteration}: no candidate finished every training episode, so none "
                                 "could be scored")
            elite = draws[order[: min(config.elite, finite)]]  # an unscored candidate is never an elite
            leader = draws[order[0]]
            val, val_score = validate(leader)
            history.append({"iteration": iteration, "train_mean_vector": _plain(scores[0]),
                            "train_best": _plain(scores[order[0]]), "val_of_best": _plain(val_score)})
            if val_score < best["val"]:
                best = {"iteration": iteration, "weights": leader.tolist(), "val": val_score, "metrics": val,
                        "train": float(scores[order[0]])}
            mean, std = elite.mean(axis=0), np.maximum(elite.std(axis=0), config.min_std)
            log(f"[cem] iteration {iteration}/{config.iterations}: train {scores[0]:.4f} (mean vector), "
                f"{scores[order[0]]:.4f} (best); its validation {val_score:.4f}; kept {best['val']:.4f} "
                f"({_label(best['iteration'])})")
    finally:
        if players is not None:
            players.close()
    _save(policy, best, config)
    report = _report(config, time.perf_counter() - started, len(train_cases[0]), history, best, fifo_val, val_cases)
    (out / "eval.json").write_text(json.dumps(report, indent=2) + "\n")
    log(f"[cem] kept {_label(best['iteration'])}: validation {config.task} score {best['val']:.4f} "
        f"in {report['wall_s']:.0f} s -> {out / 'policy.npz'}")
    return report

"""The shipped learned agents and loading your own.

* ``ppo-jct``, ``ppo-fairness``, ``ppo-balanced``: one PPO policy per scored task
  (docs/TASKS.md), reading observation version 3 (length beliefs), so they run in every
  information regime (exact, estimate, unknown, early endings) without reading a hidden
  length;
* ``cem-balanced``: the ``balanced`` task's policy found by the cross-entropy search over
  the ``wsrpt`` prior's skip weights (``train --algo cem``, :mod:`shockwave_gym.training.cem`),
  reading observation version 3; the task's shipped policy (:data:`TASK_POLICIES`), chosen
  over ``ppo-balanced`` on the validation split;
* ``ppo-elastic``: a PPO policy of the ``jct`` task trained on the elastic suite
  ``elastic-nominal``: it also gives each job its GPU count (a score and a count preference
  per slot, :mod:`~shockwave_agents.learned.adapter`), on clusters of one GPU type;
* ``shockwave-distilled``: a behaviour clone of ``shockwave`` reading observation version 3,
  so it too runs in every information regime;
* ``ppo`` and ``ppo-fair``: the earlier policies, reading observation version 2 (each job's
  length: the exact regime only), kept as they were.

The factories return a :class:`~shockwave_agents.learned.adapter.PolicyAgent` deciding
with numpy (torch and SB3 are not needed). Without ``path`` they load the weights shipped
in ``shockwave_agents/pretrained/`` (``<name>.npz`` + ``<name>.json``; its README gives the
commands that reproduced them). With ``path`` they load your own policy: a
``policy.npz``/``policy.json`` pair or the directory holding it (what ``shockwave-gym
train`` writes), or an SB3 ``model.zip``, which is refused unless you also pass
``trust=true`` (SB3 unpickles it, and unpickling a crafted file runs its code)::

    shockwave-gym run --agent ppo --trace teaching-12
    shockwave-gym run --agent ppo --agent-opt path=runs/ppo --trace teaching-12
    shockwave-gym run --agent ppo --agent-opt path=runs/ppo/model.zip --agent-opt trust=true --trace teaching-12

A malformed policy (bad JSON, unknown ``algo``, NaN weights, wrong shapes, ``max_jobs``
outside 1..65,536, ...) is one :class:`~shockwave_gym.errors.InputError` naming the file and
the field (see :mod:`~shockwave_agents.learned.weights`).

``max_jobs`` rebuilds the network with another number of observation slots (the weights
do not depend on it); by default the agent uses the slots it was trained with, and jobs
beyond them wait in the env's arrival-ordered queue.
"""

from __future__ import annotations

from pathlib import Path

from shockwave_gym.errors import InputError

#: Where the shipped policies live (installed as package data ``shockwave_agents/pretrained``).
PRETRAINED_DIR = Path(__file__).resolve().parent.parent / "pretrained"
SHIPPED = ("ppo", "ppo-fair", "shockwave-distilled", "ppo-jct", "ppo-fairness", "ppo-balanced", "ppo-elastic",
           "cem-balanced")
#: The shipped policy of each scored task (shockwave_gym.tasks): the best on the validation split
#: of the task's shipped candidates (docs/TRAINING.md).
TASK_POLICIES = {"jct": "ppo-jct", "fairness": "ppo-fairness", "balanced": "cem-balanced"}


def pretrained_path(name: str) -> Path:
    """The weights file of a shipped policy (its JSON sits beside it)."""
    if name not in SHIPPED:
        raise InputError(f"no shipped policy {name!r}; shipped: {', '.join(SHIPPED)}")
    path = PRETRAINED_DIR / f"{name}.npz"
    if not path.is_file() or not path.with_suffix(".json").is_file():
        raise InputError(
            f"shipped policy {name!r} not found in {PRETRAINED_DIR}; reinstall the package or "
            f"train one (see {PRETRAINED_DIR / 'README.md'}) and pass path=..."
        )
    return path


def load_agent(path: str | Path, *, name: str = "learned", max_jobs: int | None = None, trust: bool = False):
    """A :class:`PolicyAgent` from a saved policy (weights-only pair, its directory, or an
    SB3 zip, the last only with ``trust=True``). ``agent.policy_path`` and
    ``agent.policy_meta`` tell where it came from."""
    from shockwave_agents.learned.adapter import PolicyAgent
    from shockwave_agents.learned.inference import NumpySlotNetwork
    from shockwave_agents.learned.weights import load_network, load_sb3_zip

    if not isinstance(path, (str, Path)) or not str(path):
        raise InputError(f"agent option path: expected a file or directory name, got {path!r}")
    if not isinstance(trust, bool):
        raise InputError(f"agent option trust: expected true or false, got {trust!r}")
    path = Path(path)
    if not path.exists() and not path.with_suffix(".npz").exists():
        raise InputError(f"{path}: no such policy file or directory")
    if path.suffix == ".zip":
        policy, meta = load_sb3_zip(path, max_jobs=max_jobs, trust=trust)  # refuses before importing torch
        network = NumpySlotNetwork.from_policy(policy)
    else:
        network, meta = load_network(path, max_jobs=max_jobs)
    agent = PolicyAgent(network, meta["action_mode"], name=name, obs_version=int(meta.get("obs_version", 1)))
    agent.policy_path, agent.policy_meta = path, meta
    return agent


def make_ppo(path: str | Path | None = None, max_jobs: int | None = None, trust: bool = False):
    """The shipped PPO scheduler (trained with RL on generated traces), or ``path``'s
    (``trust=True`` to allow an SB3 ``.zip``, which runs the unpickler)."""
    return load_agent(pretrained_path("ppo") if path is None else path, name="ppo", max_jobs=max_jobs, trust=trust)


def make_ppo_fair(path: str | Path | None = None, max_jobs: int | None = None, trust: bool = False):
    """The shipped fairness-weighted PPO scheduler (RL on a JCT + FTF reward, checkpoint
    chosen on worst FTF and unfair fraction at no worse than FIFO's JCT), or ``path``'s
    (``trust=True`` to allow an SB3 ``.zip``, which runs the unpickler)."""
    return load_agent(pretrained_path("ppo-fair") if path is None else path, name="ppo-fair", max_jobs=max_jobs, trust=trust)


def make_shockwave_distilled(path: str | Path | None = None, max_jobs: int | None = None, trust: bool = False):
    """The shipped behaviour clone of Shockwave (millisecond decisions), or ``path``'s
    (``trust=True`` to allow an SB3 ``.zip``, which runs the unpickler)."""
    return load_agent(pretrained_path("shockwave-distilled") if path is None else path, name="shockwave-distilled",
                      max_jobs=max_jobs, trust=trust)


def _make_task_policy(name: str, path, max_jobs, trust):
    return load_agent(pretrained_path(name) if path is None else path, name=name, max_jobs=max_jobs, trust=trust)


def make_ppo_jct(path: str | Path | None = None, max_jobs: int | None = None, trust: bool = False):
    """The shipped policy of the ``jct`` task (observation version 3: every regime), or ``path``'s."""
    return _make_task_policy("ppo-jct", path, max_jobs, trust)


def make_ppo_fairness(path: str | Path | None = None, max_jobs: int | None = None, trust: bool = False):
    """The shipped policy of the ``fairness`` task (mean fair-share rho; every regime), or ``path``'s."""
    return _make_task_policy("ppo-fairness", path, max_jobs, trust)


def make_ppo_balanced(path: str | Path | None = None, max_jobs: int | None = None, trust: bool = False):
    """The shipped policy of the ``balanced`` task (JCT, fair-share rho, makespan; every regime), or ``path``'s."""
    return _make_task_policy("ppo-balanced", path, max_jobs, trust)


def make_cem_balanced(path: str | Path | None = None, max_jobs: int | None = None, trust: bool = False):
    """The shipped search result of the ``balanced`` task (every regime), or ``path``'s."""
    return _make_task_policy("cem-balanced", path, max_jobs, trust)


def make_ppo_elastic(path: str | Path | None = None, max_jobs: int | None = None, trust: bool = False):
    """The shipped elastic policy (the ``jct`` task on ``elastic-nominal``: job order and GPU
    counts), or ``path``'s."""
    return _make_task_policy("ppo-elastic", path, max_jobs, trust)

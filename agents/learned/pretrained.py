"""The shipped learned agents, ``ppo`` and ``shockwave-distilled``, and loading your own.

Both factories return a :class:`~shockwave_agents.learned.adapter.PolicyAgent` deciding
with numpy (torch and SB3 are not needed). Without ``path`` they load the weights shipped
in ``shockwave_agents/pretrained/`` (``<name>.npz`` + ``<name>.json``; its README gives the
commands that reproduced them). With ``path`` they load your own policy: a
``policy.npz``/``policy.json`` pair or the directory holding it (what ``shockwave-gym
train`` writes), or an SB3 ``model.zip`` (unpickled by SB3, with a warning)::

    shockwave-gym run --agent ppo --trace teaching-12
    shockwave-gym run --agent ppo --agent-opt path=runs/ppo --trace teaching-12

``max_jobs`` rebuilds the network with another number of observation slots (the weights
do not depend on it); by default the agent uses the slots it was trained with, and jobs
beyond them wait in the env's arrival-ordered queue.
"""

from __future__ import annotations

from pathlib import Path

from shockwave_gym.errors import InputError

#: Where the shipped policies live (installed as package data ``shockwave_agents/pretrained``).
PRETRAINED_DIR = Path(__file__).resolve().parent.parent / "pretrained"
SHIPPED = ("ppo", "shockwave-distilled")


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


def load_agent(path: str | Path, *, name: str = "learned", max_jobs: int | None = None):
    """A :class:`PolicyAgent` from a saved policy (weights-only pair, its directory, or an
    SB3 zip). ``agent.policy_path`` and ``agent.policy_meta`` tell where it came from."""
    from shockwave_agents.learned.adapter import PolicyAgent
    from shockwave_agents.learned.inference import NumpySlotNetwork
    from shockwave_agents.learned.weights import load_network, load_sb3_zip

    path = Path(path)
    if not path.exists() and not path.with_suffix(".npz").exists():
        raise InputError(f"{path}: no such policy file or directory")
    if path.suffix == ".zip":
        import torch

        torch.set_num_threads(1)
        policy, meta = load_sb3_zip(path, max_jobs=max_jobs)
        network = NumpySlotNetwork.from_policy(policy)
    else:
        network, meta = load_network(path, max_jobs=max_jobs)
    agent = PolicyAgent(network, meta["action_mode"], name=name)
    agent.policy_path, agent.policy_meta = path, meta
    return agent


def make_ppo(path: str | Path | None = None, max_jobs: int | None = None):
    """The shipped PPO scheduler (trained with RL on generated traces), or ``path``'s."""
    return load_agent(path or pretrained_path("ppo"), name="ppo", max_jobs=max_jobs)


def make_shockwave_distilled(path: str | Path | None = None, max_jobs: int | None = None):
    """The shipped behaviour clone of Shockwave (millisecond decisions), or ``path``'s."""
    return load_agent(path or pretrained_path("shockwave-distilled"), name="shockwave-distilled", max_jobs=max_jobs)

"""Your own trained policies, by the name of the algorithm that trained them.

``shockwave-gym train --algo ppo | maskable_ppo | bc | cem`` writes a ``policy.npz`` /
``policy.json`` pair. Each algorithm's policies load under its name, with ``path`` required::

    shockwave-gym run --agent maskable_ppo --agent-opt path=runs/mppo --trace teaching-12
    shockwave-gym compare --agents fifo srtf --agent mine=maskable_ppo:path=runs/mppo --traces teaching-12

* ``ppo``: the shipped PPO agent; ``path=`` loads any policy instead
  (:mod:`~shockwave_agents.learned.pretrained`, unchanged);
* ``maskable_ppo``: a policy written by ``train --algo maskable_ppo`` (its ``algo`` field
  must say so);
* ``bc`` (also ``imitation``): a policy written by ``train --algo bc`` (behaviour cloning /
  DAgger; its ``training`` notes name the teacher);
* ``cem``: a policy written by ``train --algo cem`` (the cross-entropy search over the
  skip weights; its ``training`` notes say ``"search": "cem"``);
* ``policy``: any saved policy, whatever trained it.

A file of another kind is refused with an :class:`~shockwave_gym.errors.InputError` naming
the kind it is. These kinds are not listed by ``available_agents()`` (they need a path, so
``--agents all`` cannot run them).
"""

from __future__ import annotations

from pathlib import Path

from shockwave_gym.errors import InputError

#: kind -> what it loads (for help texts and errors).
POLICY_KINDS: dict[str, str] = {
    "maskable_ppo": "a policy written by `shockwave-gym train --algo maskable_ppo`",
    "bc": "a policy written by `shockwave-gym train --algo bc` (behaviour cloning)",
    "imitation": "same as bc",
    "cem": "a policy written by `shockwave-gym train --algo cem` (cross-entropy search)",
    "policy": "any policy written by `shockwave-gym train`",
}


def kind_of(meta: dict) -> str:
    """The training kind a policy file's JSON describes: ``bc``, ``cem`` or its ``algo``."""
    training = meta.get("training", {})
    if "teacher" in training:
        return "bc"
    if training.get("search") == "cem":
        return "cem"
    return str(meta["algo"])


def _load(kind: str, path, max_jobs, trust, accept: set[str] | None):
    from shockwave_agents.learned.pretrained import load_agent

    if path is None:
        raise InputError(
            f"agent {kind!r} needs path= ({POLICY_KINDS[kind]}, e.g. `train ... --out DIR`): "
            f"--agent {kind} --agent-opt path=DIR, or --agent LABEL={kind}:path=DIR"
        )
    agent = load_agent(path, name=kind, max_jobs=max_jobs, trust=trust)
    found = kind_of(agent.policy_meta)
    if accept is not None and found not in accept:
        raise InputError(
            f"{Path(path)}: agent {kind!r} loads {POLICY_KINDS[kind]}, but this policy is a {found!r} "
            f"policy (algo {agent.policy_meta['algo']!r}); load it as --agent LABEL={found}:path={path} "
            f"or --agent LABEL=policy:path={path}"
        )
    return agent


def make_maskable_ppo(path: str | Path | None = None, max_jobs: int | None = None, trust: bool = False):
    """A policy trained with ``train --algo maskable_ppo`` (``path`` required)."""
    return _load("maskable_ppo", path, max_jobs, trust, {"maskable_ppo"})


def make_bc(path: str | Path | None = None, max_jobs: int | None = None, trust: bool = False):
    """A policy trained with ``train --algo bc`` (``path`` required)."""
    return _load("bc", path, max_jobs, trust, {"bc"})


def make_imitation(path: str | Path | None = None, max_jobs: int | None = None, trust: bool = False):
    """Same as :func:`make_bc`."""
    return _load("imitation", path, max_jobs, trust, {"bc"})


def make_cem(path: str | Path | None = None, max_jobs: int | None = None, trust: bool = False):
    """A policy found with ``train --algo cem`` (``path`` required)."""
    return _load("cem", path, max_jobs, trust, {"cem"})


def make_policy(path: str | Path | None = None, max_jobs: int | None = None, trust: bool = False):
    """Any policy ``shockwave-gym train`` wrote (``path`` required)."""
    return _load("policy", path, max_jobs, trust, None)

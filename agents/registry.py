"""Agents by name, for the CLI and the harness.

Built-in agents are listed as ``"module:attribute"`` strings and imported only when made, so
listing agents never imports cvxpy or torch. Third-party agents register a factory with
:func:`register_agent`.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Callable

from shockwave_gym.errors import InputError

_BUILTIN: dict[str, str] = {
    "fifo": "shockwave_agents.fifo:FifoAgent",
    "srtf": "shockwave_agents.srtf:SrtfAgent",
    "las": "shockwave_agents.las:LasAgent",
    "gavel": "shockwave_agents.gavel.gavel:GavelAgent",
    "themis": "shockwave_agents.gavel.themis:ThemisAgent",
    "allox": "shockwave_agents.gavel.allox:AlloxAgent",
    "ossp": "shockwave_agents.gavel.ossp:OsspAgent",
    "mst": "shockwave_agents.gavel.mst:MstAgent",
    "gandiva_fair": "shockwave_agents.gavel.gandiva_fair:GandivaFairAgent",
    "shockwave": "shockwave_agents.shockwave.agent:make_shockwave",
    "shockwave-normalized": "shockwave_agents.shockwave.agent:make_shockwave_normalized",
    "ppo": "shockwave_agents.learned.pretrained:make_ppo",
    "shockwave-distilled": "shockwave_agents.learned.pretrained:make_shockwave_distilled",
}
_EXTRA: dict[str, Callable] = {}


def register_agent(name: str, factory: Callable, *, overwrite: bool = False) -> None:
    """Make ``factory(**kwargs) -> Agent`` available as ``name`` in the CLI and harness."""
    if (name in _BUILTIN or name in _EXTRA) and not overwrite:
        raise ValueError(f"agent {name!r} is already registered")
    _EXTRA[name] = factory


def _resolve(name: str) -> Callable:
    if name in _EXTRA:
        return _EXTRA[name]
    target = _BUILTIN.get(name)
    if target is None:
        raise InputError(f"unknown agent {name!r}; available: {', '.join(available_agents())}")
    module_name, attr = target.split(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr)


def make_agent(name: str, **kwargs):
    """A fresh agent instance by registered name.

    Options the agent does not take raise :class:`InputError` (a clean CLI error), naming
    the agent's signature.
    """
    factory = _resolve(name)
    if kwargs:
        try:
            inspect.signature(factory).bind(**kwargs)
        except TypeError as exc:
            raise InputError(
                f"agent {name!r} does not take options {sorted(kwargs)}: {exc}; "
                f"signature: {name}{inspect.signature(factory)}"
            ) from None
    return factory(**kwargs)


def available_agents() -> list[str]:
    """Registered names whose implementation is installed (in registry order)."""
    names = []
    for name, target in _BUILTIN.items():
        try:
            found = importlib.util.find_spec(target.split(":")[0]) is not None
        except ModuleNotFoundError:  # a parent package is missing
            found = False
        if found:
            names.append(name)
    return names + sorted(_EXTRA)

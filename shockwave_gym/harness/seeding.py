"""Which cells depend on the seed, so that identical cells are not run twice.

In the harness the seed reaches one place: ``agent.reset(view, seed)``. Every trace is fixed
before any cell runs (a trace file, or a bundled trace generated once with its own seed), and
the simulator draws no random numbers. So a cell depends on the seed exactly when its agent
does, and for an agent that ignores it, ``seeds=(0, 1)`` would give two identical cells that
only look like two samples. Such agents run the first seed only (n=1 in the table).

Whether an agent uses the seed is declared, never guessed:

- a built-in agent (or policy kind) declares it on its entry of the agent table,
  :data:`shockwave_agents.registry._BUILTIN` (``uses_seed``: a bool, or a rule over the
  agent's options; a test checks that every built-in declares it);
- any other factory may carry an attribute ``uses_seed``: a bool, or a callable taking the
  agent's options and returning a bool. A factory that does not declare it is taken to use
  the seed (every seed runs, as before).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

from shockwave_gym.harness.cells import AgentRef


def _declared(rule: object, options: Mapping[str, object]) -> bool:
    if callable(rule):
        return bool(rule(options))
    return bool(rule)


def _factory_of(ref: AgentRef) -> Callable | None:
    """The callable behind ``ref`` when it is not a built-in name (``None`` if it cannot be
    imported here: the cell itself will report that)."""
    if ref.factory is not None:
        return ref.factory
    if ":" in ref.target:
        module_name, _, attr = ref.target.partition(":")
        try:
            return getattr(importlib.import_module(module_name), attr)
        except Exception:  # any import failure: not ours to report here
            return None
    return None


def uses_seed(ref: AgentRef) -> bool:
    """Whether ``ref``'s decisions can depend on the episode seed (see the module docstring)."""
    options = dict(ref.options)
    factory = _factory_of(ref)
    if factory is not None:
        return _declared(getattr(factory, "uses_seed", True), options)
    from shockwave_agents.registry import agent_entry, registered_factory

    registered = registered_factory(ref.target) if ref.target else None
    if registered is not None:  # register_agent(name, factory): the factory's own declaration
        return _declared(getattr(registered, "uses_seed", True), options)
    entry = agent_entry(ref.target) if ref.target else None
    return True if entry is None else entry.seeded(options)


def seed_free_labels(agents: list[AgentRef]) -> list[str]:
    """Labels of the agents (in order) whose cells do not depend on the seed."""
    return [ref.label for ref in agents if not uses_seed(ref)]


def seeds_note(labels: list[str], traces: list[str], seeds: list[int]) -> str:
    """The one warning for agents run with the first seed only."""
    shown = ", ".join(str(s) for s in seeds)
    return (
        f"seeds {shown} make no difference for {', '.join(labels)} on "
        f"{', '.join(traces)} (a fixed trace and agents that do not use the seed): "
        f"ran seed {seeds[0]} only for them (n=1 in the table)"
    )

"""Which cells depend on the seed, so that identical cells are not run twice.

In the harness the seed reaches one place: ``agent.reset(view, seed)``. Every trace is fixed
before any cell runs (a trace file, or a bundled trace generated once with its own seed), and
the simulator draws no random numbers. So a cell depends on the seed exactly when its agent
does, and for an agent that ignores it, ``seeds=(0, 1)`` would give two identical cells that
only look like two samples. Such agents run the first seed only (n=1 in the table).

Whether an agent uses the seed is declared, never guessed:

- a built-in agent is listed in :data:`BUILTIN_USES_SEED` (a test checks that every
  registered built-in is listed, so a new one must be declared);
- any other factory may carry an attribute ``uses_seed``: a bool, or a callable taking the
  agent's options and returning a bool. A factory that does not declare it is taken to use
  the seed (every seed runs, as before).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

from shockwave_gym.harness.cells import AgentRef


def _shockwave_uses_seed(options: Mapping[str, object]) -> bool:
    # The predictor's noise RNG is the only random draw, and it draws only when noise > 0.
    noise = options.get("noise", 0.0)
    return isinstance(noise, int | float) and not isinstance(noise, bool) and noise > 0


#: Built-in agents: whether the episode seed can change their decisions (a bool, or a rule
#: over the agent's options). Read from their code: the queue orders (FIFO, SRTF, LAS,
#: Tiresias, weighted SRPT, max-rho) and the Gavel mechanism with its six allocation rules
#: and their work-conserving variants ignore the seed; the learned policies act
#: deterministically (argmax / sign of the network output); Shockwave seeds only its
#: prediction-noise RNG.
BUILTIN_USES_SEED: dict[str, bool | Callable[[Mapping[str, object]], bool]] = {
    "fifo": False,
    "srtf": False,
    "las": False,
    "tiresias": False,
    "wsrpt": False,
    "max-rho": False,
    "fair-share": False,
    "gavel": False,
    "gavel-blind": False,
    "themis": False,
    "allox": False,
    "ossp": False,
    "mst": False,
    "gandiva_fair": False,
    "gavel-wc": False,
    "themis-wc": False,
    "allox-wc": False,
    "ossp-wc": False,
    "mst-wc": False,
    "gandiva_fair-wc": False,
    "shockwave": _shockwave_uses_seed,
    "shockwave-normalized": _shockwave_uses_seed,
    "shockwave-fair": _shockwave_uses_seed,
    "ppo": False,
    "ppo-fair": False,
    "shockwave-distilled": False,
    # policy kinds (shockwave_agents.learned.kinds): deterministic like ppo
    "maskable_ppo": False,
    "bc": False,
    "imitation": False,
    "policy": False,
}


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
    if ref.target in BUILTIN_USES_SEED:
        return _declared(BUILTIN_USES_SEED[ref.target], options)
    return True


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

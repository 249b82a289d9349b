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
    "tiresias": "shockwave_agents.tiresias:TiresiasAgent",
    "wsrpt": "shockwave_agents.wsrpt:WsrptAgent",
    "max-rho": "shockwave_agents.max_rho:MaxRhoAgent",
    "fair-share": "shockwave_agents.equal_share:FairShareAgent",
    "gavel": "shockwave_agents.gavel.gavel:GavelAgent",
    "gavel-blind": "shockwave_agents.gavel.gavel:make_gavel_blind",
    "themis": "shockwave_agents.gavel.themis:ThemisAgent",
    "allox": "shockwave_agents.gavel.allox:AlloxAgent",
    "ossp": "shockwave_agents.gavel.ossp:OsspAgent",
    "mst": "shockwave_agents.gavel.mst:MstAgent",
    "gandiva_fair": "shockwave_agents.gavel.gandiva_fair:GandivaFairAgent",
    "gavel-wc": "shockwave_agents.gavel.work_conserving:make_gavel_wc",
    "themis-wc": "shockwave_agents.gavel.work_conserving:make_themis_wc",
    "allox-wc": "shockwave_agents.gavel.work_conserving:make_allox_wc",
    "ossp-wc": "shockwave_agents.gavel.work_conserving:make_ossp_wc",
    "mst-wc": "shockwave_agents.gavel.work_conserving:make_mst_wc",
    "gandiva_fair-wc": "shockwave_agents.gavel.work_conserving:make_gandiva_fair_wc",
    "shockwave": "shockwave_agents.shockwave.agent:make_shockwave",
    "shockwave-normalized": "shockwave_agents.shockwave.agent:make_shockwave_normalized",
    "shockwave-fair": "shockwave_agents.shockwave.agent:make_shockwave_fair",
    "ppo": "shockwave_agents.learned.pretrained:make_ppo",
    "ppo-fair": "shockwave_agents.learned.pretrained:make_ppo_fair",
    "shockwave-distilled": "shockwave_agents.learned.pretrained:make_shockwave_distilled",
}
#: One line per built-in agent for ``shockwave-gym agents`` (docs/AGENTS.md has the details).
_DESCRIPTIONS: dict[str, str] = {
    "fifo": "first come, first served, with backfilling",
    "srtf": "shortest predicted remaining time first, preemptive",
    "las": "least attained service in discretised queues (Tiresias, NSDI '19)",
    "gavel": "Gavel round mechanism, max-min fairness (OSDI '20)",
    "gavel-blind": "gavel blind to GPU types (as if every GPU were a V100); same as gavel on V100s only",
    "themis": "Gavel mechanism, minimise the worst finish-time ratio (Themis, NSDI '20)",
    "allox": "Gavel mechanism, min-cost job-to-GPU assignment (AlloX, EuroSys '20)",
    "ossp": "Gavel mechanism, minimise the makespan bound (Gavel's min_total_duration)",
    "mst": "Gavel mechanism, maximise total throughput",
    "gandiva_fair": "Gavel mechanism, equal time share per job (Gandiva-fair, EuroSys '20)",
    "shockwave": "Shockwave (NSDI '23): plans rounds ahead with a MIP for fairness and makespan",
    "shockwave-normalized": "Shockwave with the objective's terms on comparable scales (ours)",
    "shockwave-fair": "shockwave-normalized tuned for fewer unfair jobs (ours)",
    "ppo": "shipped PPO slot policy, priority mode, trained for JCT (decides in numpy)",
    "ppo-fair": "shipped PPO slot policy trained for JCT and finish-time fairness",
    "shockwave-distilled": "shipped behaviour clone of shockwave (decides in milliseconds)",
    "maskable_ppo": "your MaskablePPO policy from shockwave-gym train (path= required)",
    "bc": "your behaviour-cloned policy from shockwave-gym train --algo bc (path= required)",
    "imitation": "same as bc (path= required)",
    "policy": "any policy shockwave-gym train wrote, whatever its algorithm (path= required)",
}
_EXTRA: dict[str, Callable] = {}


def register_agent(name: str, factory: Callable, *, overwrite: bool = False) -> None:
    """Make ``factory(**kwargs) -> Agent`` available as ``name`` in the CLI and harness."""
    if (name in _BUILTIN or name in _EXTRA) and not overwrite:
        raise ValueError(f"agent {name!r} is already registered")
    _EXTRA[name] = factory


def registered_factory(name: str) -> Callable | None:
    """The factory a third party registered under ``name`` with :func:`register_agent`
    (``None`` for built-in or unknown names)."""
    return _EXTRA.get(name)


#: Policy kinds (:mod:`shockwave_agents.learned.kinds`): a trained policy loaded by the name
#: of its training algorithm, ``path`` required. Known to :func:`make_agent`, not listed by
#: :func:`available_agents` (``all`` cannot run them without a path).
_POLICY_KINDS: dict[str, str] = {
    "maskable_ppo": "shockwave_agents.learned.kinds:make_maskable_ppo",
    "bc": "shockwave_agents.learned.kinds:make_bc",
    "imitation": "shockwave_agents.learned.kinds:make_imitation",
    "policy": "shockwave_agents.learned.kinds:make_policy",
}


def policy_kinds() -> list[str]:
    """Names that load a trained policy from ``path`` (see :data:`_POLICY_KINDS`)."""
    return list(_POLICY_KINDS)


def weights_sha256(name: str, options: dict) -> str | None:
    """Content hash of the weight files the built-in learned agent ``name`` would load with
    ``options`` (:mod:`shockwave_agents.learned.fingerprint`); None for every other agent,
    a third party's registered factory included."""
    if name in _EXTRA:
        return None
    # imported by name, like every built-in agent (listing agents imports none of them)
    return importlib.import_module("shockwave_agents.learned.fingerprint").weights_sha256(name, options)


def is_known(name: str) -> bool:
    """``name`` is an available agent or a policy kind."""
    return name in _POLICY_KINDS or name in available_agents()


def resolve_factory(name: str) -> Callable:
    """The factory behind a registered name (imports its module); unknown -> InputError."""
    if name in _EXTRA:
        return _EXTRA[name]
    target = _BUILTIN.get(name) or _POLICY_KINDS.get(name)
    if target is None:
        raise InputError(f"unknown agent {name!r}; available: {', '.join(available_agents())}; "
                         f"your trained policies: {', '.join(policy_kinds())} (with path=)")
    module_name, attr = target.split(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr)


def check_options(name: str, factory: Callable, options: dict) -> None:
    """Raise :class:`InputError` when ``factory`` does not take ``options`` (checked before
    anything runs, so a typo is a clean input error rather than a failed run)."""
    if not options:
        return
    try:
        inspect.signature(factory).bind(**options)
    except TypeError as exc:
        raise InputError(
            f"agent {name!r} does not take options {sorted(options)}: {exc}; "
            f"signature: {name}{inspect.signature(factory)}"
        ) from None
    except ValueError:  # no introspectable signature (some builtins): let the call decide
        return


def make_agent(name: str, **kwargs):
    """A fresh agent instance by registered name; options it does not take raise
    :class:`InputError`."""
    factory = resolve_factory(name)
    check_options(name, factory, kwargs)
    return factory(**kwargs)


def agent_description(name: str) -> str:
    """One line saying what agent ``name`` is: a built-in's from the registry (nothing is
    imported), a registered factory's from the first line of its docstring."""
    if name in _EXTRA:
        doc = inspect.getdoc(_EXTRA[name]) or ""
        return doc.strip().splitlines()[0] if doc.strip() else "registered agent (its factory has no docstring)"
    return _DESCRIPTIONS.get(name, "")


def available_agents() -> list[str]:
    """Registered names whose implementation is installed (in registry order)."""
    names = []
    for name, target in _BUILTIN.items():
        try:
            found = importlib.util.find_spec(target.split(":")[0]) is not None
        except ImportError:  # a parent package is missing or fails to import
            found = False
        if found:
            names.append(name)
    return names + sorted(_EXTRA)

"""Agents by name, for the CLI and the harness: the one table of built-in agents.

Each built-in agent is one entry of :data:`_BUILTIN`::

    "name": AgentEntry("module:attribute", "one-line description", uses_seed=False, options=("opt",)),

- ``"module:attribute"``: the factory (a class or function), imported only when made, so
  listing agents never imports cvxpy or torch.
- the description: what ``shockwave-gym agents --long`` prints.
- ``uses_seed``: whether the episode seed can change the agent's decisions: a bool, or a
  rule over the agent's options (``options -> bool``). The harness reads it
  (:mod:`shockwave_gym.harness.seeding`) to run seed-free agents once. Declared, never
  guessed; read from the agent's code.
- ``learned``: a trained policy (weights on disk), not a rule.
- ``options``: the main keyword options the factory takes (a test checks they bind).
- ``elastic``: the agent chooses GPU counts (docs/SEMANTICS.md, "Elastic jobs"); such agents
  are benchmarked on elastic traces by ``benchmarks/elastic.py`` and on the leaderboard's
  elastic suite.

A plain ``"module:attribute"`` string is accepted as an entry too (undescribed, taken to use
the seed), but a test asks every built-in to declare its entry in full.
Third-party agents register a factory with :func:`register_agent` (its ``uses_seed``
attribute, if any, declares the seed use).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from shockwave_gym.errors import InputError

SeedRule = bool | Callable[[Mapping[str, object]], bool]


@dataclass(frozen=True)
class AgentEntry:
    """One built-in agent (see the module docstring for the fields)."""

    target: str
    description: str = ""
    uses_seed: SeedRule = True
    learned: bool = False
    options: tuple[str, ...] = ()
    elastic: bool = False

    def seeded(self, options: Mapping[str, object]) -> bool:
        """Whether the seed can change the decisions of this agent with ``options``."""
        return bool(self.uses_seed(options)) if callable(self.uses_seed) else bool(self.uses_seed)


def _noise_uses_seed(options: Mapping[str, object]) -> bool:
    # Shockwave: the predictor's noise RNG is the only random draw, and it draws only when noise > 0.
    noise = options.get("noise", 0.0)
    return isinstance(noise, int | float) and not isinstance(noise, bool) and noise > 0


_MECHANISM = ("min_recompute_interval_s", "count_restart_overhead", "hold_unallocated_gpus", "heterogeneity_aware")
_SHOCKWAVE = ("noise", "numerics", "solver", "planning_rounds", "objective", "time_limit_s")
_POLICY = ("path", "max_jobs", "trust")
_WORK_CONSERVING = ("count_restart_overhead", "heterogeneity_aware")


def _policy(target: str, description: str, **extra) -> AgentEntry:
    """A learned policy's entry: weights-only, no seed, the policy options."""
    return AgentEntry(target, description, uses_seed=False, learned=True, options=_POLICY, **extra)


_BUILTIN: dict[str, AgentEntry | str] = {
    "fifo": AgentEntry("shockwave_agents.fifo:FifoAgent", "first come, first served, with backfilling",
                       uses_seed=False, options=("backfill",)),
    "srtf": AgentEntry("shockwave_agents.srtf:SrtfAgent", "shortest predicted remaining time first, preemptive",
                       uses_seed=False, options=("backfill", "oracle")),
    "las": AgentEntry("shockwave_agents.las:LasAgent", "least attained service in discretised queues (Tiresias, NSDI '19, without promotion)",
                      uses_seed=False, options=("queue_thresholds_gpu_s", "backfill")),
    "tiresias": AgentEntry("shockwave_agents.tiresias:TiresiasAgent",
                           "two-queue LAS with starvation promotion (Tiresias, NSDI '19)", uses_seed=False,
                           options=("queue_thresholds_gpu_s", "promote_knob", "backfill")),
    "wsrpt": AgentEntry("shockwave_agents.wsrpt:WsrptAgent",
                        "weighted SRPT: smallest predicted remaining GPU-area first, with backfilling",
                        uses_seed=False, options=("backfill", "oracle")),
    "gittins": AgentEntry("shockwave_agents.gittins:GittinsAgent",
                          "highest Gittins index per GPU-second first, from the regime's length belief, with backfilling",
                          uses_seed=False, options=("backfill",)),
    "max-rho": AgentEntry("shockwave_agents.max_rho:MaxRhoAgent",
                          "largest online finish-time-ratio estimate first, gang-aware (ours)", uses_seed=False,
                          options=("backfill",)),
    "fair-share": AgentEntry("shockwave_agents.equal_share:FairShareAgent",
                             "the metrics' fluid equal-share reference, run in rounds from public facts (ours)",
                             uses_seed=False, options=("backfill", "oracle", "relative")),
    "gavel": AgentEntry("shockwave_agents.gavel.gavel:GavelAgent", "Gavel round mechanism, max-min fairness (OSDI '20)",
                        uses_seed=False, options=_MECHANISM),
    "gavel-blind": AgentEntry("shockwave_agents.gavel.gavel:make_gavel_blind", "gavel blind to GPU types (as if every GPU were a V100); same as gavel on V100s only",
                              uses_seed=False, options=_MECHANISM[:3]),
    "themis": AgentEntry("shockwave_agents.gavel.themis:ThemisAgent", "Gavel mechanism, minimise the worst finish-time ratio (Gavel's FTF policy, after Themis, NSDI '20)",
                         uses_seed=False, options=("remaining", *_MECHANISM)),
    "allox": AgentEntry("shockwave_agents.gavel.allox:AlloxAgent", "Gavel mechanism, min-cost job-to-GPU assignment (AlloX, EuroSys '20)",
                        uses_seed=False, options=("alpha", "remaining")),
    "ossp": AgentEntry("shockwave_agents.gavel.ossp:OsspAgent", "Gavel mechanism, minimise the makespan bound (Gavel's min_total_duration)",
                       uses_seed=False, options=("remaining",)),
    "mst": AgentEntry("shockwave_agents.gavel.mst:MstAgent", "Gavel mechanism, maximise total throughput",
                      uses_seed=False, options=_MECHANISM),
    "gandiva_fair": AgentEntry("shockwave_agents.gavel.gandiva_fair:GandivaFairAgent", "Gavel mechanism, equal time share per job whatever its gang (Gandiva-fair, EuroSys '20)", uses_seed=False, options=_MECHANISM),
    "gavel-wc": AgentEntry("shockwave_agents.gavel.work_conserving:make_gavel_wc",
                           "gavel, recomputed at every arrival or completion, holding no GPUs (ours)",
                           uses_seed=False, options=_WORK_CONSERVING),
    "themis-wc": AgentEntry("shockwave_agents.gavel.work_conserving:make_themis_wc",
                            "themis, recomputed at every arrival or completion, holding no GPUs (ours)",
                            uses_seed=False, options=("remaining", *_WORK_CONSERVING)),
    "allox-wc": AgentEntry("shockwave_agents.gavel.work_conserving:make_allox_wc",
                           "allox, recomputed at every arrival or completion, holding no GPUs (ours)",
                           uses_seed=False, options=("alpha", "remaining", "count_restart_overhead")),
    "ossp-wc": AgentEntry("shockwave_agents.gavel.work_conserving:make_ossp_wc",
                          "ossp, recomputed at every arrival or completion, holding no GPUs (ours)",
                          uses_seed=False, options=("remaining", "count_restart_overhead")),
    "mst-wc": AgentEntry("shockwave_agents.gavel.work_conserving:make_mst_wc",
                         "mst, recomputed at every arrival or completion, holding no GPUs (ours)",
                         uses_seed=False, options=_WORK_CONSERVING),
    "gandiva_fair-wc": AgentEntry("shockwave_agents.gavel.work_conserving:make_gandiva_fair_wc",
                                  "gandiva_fair, recomputed at every arrival or completion, holding no GPUs (ours)",
                                  uses_seed=False, options=_WORK_CONSERVING),
    "pollux": AgentEntry("shockwave_agents.elastic.pollux:PolluxAgent",
                         "elastic: the counts maximising a sum of concave utilities of speedup (after Pollux, OSDI '21)",
                         uses_seed=False, options=("p",), elastic=True),
    "sia": AgentEntry("shockwave_agents.elastic.sia:SiaAgent",
                      "elastic: integer program over (type, count) configurations, solved with HiGHS (after Sia, SOSP '23)",
                      uses_seed=False, options=("p", "restart"), elastic=True),
    "elastic-srpt": AgentEntry("shockwave_agents.elastic.srpt:ElasticSrptAgent",
                               "elastic: shortest predicted remaining time first, each on the largest efficient count",
                               uses_seed=False, options=("efficiency",), elastic=True),
    "elastic-max-min": AgentEntry("shockwave_agents.elastic.max_min:ElasticMaxMinAgent",
                                  "elastic: max-min of normalised throughput with variable counts, an integer program (after Gavel's max-min)",
                                  uses_seed=False, elastic=True),
    "shockwave": AgentEntry("shockwave_agents.shockwave.agent:make_shockwave", "Shockwave (NSDI '23): plans rounds ahead with a MIP for fairness and makespan", uses_seed=_noise_uses_seed, options=_SHOCKWAVE),
    "shockwave-normalized": AgentEntry("shockwave_agents.shockwave.agent:make_shockwave_normalized", "Shockwave with the objective's terms on comparable scales (ours)",
                                       uses_seed=_noise_uses_seed, options=_SHOCKWAVE),
    "shockwave-fair": AgentEntry("shockwave_agents.shockwave.agent:make_shockwave_fair", "shockwave-normalized tuned for fewer unfair jobs (ours)",
                                 uses_seed=_noise_uses_seed, options=_SHOCKWAVE),
    "ppo": _policy("shockwave_agents.learned.pretrained:make_ppo", "shipped PPO slot policy, priority mode, trained for JCT (decides in numpy)"),
    "ppo-fair": _policy("shockwave_agents.learned.pretrained:make_ppo_fair", "shipped PPO slot policy trained for JCT and finish-time fairness"),
    "ppo-jct": _policy("shockwave_agents.learned.pretrained:make_ppo_jct", "shipped PPO slot policy of the jct task; reads length beliefs, runs in every regime"),
    "ppo-fairness": _policy("shockwave_agents.learned.pretrained:make_ppo_fairness", "shipped PPO slot policy of the fairness task (mean fair-share rho); every regime"),
    "ppo-balanced": _policy("shockwave_agents.learned.pretrained:make_ppo_balanced", "shipped PPO slot policy of the balanced task (JCT, rho, makespan); every regime"),
    "cem-balanced": _policy("shockwave_agents.learned.pretrained:make_cem_balanced", "shipped slot policy of the balanced task found by cross-entropy search over the wsrpt prior's skip weights; every regime"),
    "ppo-elastic": _policy("shockwave_agents.learned.pretrained:make_ppo_elastic", "shipped PPO slot policy of the jct task on elastic traces: job order and GPU counts; one GPU type", elastic=True),
    "shockwave-distilled": _policy("shockwave_agents.learned.pretrained:make_shockwave_distilled", "shipped behaviour clone of shockwave (decides in milliseconds)"),
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
_POLICY_KINDS: dict[str, AgentEntry | str] = {
    "maskable_ppo": _policy("shockwave_agents.learned.kinds:make_maskable_ppo", "your MaskablePPO policy from shockwave-gym train (path= required)"),
    "bc": _policy("shockwave_agents.learned.kinds:make_bc", "your behaviour-cloned policy from shockwave-gym train --algo bc (path= required)"),
    "imitation": _policy("shockwave_agents.learned.kinds:make_imitation", "same as bc (path= required)"),
    "cem": _policy("shockwave_agents.learned.kinds:make_cem", "your policy from shockwave-gym train --algo cem, the cross-entropy search (path= required)"),
    "policy": _policy("shockwave_agents.learned.kinds:make_policy", "any policy shockwave-gym train wrote, whatever its algorithm (path= required)"),
}


def agent_entry(name: str) -> AgentEntry | None:
    """The table entry of a built-in agent or policy kind (a bare ``"module:attr"`` string
    made an :class:`AgentEntry`); ``None`` for a registered third-party or unknown name."""
    if name in _EXTRA:
        return None
    entry = _BUILTIN.get(name) or _POLICY_KINDS.get(name)
    return AgentEntry(entry) if isinstance(entry, str) else entry


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
    entry = agent_entry(name)
    if entry is None:
        raise InputError(f"unknown agent {name!r}; available: {', '.join(available_agents())}; "
                         f"your trained policies: {', '.join(policy_kinds())} (with path=)")
    module_name, attr = entry.target.split(":")
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
    """One line saying what agent ``name`` is: a built-in's or a policy kind's from the table
    (nothing is imported), a registered factory's from the first line of its docstring."""
    if name in _EXTRA:
        doc = inspect.getdoc(_EXTRA[name]) or ""
        return doc.strip().splitlines()[0] if doc.strip() else "registered agent (its factory has no docstring)"
    entry = agent_entry(name)
    return "" if entry is None else entry.description


def available_agents() -> list[str]:
    """Registered names whose implementation is installed (in registry order)."""
    names = []
    for name in _BUILTIN:
        try:
            found = importlib.util.find_spec(agent_entry(name).target.split(":")[0]) is not None
        except ImportError:  # a parent package is missing or fails to import
            found = False
        if found:
            names.append(name)
    return names + sorted(_EXTRA)


def describe_agents() -> list[dict]:
    """One row per available agent, then per policy kind: ``name``, ``kind`` ("rule",
    "learned", "policy kind" or "registered"), ``uses_seed`` ("yes", "no" or "with options"),
    ``options`` and ``description``, from the table above."""
    rows = []
    for name in [*available_agents(), *_POLICY_KINDS]:
        entry = agent_entry(name)
        if entry is None:
            factory = _EXTRA[name]
            seeded = getattr(factory, "uses_seed", True)
            doc = (inspect.getdoc(factory) or "").split("\n")[0]
            rows.append({"name": name, "kind": "registered", "uses_seed": "with options" if callable(seeded)
                         else "yes" if seeded else "no", "options": "", "description": doc})
            continue
        kind = "policy kind" if name in _POLICY_KINDS else "learned" if entry.learned else "rule"
        seeded = "with options" if callable(entry.uses_seed) else "yes" if entry.uses_seed else "no"
        rows.append({"name": name, "kind": kind, "uses_seed": seeded, "options": ", ".join(entry.options),
                     "description": entry.description})
    return rows

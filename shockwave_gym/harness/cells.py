"""Cells of a head-to-head evaluation: one agent on one trace with one seed.

A :class:`Cell` carries everything a worker process needs (the loaded trace, the throughput
table, the simulator settings and a reference to the agent), so it can be pickled to a
process pool or a Ray task. :func:`run_cell` plays it through
:func:`shockwave_gym.runner.run_episode` and returns a JSON-ready record
(:mod:`shockwave_gym.harness.records`). :attr:`Cell.key_hash` fingerprints every input
that can change the result; the store uses it to decide what a resumed run may skip.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import json
import os
import pickle
import platform
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

from shockwave_gym.errors import InputError
from shockwave_gym.jobs import spec_row
from shockwave_gym.regimes import Regime
from shockwave_gym.simulator import SimConfig
from shockwave_gym.throughput import ThroughputTable, TypedThroughputs
from shockwave_gym.traces import Trace

#: Bump when the record layout or the meaning of a cell's inputs changes: old records are
#: then recomputed instead of being reused.
RECORD_FORMAT = 1

#: Rough relative cost of one cell by agent, used only to start the slowest cells first
#: so that a small pool finishes sooner (longest-processing-time-first).
COST_HINTS: dict[str, float] = {
    "shockwave": 100.0,
    "shockwave-normalized": 100.0,
    "shockwave-fair": 100.0,
    "ppo": 20.0,
    "shockwave-distilled": 20.0,
    "themis": 10.0,
    "ossp": 10.0,
    "allox": 5.0,
}


@dataclass(frozen=True)
class AgentRef:
    """How to build an agent in any process.

    ``target`` is a registered agent name (``"gavel"``) or an import path
    ``"package.module:factory"``; ``factory`` overrides both with a callable, which must be
    importable by reference (a module-level function or class) to reach worker processes.
    ``label`` is the name results are reported under.
    """

    label: str
    target: str = ""
    factory: Callable | None = field(default=None, compare=False)
    options: tuple[tuple[str, object], ...] = ()

    def make(self):
        """A fresh agent instance."""
        kwargs = dict(self.options)
        if self.factory is not None:
            return self.factory(**kwargs)
        if ":" in self.target:
            module_name, _, attr = self.target.partition(":")
            return getattr(importlib.import_module(module_name), attr)(**kwargs)
        from shockwave_agents import make_agent

        return make_agent(self.target, **kwargs)

    @property
    def identity(self) -> str:
        """Stable text naming the implementation (part of the cell fingerprint)."""
        if self.factory is not None:
            return f"{self.factory.__module__}:{self.factory.__qualname__}"
        return self.target


def agent_ref(label: str, spec: str | Callable, options: dict | None = None) -> AgentRef:
    """An :class:`AgentRef` for a registered name, a ``module:factory`` path or a callable.

    A name registered only in this process with ``register_agent`` is captured as its
    factory, so that worker processes (which do not share the registry) can build it.
    """
    opts = tuple(sorted((options or {}).items()))
    if callable(spec):
        return AgentRef(label=label, factory=spec, options=opts)
    if not isinstance(spec, str) or not spec:
        raise InputError(f"agent {label!r}: expected a name, 'module:factory' or a callable, got {spec!r}")
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
        if not module_name or not attr:
            raise InputError(f"agent {spec!r}: expected 'package.module:factory'")
        return AgentRef(label=label, target=spec, options=opts)
    from shockwave_agents import available_agents, registry

    if not registry.is_known(spec):
        raise InputError(f"unknown agent {spec!r}; available: {', '.join(available_agents())}; "
                         f"your trained policies: {', '.join(registry.policy_kinds())} (with path=)")
    registry.check_options(spec, registry.resolve_factory(spec), dict(opts))
    # Worker processes start with an empty registry: carry a third-party factory along.
    extra = registry.registered_factory(spec)
    return AgentRef(label=label, target=spec, factory=extra, options=opts)


def check_sendable(ref: AgentRef) -> None:
    """Raise :class:`InputError` if ``ref`` cannot be sent to another process."""
    if ref.factory is None:
        return
    try:
        pickle.dumps(ref.factory)
    except Exception as exc:  # pickling failures come in many types
        raise InputError(
            f"agent {ref.label!r}: its factory {ref.identity} cannot be sent to worker "
            f"processes ({exc}); define it at module level or use workers=1"
        ) from None


@dataclass(frozen=True)
class Cell:
    """One agent x trace x seed run, with every input it depends on.

    ``trace_sha256`` / ``throughputs_sha256`` are :func:`trace_digest` /
    :func:`throughputs_digest` of the two inputs, computed once per grid (they are costly).
    """

    agent: AgentRef
    trace: Trace
    gpus: int
    seed: int
    config: SimConfig
    throughputs: ThroughputTable | TypedThroughputs  # a bundle for a heterogeneous config
    max_rounds: int
    trace_sha256: str
    throughputs_sha256: str
    oracle: bool = False
    #: the information regime (docs/SEMANTICS.md); None or the default: exact, no early endings
    regime: Regime | None = None

    @property
    def trace_name(self) -> str:
        return self.trace.name

    @property
    def label(self) -> str:
        return f"{self.agent.label} / {self.trace.name} / seed {self.seed}"

    @property
    def cost_hint(self) -> float:
        base = self.agent.target or self.agent.label
        return COST_HINTS.get(base, 1.0) * self.trace.num_jobs

    @functools.cached_property
    def key(self) -> dict:
        """The inputs that determine the result, as plain JSON data (trace and throughput
        table by content hash)."""
        from shockwave_gym._version import __version__

        return {
            "format": RECORD_FORMAT,
            "shockwave_gym_version": __version__,
            "agent": self.agent.label,
            "agent_impl": self.agent.identity,
            "agent_options": [[k, repr(v)] for k, v in self.agent.options],
            "trace": self.trace.name,
            "trace_sha256": self.trace_sha256,
            "gpus": self.gpus,
            "seed": self.seed,
            "sim_config": _config_key(self.config),
            "throughputs_sha256": self.throughputs_sha256,
            "max_rounds": self.max_rounds,
            "oracle": self.oracle,
            **self._weights_key(),
            **_regime_key(self.regime),
        }

    def _weights_key(self) -> dict:
        """``{"agent_weights_sha256": ...}`` for a built-in learned agent (its weight files'
        content, so retrained weights under the same name and path are not reused); empty
        for every other agent, whose key is unchanged."""
        if self.agent.factory is not None or not self.agent.target or ":" in self.agent.target:
            return {}
        from shockwave_agents.registry import weights_sha256

        digest = weights_sha256(self.agent.target, dict(self.agent.options))
        return {} if digest is None else {"agent_weights_sha256": digest}

    @functools.cached_property
    def key_hash(self) -> str:
        text = json.dumps(self.key, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def trace_digest(trace: Trace) -> str:
    """SHA-256 of the trace's jobs (every field, in order)."""
    rows = [spec_row(job) for job in trace.jobs]
    return hashlib.sha256(repr(rows).encode()).hexdigest()


def _regime_key(regime: Regime | None) -> dict:
    """``{"regime": ...}`` for a regime other than the default; empty for the default, whose
    cells keep their key."""
    if regime is None or regime.is_default:
        return {}
    return {"regime": json.loads(json.dumps(dataclasses.asdict(regime)))}


def _config_key(config: SimConfig) -> dict:
    """The config as key data; a homogeneous config keeps its pre-cluster key (no
    ``cluster`` entry), so saved cells stay valid. ``max_rounds`` is the key's own entry
    (:attr:`Cell.max_rounds`), not repeated here."""
    data = dataclasses.asdict(config)
    data.pop("max_rounds", None)
    if data.get("cluster") is None:
        data.pop("cluster", None)
    return data


def throughputs_digest(table) -> str:
    """SHA-256 of the table's entries (sorted); of every type's, for a per-type bundle."""
    if isinstance(table, TypedThroughputs):
        rows = [(t, throughputs_digest(table.table(t))) for t in table.types]
        return hashlib.sha256(repr(rows).encode()).hexdigest()
    rows = sorted((str(k), float(v)) for k, v in table.items())
    return hashlib.sha256(repr(rows).encode()).hexdigest()


#: Set in worker processes only: the caller's own process keeps its torch settings.
_IN_WORKER = False


def _limit_torch_threads() -> None:
    # Workers share 2 cores: one intra-op thread each. Only touch torch if an agent loaded it.
    torch = sys.modules.get("torch")
    if _IN_WORKER and torch is not None and torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def init_worker() -> None:
    """Call once in a worker process: one thread per numeric library (and torch, once an
    agent imports it)."""
    global _IN_WORKER
    _IN_WORKER = True
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    _limit_torch_threads()


def run_cell(cell: Cell) -> dict:
    """Play one cell and return its record; never raises for a failing agent.

    A failure comes back as ``{"error": traceback text, ...}`` so that one broken agent does
    not stop the other cells (and is retried by the next run); an agent that reads a job's
    length where the information regime hides it gets one line instead of a traceback.
    """
    from shockwave_gym.errors import UnsupportedClusterError
    from shockwave_gym.harness.records import make_record
    from shockwave_gym.runner import run_episode
    from shockwave_gym.view import HiddenLengthError

    start = time.perf_counter()
    try:
        agent = cell.agent.make()
        _limit_torch_threads()
        outcome = run_episode(
            cell.trace, agent, cell.config, cell.throughputs, seed=cell.seed,
            max_rounds=cell.max_rounds, oracle=cell.oracle, progress=False, regime=cell.regime,
        )
    except HiddenLengthError as exc:
        knowledge = cell.regime.knowledge if cell.regime is not None else "exact"
        return {"key_hash": cell.key_hash,
                "error": f"agent {cell.agent.label!r} cannot run in the {knowledge!r} regime: {exc}"}
    except UnsupportedClusterError as exc:  # "agent 'x': <reason>; <advice>" -> the reason
        reason = str(exc).splitlines()[0].split(";")[0].removeprefix(f"agent {cell.agent.label!r}: ")
        return {"key_hash": cell.key_hash, "error": f"agent {cell.agent.label!r} cannot run on this cluster: {reason}"}
    except Exception:
        return {"key_hash": cell.key_hash, "error": traceback.format_exc()}
    return make_record(cell, outcome, wall_s=time.perf_counter() - start, host=platform.node())

"""The env's constructor options resolved and checked in one place: the cluster, the GPUs,
the trace source, the information regime, the reward or task, and which observation
versions a regime allows (docs/ENV.md, "Arguments", "Information regimes", "Tasks").

Nothing here holds state; :class:`~shockwave_gym.env.cluster_env.ClusterEnv` calls these
at construction and, for the regime's seed, at every reset. The vector entry point asks
:func:`needs_single_envs` which configurations the native vector env cannot batch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.config import require_positive_int
from shockwave_gym.errors import InputError
from shockwave_gym.regimes import KNOWLEDGE_REGIMES, Regime
from shockwave_gym.seeds import SEED_LIMIT
from shockwave_gym.tasks import TASKS, Task, get_task
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import BUNDLED_GPUS, FileTraceSource, Trace, TraceSource
from shockwave_gym.traces.bundled import ELASTIC_BUNDLED

#: The ``trace=`` of an env built without one.
DEFAULT_TRACE = "canonical-analogue-120"

#: The observation versions that read each job's length (``epoch_progress`` over the trace's
#: epochs, and the exact regime's predictor): refused when the length is hidden.
LENGTH_READING_VERSIONS = (1, 2)


def flag(value, name: str) -> bool:
    """A boolean constructor option, or one clear error."""
    if not isinstance(value, bool | np.bool_):
        raise InputError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def parse_cluster(cluster) -> ClusterSpec | None:
    """The ``cluster=`` argument (a string like ``"v100=8,p100=8,k80=8"``, a
    :class:`ClusterSpec` or ``None``) as a :class:`ClusterSpec` or ``None``."""
    if cluster is None or isinstance(cluster, ClusterSpec):
        return cluster
    if isinstance(cluster, str):
        return ClusterSpec.parse(cluster, where="cluster")
    raise InputError(f"cluster must be a string like 'v100=8,p100=8,k80=8' or a ClusterSpec, got {cluster!r}")


def resolve_cluster(cluster) -> ClusterSpec | None:
    """The cluster the heterogeneous path runs, or ``None`` for the homogeneous path:
    ``None``, or V100s only (``"v100=12"`` is ``gpus=12``, bit for bit)."""
    cluster = parse_cluster(cluster)
    if cluster is None:
        return None
    return None if cluster == ClusterSpec.homogeneous(cluster.total) else cluster


def resolve_gpus(trace, gpus: int | None) -> int:
    """``gpus``, or the bundled trace's size when it is None."""
    if gpus is not None:
        return require_positive_int(gpus, "gpus")
    name = trace.name if isinstance(trace, Trace) else getattr(getattr(trace, "trace", None), "name", trace)
    if isinstance(name, str) and name in BUNDLED_GPUS:
        return BUNDLED_GPUS[name]
    if isinstance(trace, str):  # a file or a typo: "no such file / did you mean" first
        from shockwave_gym.traces.bundled import resolve_gpus as bundled_gpus

        return bundled_gpus(trace, None)
    raise InputError(
        f"gpus is required for trace {trace!r}: only bundled traces ({', '.join(BUNDLED_GPUS)}) have a default"
    )


def make_source(trace, throughputs: ThroughputTable, gpus: int) -> TraceSource:
    """The ``trace=`` argument as a :class:`TraceSource`."""
    if isinstance(trace, TraceSource):
        return trace
    if isinstance(trace, Trace | str | Path):
        return FileTraceSource(trace, throughputs, gpus)
    raise InputError(f"trace must be a bundled name, a path, a Trace or a TraceSource, got {type(trace).__name__}")


# --- information regimes -----------------------------------------------------------------

def resolve_regime(regime, early_endings=None) -> Regime:
    """The ``regime=`` argument (a :class:`Regime`, a knowledge name or None: ``exact``)
    with ``early_endings=`` (a share in [0, 1) or ``"logged"``; only with a name or None)."""
    if isinstance(regime, Regime):
        if early_endings is not None:
            raise InputError("early_endings is set by the Regime given as regime=; pass one or the other")
        return regime
    if regime is not None and regime not in KNOWLEDGE_REGIMES:
        raise InputError(f"regime must be a Regime or one of {', '.join(KNOWLEDGE_REGIMES)}, got {regime!r}")
    return Regime(regime or "exact", 0.0 if early_endings is None else early_endings)


def check_observation_regime(version: int, regime: Regime) -> Regime:
    """``regime``, unless observation ``version`` reads the length it hides."""
    if regime.knowledge != "exact" and version in LENGTH_READING_VERSIONS:
        raise InputError(f"obs_version={version} reads each job's length, which regime={regime.knowledge!r} "
                         f"hides: pass obs_version=3")
    return regime


def draws_new_traces(source: TraceSource) -> bool:
    """Whether ``source`` may give another trace at each reset (any source but a fixed
    :class:`FileTraceSource`)."""
    return not isinstance(source, FileTraceSource)


def regime_for_episode(regime: Regime, source: TraceSource, rng: np.random.Generator, trace=None) -> Regime:
    """The regime of one episode: ``regime`` itself on a fixed trace; a suite's own regime for
    a trace of that suite (``source.regime_of(trace)``, seeded per trace as in the
    leaderboard) when ``regime`` is that suite's; otherwise, on a source that draws a new
    trace per reset, ``regime`` with its seed drawn from the env's RNG (after the trace), so
    each reset seed gives one episode. The default regime draws nothing."""
    if regime.is_default or not draws_new_traces(source):
        return regime
    own = source.regime_of(trace) if trace is not None else None
    if own is not None and (own.knowledge, own.early_endings) == (regime.knowledge, regime.early_endings):
        return own  # a suite's trace in its suite's regime: the seed the suite gives it
    from dataclasses import replace

    return replace(regime, seed=int(rng.integers(0, SEED_LIMIT)))


# --- rewards and tasks -------------------------------------------------------------------

def resolve_reward(reward, task) -> str | Mapping | Callable | None:
    """The reward spec of ``reward=`` and ``task=`` (a task name or :class:`Task`): the
    task's weights when a task is given (then ``reward`` must be left at its default)."""
    if task is None:
        return reward
    if not isinstance(task, str | Task):
        raise InputError(f"task must be one of {', '.join(TASKS)} or a Task, got {task!r}")
    if reward not in (None, "default"):
        raise InputError(f"give reward= or task=, not both (task={task!r} sets the reward)")
    return get_task(task).reward


def needs_single_envs(kwargs: Mapping) -> str | None:
    """Why the native vector env cannot batch an env of ``kwargs`` (None: it can): a regime
    other than the default, observation version 3, or the ``fair_share`` reward term."""
    regime = resolve_regime(kwargs.get("regime"), kwargs.get("early_endings"))
    if not regime.is_default:
        return f"regime {regime.describe()}"
    if kwargs.get("obs_version") == 3:
        return "obs_version=3"
    from shockwave_gym.env.rewards import make_reward, uses_fair_time

    reward = resolve_reward(kwargs.get("reward", "default"), kwargs.get("task"))
    if not callable(reward) and uses_fair_time(make_reward(reward)):
        return "the fair_share reward term"
    if elastic_source(kwargs.get("trace", DEFAULT_TRACE), kwargs.get("gpus")):
        return "elastic jobs"
    return None


def elastic_source(trace, gpus=None) -> bool:
    """Whether the ``trace=`` argument may give elastic jobs (docs/SEMANTICS.md, "Elastic
    jobs"), which only the single env's Python path simulates. A bundled name is read from
    the list of bundled elastic traces, without loading the trace."""
    if isinstance(trace, str) and trace in BUNDLED_GPUS:
        return trace in ELASTIC_BUNDLED
    if isinstance(trace, Trace):
        from shockwave_gym.elastic import is_elastic_trace

        return is_elastic_trace(trace.jobs)
    if isinstance(trace, TraceSource):
        return trace.elastic
    return make_source(trace, None, gpus).elastic if isinstance(trace, str | Path) else False

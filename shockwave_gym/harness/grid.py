"""From what a user types (agent names, trace names or paths, seeds) to the cell grid.

Checks everything up front, in the calling process, so that a typo fails in a second with
a clear :class:`~shockwave_gym.errors.InputError` instead of inside a worker.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping

from shockwave_gym.config import round_options
from shockwave_gym.errors import InputError
from shockwave_gym.harness.agent_specs import is_labelled, parse_agent_spec
from shockwave_gym.harness.cells import AgentRef, Cell, agent_ref, throughputs_digest, trace_digest
from shockwave_gym.simulator import SimConfig
from shockwave_gym.throughput import ThroughputTable, TypedThroughputs
from shockwave_gym.traces import Trace

AgentsArg = str | Iterable[str] | Mapping[str, str | Callable]
TracesArg = str | Trace | Iterable[str | Trace]


def resolve_agents(agents: AgentsArg, options: Mapping[str, dict] | None = None) -> list[AgentRef]:
    """Agents in the order given.

    Accepts ``"all"`` (every available agent), a comma list ``"fifo,gavel"``, a sequence of
    names (each may be ``"all"``, a registered name or ``"package.module:factory"``) or of
    labelled specs ``"mine=ppo:path=runs/x"`` (:mod:`~.agent_specs`), or a mapping label ->
    name / ``module:factory`` / callable. ``options`` maps a label to keyword arguments for
    its factory (they extend and override a spec's own options).
    """
    from shockwave_agents import available_agents

    options = dict(options or {})
    spec_options: dict[str, dict] = {}
    if isinstance(agents, Mapping):
        pairs = list(agents.items())
    else:
        pairs = []
        for item in [agents] if isinstance(agents, str) else list(agents):
            if not isinstance(item, str):
                raise InputError(f"agents: expected names, got {item!r} (use a dict label -> factory for callables)")
            if is_labelled(item):  # LABEL=KIND[:opt=value,...]: one agent, commas separate its options
                label, kind, opts = parse_agent_spec(item)
                if label in spec_options and spec_options[label] != opts:
                    raise InputError(f"agent {label!r} is given twice with different options")
                spec_options[label] = opts
                pairs.append((label, kind))
                continue
            for name in (part.strip() for part in item.split(",")):
                if name == "all":
                    pairs += [(n, n) for n in available_agents()]
                elif name:
                    pairs.append((name.rpartition(":")[2] if ":" in name else name, name))
    refs, seen = [], {}
    for label, spec in pairs:
        if label in seen:
            if seen[label] is spec or seen[label] == spec:
                continue  # "all,fifo" lists fifo once
            raise InputError(f"two different agents are both labelled {label!r}")
        seen[label] = spec
        merged = {**spec_options.get(label, {}), **(options.pop(label, None) or {})}
        refs.append(agent_ref(label, spec, merged or None))
    if not refs:
        raise InputError("no agents to evaluate")
    if options:
        raise InputError(f"agent options given for agents not evaluated: {', '.join(options)}")
    return refs


def resolve_throughputs(throughputs: str | ThroughputTable | None) -> ThroughputTable:
    if isinstance(throughputs, ThroughputTable):
        return throughputs
    return ThroughputTable.load(throughputs)


def resolve_traces(
    traces: TracesArg, gpus: int | Mapping[str, int] | None, throughputs: ThroughputTable
) -> list[tuple[Trace, int]]:
    """Each trace, loaded and validated, with its cluster size.

    ``gpus`` is one size for all traces, a mapping trace name -> size, or ``None``; a bundled
    trace's default comes from :data:`shockwave_gym.traces.BUNDLED_GPUS`, a suite trace's
    (``small-nominal-test-0``) from its suite, and any other trace needs an explicit size.
    """
    from shockwave_gym.traces import load_trace, resolve_gpus, resolve_trace_path
    from shockwave_gym.traces.suite_names import suite_of_trace_name

    items = [traces] if isinstance(traces, str | Trace) else list(traces)
    if not items:
        raise InputError("no traces to evaluate")
    loaded, names = [], set()
    for item in items:
        if not isinstance(item, Trace) and suite_of_trace_name(str(item)) is None:
            resolve_trace_path(item)  # a typo is "no such trace", not "--gpus is required"
        name = item.name if isinstance(item, Trace) else str(item)
        size = gpus.get(name) if isinstance(gpus, Mapping) else gpus
        if size is not None and (isinstance(size, bool) or not isinstance(size, int)):
            raise InputError(f"gpus for trace {name!r} must be a positive integer, got {size!r}")
        size = resolve_gpus(name, size)  # the run command's rule: bundled default, else required
        trace = item if isinstance(item, Trace) else load_trace(item, throughputs, gpus=size)
        if isinstance(item, Trace):
            too_big = [job.job_id for job in trace.jobs if job.gang > size]
            if too_big:
                raise InputError(f"trace {name!r}: jobs {too_big[:5]} need more than {size} GPUs")
        if trace.name in names:
            raise InputError(f"trace name {trace.name!r} appears twice; results are keyed by trace name")
        names.add(trace.name)
        loaded.append((trace, size))
    return loaded


def resolve_clusters(traces: list[tuple[Trace, int]], gpus, cluster) -> list:
    """The heterogeneous cluster of each loaded trace, or ``None`` (homogeneous): ``cluster``
    (a spec or ``--cluster`` text) for all traces, or a mapping trace name -> spec (``None``
    or absent: that trace's default), else a bundled trace's own
    (:data:`~shockwave_gym.traces.BUNDLED_CLUSTERS`) when no size was given for it. A
    given size must agree with the trace's cluster."""
    from shockwave_gym.traces import resolve_cluster

    if isinstance(cluster, Mapping):
        unknown = sorted(set(cluster) - {trace.name for trace, _ in traces})
        if unknown:
            raise InputError(f"cluster given for traces that are not evaluated: {', '.join(map(str, unknown))}")
    specs = []
    for trace, size in traces:
        given = gpus.get(trace.name) if isinstance(gpus, Mapping) else gpus
        mine = cluster.get(trace.name) if isinstance(cluster, Mapping) else cluster
        if mine is not None:
            total, spec = resolve_cluster(trace.name, given, mine)
            if total != size:
                raise InputError(f"trace {trace.name!r}: cluster {spec} has {total} GPUs, not {size}")
            specs.append(spec)
            continue
        if given is not None:
            specs.append(None)
            continue
        total, spec = resolve_cluster(trace.name, given, None)
        if spec is not None and total != size:
            raise InputError(f"trace {trace.name!r}: cluster {spec} has {total} GPUs, not {size}")
        specs.append(spec)
    return specs


def resolve_seeds(seeds: int | Iterable[int]) -> list[int]:
    values = [seeds] if isinstance(seeds, int) else list(seeds)
    if not values:
        raise InputError("no seeds given")
    for seed in values:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InputError(f"seeds must be integers >= 0, got {seed!r}")
    return list(dict.fromkeys(values))


def build_cells(
    agents: list[AgentRef],
    traces: list[tuple[Trace, int]],
    seeds: list[int],
    throughputs: ThroughputTable,
    *,
    rounds: Mapping[str, float] | None = None,
    oracle: bool = False,
    single_seed: Collection[str] = (),
    clusters: list | None = None,
    raw_throughputs=None,
    regime=None,
) -> list[Cell]:
    """The grid in report order: trace, then agent, then seed. Agents labelled in
    ``single_seed`` (their cells do not depend on the seed: :mod:`~.seeding`) get the first
    seed only. ``clusters`` (one spec or ``None`` per trace) makes heterogeneous cells; their
    per-type tables come from ``raw_throughputs`` (what the user passed) by
    :meth:`~shockwave_gym.throughput.TypedThroughputs.resolve`. ``rounds``
    (:func:`~shockwave_gym.config.round_options`) sets round parameters; the others keep
    :class:`~shockwave_gym.config.SimConfig`'s defaults. ``regime`` (a
    :class:`~shockwave_gym.regimes.Regime`) is every cell's information regime, or a mapping
    trace name -> regime (``None`` or absent: the default regime) for one per trace."""
    if isinstance(regime, Mapping):
        unknown = sorted(set(regime) - {trace.name for trace, _ in traces})
        if unknown:
            raise InputError(f"regime given for traces that are not evaluated: {', '.join(map(str, unknown))}")
    rounds = round_options(**(rounds or {}))
    cells = []
    table_sha256 = throughputs_digest(throughputs)
    for index, (trace, gpus) in enumerate(traces):
        spec = clusters[index] if clusters is not None else None
        config = SimConfig(gpus=gpus, cluster=spec, **rounds)
        table, digest = throughputs, table_sha256
        if spec is not None:
            table = TypedThroughputs.resolve(raw_throughputs if raw_throughputs is not None else throughputs, spec.types)
            digest = throughputs_digest(table)
        trace_sha256 = trace_digest(trace)
        trace_regime = regime.get(trace.name) if isinstance(regime, Mapping) else regime
        for agent in agents:
            for seed in seeds[:1] if agent.label in single_seed else seeds:
                cells.append(Cell(
                    agent=agent, trace=trace, gpus=gpus, seed=seed, config=config,
                    throughputs=table, max_rounds=config.max_rounds,
                    trace_sha256=trace_sha256, throughputs_sha256=digest, oracle=oracle, regime=trace_regime,
                ))
    return cells

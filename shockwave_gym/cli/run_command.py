"""``shockwave-gym run``: one agent, one trace, one episode."""

from __future__ import annotations

import argparse
import json
import sys
import time

from shockwave_gym.cli.guard import ascii_float, ascii_int, check_output_file, seconds
from shockwave_gym.config import SimConfig, require_positive_int, round_options
from shockwave_gym.errors import InputError

#: Keys of the ``--json`` object, in order (the contract other tools rely on).
RUN_JSON_KEYS = (
    "agent", "trace", "num_jobs", "completed_jobs", "truncated", "gpus", "makespan_s",
    "avg_jct_s", "geomean_jct_s", "worst_ftf", "unfair_fraction", "worst_ftf_themis",
    "unfair_fraction_themis", "utilization", "rounds", "wall_s",
)


def parse_agent_options(pairs: list[str], flag: str = "--agent-opt", *, once: bool = True) -> dict:
    """``["noise=0.5", "variant=\\"x\\""]`` -> ``{"noise": 0.5, "variant": "x"}`` (JSON values,
    bare words taken as strings). With ``once``, a key given twice is refused; without, the
    later value wins (an ``--agent-opt`` over its ``--agent`` spec's option)."""
    from shockwave_gym.harness.agent_specs import option_value

    options = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise InputError(f"{flag} expects KEY=VALUE, got {pair!r}")
        if once and key in options:
            raise InputError(f"{flag}: option {key!r} given twice")
        options[key] = option_value(raw)
    return options


def split_agent_spec(args) -> str:
    """``--agent LABEL=KIND[:opt=value,...]`` (:mod:`shockwave_gym.harness.agent_specs`): set
    ``args.agent`` to KIND, put the spec's options before the ``--agent-opt`` ones (which
    override them) and return the label (the name itself for a plain ``--agent NAME``)."""
    from shockwave_gym.harness.agent_specs import parse_agent_spec

    label, args.agent, options = parse_agent_spec(args.agent)
    parse_agent_options(args.agent_opt)  # each --agent-opt key once
    args.agent_opt = [f"{key}={json.dumps(value)}" for key, value in options.items()] + list(args.agent_opt)
    return label


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (argparse turns the error into exit status 2)."""
    value = ascii_int(text)
    try:
        return require_positive_int(value, "value")  # the one rule of shockwave_gym.config
    except InputError:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}") from None


def seed_int(text: str) -> int:
    """argparse type: a seed, by the one rule of :mod:`shockwave_gym.seeds`."""
    from shockwave_gym.ascii_numbers import parse_int
    from shockwave_gym.seeds import seed_problem

    try:
        value = parse_int(text)  # ASCII digits only
    except ValueError:
        value = text
    problem = seed_problem(value)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"seed {problem}")
    return value


def add_common_episode_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments shared by ``run`` and ``compare``: cluster and round settings."""
    parser.add_argument("--throughputs", metavar="JSON", help="Gavel-format throughput file (default: built-in V100 table)")
    parser.add_argument("--cluster", metavar="TYPE=N,...", default=None,
                        help="heterogeneous cluster, e.g. v100=12,p100=12,k80=12 (docs/HETEROGENEOUS.md); "
                        "--gpus N is the V100-only shorthand; both given must agree")
    # the round parameters: default None = SimConfig's default (shockwave_gym/config.py)
    parser.add_argument("--round-s", type=ascii_float, default=None, metavar="S",
                        help=f"round length in seconds (default {SimConfig.round_s:g})")
    parser.add_argument("--restart-overhead-s", type=ascii_float, default=None, metavar="S",
                        help=f"restart overhead in seconds (default {SimConfig.restart_overhead_s:g}; 0 disables)")
    parser.add_argument("--restart-min-run-share", type=ascii_float, default=None, metavar="SHARE",
                        help="a (re)started job pays the overhead only when it runs longer than this share of "
                        f"the round (default {SimConfig.restart_min_run_share:.4g}, i.e. 115 s of 120 s)")
    parser.add_argument("--max-rounds", type=positive_int, default=None,
                        help=f"truncate after this many rounds (default {SimConfig.max_rounds:,})")


def add_regime_arguments(parser: argparse.ArgumentParser) -> None:
    """The information-regime options (docs/SEMANTICS.md, "Information regimes")."""
    parser.add_argument("--regime", choices=("exact", "estimate", "unknown"), default=None,
                        help="what the agent may know of job lengths: the trace's (default: exact, or a "
                        "regime suite's trace's own regime), a user estimate, or nothing but the length prior")
    parser.add_argument("--early-endings", default=None, metavar="SHARE|logged",
                        help="share of jobs that end early at a hidden point (default 0), or 'logged': "
                        "the imported trace's logged early endings")
    parser.add_argument("--regime-seed", type=seed_int, default=None,
                        help="seed of the per-job estimate and early-ending draws (default 0)")


def regime_from_args(args, traces=()):
    """The information regime of the run: the one the options ask for (any of ``--regime``,
    ``--early-endings``, ``--regime-seed`` given: one :class:`~shockwave_gym.regimes.Regime`
    for every trace, defaults filled in); else each regime suite trace named in ``traces``
    runs in its suite's regime (a mapping trace name -> regime, docs/SUITES.md) and any
    other trace in the default regime."""
    from shockwave_gym.regimes import Regime
    from shockwave_gym.traces.suite_names import suite_regime_of_trace_name

    if (args.regime, args.early_endings, args.regime_seed) != (None, None, None):
        return Regime(knowledge=args.regime or "exact", early_endings="0" if args.early_endings is None
                      else args.early_endings, seed=args.regime_seed or 0)
    names = [traces] if isinstance(traces, str) else list(traces)
    own = {name: suite_regime_of_trace_name(name) for name in names if isinstance(name, str)}
    return {name: regime for name, regime in own.items() if regime is not None} or Regime()


def round_options_from_args(args) -> dict:
    """The round parameters given on the command line (:func:`shockwave_gym.config.round_options`)."""
    return round_options(round_s=args.round_s, restart_overhead_s=args.restart_overhead_s,
                         restart_min_run_share=args.restart_min_run_share, max_rounds=args.max_rounds)


def add_parsers(subparsers) -> None:
    parser = subparsers.add_parser("run", help="run one agent on one trace and print its metrics")
    parser.add_argument("--agent", required=True, metavar="AGENT",
                        help="agent name (see `shockwave-gym agents`), or LABEL=KIND[:OPT=VALUE,...] "
                        "(e.g. mine=maskable_ppo:path=runs/mppo) to report it under your own label")
    parser.add_argument("--trace", required=True, help="bundled trace name or path (.trace TSV or .jsonl)")
    parser.add_argument("--gpus", type=ascii_int, default=None, help="cluster size (default: the bundled trace's)")
    add_common_episode_arguments(parser)
    parser.add_argument("--seed", type=seed_int, default=0, help="seed passed to the agent (default 0)")
    parser.add_argument("--agent-opt", action="append", default=[], metavar="KEY=VALUE", help="agent option (repeatable)")
    parser.add_argument("--oracle", action="store_true", help="let the agent see hidden future information (ablations)")
    add_regime_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    parser.add_argument("--jobs-csv", metavar="CSV", help="also write per-job results here (checked before the run)")
    parser.add_argument("--timeline-csv", metavar="CSV", help="also write the per-round timeline here (checked before the run)")
    # progress lines and SIGINT/SIGTERM partial results: shockwave_gym/cli/episode_control.py
    parser.add_argument("--progress-every-s", type=seconds, default=10.0, metavar="S",
                        help="when stderr is not a terminal, print a progress line every S seconds (default 10; 0: none). "
                        "SIGINT/SIGTERM stop the run, write partial results and exit 130/143")
    parser.set_defaults(func=run)

    agents = subparsers.add_parser("agents", help="list the available agents, one line each")
    agents.add_argument("--long", action="store_true",
                        help="one row per agent and policy kind: kind, seed use, options, description")
    agents.set_defaults(func=list_agents)


def list_agents(args) -> int:
    """Names one per line; ``--long``: the agent table (shockwave_agents/registry.py)."""
    from shockwave_agents import available_agents
    from shockwave_agents.registry import agent_description, policy_kinds

    if getattr(args, "long", False):
        return _print_agent_table()
    names = available_agents()
    width = max(map(len, [*names, *policy_kinds()]))
    print("\n".join(f"{name:<{width}}  {agent_description(name)}".rstrip() for name in names))
    print("\nyour trained policies (--agent LABEL=KIND:path=DIR):")
    print("\n".join(f"{name:<{width}}  {agent_description(name)}" for name in policy_kinds()))
    return 0


def _print_agent_table() -> int:
    from shockwave_agents.registry import describe_agents

    rows = describe_agents()
    columns = ("name", "kind", "uses_seed", "options", "description")
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in columns[:-1]}
    print("  ".join(c.ljust(widths[c]) for c in columns[:-1]) + "  description")
    for row in rows:
        print("  ".join(row[c].ljust(widths[c]) for c in columns[:-1]) + "  " + row["description"])
    return 0


def run(args) -> int:
    label = split_agent_spec(args)  # --agent LABEL=KIND[:opt=value,...]
    from shockwave_agents import make_agent
    from shockwave_gym.metrics import jobs_table, timeline_table, to_csv
    from shockwave_gym.runner import run_episode
    from shockwave_gym.throughput import ThroughputTable, TypedThroughputs
    from shockwave_gym.traces import load_trace
    from shockwave_gym.traces.bundled import resolve_cluster
    from shockwave_gym.view import HiddenLengthError, OracleAccessError

    start = time.perf_counter()
    check_output_file(args.jobs_csv, "--jobs-csv")
    check_output_file(args.timeline_csv, "--timeline-csv")
    gpus, cluster = resolve_cluster(args.trace, args.gpus, args.cluster)
    if cluster is None:
        throughputs = ThroughputTable.load(args.throughputs)
        table = throughputs
    else:  # every cluster type's table; the V100 one validates the trace
        throughputs = TypedThroughputs.resolve(args.throughputs, cluster.types)
        table = throughputs.reference
    trace = load_trace(args.trace, table, gpus=gpus)
    config = SimConfig(gpus=gpus, cluster=cluster, **round_options_from_args(args))
    regime = regime_from_args(args, [args.trace] if isinstance(args.trace, str) else [])
    regime = regime.get(args.trace) if isinstance(regime, dict) else regime  # a regime suite's trace
    agent = make_agent(args.agent, **parse_agent_options(args.agent_opt, once=False))
    from shockwave_gym.cli.episode_control import EpisodeControl  # progress + interruption

    with EpisodeControl(args.progress_every_s) as control:
        try:
            outcome = run_episode(
                trace, agent, config, throughputs, seed=args.seed, oracle=args.oracle, regime=regime, **control.hooks(),
            )
        except HiddenLengthError as exc:  # an agent that needs the length, outside the exact regime
            raise InputError(f"--agent {args.agent}: cannot run in the {regime.knowledge!r} regime: {exc}") from None
        except OracleAccessError:  # e.g. --agent-opt oracle=true without --oracle
            raise InputError(f"--agent {args.agent} reads hidden future information (an oracle option): pass "
                             "--oracle to give the run the oracle view (ablations only)") from None
    record = {"agent": label, "trace": trace.name, **outcome.metrics}
    record["wall_s"] = time.perf_counter() - start
    record["episode_wall_s"] = outcome.wall_s
    record["decision_wall_s"] = outcome.decision_wall_s
    record["seed"] = args.seed
    if not regime.is_default:
        record["regime"] = regime.describe()
    for key, value in outcome.agent_stats.items():
        record.setdefault(key, value)  # agent statistics never overwrite the metrics
    ordered = {key: record[key] for key in RUN_JSON_KEYS}
    ordered.update({k: v for k, v in record.items() if k not in ordered})
    control.annotate(ordered)  # interrupted: "partial": true, "signal"
    if args.json:  # printed first: a file that cannot be written (a full disk) loses no metric
        sys.stdout.write(json.dumps(ordered, allow_nan=False) + "\n")
    else:
        print(format_table(ordered))
    sys.stdout.flush()
    if args.jobs_csv:  # each written in one step (temporary file + rename)
        to_csv(control.finished_jobs(jobs_table(outcome.result)), args.jobs_csv)
    if args.timeline_csv:
        to_csv(timeline_table(outcome.result), args.timeline_csv)
    return control.exit_code  # 0, or 130 / 143 after SIGINT / SIGTERM


def format_table(record: dict) -> str:
    """A readable two-column table of a run's metrics."""
    lines = []
    width = max(len(k) for k in record)
    for key, value in record.items():
        if isinstance(value, dict):
            continue
        if isinstance(value, float):
            shown = f"{value:,.4f}" if abs(value) < 100 else f"{value:,.1f}"
        elif value is None:
            shown = "n/a"
        else:
            shown = str(value)
        lines.append(f"{key:<{width}}  {shown}")
    return "\n".join(lines)

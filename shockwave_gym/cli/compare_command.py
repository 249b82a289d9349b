"""``shockwave-gym compare``: head-to-head of agents on traces (the evaluation harness)."""

from __future__ import annotations

import shlex
import sys
import warnings
from pathlib import Path

from shockwave_gym.cli.guard import ascii_int
from shockwave_gym.cli.run_command import (
    add_common_episode_arguments,
    add_regime_arguments,
    regime_from_args,
    round_options_from_args,
    seed_int,
)


def add_parsers(subparsers) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="run every agent x trace x seed in parallel; print a table relative to a reference agent",
        description=(
            "Run every agent on every trace with every seed, in parallel worker processes, "
            "save each finished cell under --out (a re-run skips them; --force recomputes), "
            "then write results.csv, jobs.csv, summary.md and figures, and print the summary."
        ),
    )
    parser.add_argument(
        "--agents", nargs="+", default=[], metavar="AGENT",
        help="agent names, comma lists, 'all' (every available agent) or package.module:factory",
    )
    parser.add_argument(
        "--agent", action="append", default=[], metavar="LABEL=KIND[:OPT=VALUE,...]",
        help="one agent under your own label (repeatable), e.g. mine=ppo:path=runs/x or "
        "mppo=maskable_ppo:path=runs/y; KIND is an agent name, a policy kind (maskable_ppo, bc, cem, policy) or module:factory",
    )
    parser.add_argument("--traces", nargs="+", required=True, metavar="TRACE", help="bundled trace names or trace files")
    parser.add_argument("--gpus", type=ascii_int, default=None, help="cluster size (default: each bundled trace's; required for files)")
    parser.add_argument("--seeds", nargs="+", type=seed_int, default=[0], metavar="SEED", help="seeds passed to the agents (default 0); an agent that ignores the seed runs once")
    add_common_episode_arguments(parser)
    add_regime_arguments(parser)
    parser.add_argument("--workers", type=ascii_int, default=None, help="parallel worker processes (default 2; 1 = in this process)")
    parser.add_argument("--backend", choices=("process", "ray"), default="process", help="where cells run (ray needs the 'ray' extra)")
    parser.add_argument("--out", default="compare_out", help="output directory (default compare_out)")
    parser.add_argument("--force", action="store_true", help="recompute cells already saved in --out")
    parser.add_argument(
        "--reference", default=None,
        help="agent the table is normalised to; must be one of --agents (default: shockwave if run, else the first agent)",
    )
    parser.add_argument(
        "--agent-opt", action="append", default=[], metavar="AGENT:KEY=VALUE",
        help="option for one agent (repeatable), e.g. ppo:path=runs/mppo; values are JSON or bare words",
    )
    parser.add_argument("--gantt", metavar="AGENT[,TRACE[,SEED]]", help="cell drawn as a Gantt chart (default: reference agent, first trace, first seed)")
    parser.add_argument("--no-figures", action="store_true", help="skip the PNG figures")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.set_defaults(func=compare)


def parse_per_agent_options(pairs: list[str]) -> dict[str, dict]:
    """``["ppo:path=runs/x", "shockwave:noise=0.5"]`` -> ``{"ppo": {"path": "runs/x"}, ...}``."""
    from shockwave_gym.cli.run_command import parse_agent_options
    from shockwave_gym.errors import InputError

    options: dict[str, dict] = {}
    for pair in pairs:
        agent, sep, option = pair.partition(":")
        if not sep or not agent:
            raise InputError(f"--agent-opt expects AGENT:KEY=VALUE, got {pair!r}")
        parsed = parse_agent_options([option])
        twice = [key for key in parsed if key in options.get(agent, {})]
        if twice:
            raise InputError(f"--agent-opt: option {twice[0]!r} of {agent!r} given twice")
        options.setdefault(agent, {}).update(parsed)
    return options


def check_agents(agents: list[str], options: dict[str, dict], reference: str | None) -> None:
    """Build every agent once, before any cell runs: a missing module or factory, a bad
    option, a missing policy file or an agent set to read the oracle view (``oracle=true``:
    these commands give no agent that view) is an :class:`~shockwave_gym.errors.InputError`
    naming the agent. Any other failure is left to the cells, which report it per cell
    (exit 1). With ``reference``, it must be one of the agents."""
    from shockwave_gym.errors import InputError
    from shockwave_gym.harness.grid import resolve_agents

    refs = resolve_agents(agents, options)
    for ref in refs:
        module_name = ref.target.partition(":")[0] if ":" in ref.target else None
        agent = None
        try:
            agent = ref.make()
        except InputError as exc:
            raise InputError(f"agent {ref.label!r}: {exc}") from exc
        except ModuleNotFoundError as exc:
            if module_name and exc.name and module_name.startswith(exc.name):
                raise InputError(f"--agents {ref.target}: no module named {exc.name!r}") from None
        except AttributeError as exc:
            if module_name and getattr(exc, "name", None) == ref.target.partition(":")[2]:
                raise InputError(f"--agents {ref.target}: {exc}") from None
        except Exception:  # noqa: BLE001 - an agent that fails to build is reported per cell
            pass
        if getattr(agent, "oracle", False) is True:
            raise InputError(f"agent {ref.label!r}: oracle=true reads the hidden future schedule, which compare and "
                             "leaderboard runs do not show; for an ablation use shockwave-gym run --oracle")
    labels = [ref.label for ref in refs]
    if reference is not None and reference not in labels:
        raise InputError(f"--reference {reference!r} is not among the agents run ({', '.join(labels)})")


def parse_gantt(text: str | None) -> list | None:
    """``--gantt AGENT[,TRACE[,SEED]]`` -> ``[agent, trace, seed]`` (parts left empty are
    None, the seed an int); no text -> None."""
    from shockwave_gym.errors import InputError

    if not text:
        return None
    gantt = [part.strip() or None for part in text.split(",")]
    if len(gantt) > 3:
        raise InputError("--gantt takes AGENT[,TRACE[,SEED]]")
    if len(gantt) == 3 and gantt[2] is not None:
        try:
            gantt[2] = int(gantt[2])
        except ValueError:
            raise InputError(f"--gantt: seed must be an integer, got {gantt[2]!r}") from None
    return gantt


def compare(args) -> int:
    from shockwave_gym.cli.guard import check_output_dir
    from shockwave_gym.errors import InputError

    gantt = parse_gantt(args.gantt)
    agent_options = parse_per_agent_options(args.agent_opt)
    check_output_dir(args.out, "--out")
    agents = list(args.agents) + list(args.agent)  # --agent specs are labelled (harness.agent_specs)
    if not agents:
        raise InputError("compare needs --agents NAME ... and/or --agent LABEL=KIND[:OPT=VALUE,...]")
    check_agents(agents, agent_options, args.reference)
    command = "shockwave-gym " + shlex.join(sys.argv[1:]) if sys.argv[1:2] == ["compare"] else ""
    results, failed, unwritten = _run_cells(args, agents, agent_options, gantt, command)
    _print_results(args, results, written=unwritten is None)
    if unwritten is not None:
        raise unwritten
    if failed is not None:
        print(f"shockwave-gym: error: {failed}", file=sys.stderr)
        return 1
    return 0


def _run_cells(args, agents: list[str], agent_options: dict[str, dict], gantt: list | None, command: str):
    """:func:`~shockwave_gym.harness.evaluate` with the options of ``args``, each harness
    warning printed as one plain line. Returns ``(results, failed, unwritten)``: the results
    (None if there are none), the :class:`CellsFailed` and the ``OutputsNotWritten`` raised
    (None if not)."""
    from shockwave_gym.harness import CellsFailed, HarnessWarning, evaluate
    from shockwave_gym.harness.api import OutputsNotWritten

    failed, results, unwritten = None, None, None
    with warnings.catch_warnings():  # the harness's warnings: every one, as one plain line
        warnings.simplefilter("always", HarnessWarning)
        shown = warnings.showwarning
        warnings.showwarning = lambda message, category, *rest: (
            print(f"shockwave-gym: warning: {message}", file=sys.stderr)
            if issubclass(category, HarnessWarning) else shown(message, category, *rest))
        try:
            results = evaluate(
                agents, args.traces, gpus=args.gpus, seeds=args.seeds, throughputs=args.throughputs,
                workers=args.workers, out=args.out, backend=args.backend, force=args.force,
                reference=args.reference or "shockwave", figures=not args.no_figures, gantt=gantt,
                **round_options_from_args(args),
                progress=False if args.quiet else None, command=command,
                agent_options=agent_options or None, cluster=args.cluster,
                regime=regime_from_args(args, [t for t in args.traces if isinstance(t, str)]),
            )
        except CellsFailed as exc:
            failed, results = exc, exc.results
        except OutputsNotWritten as exc:  # the metrics are printed, then the one-line error
            unwritten, results = exc, exc.results
    return results, failed, unwritten


def _print_results(args, results, written: bool) -> None:
    """The summary table of ``results`` (if any) and, when the outputs were ``written``,
    where they are."""
    from rich.console import Console

    from shockwave_gym.harness.summary import print_summary, summarise

    console = Console()
    if not console.is_terminal:
        console = Console(width=160)  # logs and pipes: do not squeeze the table to 80 columns
    if results is not None and len(results):
        reference = results.attrs["reference"]
        print_summary(summarise(results, reference), reference, results.attrs["reference_note"], console)
        out = Path(args.out)  # "results/" prints as results/results.csv, not results//results.csv
        where = f"{out / 'results.csv'}, jobs.csv, summary.md"
        if not args.no_figures:
            where += f", figures/ ({out / 'figures'}/<trace>/*.png)"
        if written:
            console.print(f"written: {where}")

"""``shockwave-gym leaderboard``: every agent on a fixed split of the task suites, written as
LEADERBOARD.md (:mod:`shockwave_gym.harness.leaderboard`)."""

from __future__ import annotations

import sys
import warnings

from shockwave_gym.cli.guard import ascii_int


def add_parsers(subparsers) -> None:
    parser = subparsers.add_parser(
        "leaderboard",
        help="run every agent on the suites' test (or validation) split and write LEADERBOARD.md",
        description=(
            "Run every agent on every trace of a fixed split of the task suites (docs/SUITES.md) "
            "through the evaluation harness (resumable: cells saved in --out are reused), then write "
            "--out/LEADERBOARD.md and LEADERBOARD.csv (and --doc, if given): per suite and overall, "
            "means with 95% bootstrap intervals over the suite's traces (paired ratios to FIFO for "
            "makespan and avg JCT), overall an IQM over suites with a stratified bootstrap. The Overall table (or each "
            "suite's, without FIFO) is printed to stdout."
        ),
    )
    parser.add_argument("--split", choices=("test", "validation"), default="test", help="which fixed split (default test)")
    parser.add_argument("--quick", action="store_true", help="a small subset for CI (2 traces of small-light, medium-nominal, static-only; the authors' canonical trace)")
    parser.add_argument("--suites", default=None, metavar="NAME[,NAME...]", help="only these suites (default: all)")
    parser.add_argument("--agents", nargs="+", action="extend", default=None, metavar="AGENT",
                        help="agent names or comma lists (default: all available agents; --agent adds to them)")
    parser.add_argument("--agent", action="append", default=[], metavar="LABEL=KIND[:OPT=VALUE,...]",
                        help="also run this agent under your label (repeatable), besides --agents or every available agent, e.g. mine=maskable_ppo:path=runs/mppo")
    parser.add_argument("--backend", choices=("process", "ray"), default="process", help="where cells run (ray needs the 'ray' extra)")
    parser.add_argument("--workers", type=ascii_int, default=None, help="parallel worker processes (default 2; 1 = in this process)")
    parser.add_argument("--out", default="leaderboard_out", help="cell store and outputs (default leaderboard_out)")
    parser.add_argument("--doc", default=None, metavar="MD",
                        help="also write the markdown here (and the CSV beside it), e.g. docs/LEADERBOARD.md")
    parser.add_argument("--force", action="store_true", help="recompute cells already saved in --out")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.set_defaults(func=leaderboard)


def leaderboard(args) -> int:
    from pathlib import Path

    from shockwave_gym.cli.compare_command import check_agents
    from shockwave_gym.cli.guard import check_output_dir, check_output_file
    from shockwave_gym.harness import CellsFailed, HarnessWarning
    from shockwave_gym.harness.api import DamagedCellWarning
    from shockwave_gym.harness.leaderboard import (
        leaderboard_entries,
        output_paths,
        run_leaderboard,
        summary_text,
        write_leaderboard,
    )

    check_output_dir(args.out, "--out")
    if args.doc:  # the markdown, the CSV beside it and the timing CSV: checked before any cell runs
        check_output_dir(Path(args.doc).parent, "--doc")  # a missing folder is made at the end
        for path in output_paths(args.doc):
            if path.parent.is_dir():
                check_output_file(path, "--doc")
    leaderboard_entries(args.split, args.suites, args.quick)  # a bad --suites fails before anything runs
    # --agent adds to the agents run (every available one unless --agents names them)
    agents = list(args.agents or ["all"]) + list(args.agent)
    check_agents(agents, {}, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HarnessWarning)  # one seed per cell: nothing to warn about
        warnings.simplefilter("always", DamagedCellWarning)  # but a stored cell not reused is news
        shown = warnings.showwarning
        warnings.showwarning = lambda message, category, *rest: (
            print(f"shockwave-gym: warning: {message}", file=sys.stderr)
            if issubclass(category, DamagedCellWarning) else shown(message, category, *rest))
        try:
            run = run_leaderboard(args.split, suites=args.suites, agents=agents, quick=args.quick, out=args.out,
                                  backend=args.backend, workers=args.workers, force=args.force,
                                  progress=False if args.quiet else None)
        except CellsFailed as exc:
            print(f"shockwave-gym: error: {exc}", file=sys.stderr)
            return 1
    written = [*write_leaderboard(run, Path(args.out) / "LEADERBOARD.md")]
    if args.doc:
        written += write_leaderboard(run, args.doc)
    print(f"{len(run.results)} cells ({run.cells_run} run now) in {run.wall_s:.1f} s; written: "
          + ", ".join(str(p) for p in written))
    print(summary_text(run))
    return 0

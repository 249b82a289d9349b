"""Real-trace subcommands: ``import-trace`` and ``describe-trace``.

Examples::

    shockwave-gym import-trace --format philly cluster_job_log --out philly.jsonl \\
        --window 0:604800 --gpus 64 --load 1.2 --seed 0
    shockwave-gym import-trace --format pai pai_job_table.csv pai_task_table.csv --out pai.jsonl
    shockwave-gym describe-trace philly.jsonl --gpus 64
    shockwave-gym describe-trace canonical-analogue-120 --json

Each unusable input row is printed as ``file:line:field: message`` and counted in the
summary; rows filtered on purpose (CPU-only, non-training) are counted only.
"""

from __future__ import annotations

import argparse
import json
import math

from shockwave_gym.cli.run_command import positive_int, seed_int


def _load_target(text: str) -> float:
    from shockwave_gym.ascii_numbers import parse_float

    try:
        value = parse_float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in ASCII digits, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def _import(args: argparse.Namespace) -> int:
    from shockwave_gym.throughput import ThroughputTable
    from shockwave_gym.traces.importers import ImportOptions, import_trace

    options = ImportOptions(
        fmt=args.format, paths=tuple(args.files), out=args.out, seed=args.seed, gpus=args.gpus,
        load=args.load, jobs=args.jobs, window=args.window, large=args.above_8,
        throughputs=ThroughputTable.load(args.throughputs),
    )
    summary = import_trace(options, report=print)
    for line in summary.lines():
        print(line)
    print(f"wrote {args.out}")
    return 0


def _describe(args: argparse.Namespace) -> int:
    from shockwave_gym.throughput import ThroughputTable
    from shockwave_gym.traces import BUNDLED_GPUS, load_trace
    from shockwave_gym.traces.card import format_card, trace_card

    table = ThroughputTable.load(args.throughputs)
    gpus = args.gpus if args.gpus is not None else BUNDLED_GPUS.get(args.trace)
    card = trace_card(load_trace(args.trace, table, gpus), gpus, table)
    print(json.dumps(card, indent=2) if args.json else format_card(card))
    return 0


def add_parsers(subparsers) -> None:
    """Add ``import-trace`` and ``describe-trace`` to the ``shockwave-gym`` parser."""
    from shockwave_gym.traces.importers import FORMATS
    from shockwave_gym.traces.importers.mapping import LARGE_RULES

    imp = subparsers.add_parser(
        "import-trace",
        help="convert a real cluster log (Philly, Helios, PAI, Acme) into a trace",
        description="Convert a cluster log into a JSON-lines trace (docs/TRACES.md, 'Real cluster traces').",
    )
    imp.add_argument("--format", required=True, choices=FORMATS, help="the dataset the files come from")
    imp.add_argument("files", nargs="+", metavar="FILE",
                     help="the dataset's files, each once (pai: pai_job_table.csv and pai_task_table.csv)")
    imp.add_argument("--out", required=True, help="output trace, a .jsonl file (JSON lines)")
    imp.add_argument("--seed", type=seed_int, default=0, help="seed of the model draws (default 0)")
    imp.add_argument("--gpus", type=positive_int, help="cluster size the load is stated against")
    imp.add_argument("--load", type=_load_target, help="with --gpus: scale arrival times to this offered load")
    imp.add_argument("--jobs", type=positive_int, help="keep the first N jobs (after --window)")
    imp.add_argument("--window", metavar="START:END",
                     help="keep jobs arriving from START to END seconds after the first arrival")
    imp.add_argument("--above-8", choices=LARGE_RULES, default="split",
                     help="jobs above 8 GPUs: split into 8-GPU jobs (default) or stretch one 8-GPU job")
    imp.add_argument("--throughputs", help="throughput table (Gavel JSON or our CSV); default built-in V100")
    imp.set_defaults(func=_import)

    desc = subparsers.add_parser(
        "describe-trace",
        help="print a trace's card: jobs, arrivals, gangs, durations, early endings, load",
        description="Describe a trace file or bundled trace (docs/TRACES.md, 'Trace cards').",
    )
    desc.add_argument("trace", help="trace file or bundled trace name")
    desc.add_argument("--gpus", type=positive_int,
                      help="cluster size for the offered load (default: a bundled trace's own)")
    desc.add_argument("--json", action="store_true", help="print the card as JSON")
    desc.add_argument("--throughputs", help="throughput table (Gavel JSON or our CSV); default built-in V100")
    desc.set_defaults(func=_describe)

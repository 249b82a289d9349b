"""Trace subcommands: ``generate-trace``, ``validate-trace`` and ``convert-trace``.

Examples::

    shockwave-gym generate-trace --jobs 120 --seed 120 --out my-trace.jsonl
    shockwave-gym validate-trace my-trace.jsonl --gpus 32
    shockwave-gym convert-trace my-trace.jsonl my-trace.trace     # JSON lines -> TSV

A trace argument is a file path or a bundled trace name (``canonical-analogue-120``, ...).
The format of a file follows its extension: ``.jsonl`` is JSON lines, anything else TSV.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from shockwave_gym.cli.guard import ascii_float
from shockwave_gym.cli.run_command import positive_int, seed_int
from shockwave_gym.errors import InputError


def parse_mix(text: str, label: str, key_type: type = str) -> dict:
    """``"1:0.6,2:0.4"`` -> ``{1: 0.6, 2: 0.4}``; raises ``InputError`` when malformed."""
    mix: dict = {}
    for item in text.split(","):
        key_text, sep, prob_text = item.strip().partition(":")
        if not sep or not key_text.strip() or not prob_text.strip():
            raise InputError(f"{label}: expected KEY:PROBABILITY pairs separated by commas, got {text!r}")
        try:
            key = key_type(key_text.strip())
            prob = float(prob_text)
        except ValueError:
            raise InputError(f"{label}: cannot read {item.strip()!r} as KEY:PROBABILITY") from None
        if key in mix:
            raise InputError(f"{label}: {key!r} appears more than once")
        mix[key] = prob
    return mix


def _save(trace, out: str) -> None:
    from shockwave_gym.traces import save_trace

    try:
        save_trace(trace, out)
    except OSError as exc:  # an unwritable --out is a bad argument, not a crash
        raise InputError(f"cannot write {out}: {exc.strerror or exc}") from None


def _trace_name(name: str | None, out: str) -> str:
    """The name of the trace written to ``out``: a trace file holds no name, and loading it
    names it after the file (its stem), so ``--name`` must be that stem when given."""
    from pathlib import Path

    stem = Path(out).stem
    if name is None:
        return stem
    if not name.strip():
        raise InputError("--name: must not be empty (leave it out to name the trace after --out)")
    if name != stem:
        raise InputError(f"--name {name!r}: a trace file does not store its name, it loads under its file name "
                         f"({stem!r} for --out {out}); write it to --out {Path(out).parent / (name + Path(out).suffix)}")
    return name


def _generate(args: argparse.Namespace) -> int:
    from shockwave_gym.throughput import ThroughputTable
    from shockwave_gym.traces import GeneratorConfig, generate_trace
    from shockwave_gym.traces.load import generate_for_load, trace_offered_load

    name = _trace_name(args.name, args.out)
    optional = {}
    if args.gang_mix is not None:
        optional["gang_mix"] = parse_mix(args.gang_mix, "--gang-mix", int)
    if args.mode_mix is not None:
        optional["mode_mix"] = parse_mix(args.mode_mix, "--mode-mix")
    if args.min_duration_h is not None:
        optional["min_duration_h"] = args.min_duration_h
    if args.max_duration_h is not None:
        optional["max_duration_h"] = args.max_duration_h
    if args.elastic_share is not None:
        optional["elastic_share"] = args.elastic_share
    args.rate_given = args.arrival_rate_per_hour is not None
    config = GeneratorConfig(
        num_jobs=args.jobs,
        seed=args.seed,
        arrival_rate_per_hour=90.0 if args.arrival_rate_per_hour is None else args.arrival_rate_per_hour,
        name=name,
        cluster=args.cluster,
        arrival_rate_per_gpu_hour=args.arrival_rate_per_gpu_hour,
        **optional,
    )
    table = ThroughputTable.load(args.throughputs) if args.throughputs else None
    if args.load is not None:
        if args.gpus is None:
            raise InputError("--load needs --gpus (the cluster the load is offered to)")
        if args.rate_given:
            raise InputError("give --load or --arrival-rate-per-hour, not both (--load sets the rate)")
        trace, config = generate_for_load(config, args.gpus, args.load, table)
    else:
        trace = generate_trace(config, table)
    sizing = ""
    if args.gpus is not None:
        too_big = [job for job in trace.jobs if job.gang > args.gpus]
        if too_big:
            raise InputError(f"--gpus {args.gpus}: job {too_big[0].job_id} needs {too_big[0].gang} GPUs; "
                             f"give a --gang-mix without gangs above {args.gpus}")
        sizing = (f"; offered load {trace_offered_load(trace, args.gpus, table):.3f} on {args.gpus} GPUs "
                  f"at {config.arrival_rate_per_hour:g} arrivals/h")
    _save(trace, args.out)
    print(f"wrote {trace.num_jobs} jobs ({trace.name}) to {args.out}{sizing}")
    return 0


def summarise(trace) -> str:
    """One line: job count, arrival span, and the model / mode / gang mixes."""

    def counts(values) -> str:
        return ", ".join(f"{key} {n}" for key, n in sorted(Counter(values).items()))

    jobs = trace.jobs
    return (
        f"{trace.num_jobs} jobs, arrivals {jobs[0].arrival_s:g}-{jobs[-1].arrival_s:g} s; "
        f"models: {counts(j.model for j in jobs)}; modes: {counts(j.mode for j in jobs)}; "
        f"gangs: {counts(j.gang for j in jobs)}"
    )


def _validate(args: argparse.Namespace) -> int:
    from shockwave_gym.throughput import ThroughputTable
    from shockwave_gym.traces import load_trace, validate_trace

    table = ThroughputTable.load(args.throughputs)
    problems = validate_trace(args.trace, table, args.gpus)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s) in {problems[0].file}")
        print(f"shockwave-gym: error: {problems[0].file}: {len(problems)} problem(s), listed on stdout",
              file=sys.stderr)
        return 2
    trace = load_trace(args.trace, table, args.gpus)
    print(f"OK {trace.source}: {summarise(trace)}")
    return 0


def _convert(args: argparse.Namespace) -> int:
    from shockwave_gym.throughput import ThroughputTable
    from shockwave_gym.traces import load_trace

    trace = load_trace(args.source, ThroughputTable.load(args.throughputs))
    _save(trace, args.out)
    print(f"converted {trace.num_jobs} jobs: {trace.source} -> {args.out}")
    return 0


def add_parsers(subparsers) -> None:
    """Add the trace subcommands to the ``shockwave-gym`` parser."""
    gen = subparsers.add_parser(
        "generate-trace",
        help="generate a synthetic trace (same arguments -> byte-identical file)",
        description="Generate a trace with the authors' methodology (docs/TRACES.md, 'The generator').",
    )
    gen.add_argument("--jobs", type=positive_int, required=True, help="number of jobs")
    gen.add_argument("--seed", type=seed_int, required=True, help="RNG seed, an integer in [0, 2**32)")
    gen.add_argument("--arrival-rate-per-hour", type=ascii_float, default=None,
                     help="mean arrivals per hour (default 90, i.e. one every 40 s)")
    gen.add_argument("--gpus", type=positive_int, default=None,
                     help="the cluster the trace is for: every gang must fit, and the offered load on it is printed")
    gen.add_argument("--load", type=ascii_float, default=None, metavar="L",
                     help="with --gpus: choose the arrival rate so that the offered load, sum(gang x isolated time) / "
                     "(GPUs x arrival span), is L (docs/TRACES.md, 'Offered load')")
    gen.add_argument("--gang-mix", help="gang probabilities, e.g. 1:0.6,2:0.3,4:0.09,8:0.01")
    gen.add_argument("--mode-mix", help="mode probabilities, e.g. static:0,accordion:0.5,gns:0.5")
    gen.add_argument("--min-duration-h", type=ascii_float, help="shortest candidate duration (default 0.2)")
    gen.add_argument("--max-duration-h", type=ascii_float, help="longest candidate duration (default 5)")
    gen.add_argument("--cluster", metavar="TYPE=N,...", help="heterogeneous cluster every job must run on (docs/HETEROGENEOUS.md)")
    gen.add_argument("--elastic-share", type=ascii_float, metavar="S",
                     help="share of jobs declared elastic, counts 1, 2, 4, 8 (docs/SEMANTICS.md, 'Elastic jobs'; default 0)")
    gen.add_argument("--arrival-rate-per-gpu-hour", type=ascii_float, metavar="R",
                     help="with --cluster: arrivals per hour per V100-equivalent GPU (2.8125 = the canonical 90/h on 32 V100s); "
                     "overrides --arrival-rate-per-hour")
    gen.add_argument("--name", help="trace name: a trace loads under its file name, so this must be the stem "
                     "of --out (default: that stem)")
    gen.add_argument("--throughputs", help="throughput table (Gavel JSON or our CSV); default built-in V100")
    gen.add_argument("--out", required=True, help="output file: .jsonl for JSON lines, else TSV")
    gen.set_defaults(func=_generate)

    val = subparsers.add_parser(
        "validate-trace",
        help="check a trace and list every problem (exit 2 if any)",
        description="Check a trace file or bundled trace against the trace grammar (docs/TRACES.md).",
    )
    val.add_argument("trace", help="trace file or bundled trace name")
    val.add_argument("--gpus", type=positive_int, help="cluster size: every gang must fit")
    val.add_argument("--throughputs", help="throughput table (Gavel JSON or our CSV); default built-in V100")
    val.set_defaults(func=_validate)

    conv = subparsers.add_parser(
        "convert-trace",
        help="convert between TSV and JSON-lines traces (format by extension)",
        description="Load, validate and rewrite a trace; .jsonl means JSON lines, else TSV.",
    )
    conv.add_argument("source", metavar="IN", help="trace file or bundled trace name")
    conv.add_argument("out", metavar="OUT", help="output file")
    conv.add_argument("--throughputs", help="throughput table used to validate; default built-in V100")
    conv.set_defaults(func=_convert)

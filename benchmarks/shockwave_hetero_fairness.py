"""Where typed Shockwave's unfairness comes from: per-type share per job class, starved jobs, ablations.

Run as (one cell per trace and variant; the machine's load moves only the timing fields):

    .venv/bin/python benchmarks/shockwave_hetero_fairness.py --traces hetero-120 1201 \\
        --variants shockwave gavel "no-makespan=shockwave:k=0" --opt time_limit_s=1000

``--traces`` takes bundled names (run on the 12/12/12 cluster ``v100=12,p100=12,k80=12``) and
integers (a trace of the ``hetero-120`` recipe with that seed: 120 jobs, 2.8125 arrivals per
V100-equivalent GPU hour, the cluster above). ``--variants`` are ``label=agent:key=value,...``
(or a bare agent name); ``--opt key=value`` is added to every Shockwave variant (e.g. lifted
solver limits, so that results do not depend on the machine's load).

Prints one JSON object with, per trace and variant:

- ``metrics``: makespan, avg JCT, the fair-share rho (``rho_mean``, ``rho_p95``, ``rho_max``,
  ``rho_over_1_05``, ``rho_over_1_25``) and the paper's static measure (``worst_ftf``,
  ``unfair_fraction``);
- ``classes``: per job class (gang size x length: ``short`` = fair-share time below the
  trace's median, ``long`` otherwise) the job count, mean rho, and the share of the class's
  GPU-seconds on each type (``type_share``) next to the capacity share a fair split would give
  the class's jobs on the types they can use (``fair_type_share``), and its mean slowdown
  from types (``type_speed``: the work done per second held, relative to the job's
  fastest type);
- ``starved``: the ten jobs with the largest rho, with their class, wait and type shares.

``--out FILE --append`` adds the cells (and the command line) to those already in FILE.
``--render JSON...`` prints the before/after table of saved outputs (``--only LABEL...``: those
columns), ``--render-suite JSON`` the heterogeneous suite's table of a saved compare output
(docs/SHOCKWAVE_HETERO.md is rendered from ``docs/data/shockwave_hetero_fair_issue36.json`` and
``docs/data/shockwave_hetero_mixed_issue36.json`` this way).

``--plans ROUND`` looks at single plans instead: the trace is played with ``gavel`` up to
round ``ROUND`` (one state for every variant), then each Shockwave variant plans once from
that state, and per job class (gang x ``short``/``long`` predicted remaining time, split at
the median) the JSON gives the planned rounds per job, the share of those rounds on each type,
the share of the class's jobs with no planned round, the mean projected finish-time ratio
(``ratio`` > 1: late, so prioritised), the share of its jobs running in the plan's first round
(``in_round0``: the only round sure to run before the next re-plan), its planned jobs' mean
first round (``first_round``) and the share of its jobs planned in every round
(``every_round``). Two ablations exist only here, as options of a variant:
``ablate=speeds`` (the program sees speed 1 on every type a job can run on: no per-type
utilities) and ``ablate=polish`` (the plan is not polished: no upgrade, trim or top-up).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys

import numpy as np

from shockwave_agents import make_agent
from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.config import SimConfig
from shockwave_gym.metrics import per_job_rho
from shockwave_gym.runner import run_episode
from shockwave_gym.traces import GeneratorConfig, generate_trace, load_trace

CLUSTER = "v100=12,p100=12,k80=12"
KEYS = ("makespan_s", "avg_jct_s", "rho_mean", "rho_p95", "rho_max", "rho_over_1_05", "rho_over_1_25",
        "worst_ftf", "unfair_fraction")


def trace_of(name: str):
    if name.isdigit():
        config = GeneratorConfig(num_jobs=120, seed=int(name), cluster=CLUSTER, arrival_rate_per_gpu_hour=2.8125,
                                 name=f"hetero-120-seed{name}")
        return generate_trace(config)
    return load_trace(name, gpus=ClusterSpec.parse(CLUSTER).total)


def _value(text: str):
    """A JSON value (numbers, true/false), else the text itself (e.g. ``per_job``)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_variant(text: str, common: dict) -> tuple[str, str, dict]:
    label, _, rest = text.partition("=") if "=" in text.split(":")[0] else (text.split(":")[0], "", text)
    agent, _, opts = rest.partition(":")
    options = {}
    for item in filter(None, opts.split(",")):
        key, _, value = item.partition("=")
        options[key] = _value(value)
    if agent.startswith("shockwave"):
        options = {**common, **options}
    return label, agent, options


def type_usage(result) -> tuple[np.ndarray, np.ndarray]:
    """(GPU-seconds per job and type, wall seconds held per job and type)."""
    held = np.zeros((result.num_jobs, len(result.gpu_types)))
    for ids, run_s, kinds in zip(result.round_job_ids, result.round_run_s, result.round_gpu_types, strict=True):
        np.add.at(held, (ids, kinds), run_s)
    return held * result.gang[:, None], held


def analyse(result, metrics: dict, speed_by_type: np.ndarray, eligible: np.ndarray) -> dict:
    rho, _ = per_job_rho(result)
    gpu_s, held = type_usage(result)
    fair = result.fair_time_s
    long = fair >= np.median(fair)
    capacity = np.asarray(result.type_gpus, dtype=np.float64)
    fair_mix = eligible * capacity[None, :]
    fair_mix = fair_mix / np.maximum(fair_mix.sum(axis=1, keepdims=True), 1e-12)
    speed = (held * speed_by_type).sum(axis=1) / np.maximum(held.sum(axis=1), 1e-12)
    types = list(result.gpu_types)
    classes = {}
    for g in np.unique(result.gang).tolist():
        for tag, member in (("short", ~long), ("long", long)):
            jobs = np.flatnonzero((result.gang == g) & member)
            if jobs.size == 0:
                continue
            used = gpu_s[jobs].sum(axis=0)
            classes[f"gang{g}-{tag}"] = {
                "jobs": int(jobs.size),
                "rho_mean": float(np.nanmean(rho[jobs])),
                "type_share": dict(zip(types, np.round(used / max(used.sum(), 1e-12), 3).tolist(), strict=True)),
                "fair_type_share": dict(zip(types, np.round(fair_mix[jobs].mean(axis=0), 3).tolist(), strict=True)),
                "type_speed": round(float(speed[jobs].mean()), 3),
            }
    wait = result.jct_s - held.sum(axis=1)
    starved = []
    for j in np.argsort(-np.nan_to_num(rho, nan=-1.0))[:10].tolist():
        share = held[j] / max(held[j].sum(), 1e-12)
        starved.append({"job": j, "gang": int(result.gang[j]), "rho": round(float(rho[j]), 3),
                        "fair_time_s": round(float(fair[j])), "wait_s": round(float(wait[j])),
                        "long": bool(long[j]), "type_share": dict(zip(types, np.round(share, 3).tolist(), strict=True))})
    return {"metrics": {k: metrics.get(k) for k in KEYS}, "classes": classes, "starved": starved}


def job_speeds(trace, spec: ClusterSpec) -> tuple[np.ndarray, np.ndarray]:
    """(throughput per job and type at its initial batch size relative to its fastest type,
    eligibility per job and type) from the simulator's public tables."""
    from shockwave_gym.hetero_simulator import make_simulator
    sim = make_simulator(trace.jobs, SimConfig(cluster=spec), None, trace_name=trace.name)
    rate = np.asarray(sim.view.throughput_by_type, dtype=np.float64)
    runnable = np.asarray(sim.view.runnable, dtype=bool) & (rate > 0)
    return rate / np.maximum(rate.max(axis=1, keepdims=True), 1e-12), runnable


def _timing(x: np.ndarray) -> dict:
    """When a class's planned jobs run in the plan ``x`` (jobs, K, T): the share of its jobs
    running in round 0 and, among its planned jobs, the mean first planned round."""
    running = x.any(axis=1)
    planned = running.any(axis=1)
    first = np.argmax(running[planned], axis=1) if planned.any() else np.zeros(0)
    return {"in_round0": round(float(running[:, 0].mean()), 2) if running.size else 0.0,
            "first_round": round(float(first.mean()), 2) if first.size else None,
            "every_round": round(float(running.all(axis=1).mean()), 2) if running.size else 0.0}


def plan_probe(trace, spec: ClusterSpec, round_index: int, label: str, options: dict) -> dict:
    """One plan of a Shockwave variant from the state ``gavel`` reaches at ``round_index``."""
    from dataclasses import replace

    import shockwave_agents.shockwave.planner as planner_module
    from shockwave_agents.shockwave.planner import priority_log_weights
    from shockwave_gym.hetero_simulator import make_simulator

    options = dict(options)
    ablate = options.pop("ablate", None)
    sim = make_simulator(trace.jobs, SimConfig(cluster=spec), None, trace_name=trace.name)
    lead = make_agent("gavel")
    lead.reset(sim.view, 0)
    while sim.round_index < round_index and not sim.done:
        sim.step(lead.act(sim.view))
    agent = make_agent("shockwave", **options)
    agent.reset(sim.view, 0)
    if ablate == "speeds":
        plan = agent.planner.plan
        agent.planner.plan = lambda inst, previous=None: plan(
            replace(inst, speed=(inst.speed > 0).astype(np.float64)), previous)
    polish = planner_module.polish_typed_plan
    if ablate == "polish":
        planner_module.polish_typed_plan = lambda inst, x: x
    try:
        agent.act(sim.view)
    finally:
        planner_module.polish_typed_plan = polish
    inst, record = agent.planner.last_instance, agent.plan_records[-1]
    active = inst.job_ids
    x = np.zeros((active.size, inst.num_types, len(agent._plan)))
    for t, (jobs, kinds) in enumerate(zip(agent._plan, agent._plan_types, strict=True)):
        x[np.searchsorted(active, jobs), kinds, t] = 1.0
    _, ratio = priority_log_weights(agent.config, inst)
    long = inst.remaining_s > np.median(inst.remaining_s)
    types = list(spec.types)
    classes = {}
    for g in np.unique(inst.gang).tolist():
        for tag, member in (("short", ~long), ("long", long)):
            jobs = np.flatnonzero((inst.gang == g) & member)
            if jobs.size == 0:
                continue
            per_type = x[jobs].sum(axis=(0, 2))
            classes[f"gang{g}-{tag}"] = {
                "jobs": int(jobs.size), "rounds_per_job": round(float(x[jobs].sum() / jobs.size), 2),
                "type_share": dict(zip(types, np.round(per_type / max(per_type.sum(), 1.0), 2).tolist(), strict=True)),
                "no_round": round(float(np.mean(x[jobs].sum(axis=(1, 2)) == 0)), 2),
                "ratio": round(float(ratio[jobs].mean()), 3),
                **_timing(x[jobs]),
            }
    gpu_rounds = x.sum(axis=(1, 2)) * inst.gang
    return {"trace": trace.name, "round": int(sim.round_index), "variant": label, "options": options,
            "ablate": ablate, "path": str(record.path), "late_jobs": record.late_jobs, "jobs": int(active.size),
            "long_gpu_round_share": round(float(gpu_rounds[long].sum() / max(gpu_rounds.sum(), 1.0)), 3),
            "classes": classes}


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", nargs="+", default=["hetero-120", "canonical-analogue-120", "1201"])
    parser.add_argument("--variants", nargs="+", default=["shockwave", "gavel"])
    parser.add_argument("--opt", action="append", default=[], help="key=value added to every Shockwave variant")
    parser.add_argument("--plans", type=int, default=None, metavar="ROUND",
                        help="single plans from the state gavel reaches at this round, instead of episodes")
    parser.add_argument("--workers", type=int, default=1, help="cells run one after another (only 1 is supported)")
    parser.add_argument("--out", default=None, help="also write the JSON object here after every cell")
    parser.add_argument("--append", action="store_true",
                        help="with --out: keep the cells (and commands) already in that file and add these")
    parser.add_argument("--render", nargs="+", default=None, metavar="JSON",
                        help="print the before/after markdown table of saved outputs (no runs)")
    parser.add_argument("--render-suite", default=None, metavar="JSON",
                        help="print the heterogeneous suite's table of a saved compare output (no runs)")
    parser.add_argument("--against", default="gavel", help="--render: the reference variant's label")
    parser.add_argument("--only", nargs="+", default=None, metavar="LABEL",
                        help="--render: only these variants' columns (in this order)")
    parser.add_argument("--rows", action="store_true", help="--render: one row per cell, with per-class rho")
    parser.add_argument("--rows-of", action="store_true", help="--render --rows: only the cells of --traces")
    args = parser.parse_args(argv)
    if args.workers != 1:
        parser.error("--workers: only 1 is supported")
    common = {}
    for item in args.opt:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--opt {item!r}: expected key=value")
        common[key] = _value(value)
    return args, common


def _save(out: dict, path: str | None) -> None:
    if path is not None:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(out, handle, indent=1)
            handle.write("\n")


def _cell_row(cell: dict) -> str:
    m = cell["metrics"]
    return (f"{m['makespan_s']:,.0f} / {m['rho_mean']:.3f} / {100 * m['rho_over_1_05']:.1f}% / "
            f"{100 * m['unfair_fraction']:.1f}%")


def render(paths: list[str], against: str, only: list[str] | None = None) -> str:
    """One markdown row per trace: the reference variant, then every other variant of the
    saved outputs, each as makespan / mean rho / rho > 1.05 / the paper's static unfair share
    (a variant that beats the reference on mean rho at no longer makespan is in bold)."""
    cells = [c for path in paths for c in json.load(open(path, encoding="utf-8"))["cells"]]
    labels = list(dict.fromkeys(c["variant"] for c in cells if c["variant"] != against))
    if only is not None:
        labels = [label for label in only if label in labels]
    by = {(c["trace"], c["variant"]): c for c in cells}
    lines = ["| trace | " + " | ".join([against, *labels]) + " |", "|---" * (len(labels) + 2) + "|"]
    for trace in dict.fromkeys(c["trace"] for c in cells):
        ref = by.get((trace, against))
        row = [_cell_row(ref) if ref else "not run"]
        for label in labels:
            cell = by.get((trace, label))
            text = _cell_row(cell) if cell else "not run"
            if cell and ref and cell["metrics"]["rho_mean"] <= ref["metrics"]["rho_mean"] \
                    and cell["metrics"]["makespan_s"] <= ref["metrics"]["makespan_s"]:
                text = f"**{text}**"
            row.append(text)
        lines.append(f"| `{trace}` | " + " | ".join(row) + " |")
    return "\n".join(lines)


def render_rows(paths: list[str], traces: list[str] | None = None) -> str:
    """One markdown row per saved cell (trace, variant): makespan, mean rho, p95 rho,
    rho > 1.05 (the fair-share measure), the paper's static worst FTF and unfair share, and
    each class's mean rho (gang x short/long)."""
    cells = [c for path in paths for c in json.load(open(path, encoding="utf-8"))["cells"]]
    lines = ["| trace | variant | makespan (s) | mean rho | rho p95 | rho > 1.05 | worst FTF (paper) "
             "| unfair (paper) | mean rho per class |", "|---" * 9 + "|"]
    for c in cells:
        if traces and c["trace"] not in traces:
            continue
        m = c["metrics"]
        classes = ", ".join(f"{k.replace('gang', 'g')} {v['rho_mean']:.2f}" for k, v in c["classes"].items())
        lines.append(f"| `{c['trace']}` | {c['variant']} | {m['makespan_s']:,.0f} | {m['rho_mean']:.3f} | "
                     f"{m['rho_p95']:.3f} | {100 * m['rho_over_1_05']:.1f}% | {m['worst_ftf']:.2f} | "
                     f"{100 * m['unfair_fraction']:.1f}% | {classes} |")
    return "\n".join(lines)


def render_suite(path: str) -> str:
    """The heterogeneous suite's table from its saved compare output (``rows``, and
    ``before_rows`` as ``agent (before)`` rows): per agent and trace makespan s / mean rho /
    the paper's static unfair share, and the mean over the traces."""
    saved = json.load(open(path, encoding="utf-8"))
    rows = [*saved["rows"], *({**r, "agent": f"{r['agent']} (before)"} for r in saved.get("before_rows", [])
                             if r["agent"] != "gavel")]
    traces = list(dict.fromkeys(r["trace"] for r in rows))
    by = {(r["agent"], r["trace"]): r for r in rows}
    lines = ["| agent | " + " | ".join(f"`{t}`" for t in traces) + f" | mean over the {len(traces)} |",
             "|---" * (len(traces) + 2) + "|"]
    for agent in dict.fromkeys(r["agent"] for r in rows):
        cells = [by[(agent, t)] for t in traces if (agent, t) in by]
        text = [f"{c['makespan_s']:,.0f} / {c['rho_mean']:.3f} / {100 * c['unfair_fraction']:.1f}%" for c in cells]
        mean = [float(np.mean([c[k] for c in cells])) for k in ("makespan_s", "rho_mean", "unfair_fraction")]
        text.append(f"{mean[0]:,.0f} / {mean[1]:.3f} / {100 * mean[2]:.1f}%")
        lines.append(f"| `{agent}` | " + " | ".join(text) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args, common = parse_args(argv)
    if args.render_suite is not None:
        print(render_suite(args.render_suite))
        return 0
    if args.render is not None:
        print(render_rows(args.render, args.traces if args.rows_of else None) if args.rows
              else render(args.render, args.against, args.only))
        return 0
    spec = ClusterSpec.parse(CLUSTER)
    out = {"cluster": CLUSTER, "common_options": common, "commands": [], "cells": []}
    if args.append and args.out is not None and os.path.exists(args.out):
        with open(args.out, encoding="utf-8") as handle:
            out = json.load(handle)
        out.setdefault("commands", [])
    out["commands"].append(" ".join([".venv/bin/python benchmarks/shockwave_hetero_fairness.py",
                                     *(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))]))
    for name in args.traces:
        trace = trace_of(name)
        speed, eligible = job_speeds(trace, spec) if args.plans is None else (None, None)
        for text in args.variants:
            label, agent, options = parse_variant(text, common)
            if args.plans is not None:
                out["cells"].append(plan_probe(trace, spec, args.plans, label, options))
                _save(out, args.out)
                continue
            outcome = run_episode(trace, make_agent(agent, **options), SimConfig(cluster=spec), progress=False)
            cell = {"trace": trace.name, "variant": label, "agent": agent, "options": options,
                    **analyse(outcome.result, outcome.metrics, speed, eligible), "wall_s": round(outcome.wall_s, 1)}
            out["cells"].append(cell)
            _save(out, args.out)
            print(json.dumps({"done": trace.name, "variant": label, **cell["metrics"], "wall_s": cell["wall_s"]}),
                  file=sys.stderr, flush=True)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Every agent's fairness under every measure, on the canonical traces and three suites' test traces.

Run as ``.venv/bin/python benchmarks/fairness_table.py --out runs/fairness`` (cells are saved
under ``--out`` and reused by a later run with the same inputs). Prints one JSON object:
per group of traces and per agent, the fair-share rho (mean, p95, max, shares above 1.05 and
1.25), the gang-aware contention rho (mean, p95, max, share above 1.05), the Shockwave paper's
two measures (static contention ``worst_ftf`` / ``unfair_fraction``, contention-based
``worst_ftf_themis`` / ``unfair_fraction_themis``) and the average JCT; the agents' order under
each headline; and every agent whose rank by mean rho differs from its rank under a paper
measure. ``--render JSON`` prints the docs section (docs/METRICS.md, "Every agent under every
measure") generated from a saved JSON; a test checks that the doc matches
``docs/data/fairness_table.json``. ``--merge A.json B.json ...`` joins the outputs of runs over
different agents (same code, same traces; a later file's row wins) and recomputes the orders.

Groups: ``canonical-analogue-120`` and ``authors-canonical-120`` (32 GPUs), and the test
split of ``small-overloaded``, ``gang-heavy`` and ``large-nominal`` (5 traces each; a figure
is the mean over the 5 traces of the per-trace figure). Every agent runs at the default
120 s rounds and 20 s restarts; ``fair-share@10s`` is the same fair-share policy with 10 s
rounds and no restart cost, the reference made runnable.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

from shockwave_agents.registry import available_agents
from shockwave_gym.harness import evaluate
from shockwave_gym.traces import load_trace
from shockwave_gym.traces.suites import get_suite, split_traces

BUNDLED = (("canonical-analogue-120", 32), ("authors-canonical-120", 32))
SUITES = ("small-overloaded", "gang-heavy", "large-nominal")
METRICS = ("rho_mean", "rho_p95", "rho_max", "rho_over_1_05", "rho_over_1_25",
           "gang_ftf_mean", "gang_ftf_p95", "gang_ftf_max", "gang_ftf_over_1_05",
           "worst_ftf", "unfair_fraction", "worst_ftf_themis", "unfair_fraction_themis", "avg_jct_s")
#: Rankings compared: the headline (mean rho) against each of the paper's figures.
RANKED = ("rho_mean", "worst_ftf", "unfair_fraction", "worst_ftf_themis", "unfair_fraction_themis")
REFERENCE_LABEL = "fair-share@10s"


GROUPS = tuple(name for name, _ in BUNDLED) + tuple(f"{suite} (test)" for suite in SUITES)


def groups(names: tuple[str, ...] = GROUPS) -> list[dict]:
    out = [{"name": name, "traces": [load_trace(name)], "gpus": gpus} for name, gpus in BUNDLED if name in names]
    for suite in SUITES:
        if f"{suite} (test)" in names:
            loaded = split_traces([suite], "test")
            out.append({"name": f"{suite} (test)", "traces": [t for t, _ in loaded], "gpus": get_suite(suite).gpus})
    return out


def run(out: Path, workers: int, agents: list[str], names: tuple[str, ...] = GROUPS) -> dict:
    rows = []
    for group in groups(names):
        traces, gpus = group["traces"], {t.name: group["gpus"] for t in group["traces"]}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # seed-free agents run once: expected here
            frames = [
                evaluate(agents, traces, gpus=gpus, workers=workers, out=out / "default", figures=False,
                         progress=False),
                evaluate({REFERENCE_LABEL: "fair-share"}, traces, gpus=gpus, workers=workers, out=out / "fine",
                         figures=False, progress=False, round_s=10.0, restart_overhead_s=0.0),
            ]
        for frame in frames:
            for agent, sub in frame.groupby("agent", sort=False):
                row = {"group": group["name"], "agent": agent, "traces": int(sub["trace"].nunique())}
                for key in METRICS:
                    values = sub[key].astype(float).to_numpy()
                    row[key] = float(np.mean(values)) if np.isfinite(values).all() else None
                rows.append(row)
    return {"round_s": 120.0, "restart_overhead_s": 20.0, "groups": list(GROUPS),
            "metrics": list(METRICS), "rows": rows, **rankings(rows)}


def rankings(rows: list[dict]) -> dict:
    """Each group's agent order under each ranked figure (lower is fairer; ties by name), and
    every (group, agent) whose rank by mean rho differs from a paper measure's."""
    orders, changes = {}, []
    for group in dict.fromkeys(r["group"] for r in rows):
        sub = [r for r in rows if r["group"] == group]
        orders[group] = {}
        for key in RANKED:
            ranked = sorted((r for r in sub if r[key] is not None), key=lambda r: (r[key], r["agent"]))
            orders[group][key] = [r["agent"] for r in ranked]
        position = {key: {a: i + 1 for i, a in enumerate(order)} for key, order in orders[group].items()}
        for r in sub:
            headline = position["rho_mean"].get(r["agent"])
            moved = {key: position[key].get(r["agent"]) for key in RANKED[1:]
                     if position[key].get(r["agent"]) != headline}
            if moved:
                changes.append({"group": group, "agent": r["agent"], "rank_rho_mean": headline, **{
                    f"rank_{key}": rank for key, rank in moved.items()}})
    return {"rankings": orders, "ranking_changes": changes}


def merge(outputs: list[dict]) -> dict:
    """One output from several (rows keyed by group and agent; a later output's row wins)."""
    rows: dict[tuple[str, str], dict] = {}
    for data in outputs:
        for row in data["rows"]:
            rows[(row["group"], row["agent"])] = row
    first = outputs[0]
    ordered = [rows[k] for k in sorted(rows, key=lambda k: first["groups"].index(k[0]))]
    return {key: first[key] for key in ("round_s", "restart_overhead_s", "groups", "metrics")} | {
        "rows": ordered, **rankings(ordered)}


def _fmt(value, kind: str) -> str:
    if value is None:
        return "—"
    if kind == "share":
        return f"{value:.0%}"
    if kind == "s":
        return f"{value:,.0f}"
    return f"{value:.2f}"


_COLUMNS = (("rho_mean", "ρ mean", ""), ("rho_p95", "ρ p95", ""), ("rho_max", "ρ max", ""),
            ("rho_over_1_05", ">1.05", "share"), ("rho_over_1_25", ">1.25", "share"),
            ("gang_ftf_mean", "gang ρ mean", ""), ("gang_ftf_max", "gang ρ max", ""),
            ("gang_ftf_over_1_05", "gang >1.05", "share"),
            ("worst_ftf", "paper static worst", ""), ("unfair_fraction", "paper static >1.05", "share"),
            ("worst_ftf_themis", "paper contention worst", ""),
            ("unfair_fraction_themis", "paper contention >1.05", "share"), ("avg_jct_s", "avg JCT (s)", "s"))


def render(data: dict) -> str:
    """The docs section generated from the benchmark's JSON."""
    lines = [
        "Generated by `benchmarks/fairness_table.py --render docs/data/fairness_table.json` from the",
        f"JSON it printed; every agent at {data['round_s']:.0f} s rounds and {data['restart_overhead_s']:.0f} s "
        f"restarts, `{REFERENCE_LABEL}` the fair-share policy with 10 s rounds and no restart cost. "
        "Suite rows are means over the suite's 5 test traces. Agents are sorted by mean ρ.",
        "",
    ]
    every = list(dict.fromkeys(r["agent"] for r in data["rows"]))
    for group in data["groups"]:
        present = {r["agent"] for r in data["rows"] if r["group"] == group}
        missing = [a for a in every if a not in present]
        lines += [f"**{group}**", ""]
        if missing:
            lines += [f"Not run on this group: {', '.join(f'`{a}`' for a in missing)}.", ""]
        lines += ["| agent | " + " | ".join(h for _, h, _ in _COLUMNS) + " |",
                  "|---|" + "---:|" * len(_COLUMNS)]
        order = data["rankings"][group]["rho_mean"]
        rows = {r["agent"]: r for r in data["rows"] if r["group"] == group}
        for agent in order + [a for a in rows if a not in order]:
            r = rows[agent]
            lines.append(f"| `{agent}` | " + " | ".join(_fmt(r[k], kind) for k, _, kind in _COLUMNS) + " |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/fairness_table"), help="cell store (reused)")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--agents", default="all", help="comma-separated agent names (default: all)")
    parser.add_argument("--render", type=Path, metavar="JSON", help="print the docs section from a saved JSON")
    parser.add_argument("--groups", default=",".join(GROUPS),
                        help=f"comma-separated groups to run (default: all of {', '.join(GROUPS)})")
    parser.add_argument("--merge", type=Path, nargs="+", metavar="JSON", help="join saved outputs (see above)")
    args = parser.parse_args(argv)
    if args.merge:
        print(json.dumps(merge([json.loads(p.read_text(encoding="utf-8")) for p in args.merge]), indent=1))
        return 0
    if args.render is not None:
        sys.stdout.write(render(json.loads(args.render.read_text(encoding="utf-8"))))
        return 0
    agents = available_agents() if args.agents == "all" else args.agents.split(",")
    names = tuple(name.strip() for name in args.groups.split(","))
    unknown = [name for name in names if name not in GROUPS]
    if unknown:
        print(f"--groups: unknown group {unknown[0]!r}; groups: {', '.join(GROUPS)}", file=sys.stderr)
        return 2
    print(json.dumps(run(args.out, args.workers, agents, names), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

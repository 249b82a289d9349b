"""The six baselines against the authors' own runs on their canonical trace (32 GPUs).

Run as ``.venv/bin/python benchmarks/baselines_fidelity.py``. Prints one JSON object: per
baseline, ours and the authors' makespan, avg JCT, worst FTF and unfair fraction side by side
with the deviation in % (the authors' result file is the named baseline), the Spearman rank
correlation of our per-job JCTs with theirs (trace order), whether the makespan order of
pairs whose authors' makespans differ by more than 3% is kept, and the in-process episode
wall time (``run_episode``, best of ``--repeats``). Also a readable table on stderr.

JCT and FTF are compared on the authors' basis, JCT from arrival (``avg_jct_s``, ``worst_ftf``,
...; docs/METRICS.md): their trace driver records each job's arrival time as its start. JCT
from admission (the first round boundary at or after arrival) is reported beside it
(``admission_basis``).

Everything it needs is bundled: the authors' trace (``authors-canonical-120``), the built-in
V100 table (their figures) and their results (:mod:`shockwave_gym.reference`).
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
from scipy.stats import spearmanr

from shockwave_agents import make_agent
from shockwave_gym.metrics import ADMISSION_BASIS, AUTHORS_BASIS
from shockwave_gym.reference import PolicyFigures, authors_canonical
from shockwave_gym.runner import run_episode
from shockwave_gym.simulator import SimConfig
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import load_trace

BASELINES = ("gavel", "themis", "allox", "ossp", "mst", "gandiva_fair")


def deviation_pct(ours: float, theirs: float) -> float:
    return 100.0 * (ours / theirs - 1.0)


def compare(outcome, reference: PolicyFigures, walls: list[float]) -> dict:
    m = outcome.metrics
    row = {"authors_key": reference.authors_key, "basis": "arrival (the authors')"}
    for key, ours_key in AUTHORS_BASIS.items():
        theirs = getattr(reference, key)
        row[key] = {"ours": m[ours_key], "authors": theirs, "deviation_pct": deviation_pct(m[ours_key], theirs)}
    return row | {
        "admission_basis": {key: m[ADMISSION_BASIS[key]] for key in ("avg_jct_s", "worst_ftf", "unfair_fraction")},
        "spearman_jct": float(spearmanr(outcome.result.jct_s, reference.jct_s).statistic),
        "completed_jobs": m["completed_jobs"],
        "rounds": m["rounds"],
        "episode_wall_s_best": min(walls),
        "allocation_recomputes": outcome.agent_stats.get("allocation_recomputes"),
        "allocation_wall_s": outcome.agent_stats.get("allocation_wall_s"),
    }


def order_checks(rows: dict) -> list[dict]:
    checks = []
    names = sorted(rows)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            ref_a, ref_b = rows[a]["makespan_s"]["authors"], rows[b]["makespan_s"]["authors"]
            if abs(ref_a - ref_b) / min(ref_a, ref_b) <= 0.03:
                continue
            ours_a, ours_b = rows[a]["makespan_s"]["ours"], rows[b]["makespan_s"]["ours"]
            checks.append({"pair": [a, b], "kept": (ours_a < ours_b) == (ref_a < ref_b)})
    return checks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2, help="episodes per agent (best wall time kept)")
    parser.add_argument("--agents", default=",".join(BASELINES))
    args = parser.parse_args(argv)
    authors = authors_canonical()
    table = ThroughputTable.builtin(authors.gpu_type)
    trace = load_trace(authors.trace, table, gpus=authors.gpus)
    rows = {}
    for name in [a for a in args.agents.split(",") if a]:
        walls, outcome = [], None
        for _ in range(max(1, args.repeats)):
            outcome = run_episode(trace, make_agent(name), SimConfig(gpus=authors.gpus), table, progress=False)
            walls.append(outcome.wall_s)
        rows[name] = compare(outcome, authors.policy(name), walls)
    for name, row in rows.items():
        print(
            f"{name:13s} makespan {row['makespan_s']['ours']:8.0f} vs {row['makespan_s']['authors']:8.0f} "
            f"({row['makespan_s']['deviation_pct']:+5.2f}%)  avg JCT {row['avg_jct_s']['ours']:7.0f} vs "
            f"{row['avg_jct_s']['authors']:7.0f} ({row['avg_jct_s']['deviation_pct']:+5.2f}%)  worst FTF "
            f"{row['worst_ftf']['ours']:.2f} vs {row['worst_ftf']['authors']:.2f}  unfair "
            f"{100 * row['unfair_fraction']['ours']:.1f}% vs {100 * row['unfair_fraction']['authors']:.1f}%  "
            f"Spearman {row['spearman_jct']:.3f}  {row['episode_wall_s_best']:.2f} s",
            file=sys.stderr,
        )
    deviations = [abs(r[k]["deviation_pct"]) for r in rows.values() for k in ("makespan_s", "avg_jct_s")]
    checks = order_checks(rows) if len(rows) > 1 else []
    summary = {
        "benchmark": "baselines_fidelity",
        "baseline": f"the authors' results, bundled ({authors.file})",
        "trace": f"{authors.trace} (the authors' canonical trace), {authors.gpus} GPUs, built-in {authors.gpu_type} table",
        "max_abs_deviation_pct": max(deviations),
        "within_10_pct": all(d <= 10.0 for d in deviations),
        "within_3_pct": all(d <= 3.0 for d in deviations),
        "min_spearman_jct": min(r["spearman_jct"] for r in rows.values()),
        "makespan_order_kept": all(c["kept"] for c in checks),
        "makespan_order_checks": checks,
        "agents": rows,
        "command": ".venv/bin/python benchmarks/baselines_fidelity.py",
    }
    json.dump(summary, sys.stdout, indent=1, default=lambda v: float(v) if isinstance(v, np.floating) else str(v))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

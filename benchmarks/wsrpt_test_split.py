"""Weighted SRPT against SRTF and the shipped PPO policy on a fixed split of the task suites.

    .venv/bin/python benchmarks/wsrpt_test_split.py [--split test] [--quick] [--suites a,b]
        [--out wsrpt_cells] [--workers 1]

Runs ``wsrpt``, ``srtf`` and ``ppo`` on every trace of the split through the leaderboard's
own runner (:func:`shockwave_gym.harness.leaderboard.run_leaderboard`: the same cells, GPUs
and seed 0 as ``shockwave-gym leaderboard``; cells saved in ``--out`` are reused), then prints
one JSON object: per suite, each agent's mean avg JCT over the suite's traces, the ratio of
those means (``wsrpt/srtf``, ``wsrpt/ppo``), the geometric mean of the per-trace ratios and
how many traces ``wsrpt`` wins, ties (within 0.5%) and loses against each; the same over all
traces. Every figure is a simulated time, independent of machine speed.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from shockwave_gym.harness.leaderboard import run_leaderboard
from shockwave_gym.traces.suites import SUITES

AGENTS = ("wsrpt", "srtf", "ppo")
OPPONENTS = ("srtf", "ppo")
TIE_REL = 0.005


def _versus(ours: list[float], theirs: list[float]) -> dict:
    ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
    return {
        "ratio_of_means": sum(ours) / sum(theirs),
        "geomean_ratio": math.exp(sum(math.log(r) for r in ratios) / len(ratios)),
        "wins": sum(r < 1 - TIE_REL for r in ratios),
        "ties": sum(abs(r - 1) <= TIE_REL for r in ratios),
        "losses": sum(r > 1 + TIE_REL for r in ratios),
    }


def summarise(results) -> dict:
    """Per-suite and overall figures from the harness's results table."""
    jct = {(row.suite, row.trace, row.agent): float(row.avg_jct_s) for row in results.itertuples()}
    suites = sorted({suite for suite, _, _ in jct}, key=list(dict.fromkeys(results["suite"])).index)
    table, everything = {}, {agent: [] for agent in AGENTS}
    for suite in suites:
        traces = sorted({trace for s, trace, _ in jct if s == suite})
        per = {agent: [jct[suite, trace, agent] for trace in traces] for agent in AGENTS}
        for agent in AGENTS:
            everything[agent] += per[agent]
        table[suite] = {
            "traces": len(traces),
            "avg_jct_s": {agent: sum(v) / len(v) for agent, v in per.items()},
            **{f"wsrpt/{other}": _versus(per["wsrpt"], per[other]) for other in OPPONENTS},
        }
    overall = {"traces": len(everything["wsrpt"]),
               **{f"wsrpt/{other}": _versus(everything["wsrpt"], everything[other]) for other in OPPONENTS}}
    return {"suites": table, "overall": overall}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test", choices=("test", "validation"))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--suites", default=None,
                        help="comma list (default: the V100 suites with exact lengths, where ppo runs)")
    parser.add_argument("--out", default="wsrpt_cells")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    suites = args.suites or [s.name for s in SUITES if not s.heterogeneous and s.exact]
    run = run_leaderboard(args.split, suites=suites, agents=AGENTS, quick=args.quick, out=args.out,
                          workers=args.workers, progress=False)
    report = {"split": args.split, "quick": args.quick, "agents": list(AGENTS), "metric": "avg_jct_s (arrival basis)",
              **summarise(run.results)}
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

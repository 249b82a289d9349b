"""How the balanced task's weights were fixed (docs/TASKS.md), printed as JSON.

On the **validation** split of the homogeneous task suites (never the test split), every
classical agent below runs each trace once. For each reward term (``jct``, ``fair_share``,
``makespan``) and trace, the term's spread is the largest minus the smallest cost over the
agents; its weight is ``1 / mean spread``, scaled so that ``jct`` weighs 1 and rounded to two
significant figures. Each term then moves the balanced cost by about as much, on average,
between the best and the worst of these rules.

    python benchmarks/task_weights.py --out runs/task-weights
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np

from shockwave_gym.harness import evaluate
from shockwave_gym.tasks import TERM_METRICS, term_cost
from shockwave_gym.traces.suites import SUITES, split_traces

AGENTS = "fifo,srtf,wsrpt,las,tiresias,max-rho,fair-share,gavel-wc"


def significant(value: float, digits: int = 2) -> float:
    return float(f"{value:.{digits - 1}e}")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/task-weights")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    suites = [suite.name for suite in SUITES if not suite.heterogeneous and suite.exact]  # the nine V100 suites
    pairs = split_traces(suites, "validation")
    traces = [trace for trace, _ in pairs]
    gpus = {trace.name: size for trace, size in pairs}
    first = {trace.name: trace.first_arrival_s for trace in traces}
    frame = evaluate(AGENTS, traces, gpus=gpus, workers=args.workers, out=args.out, figures=False, progress=False)
    spreads = {term: [] for term in TERM_METRICS}
    for name, rows in frame.groupby("trace"):
        for term in TERM_METRICS:
            costs = [term_cost(term, row, first_arrival_s=first[name], round_s=120.0)
                     for row in rows.to_dict("records")]
            costs = [c for c in costs if math.isfinite(c)]
            spreads[term].append(max(costs) - min(costs))
    mean_spread = {term: float(np.mean(values)) for term, values in spreads.items()}
    weights = {term: significant(mean_spread["jct"] / spread) for term, spread in mean_spread.items()}
    report = {"suites": suites, "split": "validation", "traces": len(traces), "agents": AGENTS.split(","),
              "mean_spread": mean_spread, "weights": weights}
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()

"""Learned agents against the planners on generated traces none of them trained on.

    .venv/bin/python benchmarks/learned_eval.py [--seeds 2001 2002 2003 2004 2005] [--agents ...]

Five held-out traces (``shockwave_gym.training.workload.held_out_traces``: 40 jobs on 12
GPUs, jobs of 0.2-2 h, arrival rates 20/30/40/50/60 per hour, seeds 2001-2005). Training
traces draw their seeds from [2**32, 2**63), so these can never have been trained on. Each
agent plays each trace once, in this process and in sequence (so decision times are
comparable), through the core runner. Per agent: the mean over traces of makespan, avg
JCT, worst FTF and unfair fraction (static rho, as the paper; the Themis variant too:
with 40 jobs on 12 GPUs almost every static rho is below 1), and decision latency = total
decision wall time / rounds over all traces. Ratios against baselines measured in the same
run, and the issue's acceptance targets:

* ``ppo`` avg JCT below ``fifo``'s and ``gavel``'s;
* ``shockwave-distilled`` makespan within 5% of ``shockwave``'s and unfair fraction within
  5 percentage points, with decision latency >= 100x lower.

Prints one JSON object on stdout (solver banners are sent to stderr).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import time
import warnings

import numpy as np

from shockwave_agents import make_agent
from shockwave_gym.runner import run_episode
from shockwave_gym.simulator import SimConfig
from shockwave_gym.training.workload import held_out_traces

AGENTS = ("ppo", "shockwave-distilled", "shockwave", "gavel", "fifo")
METRICS = ("makespan_s", "avg_jct_s", "worst_ftf", "unfair_fraction", "worst_ftf_themis", "unfair_fraction_themis")
RATES_PER_HOUR = (20.0, 30.0, 40.0, 50.0, 60.0)
GPUS = 12


@contextlib.contextmanager
def stdout_to_stderr():
    """Route fd 1 to stderr (C libraries such as HiGHS print banners there)."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def run(agents: list[str], seeds: list[int]) -> dict:
    traces = held_out_traces(seeds, num_jobs=40, arrival_rates_per_hour=RATES_PER_HOUR, max_duration_h=2.0)
    per_agent: dict[str, dict] = {}
    for name in agents:
        rows, decision_s, rounds, wall_s = [], 0.0, 0, 0.0
        for trace in traces:
            outcome = run_episode(trace, make_agent(name), SimConfig(gpus=GPUS), progress=False)
            rows.append({"trace": trace.name, **{k: outcome.metrics[k] for k in METRICS},
                         "rounds": outcome.metrics["rounds"],
                         "decision_ms_per_round": 1000 * outcome.decision_wall_s / outcome.metrics["rounds"]})
            decision_s += outcome.decision_wall_s
            rounds += outcome.metrics["rounds"]
            wall_s += outcome.wall_s
            print(f"{name} {trace.name}: avg JCT {outcome.metrics['avg_jct_s']:,.0f} s, makespan "
                  f"{outcome.metrics['makespan_s']:,.0f} s, {rows[-1]['decision_ms_per_round']:.3f} ms/round",
                  file=sys.stderr, flush=True)
        mean = {k: float(np.mean([r[k] for r in rows])) for k in METRICS}
        per_agent[name] = {**mean, "decision_ms_per_round": 1000 * decision_s / rounds, "rounds": rounds,
                           "episode_wall_s": wall_s, "per_trace": rows}
    return {"traces": [{"name": t.name, "seed": s, "num_jobs": t.num_jobs, "arrival_rate_per_hour": RATES_PER_HOUR[i % 5]}
                       for i, (t, s) in enumerate(zip(traces, seeds, strict=True))],
            "agents": per_agent}


def acceptance(agents: dict) -> dict:
    out = {}
    if {"ppo", "fifo", "gavel"} <= agents.keys():
        ppo = agents["ppo"]
        out["ppo_avg_jct_vs_fifo"] = ppo["avg_jct_s"] / agents["fifo"]["avg_jct_s"]
        out["ppo_avg_jct_vs_gavel"] = ppo["avg_jct_s"] / agents["gavel"]["avg_jct_s"]
        out["ppo_beats_fifo_and_gavel_on_avg_jct"] = bool(out["ppo_avg_jct_vs_fifo"] < 1 and out["ppo_avg_jct_vs_gavel"] < 1)
        wins = [p["avg_jct_s"] < min(f["avg_jct_s"], g["avg_jct_s"]) for p, f, g in
                zip(ppo["per_trace"], agents["fifo"]["per_trace"], agents["gavel"]["per_trace"], strict=True)]
        out["ppo_traces_beating_both"] = f"{sum(wins)}/{len(wins)}"
    if {"shockwave-distilled", "shockwave"} <= agents.keys():
        student, teacher = agents["shockwave-distilled"], agents["shockwave"]
        out["distilled_makespan_vs_shockwave"] = student["makespan_s"] / teacher["makespan_s"]
        out["distilled_unfair_fraction_minus_shockwave_pp"] = 100 * (student["unfair_fraction"] - teacher["unfair_fraction"])
        out["distilled_unfair_fraction_themis_minus_shockwave_pp"] = 100 * (
            student["unfair_fraction_themis"] - teacher["unfair_fraction_themis"])
        out["distilled_avg_jct_vs_shockwave"] = student["avg_jct_s"] / teacher["avg_jct_s"]
        out["shockwave_over_distilled_decision_latency"] = teacher["decision_ms_per_round"] / student["decision_ms_per_round"]
        out["distilled_within_targets"] = bool(
            abs(out["distilled_makespan_vs_shockwave"] - 1) <= 0.05
            and abs(out["distilled_unfair_fraction_minus_shockwave_pp"]) <= 5
            and out["shockwave_over_distilled_decision_latency"] >= 100
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[2001, 2002, 2003, 2004, 2005])
    parser.add_argument("--agents", nargs="+", default=list(AGENTS))
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    with stdout_to_stderr():
        results = run(args.agents, args.seeds)
    report = {
        "benchmark": "learned_eval",
        "command": "python benchmarks/learned_eval.py " + " ".join(sys.argv[1:]),
        "gpus": GPUS,
        **results,
        "acceptance": acceptance(results["agents"]),
        "notes": "means over traces; decision latency = total decision wall time / rounds; "
                 "unfair_fraction uses the paper's static rho, *_themis the Themis variant",
        "wall_s": time.perf_counter() - start,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_average_1min": os.getloadavg()[0]},
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()

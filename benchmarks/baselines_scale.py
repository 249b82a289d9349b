"""Every baseline on the bundled scale traces, run to completion.

Run as ``.venv/bin/python benchmarks/baselines_scale.py [--traces scale-220,scale-460]
[--agents gavel,themis]``. Prints one JSON object: per trace and agent, whether every job
completed, the in-process episode wall time (``run_episode``), the share of it spent
computing allocations (Gavel-family agents), rounds, makespan, avg JCT, worst FTF and unfair
fraction. The named baseline is FIFO on the same trace in the same run: ``wall_vs_fifo`` is
each agent's wall time over FIFO's (the simulator's own cost), and ``makespan_vs_fifo`` /
``avg_jct_vs_fifo`` compare schedules.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time

from shockwave_agents import make_agent
from shockwave_gym.runner import run_episode
from shockwave_gym.simulator import SimConfig
from shockwave_gym.traces import BUNDLED_GPUS, load_trace

AGENTS = ("fifo", "srtf", "las", "gavel", "themis", "allox", "ossp", "mst", "gandiva_fair")
TRACES = ("scale-220", "scale-460", "scale-900")


def run_one(trace, gpus: int, agent_name: str) -> dict:
    agent = make_agent(agent_name)
    start = time.perf_counter()
    outcome = run_episode(trace, agent, SimConfig(gpus=gpus), progress=False)
    wall_s = time.perf_counter() - start
    m = outcome.metrics
    return {
        "completed_jobs": m["completed_jobs"],
        "all_completed": m["completed_jobs"] == len(trace.jobs) and not m["truncated"],
        "episode_wall_s": wall_s,
        "decision_wall_s": outcome.decision_wall_s,
        "allocation_wall_s": outcome.agent_stats.get("allocation_wall_s"),
        "allocation_recomputes": outcome.agent_stats.get("allocation_recomputes"),
        "solver_statuses": outcome.agent_stats.get("solver_statuses"),
        "rounds": m["rounds"],
        "makespan_s": m["makespan_s"],
        "avg_jct_s": m["avg_jct_s"],
        "worst_ftf": m["worst_ftf"],
        "unfair_fraction": m["unfair_fraction"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", default=",".join(TRACES))
    parser.add_argument("--agents", default=",".join(AGENTS))
    args = parser.parse_args(argv)
    agents = [a for a in args.agents.split(",") if a]
    if "fifo" not in agents:
        agents.insert(0, "fifo")
    results = {}
    for trace_name in [t for t in args.traces.split(",") if t]:
        gpus = BUNDLED_GPUS[trace_name]
        trace = load_trace(trace_name, gpus=gpus)
        per_agent = {}
        for agent_name in agents:
            per_agent[agent_name] = run_one(trace, gpus, agent_name)
            print(f"{trace_name} {agent_name}: {per_agent[agent_name]['episode_wall_s']:.2f} s", file=sys.stderr)
        fifo = per_agent["fifo"]
        for record in per_agent.values():
            record["wall_vs_fifo"] = record["episode_wall_s"] / fifo["episode_wall_s"]
            record["makespan_vs_fifo"] = record["makespan_s"] / fifo["makespan_s"]
            record["avg_jct_vs_fifo"] = record["avg_jct_s"] / fifo["avg_jct_s"]
        results[trace_name] = {"jobs": len(trace.jobs), "gpus": gpus, "agents": per_agent}
    summary = {
        "benchmark": "baselines_scale",
        "baseline": "fifo on the same trace, same run",
        "all_completed": all(r["all_completed"] for t in results.values() for r in t["agents"].values()),
        "max_episode_wall_s": max(r["episode_wall_s"] for t in results.values() for r in t["agents"].values()),
        "traces": results,
        "machine": {"python": platform.python_version(), "processor": platform.machine()},
        "command": ".venv/bin/python benchmarks/baselines_scale.py",
    }
    json.dump(summary, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0 if summary["all_completed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Heterogeneity-aware vs blind Gavel-family agents on a 12/12/12 cluster (docs/HETEROGENEOUS.md, "Checks").

Runs each agent with ``heterogeneity_aware`` True and False on the bundled ``hetero-120`` trace
and on traces generated with the same recipe and other seeds, and prints one JSON object:
per trace and agent, makespan, avg JCT, worst FTF and unfair fraction of both variants.

    python scripts/hetero_experiment.py --seeds 1201 1202 1203 1204 --agents gavel themis mst gandiva_fair
"""

from __future__ import annotations

import argparse
import json

from shockwave_agents import make_agent
from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.config import SimConfig
from shockwave_gym.runner import run_episode
from shockwave_gym.traces import BUNDLED_CLUSTERS, GeneratorConfig, generate_trace, load_trace

KEYS = ("makespan_s", "avg_jct_s", "worst_ftf", "unfair_fraction")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", nargs="*", type=int, default=[], help="extra generated traces (seeds)")
    parser.add_argument("--agents", nargs="+", default=["gavel"])
    args = parser.parse_args()
    cluster = BUNDLED_CLUSTERS["hetero-120"]
    spec = ClusterSpec.parse(cluster)
    traces = [load_trace("hetero-120", gpus=spec.total)]
    for seed in args.seeds:
        config = GeneratorConfig(num_jobs=120, seed=seed, cluster=cluster, arrival_rate_per_gpu_hour=2.8125,
                                 name=f"hetero-120-seed{seed}")
        traces.append(generate_trace(config))
    out = {"cluster": cluster, "runs": []}
    for trace in traces:
        for agent in args.agents:
            row = {"trace": trace.name, "agent": agent}
            for aware in (True, False):
                metrics = run_episode(trace, make_agent(agent, heterogeneity_aware=aware), SimConfig(cluster=spec),
                                      progress=False).metrics
                row["aware" if aware else "blind"] = {k: metrics[k] for k in KEYS}
            out["runs"].append(row)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

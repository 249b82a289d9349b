"""``shockwave`` (the authors' objective) against ``shockwave-normalized`` (ours).

Run as ``.venv/bin/python benchmarks/shockwave_variants.py``. Three traces, each on 32 GPUs:
the authors' canonical trace (bundled as ``authors-canonical-120``), our bundled generated trace
``canonical-analogue-120`` and a fresh generated 120-job trace (seed 2024), all with the
built-in V100 table. For each, both variants' four
metrics (makespan, avg JCT, worst FTF, unfair fraction), the ratio normalized / faithful and
whether the normalized variant is better on each. The faithful variant is the named baseline.
Prints one JSON object; a table goes to stderr. ``--workers 2`` runs episodes in parallel.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor

from shockwave_agents import make_agent
from shockwave_gym.runner import run_episode
from shockwave_gym.simulator import SimConfig
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import BUNDLED_GPUS, GeneratorConfig, generate_trace, load_trace

METRICS = ("makespan_s", "avg_jct_s", "worst_ftf", "unfair_fraction")
VARIANTS = ("shockwave", "shockwave-normalized")
GENERATED_SEED = 2024


def trace_names() -> list[str]:
    return ["authors-canonical-120", "canonical-analogue-120", f"generated-{GENERATED_SEED}"]


def load(name: str):
    if name == "authors-canonical-120":
        throughputs = ThroughputTable.builtin("v100")
        return load_trace(name, throughputs, gpus=32), throughputs, 32
    if name.startswith("generated-"):
        return generate_trace(GeneratorConfig(num_jobs=120, seed=GENERATED_SEED)), None, 32
    return load_trace(name, gpus=BUNDLED_GPUS[name]), None, BUNDLED_GPUS[name]


def episode(task: tuple[str, str]) -> dict:
    name, variant = task
    trace, throughputs, gpus = load(name)
    outcome = run_episode(trace, make_agent(variant), SimConfig(gpus=gpus), throughputs)
    stats = outcome.agent_stats["planner_stats"]
    return {"trace": name, "variant": variant, **{key: outcome.metrics[key] for key in METRICS},
            "episode_wall_s": outcome.wall_s, "plans": stats["plans"], "paths": stats["paths"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    tasks = [(name, variant) for name in trace_names() for variant in VARIANTS]
    if args.workers > 1:
        with ProcessPoolExecutor(args.workers) as pool:
            results = list(pool.map(episode, tasks))
    else:
        results = [episode(task) for task in tasks]
    by = {(r["trace"], r["variant"]): r for r in results}
    rows = []
    for name in trace_names():
        faithful, ours = by[(name, "shockwave")], by[(name, "shockwave-normalized")]
        better = {key: ours[key] < faithful[key] for key in METRICS}
        rows.append({
            "trace": name,
            "shockwave": {key: faithful[key] for key in METRICS},
            "shockwave_normalized": {key: ours[key] for key in METRICS},
            "ratio_normalized_over_faithful": {
                key: (ours[key] / faithful[key]) if faithful[key] else None for key in METRICS},
            "normalized_better": better,
            "normalized_better_on_all": all(better.values()),
            "episode_wall_s": {"shockwave": faithful["episode_wall_s"], "shockwave_normalized": ours["episode_wall_s"]},
        })
        print(f"{name:24s} " + "  ".join(
            f"{key} {faithful[key]:.4g} -> {ours[key]:.4g}{' *' if better[key] else ''}" for key in METRICS),
            file=sys.stderr)
    record = {"benchmark": "shockwave_variants", "baseline": "shockwave (faithful), same run", "gpus": 32,
              "traces": rows,
              "normalized_better_on_every_metric_and_trace": all(r["normalized_better_on_all"] for r in rows)}
    print(json.dumps(record, allow_nan=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())

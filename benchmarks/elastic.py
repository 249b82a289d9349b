"""The elastic baselines against the best rigid baseline on elastic traces (issue 37).

Run as ``.venv/bin/python benchmarks/elastic.py`` (``--agents`` to restrict the rigid set,
``--quick`` to leave out Shockwave's three variants). Prints one JSON object: per trace, every
agent's avg JCT, makespan and mean fair-share rho (docs/METRICS.md: ``avg_jct_s``,
``makespan_s``, ``rho_mean``), the best rigid baseline per metric (lowest value, and which
agent), and each elastic baseline's gain over it in % (positive: better). Also a readable
table on stderr.

Traces: the bundled ``elastic-120`` (canonical-analogue-120's jobs, half of them elastic, 32
GPUs) and a held-out one generated the same way with seed 121 (never used to tune anything).
Rigid baselines run every elastic job at its reference count (its trace gang); the elastic
ones (``pollux``, ``sia``, ``elastic-srpt``, ``elastic-max-min``) choose counts. Learned
policies are left out: none is trained on elastic traces yet. Pollux's published gains come
mostly from adapting batch sizes to statistical efficiency, which is not modelled here, so
they are not a target.
"""

from __future__ import annotations

import argparse
import json
import sys

from shockwave_agents import available_agents, make_agent, registry
from shockwave_gym.config import SimConfig
from shockwave_gym.runner import run_episode
from shockwave_gym.traces import GeneratorConfig, generate_trace, load_trace

METRICS = ("avg_jct_s", "makespan_s", "rho_mean")
ELASTIC = ("pollux", "sia", "elastic-srpt", "elastic-max-min")
SHOCKWAVE = ("shockwave", "shockwave-normalized", "shockwave-fair")
GPUS = 32


def rigid_agents(quick: bool) -> list[str]:
    """Every built-in rule-based agent that does not choose counts (no learned policy)."""
    names = []
    for name in available_agents():
        entry = registry.agent_entry(name)
        if entry is None or entry.learned or entry.elastic or (quick and name in SHOCKWAVE):
            continue
        names.append(name)
    return names


def traces():
    held_out = generate_trace(GeneratorConfig(num_jobs=120, seed=121, arrival_rate_per_hour=90.0, elastic_share=0.5,
                                              name="elastic-held-out-121"))
    return [load_trace("elastic-120", gpus=GPUS), held_out]


def run(trace, agent: str) -> dict:
    outcome = run_episode(trace, make_agent(agent), SimConfig(gpus=GPUS), progress=False)
    return {key: outcome.metrics[key] for key in METRICS}


def compare(trace, rigid: list[str]) -> dict:
    figures = {name: run(trace, name) for name in [*rigid, *ELASTIC]}
    best = {}
    for key in METRICS:
        agent = min(rigid, key=lambda name: figures[name][key])
        best[key] = {"agent": agent, "value": figures[agent][key]}
    gains = {name: {key: 100.0 * (1.0 - figures[name][key] / best[key]["value"]) for key in METRICS}
             for name in ELASTIC}
    return {"jobs": trace.num_jobs, "elastic_jobs": sum(bool(job.gangs) for job in trace.jobs), "gpus": GPUS,
            "agents": figures, "best_rigid": best, "elastic_gain_pct": gains}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", nargs="+", help="rigid baselines to compare with (default: every rule-based one)")
    parser.add_argument("--quick", action="store_true", help="leave out Shockwave's three variants")
    args = parser.parse_args(argv)
    rigid = args.agents or rigid_agents(args.quick)
    out = {"metrics": list(METRICS), "rigid": rigid, "elastic": list(ELASTIC), "traces": {}}
    for trace in traces():
        result = compare(trace, rigid)
        out["traces"][trace.name] = result
        print(f"{trace.name}: best rigid " + ", ".join(
            f"{k} {v['value']:.4g} ({v['agent']})" for k, v in result["best_rigid"].items()), file=sys.stderr)
        for name, gains in result["elastic_gain_pct"].items():
            print(f"  {name:16s} " + "  ".join(f"{k} {result['agents'][name][k]:.4g} ({g:+.1f}%)"
                                               for k, g in gains.items()), file=sys.stderr)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

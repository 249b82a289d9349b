"""Hand-set linear priors on the validation split: how far one-feature changes of SRTF's score
go, to set the trained residual policies' gains against.

    .venv/bin/python benchmarks/learned_priors.py [--suites a,b] [--val-traces N]
        [--config FEATURE=WEIGHT[,FEATURE=WEIGHT...]]...

Each configuration is the ``srtf`` prior (``shockwave_agents.learned.priors``: score
``tanh(1 - 2 x predicted_remaining)``, deep term 0) with the given skip weights added on
other job features (observation version 2 names, e.g. ``gang=-0.3``, ``ftf_estimate=0.5``).
The policy plays the same validation traces ``shockwave-gym train --suites ...`` evaluates
on (``--val-traces`` per suite), deterministically, and each row reports the two selection
scores (``jct``, ``fair``: shockwave_gym.training.selection, ratios to FIFO on the same
traces) and the mean Themis worst FTF and unfair fraction. The first row (no extra weight)
is SRTF itself. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import time

DEFAULT_SUITES = "small-light,small-nominal,small-overloaded,medium-nominal"
DEFAULT_CONFIGS = ("", "gang=-0.3", "gang=0.3", "ran_last_round=0.1", "ftf_estimate=0.5", "ftf_estimate=0.25",
                   "age=0.5", "attained_service=-0.5")


def parse_config(text: str, job_features: tuple[str, ...]) -> dict[str, float]:
    weights = {}
    for item in filter(None, text.split(",")):
        name, sep, value = item.partition("=")
        if not sep or name not in job_features:
            raise SystemExit(f"--config: expected FEATURE=WEIGHT with a feature of {', '.join(job_features)}, got {item!r}")
        try:
            weights[name] = float(value)
        except ValueError:
            raise SystemExit(f"--config: {name}: weight must be a number, got {value!r}") from None
    return weights


def main() -> None:
    import torch

    from shockwave_agents import make_agent
    from shockwave_agents.learned.adapter import PolicyAgent
    from shockwave_agents.learned.inference import NumpySlotNetwork
    from shockwave_agents.learned.weights import build_policy
    from shockwave_gym.interface.observation import feature_names
    from shockwave_gym.training.evaluation import evaluate_agent
    from shockwave_gym.training.selection import score
    from shockwave_gym.training.tasks import suite_tasks

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", default=DEFAULT_SUITES)
    parser.add_argument("--val-traces", type=int, default=2)
    parser.add_argument("--config", action="append", default=None, help="extra skip weights, FEATURE=WEIGHT,...")
    args = parser.parse_args()
    torch.set_num_threads(1)
    jobs, _ = feature_names(2)
    configs = [(text, parse_config(text, jobs)) for text in (args.config or DEFAULT_CONFIGS)]
    tasks = suite_tasks(args.suites, envs=None, val_traces=args.val_traces, max_jobs=None)
    traces, gpus = tasks.val_traces, tasks.val_sizes
    start = time.perf_counter()
    fifo = evaluate_agent(make_agent("fifo"), traces, gpus)["per_trace"]
    rows = []
    for text, weights in configs:
        policy = build_policy("ppo", "priority", tasks.max_jobs, embed_dim=8, hidden_dim=16, prior="srtf")
        with torch.no_grad():
            for name, value in weights.items():
                policy.action_net.skip.weight[0, jobs.index(name)] += value
        result = evaluate_agent(PolicyAgent(NumpySlotNetwork.from_policy(policy), "priority"), traces, gpus)
        mean = result["mean"]
        rows.append({"config": text or "srtf", "jct_score": score("jct", result["per_trace"], fifo),
                     "fair_score": score("fair", result["per_trace"], fifo), "avg_jct_s": mean["avg_jct_s"],
                     "worst_ftf_themis": mean["worst_ftf_themis"], "unfair_fraction_themis": mean["unfair_fraction_themis"]})
    print(json.dumps({"suites": args.suites, "val_traces": args.val_traces, "traces": len(traces), "rows": rows,
                      "wall_s": time.perf_counter() - start}, indent=2))


if __name__ == "__main__":
    main()

"""The shipped learned policies against the baselines on the task suites, with issue 14's
acceptance cells.

    .venv/bin/python benchmarks/learned_suites.py --split validation [--suites a,b] [--agents ...]
        [--agent-path ppo=runs/ppo] [--traces-per-suite N] [--cache results.json]

Each agent plays each trace of the split (``shockwave_gym.traces.suites.split_traces``) once,
in this process and in sequence (so decision times are comparable), through the core
runner. Per suite and agent: the mean over the suite's traces of makespan, avg JCT, worst
FTF and unfair fraction (static rho and Themis rho), and decision latency = total decision
wall time / rounds. For the learned agents (``ppo``, ``ppo-fair``, ``shockwave-distilled``)
also the share of rounds in which the set of jobs the agent runs differs from the set SRTF
(:class:`~shockwave_agents.srtf.SrtfAgent`) would run in the same state
(``rounds_differing_from_srtf``; SRTF's decision time is not counted in the agent's).
``--cache`` keeps every (agent, trace) result in a JSON file and skips the ones already
there, so a long run (Shockwave on the 128-GPU suite) can be resumed; the key is the agent
name and the trace, so use a fresh file after changing an agent's weights (or
``--agent-path``).

Acceptance cells per suite (``in_distribution`` is the suite's own flag, true for the three
``small-*``; the others, ``medium-nominal`` included although the shipped PPO policies also
trained on it, get the transfer limit):

* ``ppo``: avg JCT <= 0.9x FIFO's, <= Gavel's, <= 1.0x SRTF's in-distribution and
  <= 1.02x SRTF's on transfer suites;
* ``ppo-fair`` (overloaded suites): worst FTF and unfair fraction, both with the Themis rho
  (``fair_hit``) and both with the static rho (``fair_hit_static``), <= Gavel's and <=
  SRTF's, with avg JCT <= FIFO's;
* ``shockwave-distilled``: makespan within 5% of Shockwave's, worst FTF <= 1.25x
  Shockwave's, unfair fraction (Themis rho) within 5 points, decisions >= 100x faster.

Prints one JSON object on stdout (solver banners go to stderr).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from shockwave_agents import make_agent
from shockwave_gym.errors import InputError
from shockwave_gym.runner import run_episode
from shockwave_gym.simulator import SimConfig
from shockwave_gym.traces.suites import entry_trace, get_suite, resolve_suites, split_entries

AGENTS = ("ppo", "ppo-fair", "shockwave-distilled", "srtf", "fifo", "gavel", "shockwave")
LEARNED = ("ppo", "ppo-fair", "shockwave-distilled")
METRICS = ("makespan_s", "avg_jct_s", "worst_ftf", "unfair_fraction", "worst_ftf_themis", "unfair_fraction_themis")


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


class SrtfComparison:
    """Wraps an agent; in every round also asks SRTF what it would run in the same state and
    counts the rounds where the two job sets differ (its own time is kept apart)."""

    def __init__(self, agent):
        from shockwave_agents.srtf import SrtfAgent

        self.agent, self.srtf = agent, SrtfAgent()
        self.name = getattr(agent, "name", "agent")
        self.rounds = self.differing = 0
        self.compare_s = 0.0

    def reset(self, view, seed=None):
        self.agent.reset(view, seed)
        self.srtf.reset(view, seed)

    def act(self, view):
        chosen = self.agent.act(view)
        start = time.perf_counter()
        ids = getattr(chosen, "job_ids", chosen)
        reference = self.srtf.act(view)
        reference = getattr(reference, "job_ids", reference)
        self.rounds += 1
        self.differing += int(not np.array_equal(np.sort(np.asarray(ids)), np.sort(np.asarray(reference))))
        self.compare_s += time.perf_counter() - start
        return chosen

    def stats(self):
        return self.agent.stats()


def play(agent_name: str, trace, gpus: int, paths: dict | None = None) -> dict:
    path = (paths or {}).get(agent_name)
    agent = make_agent(agent_name) if path is None else make_agent(agent_name, path=path)
    wrapper = SrtfComparison(agent) if agent_name in LEARNED else None
    outcome = run_episode(trace, agent if wrapper is None else wrapper, SimConfig(gpus=gpus), progress=False)
    rounds = int(outcome.metrics["rounds"])
    row = {**{k: float(outcome.metrics[k]) for k in METRICS}, "rounds": rounds,
           "decision_s": float(outcome.decision_wall_s) - (0.0 if wrapper is None else wrapper.compare_s),
           "completed_jobs": int(outcome.metrics["completed_jobs"]), "num_jobs": trace.num_jobs}
    if wrapper is not None:
        row["decisions"] = wrapper.rounds
        row["rounds_differing_from_srtf"] = wrapper.differing
    return row


def run(agents: list[str], suites: list, split: str, per_suite: int | None, cache: Path | None,
        paths: dict | None = None) -> dict:
    results = json.loads(cache.read_text()) if cache is not None and cache.is_file() else {}
    for suite in suites:
        entries = split_entries([suite], split)[:per_suite]
        for entry in entries:
            trace = None
            for name in agents:
                key = f"{name}|{entry.trace_name}"
                if key in results:
                    continue
                trace = entry_trace(entry) if trace is None else trace
                start = time.perf_counter()
                results[key] = play(name, trace, suite.gpus, paths)
                row = results[key]
                print(f"{name} {entry.trace_name}: avg JCT {row['avg_jct_s']:,.0f} s, makespan {row['makespan_s']:,.0f} s, "
                      f"worst FTF {row['worst_ftf']:.2f}, {1000 * row['decision_s'] / row['rounds']:.3f} ms/round "
                      f"({time.perf_counter() - start:.1f} s)", file=sys.stderr, flush=True)
                if cache is not None:
                    cache.write_text(json.dumps(results, indent=1) + "\n")
    table: dict[str, dict] = {}
    for suite in suites:
        names = [e.trace_name for e in split_entries([suite], split)[:per_suite]]
        table[suite.name] = {}
        for agent in agents:
            rows = [results[f"{agent}|{n}"] for n in names]
            mean = {k: float(np.mean([r[k] for r in rows])) for k in METRICS}
            mean["decision_ms_per_round"] = 1000 * sum(r["decision_s"] for r in rows) / sum(r["rounds"] for r in rows)
            mean["traces"] = len(rows)
            if all("decisions" in r for r in rows):
                mean["rounds_differing_from_srtf"] = sum(r["rounds_differing_from_srtf"] for r in rows) / max(
                    1, sum(r["decisions"] for r in rows))
            table[suite.name][agent] = mean
    return table


def acceptance(table: dict) -> dict:
    cells: dict[str, dict] = {}
    for suite_name, agents in table.items():
        suite = get_suite(suite_name)
        out = {}
        if {"ppo", "fifo", "gavel", "srtf"} <= agents.keys():
            jct = agents["ppo"]["avg_jct_s"]
            limit = 1.0 if suite.in_distribution else 1.02
            out["ppo_jct_vs_fifo"] = jct / agents["fifo"]["avg_jct_s"]
            out["ppo_jct_vs_gavel"] = jct / agents["gavel"]["avg_jct_s"]
            out["ppo_jct_vs_srtf"] = jct / agents["srtf"]["avg_jct_s"]
            out["ppo_hit"] = bool(out["ppo_jct_vs_fifo"] <= 0.9 and out["ppo_jct_vs_gavel"] <= 1.0
                                  and out["ppo_jct_vs_srtf"] <= limit)
        if suite.load == "overloaded" and {"ppo-fair", "fifo", "gavel", "srtf"} <= agents.keys():
            fair = agents["ppo-fair"]
            out["fair_jct_vs_fifo"] = fair["avg_jct_s"] / agents["fifo"]["avg_jct_s"]
            for suffix, ftf_key, unfair_key in (("", "worst_ftf_themis", "unfair_fraction_themis"),
                                                ("_static", "worst_ftf", "unfair_fraction")):
                out[f"fair_{ftf_key}"] = fair[ftf_key]
                out[f"fair_{ftf_key}_gavel_srtf"] = [agents["gavel"][ftf_key], agents["srtf"][ftf_key]]
                out[f"fair_{unfair_key}"] = fair[unfair_key]
                out[f"fair_{unfair_key}_gavel_srtf"] = [agents["gavel"][unfair_key], agents["srtf"][unfair_key]]
                out[f"fair_hit{suffix}"] = bool(fair[ftf_key] <= min(out[f"fair_{ftf_key}_gavel_srtf"])
                                                and fair[unfair_key] <= min(out[f"fair_{unfair_key}_gavel_srtf"])
                                                and out["fair_jct_vs_fifo"] <= 1.0)
        if {"shockwave-distilled", "shockwave"} <= agents.keys():
            student, teacher = agents["shockwave-distilled"], agents["shockwave"]
            out["distilled_makespan_vs_shockwave"] = student["makespan_s"] / teacher["makespan_s"]
            out["distilled_worst_ftf_vs_shockwave"] = student["worst_ftf"] / teacher["worst_ftf"]
            out["distilled_unfair_themis_minus_shockwave_pp"] = 100 * (
                student["unfair_fraction_themis"] - teacher["unfair_fraction_themis"])
            out["distilled_unfair_static_minus_shockwave_pp"] = 100 * (student["unfair_fraction"] - teacher["unfair_fraction"])
            out["distilled_speedup"] = teacher["decision_ms_per_round"] / student["decision_ms_per_round"]
            out["distilled_hit"] = bool(abs(out["distilled_makespan_vs_shockwave"] - 1) <= 0.05
                                        and out["distilled_worst_ftf_vs_shockwave"] <= 1.25
                                        and abs(out["distilled_unfair_themis_minus_shockwave_pp"]) <= 5
                                        and out["distilled_speedup"] >= 100)
        cells[suite_name] = out
    return cells


def exact_v100_suites(names: str) -> list:
    """``names`` resolved; ``all`` is every V100 suite with exact lengths, and a named
    heterogeneous or regime suite is refused (this script runs traces on ``gpus`` V100s with
    exact lengths)."""
    if names == "all":
        return [suite for suite in resolve_suites("all") if not suite.heterogeneous and suite.exact]
    suites = resolve_suites(names)
    other = [suite.name for suite in suites if suite.heterogeneous or not suite.exact]
    if other:
        raise InputError(f"suites {', '.join(other)} need their cluster types or regime, which this script "
                         "does not carry; use shockwave-gym leaderboard --suites")
    return suites


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("validation", "test"), default="validation")
    parser.add_argument("--suites", default="all",
                        help="comma list of suites, or all (the V100 suites with exact lengths: the learned "
                             "policies need both)")
    parser.add_argument("--agents", nargs="+", default=list(AGENTS))
    parser.add_argument("--traces-per-suite", type=int, default=None, help="only the first N traces of each suite")
    parser.add_argument("--cache", type=Path, default=None, help="JSON file of per-(agent, trace) results, resumable")
    parser.add_argument("--agent-path", action="append", default=[], metavar="AGENT=PATH",
                        help="load a learned agent from these weights instead of the shipped ones (repeatable)")
    args = parser.parse_args()
    paths = {}
    for item in args.agent_path:
        name, sep, path = item.partition("=")
        if not sep or name not in LEARNED or not path:
            parser.error(f"--agent-path expects one of {', '.join(LEARNED)}=PATH, got {item!r}")
        paths[name] = path
    import torch

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    with stdout_to_stderr():
        table = run(args.agents, exact_v100_suites(args.suites), args.split, args.traces_per_suite, args.cache, paths)
    print(json.dumps({"split": args.split, "agents": args.agents, "agent_paths": paths, "table": table,
                      "acceptance": acceptance(table),
                      "wall_s": time.perf_counter() - start}, indent=2))


if __name__ == "__main__":
    main()

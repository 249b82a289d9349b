"""Headroom: normalised scores between FIFO and a clairvoyant reference, per suite and objective,
with paired ratios and bootstrap intervals (docs/HEADROOM.md is generated from its JSON).

    .venv/bin/python benchmarks/headroom.py [--split test] [--suites a,b] [--agents fifo,srtf,...]
        [--out runs/headroom] [--workers 1] [--decisions 16] [--baseline fifo]
        [--json docs/data/headroom.json] [--doc docs/HEADROOM.md]
    .venv/bin/python benchmarks/headroom.py --render docs/data/headroom.json   # the page, from a saved JSON

1. Every agent on every trace of the split, through the leaderboard's runner
   (:func:`shockwave_gym.harness.leaderboard.run_leaderboard`: the same cells, GPUs and seed 0
   as ``shockwave-gym leaderboard``; cells saved in ``--out`` are reused).
2. The clairvoyant reference (:mod:`shockwave_gym.harness.clairvoyant`, not a scheduler) on
   every trace, for avg JCT, makespan and mean fair-share rho (``rho_mean``): the fortified
   rollout lookahead over the rule portfolio (for mean rho with the ``fair-share`` policy in
   it) with ``--decisions`` decision points, or Shockwave's planner with true profiles
   (:func:`~shockwave_gym.harness.clairvoyant.shockwave_oracle`) where that is better; each
   result is saved in ``--out/reference/`` under a key of the trace's bytes and the
   settings, and reused.
3. Scores (:mod:`shockwave_gym.harness.scores`) and paired ratios to ``--baseline``
   (:mod:`shockwave_gym.harness.paired`), from the per-trace figures alone, so the page is a
   pure function of the JSON (a test re-renders it).

Prints the JSON. Every figure in it is a simulated quantity, except the wall times (this
machine, stated as such on the page); Shockwave's figures (its cells and its true-profile
reference) are machine-dependent on a trace where a solve reaches the planner's wall-clock
limit (counted on the page).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from shockwave_gym.harness.clairvoyant import (
    EXTRA_RULES,
    PORTFOLIO,
    portfolio_names,
    rollout_reference,
    shockwave_oracle,
)
from shockwave_gym.harness.paired import ratio_interval, stratified_iqm_interval
from shockwave_gym.harness.scores import FLOOR, MIN_ROOM, SATURATED, overall_scores, suite_scores

AGENTS = ("fifo", "srtf", "wsrpt", "las", "tiresias", "max-rho", "fair-share", "gavel", "gavel-wc", "ppo")
#: agents that are not classical baselines (never on the headroom line)
LEARNED = frozenset({"ppo", "ppo-fair", "shockwave-distilled"})
#: objective -> (heading, reference construction)
OBJECTIVES = {
    "avg_jct_s": ("avg JCT", "rollout"),
    "makespan_s": ("makespan", "rollout"),
    "rho_mean": ("fairness (mean ρ)", "rollout"),
}
FAIR_REFERENCE = "fair-share"
REFERENCE = "reference"


# -- running ---------------------------------------------------------------------------------

def _reference_job(args) -> dict:
    entry, gpus, objective, decisions, path = args
    from shockwave_gym.config import SimConfig
    from shockwave_gym.traces.suites import entry_trace

    trace = entry_trace(entry)
    ref = rollout_reference(trace, SimConfig(gpus=gpus), objective, decisions=decisions)
    record = {"value": ref.value, "method": ref.method, "portfolio_best": min(ref.portfolio_values.values()),
              "portfolio_best_rule": ref.best_rule, "rules_used": ref.rules_used, "switches": ref.switches,
              "simulated_rounds": ref.simulated_rounds, "portfolio_rounds": ref.portfolio_rounds,
              "wall_s": ref.wall_s}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1), encoding="utf-8")
    return record


def _reference_path(out: Path, entry, objective: str, decisions: int) -> Path:
    from shockwave_gym.traces.suites import entry_trace, serialize_trace

    key = hashlib.sha256(serialize_trace(entry_trace(entry)) + f"|{objective}|{decisions}|{','.join(portfolio_names(objective))}"
                         .encode()).hexdigest()[:16]
    return out / "reference" / f"{entry.trace_name}.{objective}.{key}.json"


def _shockwave_oracle_record(out: Path, entry) -> dict:
    """Shockwave with true profiles on one trace (cached in ``out/reference``)."""
    from shockwave_gym.config import SimConfig
    from shockwave_gym.traces.suites import entry_trace, get_suite, serialize_trace

    trace = entry_trace(entry)
    key = hashlib.sha256(serialize_trace(trace) + b"|shockwave-oracle").hexdigest()[:16]
    path = out / "reference" / f"{entry.trace_name}.shockwave-oracle.{key}.json"
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    record = shockwave_oracle(trace, SimConfig(gpus=get_suite(entry.suite).gpus))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1), encoding="utf-8")
    return record


def run(split: str, suites, agents: tuple[str, ...], out: Path, workers: int, decisions: int) -> list[dict]:
    """Per-trace records: suite, trace, gpus, every agent's metrics, the reference's."""
    from shockwave_gym.harness.leaderboard import leaderboard_entries, run_leaderboard
    from shockwave_gym.traces.suites import get_suite

    for needed in (FLOOR, FAIR_REFERENCE):
        if needed not in agents:
            agents = (*agents, needed)
    board = run_leaderboard(split, suites=suites, agents=agents, out=out, workers=workers, progress=False)
    entries = leaderboard_entries(split, suites)
    jobs, records = [], {}
    for entry in entries:
        for objective, (_, method) in OBJECTIVES.items():
            if method != "rollout":
                continue
            path = _reference_path(out, entry, objective, decisions)
            if path.exists():
                records[entry.trace_name, objective] = json.loads(path.read_text(encoding="utf-8"))
            else:
                jobs.append((entry, get_suite(entry.suite).gpus, objective, decisions, path))
    if jobs:
        if workers > 1:
            with ProcessPoolExecutor(workers) as pool:
                done = list(pool.map(_reference_job, jobs))
        else:
            done = [_reference_job(job) for job in jobs]
        for job, record in zip(jobs, done, strict=True):
            records[job[0].trace_name, job[2]] = record
    cells = board.results
    traces = []
    for entry in entries:
        rows = cells[cells["trace"] == entry.trace_name]
        metrics = {row.agent: {o: float(getattr(row, o)) for o in OBJECTIVES} for row in rows.itertuples()}
        planner = _shockwave_oracle_record(out, entry)
        reference = {}
        for objective in OBJECTIVES:
            ref = dict(records[entry.trace_name, objective], rollout=records[entry.trace_name, objective]["value"],
                       shockwave_oracle=planner["metrics"][objective])
            if ref["shockwave_oracle"] < ref["rollout"]:
                ref.update(value=ref["shockwave_oracle"], method="shockwave-oracle")
            reference[objective] = ref
        traces.append({"suite": entry.suite, "trace": entry.trace_name, "gpus": get_suite(entry.suite).gpus,
                       "metrics": metrics, "reference": reference,
                       "shockwave_oracle": {"limit_hits": planner["limit_hits"], "wall_s": planner["wall_s"]}})
    return traces


# -- summarising (a pure function of the per-trace records) ----------------------------------

def _nan_to_none(value: float):
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _clean(item: dict) -> dict:
    return {key: _nan_to_none(value) for key, value in item.items()}


def summarise(traces: list[dict], baseline: str) -> dict:
    """Scores, headroom lines and paired ratios from the per-trace records."""
    suites = list(dict.fromkeys(t["suite"] for t in traces))
    agents = list(dict.fromkeys(a for t in traces for a in t["metrics"]))
    scores, paired = {}, {}
    for objective in OBJECTIVES:
        baselines = [a for a in agents if a not in LEARNED]
        per_suite = []
        for suite in suites:
            chosen = [t for t in traces if t["suite"] == suite]
            metrics = {a: {t["trace"]: t["metrics"][a][objective] for t in chosen if a in t["metrics"]} for a in agents}
            metrics[REFERENCE] = {t["trace"]: t["reference"][objective]["value"] for t in chosen}
            reference = metrics[REFERENCE]
            per_suite.append(suite_scores(suite, metrics, reference, baselines=baselines))
        overall = overall_scores(per_suite)
        scores[objective] = {
            "suites": {s.suite: {"traces": len(s.traces), "no_room": list(s.no_room),
                                 "mean": {a: _nan_to_none(v) for a, v in s.mean.items()},
                                 "headroom": _nan_to_none(s.headroom), "best_baseline": s.best_baseline,
                                 "saturated": s.saturated} for s in per_suite},
            "overall": {a: _nan_to_none(v) for a, v in overall.items()},
        }
        ratios = {}
        for agent in [*agents, REFERENCE]:
            if agent == baseline:
                continue
            by_suite = {}
            for suite in suites:
                values = []
                for t in traces:
                    if t["suite"] != suite or baseline not in t["metrics"]:
                        continue
                    mine = t["reference"][objective]["value"] if agent == REFERENCE else t["metrics"].get(agent, {}).get(objective)
                    base = t["metrics"][baseline][objective]
                    if mine is not None and base and math.isfinite(mine) and math.isfinite(base):
                        values.append(mine / base)
                by_suite[suite] = values
            ratios[agent] = {"suites": {s: _clean(ratio_interval(v).as_dict()) for s, v in by_suite.items()},
                             "overall": _clean(stratified_iqm_interval(by_suite).as_dict())}
        paired[objective] = ratios
    return {"scores": scores, "paired": paired}


def reference_cost(traces: list[dict]) -> dict:
    """What the rollout references cost: simulated rounds (deterministic) and wall seconds (this
    machine), and how much the lookahead gained over the best single rule."""
    rows = [(t["suite"], o, t["reference"][o]) for t in traces for o, (_, m) in OBJECTIVES.items() if m == "rollout"]
    gains = {o: [r["rollout"] / r["portfolio_best"] for _, obj, r in rows if obj == o] for o in OBJECTIVES}
    return {
        "shockwave_oracle_wall_s": sum(t["shockwave_oracle"]["wall_s"] for t in traces),
        "shockwave_oracle_limit_hits": sum(t["shockwave_oracle"]["limit_hits"] > 0 for t in traces),
        "shockwave_oracle_chosen": {o: sum(r["method"] == "shockwave-oracle" for _, obj, r in rows if obj == o)
                                    for o in OBJECTIVES},
        "runs": len(rows),
        "simulated_rounds": sum(r["simulated_rounds"] for _, _, r in rows),
        "portfolio_rounds": sum(r["portfolio_rounds"] for _, _, r in rows),
        "wall_s": sum(r["wall_s"] for _, _, r in rows),
        "rollout_over_portfolio_best": {o: {"mean": sum(g) / len(g), "min": min(g), "improved": sum(x < 1 for x in g),
                                            "traces": len(g)} for o, g in gains.items() if g},
    }


# -- the page ----------------------------------------------------------------------------------

def _score(value) -> str:
    return "—" if value is None else f"{value:.2f}"


def _interval(item: dict) -> str:
    if item["value"] is None:
        return "n/a"
    if item["low"] is None:
        return f"{item['value']:.3f}"
    return f"{item['value']:.3f} [{item['low']:.3f}, {item['high']:.3f}]"


def render(data: dict) -> str:
    """docs/HEADROOM.md from a saved JSON (pure: the same JSON gives the same bytes)."""
    suites = list(data["scores"]["avg_jct_s"]["suites"])
    agents = data["agents"]
    cost = data["reference_cost"]
    command = data["command"]
    lines = [
        "# Headroom: normalised scores between FIFO and a clairvoyant reference",
        "",
        "<!-- generated by benchmarks/headroom.py from docs/data/headroom.json; do not edit by hand -->",
        "",
        f"Every agent below on the {data['split']} split of the task suites ([SUITES.md](SUITES.md)): "
        f"{len(data['traces'])} traces in {len(suites)} suites, agent seed 0, the leaderboard's cells "
        "([LEADERBOARD.md](LEADERBOARD.md)). Regenerate the JSON and this page with",
        "",
        "```sh",
        command,
        "```",
        "",
        "(resumable: the agents' cells and the references are saved in `--out` and reused).",
        "",
        "## The reference is not a scheduler",
        "",
        "The reference reads what no scheduler may: the oracle view (true remaining times) and the "
        "trace's future arrivals (`shockwave_gym/harness/clairvoyant.py`). One per trace and objective, "
        "the better of two constructions:",
        "",
        "- a fortified rollout lookahead over a portfolio of round rules "
        f"({', '.join(f'`{p}`' for p in data['portfolio'])}; `*-oracle` on true remaining times, "
        "`laf-oracle` largest remaining GPU-area first; for fairness also "
        f"{', '.join(f'`{p}`' for p in data['extra_rules'].get('rho_mean', []))}). At each of about "
        f"{data['decisions']} decision points it copies the simulator, plays every rule to the end with the "
        "true future, and follows the best complete schedule found so far, so it is never worse than the "
        "best rule alone. Shockwave is not in the portfolio (a program per round, repeated in every rollout);",
        "- Shockwave's planner with true profiles: the default `shockwave` agent on the oracle view (its "
        "predictor then returns the true remaining time); one episode per trace serves every objective.",
        "",
        "Objectives: avg JCT, makespan, and fairness as the mean fair-share ρ (`rho_mean`, "
        "[METRICS.md](METRICS.md); T_fair does not depend on the schedule, so the mean ρ is a weighted JCT sum "
        "the rollout can minimise). The `fair-share` policy, in the leaderboard's round configuration "
        "(120 s rounds, 20 s restarts), is in the fairness portfolio, so the fairness reference is never "
        "worse than its cell. It cannot be the fairness reference alone: its mean ρ is above FIFO's on "
        f"{data['fair_share_worse_than_fifo']} of the {len(data['traces'])} traces (it bounds every job's "
        "delay, not the mean).",
        "",
        "It is a yardstick, not a bound: an agent can score above 1. A suite marked saturated below has no "
        "room that *this* reference finds; a stronger one (more decision points, a richer portfolio, "
        "Shockwave's program with true profiles, not run here) may find more.",
        "",
        f"**Cost.** {cost['runs']} rollouts (every trace, each objective): {cost['simulated_rounds']:,} "
        f"simulated rounds in all ({cost['portfolio_rounds']:,} of them the portfolio's runs from the start, "
        f"which is what the best single rule costs), {cost['wall_s'] / 60:.1f} min of wall time; Shockwave "
        f"with true profiles: {len(data['traces'])} episodes, {cost['shockwave_oracle_wall_s'] / 60:.1f} min. "
        "Both on a 2-core machine shared with other jobs (load average above 10); wall times are "
        "machine-dependent, unlike every other figure here. The planner stops a solve at a work limit "
        f"(branch-and-bound nodes, docs/SOLVERS.md): it did so on {cost['shockwave_oracle_limit_hits']} of the "
        f"{len(data['traces'])} traces, at the same point on any machine. What the lookahead gains over the best "
        "single rule (rollout / best rule, over the traces), and on how many traces Shockwave with true "
        "profiles beat the rollout and is the reference:",
        "",
        "| objective | mean | best | traces improved | Shockwave (true profiles) chosen |",
        "|---|---|---|---|---|",
    ]
    for objective, gain in cost["rollout_over_portfolio_best"].items():
        lines.append(f"| {OBJECTIVES[objective][0]} | {gain['mean']:.4f} | {gain['min']:.4f} | "
                     f"{gain['improved']} of {gain['traces']} | {cost['shockwave_oracle_chosen'][objective]} |")
    lines += [
        "",
        "## Scores",
        "",
        f"Per trace and objective, score = (m_FIFO − m_agent) / (m_FIFO − m_ref): `{FLOOR}` scores 0, the "
        f"reference 1 (lower m is better). A trace where m_FIFO − m_ref < {data['min_room']:.0%} of m_FIFO "
        "has **no room**: it is left out of that objective's aggregates (counted in the *no room* columns). "
        "A suite's score is the mean over its traces with room; *overall* the mean of the suite scores "
        "(suites with room only). `—`: no trace of the suite has room.",
        "",
        f"**Headroom line**: per suite, the best classical baseline's score (every agent here but the "
        f"learned ones). "
        f"**saturated**: it is at least {data['saturated']:.2f}, the classical rules already take "
        "that share of the reference's gain over FIFO.",
        "",
        "| suite | " + " | ".join(f"{OBJECTIVES[o][0]}: best baseline | no room" for o in OBJECTIVES) + " |",
        "|---|" + "---|---|" * len(OBJECTIVES),
    ]
    for suite in suites:
        cells = []
        for objective in OBJECTIVES:
            s = data["scores"][objective]["suites"][suite]
            if s["headroom"] is None:
                cells.append("—")
            else:
                mark = " **saturated**" if s["saturated"] else ""
                cells.append(f"`{s['best_baseline']}` {s['headroom']:.2f}{mark}")
            cells.append(f"{len(s['no_room'])} of {s['traces']}")
        lines.append(f"| {suite} | " + " | ".join(cells) + " |")
    for objective in OBJECTIVES:
        table = data["scores"][objective]
        lines += [
            "",
            f"### {OBJECTIVES[objective][0]}",
            "",
            "| agent | " + " | ".join(suites) + " | overall |",
            "|---|" + "---|" * (len(suites) + 1),
        ]
        for agent in [*agents, REFERENCE]:
            row = [_score(table["suites"][s]["mean"].get(agent)) for s in suites]
            lines.append(f"| `{agent}` | " + " | ".join(row) + f" | {_score(table['overall'].get(agent))} |")
    baseline = data["baseline"]
    lines += [
        "",
        f"## Paired ratios to `{baseline}`",
        "",
        f"Per trace m_agent / m_{baseline} (same trace, same cluster); per suite their geometric mean with "
        "a 95% percentile bootstrap interval over the suite's traces (`scipy.stats.bootstrap`, 4,000 "
        "resamples, fixed seed); overall the interquartile mean over suites of the suites' log geometric "
        "means, exponentiated, with a stratified bootstrap (each suite's traces resampled within the suite; "
        "`shockwave_gym/harness/paired.py`). Below 1 is better. With 5 traces a suite's interval says how "
        "much its traces disagree, no more.",
    ]
    for objective in OBJECTIVES:
        ratios = data["paired"][objective]
        lines += [
            "",
            f"### {OBJECTIVES[objective][0]} ×{baseline}",
            "",
            "| agent | overall (IQM) | " + " | ".join(suites) + " |",
            "|---|---|" + "---|" * len(suites),
        ]
        for agent in [a for a in [*agents, REFERENCE] if a in ratios]:
            row = [_interval(ratios[agent]["suites"][s]) for s in suites]
            lines.append(f"| `{agent}` | {_interval(ratios[agent]['overall'])} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def build(args) -> dict:
    agents = tuple(a for a in args.agents.split(",") if a)
    traces = run(args.split, args.suites, agents, args.out, args.workers, args.decisions)
    agents = list(dict.fromkeys(a for t in traces for a in t["metrics"]))
    words = ["nice -n 10", ".venv/bin/python benchmarks/headroom.py", f"--split {args.split}"]
    if args.suites:
        words.append(f"--suites {args.suites}")
    words += [f"--agents {','.join(agents)}", f"--decisions {args.decisions}", f"--baseline {args.baseline}",
              "--out runs/headroom --workers 1 --json docs/data/headroom.json --doc docs/HEADROOM.md"]
    return {"split": args.split, "agents": agents, "baseline": args.baseline, "decisions": args.decisions,
            "portfolio": list(PORTFOLIO), "extra_rules": {o: list(r) for o, r in EXTRA_RULES.items()},
            "fair_share_worse_than_fifo": sum(t["metrics"][FAIR_REFERENCE]["rho_mean"] > t["metrics"][FLOOR]["rho_mean"]
                                              for t in traces),
            "min_room": MIN_ROOM, "saturated": SATURATED, "command": " ".join(words),
            "traces": traces, "reference_cost": reference_cost(traces), **summarise(traces, args.baseline)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test", choices=("test", "validation"))
    parser.add_argument("--suites", default=None)
    parser.add_argument("--agents", default=",".join(AGENTS))
    parser.add_argument("--out", type=Path, default=Path("runs/headroom"))
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--decisions", type=int, default=16)
    parser.add_argument("--baseline", default=FLOOR)
    parser.add_argument("--json", type=Path, help="write the JSON here too")
    parser.add_argument("--doc", type=Path, help="write the page here")
    parser.add_argument("--render", type=Path, metavar="JSON", help="print the page from a saved JSON")
    args = parser.parse_args(argv)
    if args.render:
        sys.stdout.write(render(json.loads(args.render.read_text(encoding="utf-8"))))
        return 0
    if args.decisions < 1:
        parser.error(f"--decisions must be >= 1, got {args.decisions}")
    data = build(args)
    text = json.dumps(data, indent=1, allow_nan=False) + "\n"
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text, encoding="utf-8")
    if args.doc:
        args.doc.write_text(render(data), encoding="utf-8")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

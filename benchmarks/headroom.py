"""Headroom: normalised task scores between FIFO and two references, per suite and scored task,
with bootstrap intervals and a Pareto figure per suite (docs/HEADROOM.md is generated from its JSON).

    .venv/bin/python benchmarks/headroom.py [--split test] [--suites a,b] [--agents fifo,srtf,...]
        [--out runs/headroom] [--decisions 16] [--json docs/data/headroom.json]
        [--doc docs/HEADROOM.md] [--figures docs/img]
    .venv/bin/python benchmarks/headroom.py --render docs/data/headroom.json   # the page, from a saved JSON
    .venv/bin/python benchmarks/headroom.py --references-only [--suites ...]   # references alone, beside a run

1. Every agent on every trace of the split (:func:`shockwave_gym.harness.evaluate`, agent
   seed 0, each trace on its suite's cluster and in its suite's information regime, the
   round parameters' defaults; cells saved in ``--out`` are reused). Learned agents run only
   in homogeneous suites in the paper's setting (they read lengths). In a suite whose
   schedulers do not see exact lengths, the classical agents also run on the same true jobs
   with exact lengths: the second reference.
2. The clairvoyant reference (:mod:`shockwave_gym.harness.clairvoyant`, not a scheduler) on
   the true jobs of every trace, for every scored task (:data:`shockwave_gym.tasks.TASKS`):
   the fortified rollout lookahead with ``--decisions`` decision points, or Shockwave's
   planner with true profiles where that is better. Saved in ``--out/reference/`` under a key
   of the jobs' bytes, the cluster, the true jobs' early endings and the settings, so the
   regime variants of a suite share their base suite's references.
3. Scores (:mod:`shockwave_gym.harness.scores`) from the per-trace metrics alone, so the page
   is a pure function of the JSON (a test re-renders it); the Pareto figures
   (:mod:`shockwave_gym.harness.pareto`) from the same JSON.

``--stored-only shockwave`` uses the stored cells of those agents and runs none of them (an
agent missing a trace of a suite is then marked missing there, never filled in).

Prints the JSON. Every figure in it is a simulated quantity, except the wall times (this
machine, stated as such on the page).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
from pathlib import Path

from shockwave_gym.elastic import is_elastic_trace
from shockwave_gym.harness.clairvoyant import (
    ELASTIC_RULES,
    EXTRA_RULES,
    PORTFOLIO,
    portfolio_names,
    rollout_reference,
    shockwave_oracle,
)
from shockwave_gym.harness.scores import (
    FLOOR,
    MIN_ROOM,
    SATURATED,
    score_interval,
    suite_scores,
    task_cost,
    task_has_room,
)
from shockwave_gym.tasks import TASKS

#: The classical baselines (the headroom line takes its best from these).
CLASSICAL = ("fifo", "srtf", "wsrpt", "las", "tiresias", "gittins", "max-rho", "fair-share", "gavel", "gavel-wc")
AGENTS = (*CLASSICAL, "shockwave", "ppo")
#: agents that read the trace's lengths and run only in the paper's setting, homogeneous
LEARNED = frozenset({"ppo", "ppo-fair", "shockwave-distilled"})
#: the objective the reference's rollout minimises for each task (the one-term tasks' costs are
#: increasing affine maps of these metrics on a trace, so the argmin is the same)
TASK_OBJECTIVE = {"jct": "avg_jct_s", "fairness": "rho_mean", "balanced": "balanced"}
#: metrics kept per cell (the tasks' inputs and the Pareto figure's axes)
KEPT = ("avg_jct_s", "rho_mean", "makespan_s", "num_jobs", "gpus", "truncated")
REFERENCE = "clairvoyant"
#: the acceptance threshold on the JCT task: the best classical rule at most this score
SHORT_OF = 0.90


# -- the cases: one per (suite, trace) ------------------------------------------------------------

def _regime_dict(regime) -> dict | None:
    if regime is None:
        return None
    return {"knowledge": regime.knowledge, "early_endings": regime.early_endings, "seed": regime.seed}


def _knows_lengths(regime) -> bool:
    return regime is None or regime.knowledge == "exact"


def cases(split: str, suites) -> list[dict]:
    """Every trace of the split: entry, suite, cluster (``None``: homogeneous), regime; with
    no ``suites``, those of the leaderboard's suites (as ``shockwave-gym leaderboard``)."""
    from shockwave_gym.traces.suites import get_suite, resolve_suites, split_entries

    chosen = [s for s in resolve_suites(suites) if suites not in (None, "all") or s.leaderboard]
    out = []
    for entry in split_entries(chosen, split):
        suite = get_suite(entry.suite)
        regime = getattr(entry, "regime", None)
        base = getattr(suite, "traces_of", None) or suite.name
        out.append({"entry": entry, "suite": suite.name, "base": base, "gpus": suite.gpus,
                    "cluster": suite.cluster_spec if suite.heterogeneous else None, "regime": regime})
    return out


# -- running -------------------------------------------------------------------------------------

def _exact_regime(regime):
    """The same true jobs with exact lengths (the second reference's runs)."""
    from shockwave_gym.harness.clairvoyant import true_jobs_regime

    return true_jobs_regime(regime)


def _default_regime():
    from shockwave_gym.regimes import Regime

    return Regime()


def _cells(agents, group: list[dict], regime, out: Path, stored_only: frozenset) -> dict:
    """(agent, trace) -> metrics of ``agents`` on the group's traces (one cluster, one regime):
    run (resumable) unless the agent is ``stored_only``, then only what the store holds."""
    from shockwave_gym.harness.api import CellsFailed, evaluate

    traces = [c["trace"] for c in group]
    first = group[0]
    where = dict(cluster=first["cluster"]) if first["cluster"] is not None else dict(gpus={c["trace"].name: c["gpus"]
                                                                                         for c in group})
    found = {}
    run = [a for a in agents if a not in stored_only]
    if run:
        try:
            frame = evaluate(run, traces, seeds=(0,), out=out, workers=1, reference=FLOOR, figures=False,
                             progress=False, regime=regime, **where)
        except CellsFailed as failed:
            frame = failed.results
            print(f"{len(failed.errors)} cell(s) failed: {', '.join(failed.errors)}", file=sys.stderr)
        for row in frame.to_dict("records"):
            found[row["agent"], row["trace"]] = {k: row[k] for k in KEPT}
    for agent in [a for a in agents if a in stored_only]:
        found.update(_stored(agent, traces, regime, out, where))
    return found


def _stored(agent: str, traces, regime, out: Path, where: dict) -> dict:
    """Cells of ``agent`` already saved in ``out`` (none run)."""
    from shockwave_gym.harness.grid import (
        build_cells,
        resolve_agents,
        resolve_clusters,
        resolve_throughputs,
        resolve_traces,
    )
    from shockwave_gym.harness.store import CellStore

    table = resolve_throughputs(None)
    gpus = where.get("gpus")
    cluster = where.get("cluster")
    if cluster is not None:
        gpus = cluster.total
    loaded = resolve_traces(traces, gpus, table)
    cells = build_cells(resolve_agents([agent], None), loaded, [0], table, rounds={},
                        clusters=resolve_clusters(loaded, gpus, cluster), raw_throughputs=None, regime=regime)
    store, found = CellStore(out), {}
    for cell in cells:
        record = store.load(cell)
        if record is not None:
            found[agent, record["row"]["trace"]] = {k: record["row"][k] for k in KEPT}
    return found


def _key(case: dict, *parts: str) -> str:
    from shockwave_gym.traces.suites import serialize_trace

    regime = _exact_regime(case["regime"])
    text = f"|{case['cluster'] or case['gpus']}|{json.dumps(_regime_dict(regime))}|" + "|".join(parts)
    return hashlib.sha256(serialize_trace(case["trace"]) + text.encode()).hexdigest()[:16]


def _config(case: dict):
    from shockwave_gym.config import SimConfig

    return SimConfig(cluster=case["cluster"]) if case["cluster"] is not None else SimConfig(gpus=case["gpus"])


def _reference(case: dict, task: str, decisions: int, out: Path) -> dict:
    objective = TASK_OBJECTIVE[task]
    name = case["trace"].name
    elastic = is_elastic_trace(case["trace"].jobs)
    key = _key(case, objective, str(decisions), ",".join(portfolio_names(objective, elastic)))
    path = out / "reference" / f"{name}.{objective}.{key}.json"
    saved = _saved(out, f"{objective}.{key}")
    if saved is not None:
        return saved
    ref = rollout_reference(case["trace"], _config(case), objective, decisions=decisions, regime=case["regime"])
    record = {"objective": objective, "rollout": ref.value, "metrics": {k: ref.metrics[k] for k in KEPT},
              "portfolio_best": min(ref.portfolio_values.values()), "portfolio_best_rule": ref.best_rule,
              "rules_used": ref.rules_used, "switches": ref.switches, "simulated_rounds": ref.simulated_rounds,
              "portfolio_rounds": ref.portfolio_rounds, "wall_s": ref.wall_s}
    _write(path, record)
    return record


def _saved(out: Path, suffix: str) -> dict | None:
    """A saved reference with this objective and key, under any trace's name (a regime variant's
    trace has its base trace's jobs under another name)."""
    for path in sorted((out / "reference").glob(f"*.{suffix}.json")):
        return json.loads(path.read_text(encoding="utf-8"))
    return None


def _write(path: Path, record: dict) -> None:
    """Atomically (a concurrent ``--only references`` run may read it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(record, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def _shockwave_oracle(case: dict, out: Path) -> dict:
    key = _key(case, "shockwave-oracle")
    path = out / "reference" / f"{case['trace'].name}.shockwave-oracle.{key}.json"
    saved = _saved(out, f"shockwave-oracle.{key}")
    if saved is not None:
        return saved
    record = shockwave_oracle(case["trace"], _config(case), regime=case["regime"])
    _write(path, record)
    return record


def _groups(items: list[dict], regime_of) -> list[tuple[object, list[dict]]]:
    groups: dict = {}
    for case in items:
        regime = regime_of(case)
        groups.setdefault((str(case["cluster"]), regime), (regime, []))[1].append(case)
    return list(groups.values())


def references_only(split: str, suites, out: Path, decisions: int, log=print) -> None:
    """Compute and save the references alone (a second process beside the cells' run)."""
    from shockwave_gym.traces.suites import entry_trace

    for case in cases(split, suites):
        case["trace"] = entry_trace(case["entry"])
        start = time.perf_counter()
        for task in TASKS:
            _reference(case, task, decisions, out)
        _shockwave_oracle(case, out)
        log(f"{case['suite']} {case['trace'].name}: {time.perf_counter() - start:.0f} s")


def run(split: str, suites, agents: tuple[str, ...], out: Path, decisions: int, stored_only: frozenset,
        log=print) -> list[dict]:
    """Per-trace records: suite, trace, regime, every agent's metrics, the references'."""
    from shockwave_gym.traces.suites import entry_trace

    chosen = cases(split, suites)
    for case in chosen:
        case["trace"] = entry_trace(case["entry"])
    classical = tuple(a for a in agents if a in CLASSICAL)
    if FLOOR not in classical:
        classical = (FLOOR, *classical)
    others = tuple(a for a in agents if a not in classical)
    metrics: dict = {}
    exact_metrics: dict = {}
    start = time.perf_counter()
    # 1. classical agents: in the suite's regime, and with exact lengths where it hides them
    for regime, group in _groups(chosen, lambda c: c["regime"]):
        metrics.update(_cells(classical, group, regime, out, stored_only))
    hiding = [c for c in chosen if not _knows_lengths(c["regime"])]
    for regime, group in _groups(hiding, lambda c: _exact_regime(c["regime"])):
        # an explicit default regime: a regime suite's trace left to None runs in its suite's
        exact_metrics.update(_cells(classical, group, regime or _default_regime(), out, stored_only))
    log(f"classical cells: {time.perf_counter() - start:.0f} s")
    # 2. the other agents (Shockwave, learned ones): the paper's setting first, then the regimes
    # (where Shockwave plans from beliefs, its slowest cells)
    groups = _groups(chosen, lambda c: c["regime"])
    for hidden in (False, True):
        for agent in others:
            for regime, group in groups:
                if (regime is not None) != hidden:
                    continue
                if agent in LEARNED and (regime is not None or group[0]["cluster"] is not None):
                    continue
                metrics.update(_cells((agent,), group, regime, out, stored_only))
            log(f"{agent}{' (regimes)' if hidden else ''}: {time.perf_counter() - start:.0f} s")
    # 3. the references (shared by the regime variants of a trace through their keys;
    # a --references-only process may have saved them)
    references, oracles = {}, {}
    for case in chosen:
        for task in TASKS:
            references[case["suite"], case["trace"].name, task] = _reference(case, task, decisions, out)
        oracles[case["suite"], case["trace"].name] = _shockwave_oracle(case, out)
    log(f"references: {time.perf_counter() - start:.0f} s")
    records = []
    for case in chosen:
        name = case["trace"].name
        record = {"suite": case["suite"], "base": case["base"], "trace": name, "gpus": case["gpus"],
                  "cluster": None if case["cluster"] is None else str(case["cluster"]),
                  "regime": _regime_dict(case["regime"]),
                  "first_arrival_s": case["trace"].first_arrival_s,
                  "round_s": _config(case).round_s,
                  "metrics": {a: metrics[a, name] for a in agents if (a, name) in metrics},
                  "reference": {task: references[case["suite"], name, task] for task in TASKS},
                  "shockwave_oracle": oracles[case["suite"], name], "reference_key": _key(case, "true-jobs")}
        if not _knows_lengths(case["regime"]):
            record["exact_metrics"] = {a: exact_metrics[a, name] for a in classical if (a, name) in exact_metrics}
        records.append(record)
    return records


# -- summarising (a pure function of the per-trace records) ----------------------------------

def _none(value):
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _interval(values) -> dict:
    return {k: _none(v) for k, v in score_interval(values).as_dict().items()}


def reference_cost(trace: dict, task: str) -> tuple[float, dict, str]:
    """The clairvoyant reference of one trace and task: its cost, metrics and construction (the
    better of the rollout and Shockwave with true profiles; the rollout on ties)."""
    first, round_s = trace["first_arrival_s"], trace["round_s"]
    rollout = trace["reference"][task]["metrics"]
    oracle = trace["shockwave_oracle"]["metrics"]
    a = task_cost(task, rollout, first_arrival_s=first, round_s=round_s)
    b = task_cost(task, oracle, first_arrival_s=first, round_s=round_s)
    if math.isfinite(b) and b < a:
        return b, oracle, "shockwave-oracle"
    return a, rollout, "rollout"


def _costs(traces: list[dict], task: str, field: str) -> dict:
    out: dict = {}
    for t in traces:
        for agent, m in t.get(field, {}).items():
            out.setdefault(agent, {})[t["trace"]] = task_cost(task, m, first_arrival_s=t["first_arrival_s"],
                                                              round_s=t["round_s"])
    return out


def suite_task(traces: list[dict], task: str) -> dict:
    """One suite and task: scores of every agent with intervals, the two references."""
    refs = {t["trace"]: reference_cost(t, task) for t in traces}
    reference = {name: r[0] for name, r in refs.items()}
    room = {t["trace"]: FLOOR in t["metrics"] and task_has_room(
        task, t["metrics"][FLOOR], refs[t["trace"]][1], first_arrival_s=t["first_arrival_s"], round_s=t["round_s"])
        for t in traces}
    costs = _costs(traces, task, "metrics")
    present = [a for a in CLASSICAL if a in costs]
    scores = suite_scores("", costs, reference, baselines=present, room=room)
    n_room = len(scores.traces) - len(scores.no_room)
    agents = {}
    for agent, per_trace in scores.per_trace.items():
        complete = len(per_trace) == n_room and n_room > 0
        agents[agent] = _interval(per_trace.values()) if complete else None
    row = {"traces": len(traces), "no_room": list(scores.no_room),
           "methods": {m: sum(r[2] == m for r in refs.values()) for m in ("rollout", "shockwave-oracle")},
           "scores": agents, "best_classical": scores.best_baseline, "saturated": scores.saturated}
    if n_room == 0:
        row.update(exact_reference=None, exact_score=None, information=None)
        return row
    if "exact_metrics" in traces[0]:
        exact_costs = _costs(traces, task, "exact_metrics")
        exact_costs[FLOOR] = costs[FLOOR]  # FIFO does not read lengths: the same schedule
        exact = suite_scores("", exact_costs, reference, baselines=[a for a in CLASSICAL if a in exact_costs],
                             room=room)
        exact_agent, exact_per_trace = exact.best_baseline, exact.per_trace.get(exact.best_baseline, {})
    else:
        exact_agent, exact_per_trace = scores.best_baseline, scores.per_trace.get(scores.best_baseline, {})
    row["exact_reference"] = exact_agent
    row["exact_score"] = _interval(exact_per_trace.values()) if len(exact_per_trace) == n_room else None
    best = scores.per_trace.get(scores.best_baseline, {})
    if exact_agent is not None and len(exact_per_trace) == n_room and len(best) == n_room:
        row["information"] = _interval([exact_per_trace[t] - best[t] for t in best])
    else:
        row["information"] = None
    return row


def summarise(traces: list[dict]) -> dict:
    """Per task and suite (:func:`suite_task`), and the JCT-task acceptance list."""
    suites = list(dict.fromkeys(t["suite"] for t in traces))
    scores = {task: {s: suite_task([t for t in traces if t["suite"] == s], task) for s in suites} for task in TASKS}
    regime = {t["suite"]: t["regime"] for t in traces}
    short = []
    for suite, row in scores["jct"].items():
        knowledge = (regime[suite] or {}).get("knowledge", "exact")
        best = row["scores"].get(row["best_classical"]) if row["best_classical"] else None
        if knowledge != "exact" and best is not None and best["value"] <= SHORT_OF:
            short.append(suite)
    return {"scores": scores, "jct_short_of_reference": short}


def reference_costs(traces: list[dict]) -> dict:
    """What the references cost: rollouts (simulated rounds, deterministic; wall seconds) over
    the distinct true-job sets, Shockwave with true profiles, and the lookahead's gain."""
    seen, rows, oracles = set(), [], []
    for t in traces:
        if t["reference_key"] in seen:
            continue
        seen.add(t["reference_key"])
        rows += [(task, t["reference"][task]) for task in TASKS]
        oracles.append(t["shockwave_oracle"])
    gains = {task: [r["rollout"] / r["portfolio_best"] for k, r in rows if k == task and r["portfolio_best"] > 0]
             for task in TASKS}
    return {"distinct_traces": len(oracles), "runs": len(rows),
            "simulated_rounds": sum(r["simulated_rounds"] for _, r in rows),
            "portfolio_rounds": sum(r["portfolio_rounds"] for _, r in rows),
            "wall_s": sum(r["wall_s"] for _, r in rows),
            "shockwave_oracle_wall_s": sum(o["wall_s"] for o in oracles),
            "shockwave_oracle_limit_hits": sum(o["limit_hits"] > 0 for o in oracles),
            "rollout_over_portfolio_best": {task: {"mean": sum(g) / len(g), "min": min(g),
                                                   "improved": sum(x < 1 for x in g), "traces": len(g)}
                                            for task, g in gains.items() if g}}


def pareto_points(traces: list[dict]) -> dict:
    """Per suite: agent -> (mean avg JCT s, mean rho, mean makespan s), and the JCT and
    fairness tasks' clairvoyant references as points."""
    from shockwave_gym.harness.pareto import suite_points

    out = {}
    for suite in dict.fromkeys(t["suite"] for t in traces):
        chosen = [t for t in traces if t["suite"] == suite]
        by_agent: dict = {}
        for t in chosen:
            for agent, m in t["metrics"].items():
                by_agent.setdefault(agent, {})[t["trace"]] = m
        refs = {}
        for task in ("jct", "fairness"):
            refs[f"reference ({task})"] = {t["trace"]: reference_cost(t, task)[1] for t in chosen}
        out[suite] = {"agents": {a: list(p) for a, p in suite_points(by_agent).items()},
                      "references": {a: list(p) for a, p in suite_points(refs).items()}}
    return out


# -- the page ----------------------------------------------------------------------------------

def _fmt(item: dict | None, digits: int = 2) -> str:
    if item is None or item.get("value") is None:
        return "—"
    if item.get("low") is None:
        return f"{item['value']:.{digits}f}"
    return f"{item['value']:.{digits}f} [{item['low']:.{digits}f}, {item['high']:.{digits}f}]"


def _value(item: dict | None) -> str:
    return "—" if item is None or item.get("value") is None else f"{item['value']:.2f}"


def _regime_text(regime: dict | None) -> str:
    if regime is None:
        return "exact"
    text = regime["knowledge"]
    if regime["early_endings"]:
        text += f", {regime['early_endings']:.0%} end early"
    return text


def figure_name(suite: str) -> str:
    return f"headroom_pareto_{suite}.png"


def render(data: dict) -> str:
    """docs/HEADROOM.md from a saved JSON (pure: the same JSON gives the same bytes)."""
    traces = data["traces"]
    suites = list(dict.fromkeys(t["suite"] for t in traces))
    regime = {t["suite"]: t["regime"] for t in traces}
    cluster = {t["suite"]: t["cluster"] or f"v100={t['gpus']}" for t in traces}
    cost = data["reference_cost"]
    agents = data["agents"]
    lines = [
        "# Headroom: task scores between FIFO and two references",
        "",
        "<!-- generated by benchmarks/headroom.py from docs/data/headroom.json; do not edit by hand -->",
        "",
        f"Every agent on the {data['split']} split of the task suites ([SUITES.md](SUITES.md)): "
        f"{len(traces)} traces in {len(suites)} suites, each on its suite's cluster and in its suite's "
        "information regime ([SEMANTICS.md](SEMANTICS.md), \"Information regimes\"), agent seed 0, the default "
        "round parameters. Scored per task (`shockwave_gym/tasks.py`: `jct`, `fairness`, `balanced`). "
        "Regenerate the JSON, this page and the figures with",
        "",
        "```sh",
        data["command"],
        "```",
        "",
        "(resumable: the agents' cells and the references are saved in `--out` and reused).",
        "",
    ]
    if data.get("missing"):
        lines += ["**Not run:** " + data["missing"], ""]
    lines += [
        "## Scores",
        "",
        "Per trace and task, score = (c_FIFO − c_agent) / (c_FIFO − c_ref), c the task's episode cost "
        "(`Task.cost`, from the episode's metrics, the trace's first arrival and the run's round length): "
        f"`{FLOOR}` scores 0, the clairvoyant reference 1. For `jct` and `fairness` the cost is an increasing "
        "affine map of avg JCT and mean fair-share ρ on a trace, so those scores are the metrics' own. A trace "
        f"where the reference gains less than {data['min_room']:.0%} over FIFO (on the task's metric; for "
        "`balanced` on its cost) has **no room** and is left out of that task's scores. A suite's score is the "
        "mean over its traces with room, with a 95% percentile bootstrap interval over those traces "
        "(`scipy.stats.bootstrap`, 4,000 resamples, fixed seed; `shockwave_gym/harness/paired.py`). With 5 "
        "traces an interval says how much the traces disagree, no more. An agent can score above 1: the "
        "reference is a yardstick, not a bound. On an elastic suite (`elastic-nominal`) the reference's portfolio "
        f"also holds the elastic rules {', '.join(f'`{r}`' for r in data.get('elastic_rules', ()))}, which choose "
        "GPU counts, so the reference is never worse than any of them there.",
        "",
        "Per suite and task: the best classical baseline (of "
        f"{', '.join(f'`{a}`' for a in CLASSICAL)}; by suite score), Shockwave, and the two references:",
        "",
        "- **clairvoyant** (1 by construction): the oracle view and the future arrivals, on the regime's true jobs "
        "(below);",
        "- **exact lengths**: the best classical rule on the same true jobs with exact lengths, scored on the same "
        "scale. In a suite whose schedulers see exact lengths it is the best classical baseline itself; elsewhere "
        "the gap *exact lengths − best classical* (per trace, with its interval) is what knowing the lengths "
        "is worth to the classical rules.",
        "",
        f"**saturated**: the best classical baseline scores at least {data['saturated']:.2f}.",
    ]
    short = data["jct_short_of_reference"]
    lines += [
        "",
        f"**Regimes where the best classical rule is at least {1 - SHORT_OF:.0%} short of the clairvoyant "
        f"reference on the JCT task** (score ≤ {SHORT_OF:.2f}): "
        + (", ".join(f"`{s}`" for s in short) if short else "none") + ".",
    ]
    for task in TASKS:
        table = data["scores"][task]
        lines += [
            "",
            f"### Task `{task}` ({TASKS[task].title})",
            "",
            "| suite | regime | no room | best classical | Shockwave | exact lengths | information | clairvoyant: rollout / Shockwave |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for suite in suites:
            row = table[suite]
            best = row["best_classical"]
            mark = " **saturated**" if row["saturated"] else ""
            best_text = "—" if best is None else f"`{best}` {_fmt(row['scores'].get(best))}{mark}"
            sw = _fmt(row["scores"].get("shockwave")) if "shockwave" in row["scores"] else "not run"
            if row["exact_reference"] is None:
                exact = "—"
            elif regime[suite] is None or regime[suite]["knowledge"] == "exact":
                exact = "(the best classical)"
            else:
                exact = f"`{row['exact_reference']}` {_fmt(row['exact_score'])}"
            info = "—" if regime[suite] is None or regime[suite]["knowledge"] == "exact" else _fmt(row["information"])
            lines.append(f"| {suite} | {_regime_text(regime[suite])} | {len(row['no_room'])} of {row['traces']} | "
                         f"{best_text} | {sw} | {exact} | {info} | {row['methods']['rollout']} / "
                         f"{row['methods']['shockwave-oracle']} |")
    lines += [
        "",
        "## Every agent",
        "",
        "Suite scores (means over the traces with room; `—`: no room, or the agent did not run every trace "
        "of the suite; learned agents run only in homogeneous suites with exact lengths).",
    ]
    for task in TASKS:
        table = data["scores"][task]
        lines += ["", f"### `{task}`", "", "| suite | " + " | ".join(f"`{a}`" for a in agents) + " |",
                  "|---|" + "---|" * len(agents)]
        for suite in suites:
            cells = table[suite]["scores"]
            lines.append(f"| {suite} | " + " | ".join(_value(cells.get(a)) for a in agents) + " |")
    lines += [
        "",
        "## The references",
        "",
        "**Clairvoyant** (`shockwave_gym/harness/clairvoyant.py`), not a scheduler: it reads the oracle view "
        "(true remaining times) and the trace's future arrivals. Per trace and task the better of two "
        "constructions:",
        "",
        "- a fortified rollout lookahead over a portfolio of round rules "
        f"({', '.join(f'`{p}`' for p in data['portfolio'])}; `*-oracle` on true remaining times, `laf-oracle` "
        "largest remaining GPU-area first; for `fairness` also "
        f"{', '.join(f'`{p}`' for p in data['extra_rules'].get('fairness', []))}, for `balanced` also "
        f"{', '.join(f'`{p}`' for p in data['extra_rules'].get('balanced', []))}). At each of about "
        f"{data['decisions']} decision points it copies the simulator, plays every rule to the end with the true "
        "future and follows the best complete schedule found so far for the task's objective (avg JCT for `jct`, "
        "mean ρ for `fairness`, the task's cost for `balanced`), so it is never worse than the best rule alone;",
        "- Shockwave's planner with true profiles: the default `shockwave` agent on the oracle view; one episode "
        "per trace serves every task.",
        "",
        "The table's last column counts the traces where each construction is the reference. In an information "
        "regime the reference schedules the regime's **true jobs**: the trace's jobs, or with early endings the "
        "jobs as they really end (`apply_regime` with the regime's early endings and seed, exact knowledge); what "
        "the regime hides does not matter to it, so a regime variant without early endings shares its base "
        "suite's reference. Heterogeneous suites: the rollout and Shockwave run on the suite's typed cluster "
        "(the rules pack with `pack_for_cluster`).",
        "",
        "**Exact lengths**: every classical agent's cell on the same true jobs with exact knowledge (the same "
        "early endings and seed); the best by suite score on the task.",
        "",
        f"**Cost.** {cost['runs']} rollouts ({cost['distinct_traces']} distinct true-job sets, every task): "
        f"{cost['simulated_rounds']:,} simulated rounds ({cost['portfolio_rounds']:,} of them the portfolio's "
        f"runs from the start, what the best single rule costs), {cost['wall_s'] / 60:.1f} min of wall time; "
        f"Shockwave with true profiles: {cost['distinct_traces']} episodes, "
        f"{cost['shockwave_oracle_wall_s'] / 60:.1f} min. Wall times on a 2-core machine shared with other jobs; "
        "they are machine-dependent, unlike every other figure here. The planner stopped a solve at its work "
        f"limit (docs/SOLVERS.md) on {cost['shockwave_oracle_limit_hits']} of those episodes. What the lookahead "
        "gains over the best single rule (rollout / best rule, in the objective it minimises):",
        "",
        "| task | mean | best | traces improved |",
        "|---|---|---|---|",
    ]
    for task, gain in cost["rollout_over_portfolio_best"].items():
        lines.append(f"| `{task}` | {gain['mean']:.4f} | {gain['min']:.4f} | {gain['improved']} of {gain['traces']} |")
    lines += [
        "",
        "## Pareto figures",
        "",
        "Per suite every agent on avg JCT (x) against mean fair-share ρ (y), suite means, makespan as colour; the "
        "clairvoyant references of the `jct` and `fairness` tasks as stars; agents no other agent beats on both "
        "axes ringed (`shockwave_gym/harness/pareto.py`).",
        "",
    ]
    for suite in suites:
        lines.append(f"- {suite} ({cluster[suite]}, {_regime_text(regime[suite])}): "
                     f"[img/{figure_name(suite)}](img/{figure_name(suite)})")
    return "\n".join(lines) + "\n"


def write_figures(data: dict, folder: Path) -> list[Path]:
    from shockwave_gym.harness.pareto import save_pareto

    paths = []
    for suite, points in data["pareto"].items():
        regime = next(t["regime"] for t in data["traces"] if t["suite"] == suite)
        paths.append(save_pareto(folder / figure_name(suite), {a: tuple(p) for a, p in points["agents"].items()},
                                 f"{suite} ({_regime_text(regime)}): {data['split']} split",
                                 {a: tuple(p) for a, p in points["references"].items()}))
    return paths


def command(args, agents) -> str:
    words = ["nice -n 10", ".venv/bin/python benchmarks/headroom.py", f"--split {args.split}"]
    if args.suites:
        words.append(f"--suites {args.suites}")
    words += [f"--agents {','.join(agents)}", f"--decisions {args.decisions}", "--out runs/headroom",
              "--json docs/data/headroom.json --doc docs/HEADROOM.md --figures docs/img"]
    return " ".join(words)


def assemble(traces: list[dict], args, agents, missing: str = "") -> dict:
    data = {"split": args.split, "agents": agents, "decisions": args.decisions, "portfolio": list(PORTFOLIO),
            "extra_rules": {o: list(r) for o, r in EXTRA_RULES.items()}, "elastic_rules": list(ELASTIC_RULES),
            "min_room": MIN_ROOM,
            "saturated": SATURATED, "command": command(args, agents), "missing": missing, "traces": traces}
    data.update(reference_cost=reference_costs(traces), **summarise(traces), pareto=pareto_points(traces))
    return data


def _missing(traces: list[dict], agents) -> str:
    """Which agents lack cells, per suite (learned agents outside their suites not counted)."""
    parts = []
    for suite in dict.fromkeys(t["suite"] for t in traces):
        chosen = [t for t in traces if t["suite"] == suite]
        exact = chosen[0]["regime"] is None and chosen[0]["cluster"] is None
        lacking = [a for a in agents if (exact or a not in LEARNED) and any(a not in t["metrics"] for t in chosen)]
        if lacking:
            parts.append(f"{', '.join(f'`{a}`' for a in lacking)} in {suite}")
    return "; ".join(parts) + ("." if parts else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test", choices=("test", "validation"))
    parser.add_argument("--suites", default=None)
    parser.add_argument("--agents", default=",".join(AGENTS))
    parser.add_argument("--out", type=Path, default=Path("runs/headroom"))
    parser.add_argument("--decisions", type=int, default=16)
    parser.add_argument("--stored-only", default="", help="agents whose stored cells are used and none run")
    parser.add_argument("--references-only", action="store_true",
                        help="only compute and save the references (beside a run of the cells)")
    parser.add_argument("--json", type=Path, help="write the JSON here too")
    parser.add_argument("--doc", type=Path, help="write the page here")
    parser.add_argument("--figures", type=Path, help="write the Pareto figures in this folder")
    parser.add_argument("--render", type=Path, metavar="JSON", help="print the page from a saved JSON")
    args = parser.parse_args(argv)
    if args.render:
        sys.stdout.write(render(json.loads(args.render.read_text(encoding="utf-8"))))
        return 0
    if args.decisions < 1:
        parser.error(f"--decisions must be >= 1, got {args.decisions}")
    if args.references_only:
        references_only(args.split, args.suites, args.out, args.decisions,
                        log=lambda text: print(text, file=sys.stderr, flush=True))
        return 0
    agents = tuple(dict.fromkeys(a for a in args.agents.split(",") if a))
    stored_only = frozenset(a for a in args.stored_only.split(",") if a)
    traces = run(args.split, args.suites, agents, args.out, args.decisions, stored_only,
                 log=lambda text: print(text, file=sys.stderr, flush=True))
    ran = [a for a in agents if any(a in t["metrics"] for t in traces)]
    data = assemble(traces, args, ran, _missing(traces, ran))
    text = json.dumps(data, indent=1, allow_nan=False) + "\n"
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text, encoding="utf-8")
    if args.doc:
        args.doc.write_text(render(data), encoding="utf-8")
    if args.figures:
        write_figures(data, args.figures)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Learned vs classical: the shipped per-task policies against the best classical rule, per
task and test suite, with paired intervals over training seeds and traces.

What is compared (docs/TRAINING.md, "Learned vs classical" has the generated table):

* **Learned**: the three per-task policies (``TASK_POLICIES``: ``ppo-jct``, ``ppo-fairness``,
  ``cem-balanced``), each trained with 5 seeds. Every seed's policy (``--runs``: folders of
  training outputs ``<task>-s<seed>``; each task's runs from the one folder whose runs are of
  its shipped policy's kind, :func:`task_runs`) plays every test trace of the chosen suites (default: every leaderboard
  suite without elastic jobs, whose counts these policies cannot choose; the elastic suite is
  judged with ``ppo-elastic``, below), in the trace's own regime
  and on its own cluster, with 200 observation slots. A (task, suite) cell judges the task's
  own policy (chosen before the test split was seen); the other two policies' values are
  shown beside it, for information only.
* **Classical**: every rule of the headroom study that is not learned (FIFO, SRTF, weighted
  SRPT, LAS, Tiresias, Gittins, max-rho, fair-share, Gavel and its work-conserving form,
  Shockwave and the elastic baselines) and has a cell on every trace of the suite, read
  from the headroom study's saved cells (docs/data/headroom.json: the test split, seed 0, the
  leaderboard's configuration). Before any learned run, FIFO is run on every trace through the
  same path and must give the saved FIFO metrics exactly, so both sides ran the same episode
  setup. The *best classical* rule of a cell is the one with the lowest geometric mean over
  the suite's traces of its judged measure / FIFO's.
* **The judged measure** of a task (docs/TASKS.md): avg JCT for ``jct``, mean fair-share rho
  (JCT / time in the fluid equal-share reference, docs/METRICS.md) for ``fairness``, the task
  cost for ``balanced``. Its **normalised score** on a trace is the measure divided by FIFO's
  on the same trace (lower is better); learned against classical is then the paired ratio
  learned / best classical, trace by trace.
* **IQM over seeds**: per seed the geometric mean of the ratios over the suite's traces; the
  cell's value is the interquartile mean of the 5 seeds' values (the middle three), with a
  percentile bootstrap interval over the traces, one draw shared by the seeds, which played
  the same traces (:func:`shockwave_gym.harness.paired.seed_iqm_interval`).
* **Aim** (issue 35): ahead by at least 5% (ratio <= 0.95) on the ``balanced`` task and in the
  ``estimate`` and ``unknown`` regimes; elsewhere never behind by more than 2% (ratio <= 1.02).
  ``met`` compares the point estimate with the aim.
* Beside it, the headroom's **clairvoyant-normalised score** (FIFO 0, the clairvoyant
  reference 1, traces with room only; docs/HEADROOM.md) of the best learned policy (IQM over
  seeds) and of the best classical rule; and the **clairvoyant** ratio: the same geometric mean
  for the headroom study's clairvoyant reference (the oracle view, the future arrivals, the
  regime's true lengths) against the best classical rule, how far ahead of the rule a
  scheduler that knows everything got. It is a yardstick, not a bound (docs/HEADROOM.md), but
  a cell where it misses the aim asks a policy that sees less to beat what it reached.

**Elastic cells** (``--elastic-runs``; docs/TRAINING.md, "Learned vs classical on elastic
traces"): the shipped elastic policy (``ppo-elastic``, the ``jct`` task; its 5 seeds in
``<elastic-runs>/jct-s<seed>``) on every test trace of the elastic suites, judged the same way
against two opponents: the **best elastic baseline** (the best, by the same geometric mean,
of the rules that choose GPU counts: ``sia``, ``pollux``, ``elastic-srpt``,
``elastic-max-min``) and the **best rigid rule** (the best of every other non-learned rule
of the headroom study). Aim: within 2% (ratio <= 1.02), the exact regime's. They are saved
under the JSON's ``elastic`` key; ``--elastic-runs`` without ``--runs`` keeps the rest of
``--json`` as it is.

    python benchmarks/learned_vs_classical.py --runs runs/lvc-ppo runs/lvc-cem --suites canonical-unknown \\
        --json docs/data/learned_vs_classical.json --doc docs/TRAINING.md   # JSON summary on stdout
    python benchmarks/learned_vs_classical.py --elastic-runs /tmp/lel_runs \\
        --json docs/data/learned_vs_classical.json --doc docs/TRAINING.md
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import math
import sys
from pathlib import Path

from shockwave_agents.learned.pretrained import TASK_POLICIES
from shockwave_agents.registry import agent_entry
from shockwave_gym.harness.paired import geomean, iqm, seed_iqm_interval
from shockwave_gym.harness.scores import task_cost, task_has_room

ROOT = Path(__file__).resolve().parents[1]
HEADROOM_JSON = ROOT / "docs" / "data" / "headroom.json"
DATA = ROOT / "docs" / "data" / "learned_vs_classical.json"
SEEDS = (0, 1, 2, 3, 4)
SLOTS = 200
AHEAD, WITHIN = 0.95, 1.02
BEGIN, END = "<!-- learned-vs-classical:begin -->", "<!-- learned-vs-classical:end -->"
ELASTIC_BEGIN, ELASTIC_END = "<!-- learned-elastic:begin -->", "<!-- learned-elastic:end -->"
#: The shipped elastic policy, its task and the suites it is judged on (test split).
ELASTIC_POLICY, ELASTIC_TASK, ELASTIC_SUITES = "ppo-elastic", "jct", "elastic-nominal"


@functools.cache
def _headroom():
    """benchmarks/headroom.py (its cases, episode setup and references), loaded once."""
    spec = importlib.util.spec_from_file_location("headroom_bench", ROOT / "benchmarks" / "headroom.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- running ----------------------------------------------------------------------------------

def _episode(agent, case) -> dict:
    from shockwave_gym.runner import run_episode

    headroom = _headroom()
    outcome = run_episode(case["trace"], agent, headroom._config(case), progress=False, regime=case["regime"])
    return {k: outcome.metrics[k] for k in headroom.KEPT}


def _checked_cases(suites):
    """The headroom study's test cases of ``suites``, each with its trace, after FIFO played
    it through this path and gave the saved FIFO metrics exactly."""
    from shockwave_agents import make_agent
    from shockwave_gym.traces.suites import entry_trace

    saved = {t["trace"]: t for t in json.loads(HEADROOM_JSON.read_text(encoding="utf-8"))["traces"]}
    for case in _headroom().cases("test", suites):
        case["trace"] = entry_trace(case["entry"])
        name = case["trace"].name
        fifo = _episode(make_agent("fifo"), case)
        if fifo != saved[name]["metrics"]["fifo"]:
            raise RuntimeError(f"{name}: FIFO here {fifo} differs from the saved cell {saved[name]['metrics']['fifo']}")
        yield case, name


def rigid_suites() -> str:
    """The leaderboard's suites without elastic jobs: the per-task policies' default. Elastic
    suites are judged with the elastic policy (``--elastic-runs``), which can choose GPU counts."""
    from shockwave_gym.traces.suites import resolve_suites

    return ",".join(s.name for s in resolve_suites(None) if s.leaderboard and not s.elastic)


def start_agent(prior: str):
    """The untrained policy every run with ``--prior prior`` starts from: its skip term alone
    decides (the deep term's output layer starts at 0, so the sizes do not matter)."""
    from shockwave_agents.learned.adapter import PolicyAgent
    from shockwave_agents.learned.inference import NumpySlotNetwork
    from shockwave_agents.learned.weights import build_policy

    policy = build_policy("ppo", "priority", SLOTS, embed_dim=32, hidden_dim=64, prior=prior, obs_version=3)
    return PolicyAgent(NumpySlotNetwork.from_policy(policy), "priority", name=f"start-{prior}")


def task_runs(folders, seeds=SEEDS) -> dict[str, Path]:
    """Per task, the one folder of ``folders`` whose ``<task>-s<seed>`` runs (every seed) are
    of the task's shipped policy's kind (:func:`~shockwave_agents.learned.kinds.kind_of`: a
    PPO run, a search run, ...), so a folder of PPO runs and one of search runs can be given
    together; none or several is one ``InputError`` line."""
    from shockwave_agents.learned.kinds import kind_of
    from shockwave_agents.learned.pretrained import pretrained_path
    from shockwave_agents.learned.weights import read_meta
    from shockwave_gym.errors import InputError

    chosen = {}
    for task, policy in TASK_POLICIES.items():
        kind = kind_of(read_meta(pretrained_path(policy).with_suffix(".json")))
        matches = [Path(f) for f in folders
                   if all((Path(f) / f"{task}-s{s}" / "policy.json").is_file() for s in seeds)
                   and all(kind_of(read_meta(Path(f) / f"{task}-s{s}" / "policy.json")) == kind for s in seeds)]
        if len(matches) != 1:
            found = "none" if not matches else ", ".join(map(str, matches))
            raise InputError(f"--runs: the {task} task's policy ({policy}) is a {kind!r} policy; the folders holding "
                             f"{task}-s{seeds[0]}..{seeds[-1]} runs of that kind: {found} (need exactly one)")
        chosen[task] = matches[0]
    return chosen


def run(runs, suites: str | None, seeds=SEEDS, log=print, start: str | None = None) -> dict:
    """Every seed's policy of every task on every test trace of ``suites`` (None:
    :func:`rigid_suites`), each task's runs from its folder of ``runs`` (:func:`task_runs`);
    with ``start``, also the untrained policy of that prior."""
    from shockwave_agents.learned.pretrained import load_agent

    suites = rigid_suites() if suites is None else suites
    folders = task_runs([runs] if isinstance(runs, (str, Path)) else runs, seeds)
    first = start_agent(start) if start else None  # one agent: each episode resets it
    traces = []
    for case, name in _checked_cases(suites):
        learned = {}
        for task in TASK_POLICIES:
            for seed in seeds:
                agent = load_agent(folders[task] / f"{task}-s{seed}", name=TASK_POLICIES[task], max_jobs=SLOTS)
                learned.setdefault(TASK_POLICIES[task], {})[str(seed)] = _episode(agent, case)
        log(f"[learned-vs-classical] {name}: done")
        traces.append({"suite": case["suite"], "trace": name, "learned": learned,
                       **({"start": _episode(first, case)} if first else {})})
    return {"suites": list(dict.fromkeys(t["suite"] for t in traces)), "seeds": list(seeds),
            "policies": dict(TASK_POLICIES), "slots": SLOTS, "traces": traces, **({"start": start} if start else {})}


def run_elastic(runs: Path, suites: str = ELASTIC_SUITES, seeds=SEEDS, log=print) -> dict:
    """Every seed of the elastic policy (``runs/jct-s<seed>``) on every test trace of ``suites``."""
    from shockwave_agents.learned.pretrained import load_agent

    traces = []
    for case, name in _checked_cases(suites):
        learned = {str(seed): _episode(load_agent(runs / f"{ELASTIC_TASK}-s{seed}", name=ELASTIC_POLICY, max_jobs=SLOTS), case)
                   for seed in seeds}
        log(f"[learned-vs-classical] {name}: done (elastic)")
        traces.append({"suite": case["suite"], "trace": name, "learned": {ELASTIC_POLICY: learned}})
    return {"suites": list(dict.fromkeys(t["suite"] for t in traces)), "seeds": list(seeds), "task": ELASTIC_TASK,
            "policy": ELASTIC_POLICY, "slots": SLOTS, "traces": traces}


# -- the summary ------------------------------------------------------------------------------

def judged(task: str, metrics: dict, trace: dict) -> float:
    """The task's judged measure of one episode (lower is better)."""
    if task == "jct":
        return float(metrics["avg_jct_s"])
    if task == "fairness":
        return float(metrics["rho_mean"])
    return task_cost(task, metrics, first_arrival_s=trace["first_arrival_s"], round_s=trace["round_s"])


def classical_rules(saved: list[dict]) -> list[str]:
    """The rules with a saved cell on every trace of ``saved`` that are not learned policies."""
    common = set.intersection(*(set(t["metrics"]) for t in saved))
    return sorted(a for a in common if not getattr(agent_entry(a), "learned", False))


def _best_classical(task: str, saved: list[dict], rules: list[str] | None = None) -> str:
    """The classical rule (of ``rules``, default all) with the lowest geometric mean of
    measure / FIFO's (ties: by name)."""
    def ratio(agent):
        return geomean([judged(task, t["metrics"][agent], t) / judged(task, t["metrics"]["fifo"], t) for t in saved])

    return min(classical_rules(saved) if rules is None else rules, key=ratio)


def _scores(task: str, saved: list[dict], metrics_of) -> list[float]:
    """Clairvoyant-normalised scores (FIFO 0, reference 1) on the traces with room."""
    reference_cost = _headroom().reference_cost
    out = []
    for t in saved:
        ref_cost, ref_metrics, _ = reference_cost(t, task)
        fifo = t["metrics"]["fifo"]
        if task_has_room(task, fifo, ref_metrics, first_arrival_s=t["first_arrival_s"], round_s=t["round_s"]):
            fifo_cost = task_cost(task, fifo, first_arrival_s=t["first_arrival_s"], round_s=t["round_s"])
            cost = task_cost(task, metrics_of(t), first_arrival_s=t["first_arrival_s"], round_s=t["round_s"])
            out.append((fifo_cost - cost) / (fifo_cost - ref_cost))
    return out


def _learned_cell(task: str, policy: str, saved: list[dict], ran: dict, best: str, seeds) -> dict:
    ratios = {s: [judged(task, ran[t["trace"]][policy][s], t) / judged(task, t["metrics"][best], t) for t in saved]
              for s in seeds}
    scores = [_scores(task, saved, lambda t, s=s: ran[t["trace"]][policy][s]) for s in seeds]
    means = [sum(v) / len(v) for v in scores if v]
    return {"policy": policy, "ratio": seed_iqm_interval(ratios).as_dict(),
            "per_seed": {s: geomean(r) for s, r in ratios.items()},
            "score": iqm(means) if means else None, "room": len(scores[0])}


def suite_task(task: str, suite: str, saved: list[dict], ran: dict, seeds, policies, starts=None) -> dict:
    """One (task, suite) cell: best classical, the task's own policy, their ratio interval, the aim;
    with ``starts`` (trace -> the untrained start's metrics), the start's ratio beside it."""
    best = _best_classical(task, saved)
    start = None if starts is None else geomean(
        [judged(task, starts[t["trace"]], t) / judged(task, t["metrics"][best], t) for t in saved])
    cells = [_learned_cell(task, p, saved, ran, best, seeds) for p in policies.values()]
    learned = next(c for c in cells if c["policy"] == policies[task])
    regime = saved[0]["regime"]
    knowledge = "exact" if regime is None else regime["knowledge"]
    ahead = task == "balanced" or knowledge in ("estimate", "unknown")
    aim = AHEAD if ahead else WITHIN
    classical_scores = _scores(task, saved, lambda t: t["metrics"][best])
    reference = _headroom().reference_cost
    clairvoyant = geomean([judged(task, reference(t, task)[1], t) / judged(task, t["metrics"][best], t) for t in saved])
    return {"task": task, "suite": suite, "regime": knowledge, "traces": len(saved), "best_classical": best,
            "best_learned": learned["policy"], "ratio": learned["ratio"], "per_seed": learned["per_seed"],
            "learned_score": learned["score"], "room": learned["room"],
            "classical_score": sum(classical_scores) / len(classical_scores) if classical_scores else None,
            "others": {c["policy"]: c["ratio"]["value"] for c in cells}, "start": start,
            "clairvoyant": clairvoyant, "aim": aim, "met": learned["ratio"]["value"] <= aim}


def summarise(data: dict, headroom: dict) -> dict:
    saved = {t["trace"]: t for t in headroom["traces"]}
    ran = {t["trace"]: t["learned"] for t in data["traces"]}
    seeds = [str(s) for s in data["seeds"]]
    policies = dict(data["policies"])
    starts = {t["trace"]: t["start"] for t in data["traces"]} if data.get("start") else None
    rows = []
    for task in data["policies"]:
        for suite in data["suites"]:
            chosen = [saved[t["trace"]] for t in data["traces"] if t["suite"] == suite]
            rows.append(suite_task(task, suite, chosen, ran, seeds, policies, starts))
    start_met = sum(r["start"] <= r["aim"] for r in rows) if starts else None
    return {"rows": rows, "met": sum(r["met"] for r in rows), "cells": len(rows), "start_met": start_met,
            "clairvoyant_met": sum(r["clairvoyant"] <= r["aim"] for r in rows)}


def summarise_elastic(elastic: dict, headroom: dict) -> dict:
    """Per elastic suite, the elastic policy against the best elastic baseline and the best
    rigid rule: one row each. The aim is judged against the stronger of the two (the best of
    every non-learned rule, ``strongest``); the other row is for information."""
    saved = {t["trace"]: t for t in headroom["traces"]}
    ran = {t["trace"]: t["learned"] for t in elastic["traces"]}
    seeds, task, policy = [str(s) for s in elastic["seeds"]], elastic["task"], elastic["policy"]
    rows = []
    for suite in elastic["suites"]:
        chosen = [saved[t["trace"]] for t in elastic["traces"] if t["suite"] == suite]
        rules = classical_rules(chosen)
        counted = [a for a in rules if agent_entry(a).elastic]
        strongest = _best_classical(task, chosen, rules)
        for kind, among in (("elastic", counted), ("rigid", [a for a in rules if a not in counted])):
            best = _best_classical(task, chosen, among)
            cell = _learned_cell(task, policy, chosen, ran, best, seeds)
            opponent = _scores(task, chosen, lambda t, best=best: t["metrics"][best])
            rows.append({"suite": suite, "opponent": kind, "rules": among, "best": best, "policy": policy,
                         "traces": len(chosen), "ratio": cell["ratio"], "per_seed": cell["per_seed"],
                         "learned_score": cell["score"], "room": cell["room"],
                         "classical_score": sum(opponent) / len(opponent) if opponent else None,
                         "aim": WITHIN, "met": cell["ratio"]["value"] <= WITHIN, "strongest": best == strongest})
    judged_rows = [r for r in rows if r["strongest"]]
    return {"rows": rows, "met": sum(r["met"] for r in judged_rows), "cells": len(judged_rows)}


# -- the page ---------------------------------------------------------------------------------

#: The two sections' shared definitions (a learned / rule ratio; the headroom score).
_PAIRED = ("on the same trace (below 1: the learned policy is better), with a 95% bootstrap interval over the "
           "traces, paired across seeds.")
_SCORE = ("*score*: the clairvoyant-normalised score (FIFO 0, reference 1; traces with room only; learned: IQM "
          "over seeds).")


def _ratio(item: dict) -> str:
    if item.get("low") is None or (isinstance(item["low"], float) and math.isnan(item["low"])):
        return f"{item['value']:.3f}"
    return f"{item['value']:.3f} [{item['low']:.3f}, {item['high']:.3f}]"


def _score(value) -> str:
    return "no room" if value is None else f"{value:.2f}"


def _seeds_and_scores(row: dict) -> tuple[str, str]:
    """A row's per-seed ratios and its "score learned / rule" cell."""
    seeds = " ".join(f"{v:.3f}" for v in row["per_seed"].values())
    return seeds, f"{_score(row['learned_score'])} / {_score(row['classical_score'])} ({row['room']}/{row['traces']} traces)"


def render(data: dict, summary: dict) -> str:
    """The docs section (pure: the same JSON gives the same bytes)."""
    lines = [
        f"Test split, suites {', '.join(data['suites'])}; {len(data['seeds'])} training seeds per policy, "
        f"{data['slots']} observation slots. *learned / classical*: IQM over the seeds of the geometric mean over "
        "the suite's traces of the task's own policy's judged measure / the best classical rule's (the best of "
        f"every non-learned rule of the headroom study on those traces), {_PAIRED} *others*: the "
        "three policies' values, for information (picking the best of them on the test split would flatter it). "
        "Judged measures: "
        f"avg JCT (`jct`), mean fair-share ρ (`fairness`), the task cost (`balanced`). {_SCORE} "
        + (f"*start*: the untrained policy every run starts from (`--prior {data['start']}`, the prior's skip "
           "term alone; deterministic, so one geometric mean of the ratios). " if data.get("start") else "")
        + "*clairvoyant*: the headroom study's clairvoyant reference (the oracle view, the future arrivals and the "
        "regime's true lengths; docs/HEADROOM.md) against the same rule, the same geometric mean: how far ahead of "
        "the rule a scheduler that knows everything got. "
        f"Aim: <= {AHEAD} for `balanced` and in the estimate/unknown regimes, else <= {WITHIN}. "
        f"{summary['met']} of {summary['cells']} cells meet it"
        + (f"; the start alone meets it in {summary['start_met']}" if data.get("start") else "")
        + f"; the clairvoyant reference in {summary['clairvoyant_met']}.",
        "",
        "| task | suite | regime | best classical | policy | learned / classical | per seed | others | start "
        "| clairvoyant | score learned / classical | aim | met |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in summary["rows"]:
        seeds, scores = _seeds_and_scores(row)
        others = " ".join(f"{v:.3f}" for v in row["others"].values())
        start = "—" if row.get("start") is None else f"{row['start']:.3f}"
        lines.append(f"| `{row['task']}` | {row['suite']} | {row['regime']} | `{row['best_classical']}` | "
                     f"`{row['best_learned']}` | {_ratio(row['ratio'])} | {seeds} | {others} | {start} | "
                     f"{row['clairvoyant']:.3f} | {scores} | "
                     f"<= {row['aim']} | {'met' if row['met'] else '**missed**'} |")
    return "\n".join(lines) + "\n"


def render_elastic(elastic: dict, summary: dict) -> str:
    """The elastic section (pure, like :func:`render`)."""
    lines = [
        f"Test split, suites {', '.join(elastic['suites'])}; `{elastic['policy']}` (the `{elastic['task']}` task) with "
        f"{len(elastic['seeds'])} training seeds, {elastic['slots']} observation slots. *learned / rule*: IQM over the "
        f"seeds of the geometric mean over the suite's traces of the policy's avg JCT / the rule's, {_PAIRED} "
        "*best elastic*: the best of the rules that choose GPU counts; *best rigid*: the best of every other "
        f"non-learned rule of the headroom study. {_SCORE} Aim: <= {WITHIN} against the stronger of the two, the best "
        "of every non-learned rule; the other row is for information. "
        f"{summary['met']} of {summary['cells']} cells meet it.",
        "",
        "| suite | opponent | rule | learned / rule | per seed | score learned / rule | aim | met |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in summary["rows"]:
        seeds, scores = _seeds_and_scores(row)
        judged = f"<= {row['aim']} | {'met' if row['met'] else '**missed**'}" if row["strongest"] else "— | (information)"
        lines.append(f"| {row['suite']} | best {row['opponent']} | `{row['best']}` | {_ratio(row['ratio'])} | {seeds} | "
                     f"{scores} | {judged} |")
    return "\n".join(lines) + "\n"


def write_doc(doc: Path, text: str, begin: str = BEGIN, end: str = END) -> None:
    page = doc.read_text(encoding="utf-8")
    head, rest = page.split(begin, 1)
    tail = rest.split(end, 1)[1]
    doc.write_text(f"{head}{begin}\n{text}{end}{tail}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, nargs="+",
                        help="folders of training runs <task>-s<seed>; each task's runs are read from the one folder "
                        "whose runs are of the kind of the task's shipped policy (PPO, search, ...)")
    parser.add_argument("--suites", default=None, help="test suites (a comma list; default: every leaderboard suite without elastic jobs)")
    parser.add_argument("--json", type=Path, help="save the per-trace metrics here")
    parser.add_argument("--doc", type=Path, help="rewrite this page's generated section")
    parser.add_argument("--render", type=Path, metavar="JSON", help="summarise a saved JSON instead of running")
    parser.add_argument("--start", default=None, metavar="PRIOR",
                        help="also play the untrained policy of this prior (the runs' start) and show its ratios")
    parser.add_argument("--elastic-runs", type=Path, help="the elastic policy's training folders jct-s<seed>")
    parser.add_argument("--elastic-suites", default=ELASTIC_SUITES, help="elastic test suites (a comma list)")
    args = parser.parse_args(argv)
    command = "python benchmarks/learned_vs_classical.py " + " ".join(argv if argv is not None else sys.argv[1:])
    log = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    if args.render:
        data = json.loads(args.render.read_text(encoding="utf-8"))
    elif args.runs is not None:
        data = {**run(args.runs, args.suites, log=log, start=args.start), "command": command}
    elif args.elastic_runs is not None and args.json is not None and args.json.is_file():
        data = json.loads(args.json.read_text(encoding="utf-8"))  # the rest of the JSON stays as it is
    else:
        parser.error("--runs is required unless --render, or --elastic-runs with an existing --json")
    if args.elastic_runs is not None:
        data["elastic"] = {**run_elastic(args.elastic_runs, args.elastic_suites, log=log), "command": command}
    if args.json:
        args.json.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    headroom = json.loads(HEADROOM_JSON.read_text(encoding="utf-8"))
    summary = summarise(data, headroom)
    if "elastic" in data:
        summary["elastic"] = summarise_elastic(data["elastic"], headroom)
    if args.doc:
        write_doc(args.doc, render(data, summary))
        if "elastic" in data:
            write_doc(args.doc, render_elastic(data["elastic"], summary["elastic"]), ELASTIC_BEGIN, ELASTIC_END)
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""docs/TRAINING.md, "Learned vs classical", is generated from the saved JSON of
benchmarks/learned_vs_classical.py and the headroom study's classical cells: the doc must be
the render of that JSON, the JSON must be whole, and the summary must follow its definitions."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from helpers.scripts import load_benchmark
from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "data" / "learned_vs_classical.json"
HEADROOM = ROOT / "docs" / "data" / "headroom.json"


def _bench():
    return load_benchmark("learned_vs_classical")


def _saved():
    return json.loads(DATA.read_text(encoding="utf-8")), json.loads(HEADROOM.read_text(encoding="utf-8"))


def test_the_docs_section_is_the_render_of_the_saved_json():
    bench = _bench()
    data, headroom = _saved()
    doc = (ROOT / "docs" / "TRAINING.md").read_text(encoding="utf-8")
    section = doc.split(bench.BEGIN, 1)[1].split(bench.END, 1)[0]
    assert section.strip() == bench.render(data, bench.summarise(data, headroom)).strip()


def test_the_saved_json_has_every_seed_of_every_policy_on_every_test_trace_of_its_suites():
    from shockwave_gym.traces.suites import split_entries

    data, _ = _saved()
    assert data["seeds"] == [0, 1, 2, 3, 4]
    assert [t["trace"] for t in data["traces"]] == [e.trace_name for e in split_entries(data["suites"], "test")]
    for trace in data["traces"]:
        assert set(trace["learned"]) == set(data["policies"].values())
        for runs in trace["learned"].values():
            assert sorted(runs) == ["0", "1", "2", "3", "4"]
            assert all(not m["truncated"] and m["avg_jct_s"] > 0 for m in runs.values())


def test_the_default_suites_are_every_leaderboard_suite_but_the_elastic_ones_judged_apart():
    from shockwave_gym.traces.suites import resolve_suites

    data, _ = _saved()
    default = _bench().rigid_suites().split(",")
    leaderboard = [s for s in resolve_suites(None) if s.leaderboard]
    elastic = [s.name for s in leaderboard if s.elastic]
    assert elastic == ["elastic-nominal"] and elastic == data["elastic"]["suites"]
    assert default == [s.name for s in leaderboard if s.name not in elastic] == data["suites"]


def test_each_row_takes_the_best_classical_rule_and_the_tasks_own_policy_and_judges_the_aim():
    bench = _bench()
    data, headroom = _saved()
    saved = {t["trace"]: t for t in headroom["traces"]}
    ran = {t["trace"]: t["learned"] for t in data["traces"]}
    for row in bench.summarise(data, headroom)["rows"]:
        traces = [saved[t["trace"]] for t in data["traces"] if t["suite"] == row["suite"]]

        def to_fifo(agent, traces=traces, task=row["task"]):
            logs = [math.log(bench.judged(task, t["metrics"][agent], t) / bench.judged(task, t["metrics"]["fifo"], t))
                    for t in traces]
            return sum(logs) / len(logs)

        rules = [a for a in traces[0]["metrics"] if a not in ("ppo", "ppo-fair", "shockwave-distilled")
                 and all(a in t["metrics"] for t in traces)]
        assert {"wsrpt", "gittins", "las", "max-rho", "gavel-wc", "shockwave", "sia"} <= set(rules)
        assert to_fifo(row["best_classical"]) == min(to_fifo(a) for a in rules)
        policy = data["policies"][row["task"]]  # the task's own policy is judged, not the best of three
        assert row["best_learned"] == policy and row["ratio"]["value"] == row["others"][policy]
        per_seed = []  # the IQM over seeds of the per-seed geometric means, recomputed here
        for seed in map(str, data["seeds"]):
            logs = [math.log(bench.judged(row["task"], ran[t["trace"]][policy][seed], t)
                             / bench.judged(row["task"], t["metrics"][row["best_classical"]], t)) for t in traces]
            per_seed.append(sum(logs) / len(logs))
        assert row["ratio"]["value"] == pytest.approx(math.exp(stats.trim_mean(per_seed, 0.25)), rel=1e-12)
        assert row["ratio"]["low"] <= row["ratio"]["value"] <= row["ratio"]["high"]
        ahead = row["task"] == "balanced" or row["regime"] in ("estimate", "unknown")
        assert row["aim"] == (bench.AHEAD if ahead else bench.WITHIN)
        assert row["met"] == (row["ratio"]["value"] <= row["aim"])
        # the untrained start's ratio, from its saved metrics on the same traces
        starts = {t["trace"]: t["start"] for t in data["traces"]}
        logs = [math.log(bench.judged(row["task"], starts[t["trace"]], t)
                         / bench.judged(row["task"], t["metrics"][row["best_classical"]], t)) for t in traces]
        assert row["start"] == pytest.approx(math.exp(sum(logs) / len(logs)), rel=1e-12)
        # the clairvoyant reference's ratio: the better (by the task's cost) of the rollout and Shockwave-oracle
        reference = []
        for t in traces:
            candidates = [t["reference"][row["task"]]["metrics"], t["shockwave_oracle"]["metrics"]]
            costs = [bench.task_cost(row["task"], m, first_arrival_s=t["first_arrival_s"], round_s=t["round_s"])
                     for m in candidates]
            chosen = candidates[1] if costs[1] < costs[0] else candidates[0]
            reference.append(math.log(bench.judged(row["task"], chosen, t)
                                      / bench.judged(row["task"], t["metrics"][row["best_classical"]], t)))
        assert row["clairvoyant"] == pytest.approx(math.exp(sum(reference) / len(reference)), rel=1e-12)


def test_the_start_is_the_untrained_prior_and_plays_as_saved():
    """The saved start metrics are the untrained wsrpt policy's: replaying one trace gives them."""
    bench = _bench()
    data, _ = _saved()
    assert data["start"] == "wsrpt" and all("start" in t for t in data["traces"])
    case = next(c for c in bench._headroom().cases("test", "small-light"))
    from shockwave_gym.traces.suites import entry_trace

    case["trace"] = entry_trace(case["entry"])
    saved = next(t["start"] for t in data["traces"] if t["trace"] == case["trace"].name)
    assert bench._episode(bench.start_agent("wsrpt"), case) == saved
    summary = bench.summarise(data, json.loads(HEADROOM.read_text(encoding="utf-8")))
    assert summary["start_met"] == sum(r["start"] <= r["aim"] for r in summary["rows"])


def _fake_trace(name: str, scale: float) -> dict:
    def metrics(jct):
        return {"avg_jct_s": jct, "rho_mean": 1.0 + jct / 1e4, "makespan_s": 1e4, "num_jobs": 10, "gpus": 4,
                "truncated": False}

    classical = {a: metrics(scale * (1000 + 10 * i)) for i, a in enumerate(("wsrpt", "gittins", "tiresias",
                                                                            "fair-share", "shockwave"))}
    reference = {task: {"metrics": metrics(scale * 500)} for task in ("jct", "fairness", "balanced")}
    return {"suite": "s", "trace": name, "regime": {"knowledge": "unknown", "early_endings": 0.0, "seed": 1},
            "first_arrival_s": 0.0, "round_s": 120.0, "metrics": {"fifo": metrics(scale * 2000), **classical},
            "reference": reference, "shockwave_oracle": {"metrics": metrics(scale * 600)}}


@pytest.mark.parametrize("factor", [0.9, 1.01])
def test_a_policy_a_fixed_factor_from_the_best_rule_on_every_trace_gets_that_ratio(factor):
    bench = _bench()
    headroom = {"traces": [_fake_trace("a", 1.0), _fake_trace("b", 2.0), _fake_trace("c", 3.0)]}
    learned = {}
    for t in headroom["traces"]:
        best = t["metrics"]["wsrpt"]
        runs = {str(s): {**best, "avg_jct_s": factor * best["avg_jct_s"]} for s in range(5)}
        worse = {str(s): {**best, "avg_jct_s": 2 * best["avg_jct_s"]} for s in range(5)}
        learned[t["trace"]] = {"ppo-jct": runs, "ppo-fairness": worse, "ppo-balanced": worse}
    data = {"suites": ["s"], "seeds": list(range(5)), "slots": 200,
            "policies": {"jct": "ppo-jct", "fairness": "ppo-fairness", "balanced": "ppo-balanced"},
            "traces": [{"suite": "s", "trace": t["trace"], "learned": learned[t["trace"]]} for t in headroom["traces"]]}
    rows = {r["task"]: r for r in bench.summarise(data, headroom)["rows"]}
    row = rows["jct"]
    assert row["best_classical"] == "wsrpt" and row["best_learned"] == "ppo-jct"
    assert row["ratio"]["value"] == pytest.approx(factor)
    assert row["aim"] == bench.AHEAD and row["met"] == (factor <= bench.AHEAD)
    # FIFO 2000, reference 500: the rule scores (2000 - 1000) / 1500, the policy (2000 - 1000 factor) / 1500
    assert row["classical_score"] == pytest.approx(1000 / 1500)
    assert row["learned_score"] == pytest.approx((2000 - 1000 * factor) / 1500)
    assert row["clairvoyant"] == pytest.approx(0.5)  # the reference's 500 against the rule's 1000, every trace
    summary = bench.summarise(data, headroom)
    assert summary["clairvoyant_met"] == sum(r["clairvoyant"] <= r["aim"] for r in summary["rows"]) == 3
    assert "| `jct` | s | unknown | `wsrpt` | `ppo-jct` |" in bench.render(data, bench.summarise(data, headroom))


def test_the_seed_interval_keeps_traces_paired_across_seeds():
    """Seeds that played the same traces share one resample of them: when every seed has the
    same per-trace ratios, the interval is that of one seed (the whole spread between traces),
    much wider than resampling each seed's traces on its own would make it."""
    from shockwave_gym.harness.paired import seed_iqm_interval, stratified_iqm_interval

    ratios = [0.8, 1.0, 1.25, 0.9, 1.1]
    per_seed = {str(s): ratios for s in range(5)}
    paired = seed_iqm_interval(per_seed)
    apart = stratified_iqm_interval(per_seed)
    assert paired.value == pytest.approx(apart.value) == pytest.approx(math.exp(sum(map(math.log, ratios)) / 5))
    assert paired.high - paired.low > 1.5 * (apart.high - apart.low)
    shifted = seed_iqm_interval({**per_seed, "0": [2 * r for r in ratios]})  # the IQM trims one seed
    assert shifted.value == pytest.approx(paired.value)


def test_each_tasks_runs_come_from_the_folder_of_its_shipped_policys_kind(tmp_path):
    """PPO runs and search runs of the same task may sit in two folders given together: the
    balanced task's (shipped: a search result) are read from the search folder, the others'
    from the PPO folder; a folder set without them, or with two candidates, is refused."""
    pytest.importorskip("torch")
    from shockwave_agents.learned.weights import build_policy, save_policy
    from shockwave_gym.errors import InputError

    policy = build_policy("ppo", "priority", 8, embed_dim=4, hidden_dim=4, prior="wsrpt", obs_version=3)

    def runs(folder, tasks, training):
        for task in tasks:
            for seed in range(5):
                save_policy(policy, tmp_path / folder / f"{task}-s{seed}" / "policy", algo="ppo",
                            action_mode="priority", training=training)
        return tmp_path / folder

    ppo = runs("ppo", ("jct", "fairness", "balanced"), {"select": "x"})
    search = runs("cem", ("balanced",), {"search": "cem"})
    bench = _bench()
    assert bench.task_runs([ppo, search]) == {"jct": ppo, "fairness": ppo, "balanced": search}
    assert bench.task_runs([search, ppo]) == {"jct": ppo, "fairness": ppo, "balanced": search}
    with pytest.raises(InputError, match=r"balanced task's policy \(cem-balanced\) is a 'cem' policy.*: none"):
        bench.task_runs([ppo])
    twice = runs("cem2", ("balanced",), {"search": "cem"})
    with pytest.raises(InputError, match="need exactly one"):
        bench.task_runs([ppo, search, twice])

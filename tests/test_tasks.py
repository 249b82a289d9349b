"""Scored tasks (shockwave_gym.tasks): their costs, their weights' provenance, and the
training path that reads them."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from shockwave_agents import make_agent
from shockwave_gym.config import SimConfig
from shockwave_gym.errors import InputError
from shockwave_gym.metrics import jobs_table
from shockwave_gym.runner import run_episode
from shockwave_gym.tasks import BALANCED_WEIGHTS, DEFAULT_TASK, TASKS, Task, get_task, term_cost
from shockwave_gym.traces import load_trace
from shockwave_gym.training.selection import OBJECTIVES, score

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def episode():
    trace = load_trace("teaching-12")
    outcome = run_episode(trace, make_agent("srtf"), SimConfig(gpus=4), progress=False)
    return trace, outcome


def test_term_costs_are_the_sums_over_jobs(episode):
    trace, outcome = episode
    rows = jobs_table(outcome.result)
    first = min(job.arrival_s for job in trace.jobs)
    jct = term_cost("jct", outcome.metrics, first_arrival_s=first, round_s=120.0)
    assert jct == pytest.approx(sum(r["jct_s"] for r in rows) / (120.0 * 4), rel=1e-12)
    fair = term_cost("fair_share", outcome.metrics, first_arrival_s=first, round_s=120.0)
    assert fair == pytest.approx(sum(r["rho"] - 1.0 for r in rows), rel=1e-12)
    span = term_cost("makespan", outcome.metrics, first_arrival_s=first, round_s=120.0)
    assert span == pytest.approx((max(r["completion_s"] for r in rows) - first) / 120.0, rel=1e-12)


def test_balanced_cost_is_the_weighted_sum_and_truncation_has_none(episode):
    trace, outcome = episode
    first = min(job.arrival_s for job in trace.jobs)
    parts = {t: term_cost(t, outcome.metrics, first_arrival_s=first, round_s=120.0) for t in BALANCED_WEIGHTS}
    cost = TASKS["balanced"].cost(outcome.metrics, first_arrival_s=first, round_s=120.0)
    assert cost == pytest.approx(sum(BALANCED_WEIGHTS[t] * parts[t] for t in parts), rel=1e-12)
    assert math.isnan(TASKS["jct"].cost({**outcome.metrics, "truncated": True}, first_arrival_s=first, round_s=120.0))


def test_balanced_weights_are_the_validation_measurement():
    """The constants are what benchmarks/task_weights.py measured on the validation split."""
    saved = json.loads((ROOT / "docs/data/task_weights.json").read_text())
    assert saved["split"] == "validation"
    assert dict(BALANCED_WEIGHTS) == saved["weights"]


def test_tasks_page_states_the_saved_weights_and_spreads():
    saved = json.loads((ROOT / "docs/data/task_weights.json").read_text())
    page = (ROOT / "docs/TASKS.md").read_text()
    for term, weight in saved["weights"].items():
        assert f"| `{term}` | {saved['mean_spread'][term]:.1f} | {weight:g} |" in page
    assert f"({saved['traces']} traces;" in page


def test_task_declarations():
    assert DEFAULT_TASK in TASKS
    assert get_task("fairness") is TASKS["fairness"]
    assert TASKS["jct"].reward == {"jct": 1.0}
    with pytest.raises(InputError, match="unknown task 'speed'"):
        get_task("speed")
    with pytest.raises(InputError, match="no episode cost"):
        Task("odd", {"ftf": 1.0}, "odd")
    assert set(OBJECTIVES) >= set(TASKS)


def _row(avg_jct, rho_mean, makespan, num_jobs=10, gpus=4):
    return {"avg_jct_s": avg_jct, "rho_mean": rho_mean, "makespan_s": makespan, "num_jobs": num_jobs,
            "gpus": gpus, "truncated": False, "first_arrival_s": 0.0, "round_s": 120.0}


def test_task_selection_score_is_the_cost_ratio_to_fifo():
    fifo = {"a": _row(1000.0, 2.0, 5000.0), "b": _row(2000.0, 1.5, 9000.0)}
    better = {"a": _row(1000.0, 1.5, 5000.0), "b": _row(2000.0, 1.25, 9000.0)}
    assert score("fairness", fifo, fifo) == 1.0
    assert score("fairness", better, fifo) == pytest.approx(0.5)
    balanced = score("balanced", better, fifo)
    assert 0.5 < balanced < 1.0
    assert score("balanced", {"a": {**better["a"], "rho_mean": None}, "b": better["b"]}, fifo) is None


def test_train_config_takes_the_task():
    pytest.importorskip("torch")
    from shockwave_gym.training.train import DEFAULT_REWARD, TrainConfig

    jct = TrainConfig(out="x", task="jct")
    assert jct.reward == DEFAULT_REWARD and jct.select == "jct"
    balanced = TrainConfig(out="x", task="balanced", vec="subproc")
    assert balanced.reward == pytest.approx({"jct": 0.1, "fair_share": 0.18, "makespan": 0.21}, rel=1e-12)
    assert balanced.select == "balanced"
    assert TrainConfig(out="x", task="balanced", vec="subproc", select="jct").select == "jct"
    assert TrainConfig(out="x").reward == DEFAULT_REWARD
    with pytest.raises(InputError, match="drop --reward or --task"):
        TrainConfig(out="x", task="fairness", reward="jct", vec="subproc")
    with pytest.raises(InputError, match="--vec subproc"):
        TrainConfig(out="x", task="fairness")


def test_train_task_with_behaviour_cloning_is_one_line():
    done = subprocess.run([sys.executable, "-m", "shockwave_gym.cli", "train", "--algo", "bc", "--task", "jct",
                           "--out", "unused"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "--task jct" in done.stderr

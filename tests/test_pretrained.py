"""The shipped policies: each loads by name, records how it was trained (on the suites' train
split) and the observation it reads, and does what it was trained for on a validation trace
it never saw, against a baseline run in the same test (sanity checks, not claims that a
policy is better than the strongest rule: docs/TRAINING.md, "Learned vs classical", has those):

* ``ppo`` (JCT objective): lower avg JCT than FIFO on ``small-overloaded`` and
  ``small-nominal`` validation traces;
* ``ppo-fair`` (fairness-weighted): a lower unfair fraction (Themis rho) than FIFO at no
  worse avg JCT on ``small-overloaded`` validation traces;
* ``shockwave-distilled``: Shockwave's makespan within 5% on ``teaching-12`` (a trace
  Shockwave plans quickly), deciding faster;
* each task's policy (``TASK_POLICIES``: ``ppo-jct``, ``ppo-fairness``, ``cem-balanced``):
  each runs where lengths are unknown and has a lower cost on its task than FIFO on
  ``small-overloaded-unknown`` validation traces; ``ppo-balanced`` too (it stays shipped).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shockwave_agents import make_agent
from shockwave_agents.learned.pretrained import PRETRAINED_DIR, SHIPPED
from shockwave_gym.runner import run_episode
from shockwave_gym.simulator import SimConfig
from shockwave_gym.traces.suites import split_traces

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def metrics(agent_name: str, trace, gpus: int) -> dict:
    outcome = run_episode(trace, make_agent(agent_name), SimConfig(gpus=gpus), progress=False)
    assert outcome.metrics["completed_jobs"] == trace.num_jobs
    return {**outcome.metrics, "decision_s_per_round": outcome.decision_wall_s / outcome.metrics["rounds"]}


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_policy_loads_and_records_its_training(name):
    from shockwave_agents.learned.weights import read_meta

    agent = make_agent(name)
    assert Path(agent.policy_path).parent == PRETRAINED_DIR
    meta = read_meta(agent.policy_path)  # checks the observation signature against this version
    assert meta["training"]["command"].startswith("shockwave-gym train")
    assert meta["training"]["suites"], "shipped policies train on the suites' train split"
    assert json.loads(Path(agent.policy_path).with_suffix(".json").read_text()) == meta


@pytest.mark.parametrize("suite", ["small-overloaded", "small-nominal"])
def test_ppo_beats_fifo_on_avg_jct_on_unseen_validation_traces(suite):
    for trace, gpus in split_traces(suite, "validation")[:2]:
        ppo, fifo = metrics("ppo", trace, gpus), metrics("fifo", trace, gpus)
        assert ppo["avg_jct_s"] < fifo["avg_jct_s"], (trace.name, ppo["avg_jct_s"], fifo["avg_jct_s"])


def test_ppo_fair_is_fairer_than_fifo_at_no_worse_jct():
    for trace, gpus in split_traces("small-overloaded", "validation")[:2]:
        fair, fifo = metrics("ppo-fair", trace, gpus), metrics("fifo", trace, gpus)
        assert fair["unfair_fraction_themis"] < fifo["unfair_fraction_themis"], trace.name
        assert fair["avg_jct_s"] <= fifo["avg_jct_s"], trace.name


def test_distilled_matches_shockwave_makespan_and_decides_faster():
    from shockwave_gym.traces import load_trace

    trace = load_trace("teaching-12")
    student, teacher = metrics("shockwave-distilled", trace, 12), metrics("shockwave", trace, 12)
    assert abs(student["makespan_s"] / teacher["makespan_s"] - 1) <= 0.05
    assert student["decision_s_per_round"] < teacher["decision_s_per_round"]


@pytest.mark.parametrize("task, name", [("jct", None), ("fairness", None), ("balanced", None),
                                        ("balanced", "ppo-balanced")])
def test_each_task_policy_reads_beliefs_and_beats_fifo_on_its_task_where_lengths_are_hidden(task, name):
    """A validation trace of an overloaded suite whose lengths are unknown, in its regime: the
    task's policy runs (it reads observation version 3, never a hidden length) and its task
    cost is below FIFO's."""
    from shockwave_agents.learned.pretrained import TASK_POLICIES
    from shockwave_gym.tasks import get_task
    from shockwave_gym.traces.suites import entry_trace, get_suite, split_entries

    name = name or TASK_POLICIES[task]
    meta = make_agent(name).policy_meta
    assert meta["obs_version"] == 3 and meta["training"]["select"] == task  # selected on the task's cost
    assert "small-overloaded-unknown" in meta["training"]["suites"]
    suite = get_suite("small-overloaded-unknown")
    for entry in split_entries(suite.name, "validation")[:2]:
        trace = entry_trace(entry)

        def cost(agent, trace=trace, entry=entry):
            outcome = run_episode(trace, make_agent(agent), SimConfig(gpus=suite.gpus), progress=False, regime=entry.regime)
            return get_task(task).cost(outcome.metrics, first_arrival_s=trace.first_arrival_s, round_s=120.0)

        assert cost(name) < cost("fifo"), trace.name

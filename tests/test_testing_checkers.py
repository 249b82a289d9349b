"""The shipped checkers of :mod:`shockwave_gym.testing` on good and bad agents and traces
(``check_env`` runs over the registry in ``test_env_registry.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from shockwave_agents import make_agent
from shockwave_agents.base import Agent, pack_in_order
from shockwave_gym.config import SimConfig
from shockwave_gym.runner import run_episode
from shockwave_gym.testing import AgentCheckError, TraceCheckError, check_agent, check_trace
from shockwave_gym.traces import load_trace


def test_a_registered_agent_passes_and_its_metrics_are_the_runners():
    report = check_agent(lambda: make_agent("fifo"), "teaching-12")
    direct = run_episode(load_trace("teaching-12", gpus=4), make_agent("fifo"), SimConfig(gpus=4), progress=False)
    assert report.metrics["avg_jct_s"] == direct.metrics["avg_jct_s"]
    assert report.metrics["completed_jobs"] == 12
    assert len(report.choices) == direct.metrics["rounds"]
    assert "valid choices" in report.summary()


class _Overfull(Agent):
    def act(self, view):
        return view.active_job_ids  # every active job, whether it fits or not


class _Mask(Agent):
    def act(self, view):
        return np.isin(np.arange(view.num_jobs), view.active_job_ids[:1])


@pytest.mark.parametrize(
    "agent, message",
    [(_Overfull, r"round \d+: selection needs \d+ GPUs"), (_Mask, "boolean mask")],
)
def test_invalid_choices_are_caught_with_the_simulators_words(agent, message):
    with pytest.raises(AgentCheckError, match=message):
        check_agent(agent, "teaching-12")


def test_an_instance_is_refused_because_determinism_needs_fresh_agents():
    with pytest.raises(TypeError, match="factory"):
        check_agent(make_agent("fifo"), "teaching-12")


def test_nondeterminism_is_caught():
    shared = np.random.default_rng()

    class Unseeded(Agent):
        def act(self, view):
            return pack_in_order(shared.permutation(view.active_job_ids), view.gang, view.gpus)

    with pytest.raises(AgentCheckError, match="chose differently"):
        check_agent(Unseeded, "teaching-12")


def test_check_trace_accepts_a_bundled_trace_and_reports_its_size():
    report = check_trace("teaching-12")
    assert (report.name, report.num_jobs, report.gpus) == ("teaching-12", 12, 4)
    assert report.isolated_gpu_hours > 0


def test_check_trace_lists_every_problem_with_file_and_line(tmp_path):
    good = load_trace("teaching-12", gpus=4)
    lines = (tmp_path / "src.jsonl")
    from shockwave_gym.traces import save_trace

    save_trace(good, lines)
    rows = lines.read_text().splitlines()
    rows[1] = rows[1].replace('"gang": 1', '"gang": 3')
    rows[4] = rows[4].replace('"total_iterations": ', '"total_iterations": -')
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(rows) + "\n")
    with pytest.raises(TraceCheckError) as caught:
        check_trace(bad, gpus=4)
    assert len(caught.value.problems) == 2
    assert all("bad.jsonl" in p for p in caught.value.problems)
    assert "bad.jsonl:2:gang:" in caught.value.problems[0]
    assert "bad.jsonl:5:total_iterations:" in caught.value.problems[1]


def test_check_trace_needs_a_cluster_size_for_files(tmp_path):
    with pytest.raises(TraceCheckError, match="gpus is required"):
        check_trace(tmp_path / "x.jsonl")

"""The Shockwave agent end to end: schedules, fallbacks, statistics, the CLI, the canonical run."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from shockwave_agents import make_agent
from shockwave_agents.shockwave import solvers
from shockwave_agents.shockwave.agent import PlannerWarning, ShockwaveAgent
from shockwave_agents.shockwave.config import ShockwaveConfig
from shockwave_agents.shockwave.instance import PlanningInstance
from shockwave_agents.shockwave.licences import LicenceCheck, LicenceState
from shockwave_agents.shockwave.limits import UNLIMITED
from shockwave_agents.shockwave.planner import Planner
from shockwave_agents.shockwave.record import PlanPath
from shockwave_agents.shockwave.solvers import (
    ERROR,
    NO_SOLUTION,
    GreedyOnlyBackend,
    HighsBackend,
    SolveResult,
    select_backend,
)
from shockwave_gym.errors import InputError
from shockwave_gym.reference import authors_canonical
from shockwave_gym.runner import run_episode
from shockwave_gym.simulator import SimConfig
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import BUNDLED_GPUS, GeneratorConfig, generate_trace, load_trace

SCRIPT = Path(sys.executable).parent / "shockwave-gym"


class CheckedAgent(ShockwaveAgent):
    """Checks capacity and gangs in every planned round of every plan it makes."""

    def act(self, view):
        choice = super().act(view)
        for planned in self._plan:
            assert int(view.gang[planned].sum()) <= view.gpus
            assert np.unique(planned).size == planned.size
        return choice


class FailingBackend:
    """Every solve fails, as a crashed or unlicensed solver would."""

    name = "failing"

    def solve(self, program, *, limits=UNLIMITED, warm_start=None):
        return SolveResult(ERROR, self.name, 0.0, message="forced failure")


def run(trace, agent, gpus):
    return run_episode(trace, agent, SimConfig(gpus=gpus), seed=0)


def check_schedule(outcome, trace, gpus):
    result = outcome.result
    assert outcome.metrics["completed_jobs"] == trace.num_jobs
    for ids in result.round_job_ids:
        assert int(result.gang[ids].sum()) <= gpus
        assert np.unique(ids).size == ids.size


@pytest.mark.parametrize("config", [
    ShockwaveConfig.authors(), ShockwaveConfig.normalized(), ShockwaveConfig.authors(rank_method="mip"),
    ShockwaveConfig.authors(rank_method="hybrid", warm_from_previous=True),
], ids=["authors", "normalized", "rank-mip", "rank-hybrid-warm-previous"])
def test_teaching_trace_completes_within_capacity(teaching, config):
    gpus = BUNDLED_GPUS["teaching-12"]
    agent = CheckedAgent(config)
    outcome = run(teaching, agent, gpus)
    check_schedule(outcome, teaching, gpus)
    stats = outcome.agent_stats["planner_stats"]
    assert stats["plans"] >= 1 and sum(stats["paths"].values()) == stats["plans"]
    assert stats["solver"] == "highs" and stats["paths"]["fallback"] == 0
    assert stats["solve_s"]["max"] is not None and stats["config"]["objective"] == config.objective
    again = run(teaching, CheckedAgent(config), gpus)
    np.testing.assert_array_equal(outcome.result.completion_s, again.result.completion_s)


@pytest.mark.parametrize(("seed", "gpus"), [(3, 4), (4, 8)])
def test_generated_traces_respect_capacity_and_gangs(seed, gpus):
    trace = generate_trace(GeneratorConfig(num_jobs=14, seed=seed, arrival_rate_per_hour=120, max_duration_h=1.0))
    outcome = run(trace, CheckedAgent(ShockwaveConfig.authors()), gpus)
    check_schedule(outcome, trace, gpus)


def test_solver_failure_falls_back_to_the_greedy_plan(teaching):
    gpus = BUNDLED_GPUS["teaching-12"]
    agent = CheckedAgent(ShockwaveConfig.authors(), backend=FailingBackend())
    with pytest.warns(PlannerWarning, match="greedy plan"):
        outcome = run(teaching, agent, gpus)
    check_schedule(outcome, teaching, gpus)
    stats = outcome.agent_stats["planner_stats"]
    assert stats["paths"]["fallback"] == stats["plans"] >= 1
    assert stats["warnings"] >= stats["plans"] and "forced failure" in stats["warning_examples"][0]


def test_a_crashing_highs_is_caught(teaching, monkeypatch):
    import highspy

    def crash(self):
        raise RuntimeError("solver crashed")

    monkeypatch.setattr(highspy.Highs, "run", crash)
    gpus = BUNDLED_GPUS["teaching-12"]
    agent = ShockwaveAgent(ShockwaveConfig.authors(), backend=HighsBackend())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PlannerWarning)
        outcome = run(teaching, agent, gpus)
    check_schedule(outcome, teaching, gpus)
    assert outcome.agent_stats["planner_stats"]["paths"]["fallback"] == outcome.agent_stats["planner_stats"]["plans"]


def generous_inputs(n: int = 6, target_s: float = 1e6) -> PlanningInstance:
    """An instance whose fairness constraints are satisfiable (targets far in the future)."""
    rng = np.random.default_rng(0)
    total = rng.integers(10, 40, size=n).astype(float)
    mean_epoch = rng.uniform(30, 90, size=n)
    config = ShockwaveConfig.authors()
    return PlanningInstance(
        job_ids=np.arange(n), gang=np.ones(n, dtype=np.int64), epochs_total=total,
        epochs_done=np.zeros(n), mean_epoch_s=mean_epoch, remaining_s=total * mean_epoch, gpus=3,
        rounds=config.planning_rounds, round_s=120.0, nsw_coef=1.0 / (n * config.planning_rounds),
        makespan_coef_per_s=config.k, finish_target_s=np.full(n, target_s), arrival_s=np.zeros(n),
        share=0.5, now_s=0.0,
    )


class NoIncumbentFirst:
    """The first solve times out without an incumbent; later ones go to HiGHS."""

    name = "flaky"

    def __init__(self):
        self.calls, self.inner = 0, HighsBackend()

    def solve(self, program, *, limits=UNLIMITED, warm_start=None):
        self.calls += 1
        if self.calls == 1:
            return SolveResult(NO_SOLUTION, self.name, 0.0, message="node limit, no incumbent")
        return self.inner.solve(program, limits=limits, warm_start=warm_start)


def test_constrained_program_is_tried_first_and_relaxed_on_timeout_without_incumbent():
    config = ShockwaveConfig.authors()
    feasible = Planner(config, HighsBackend()).plan(generous_inputs())
    assert feasible.record.path is PlanPath.CONSTRAINED and feasible.record.constrained_status == "optimal"
    assert feasible.record.constrained_skipped is None
    relaxed = Planner(config, NoIncumbentFirst()).plan(generous_inputs())
    assert relaxed.record.constrained_status == NO_SOLUTION
    assert relaxed.record.path is PlanPath.RELAXED
    for planned in relaxed.rounds:
        assert planned.size <= 3


def test_impossible_fairness_targets_go_straight_to_the_relaxed_path():
    inputs = generous_inputs(target_s=100.0)  # before the end of the planning horizon
    outcome = Planner(ShockwaveConfig.authors(), HighsBackend()).plan(inputs)
    assert outcome.record.path is PlanPath.RELAXED and "horizon end" in outcome.record.constrained_skipped
    assert outcome.record.constrained_status is None and outcome.record.late_jobs == 6
    assert outcome.record.as_dict()["path"] == "relaxed"


def test_backend_selection_by_trying(monkeypatch):
    assert select_backend("auto").backend.name in ("highs", "mosek", "gurobi")
    assert isinstance(select_backend("greedy").backend, GreedyOnlyBackend)
    choice = select_backend("cvxpy-highs")
    assert choice.backend.name == "cvxpy-highs" and choice.note == "" and choice.warning is None
    # a licensed solver that is not installed: HiGHS, a note, and no warning
    monkeypatch.setattr(solvers, "check_licence", lambda name: LicenceCheck(name, LicenceState.NOT_INSTALLED))
    choice = select_backend("mosek")
    assert choice.backend.name == "highs" and choice.warning is None
    assert choice.note == "solver=mosek: mosek is not installed; using highs"
    assert select_backend("auto").note == ""


def test_cvxpy_backend_plans_like_the_direct_one(teaching):
    gpus = BUNDLED_GPUS["teaching-12"]
    direct = run(teaching, make_agent("shockwave"), gpus)
    via_cvxpy = run(teaching, make_agent("shockwave", solver="cvxpy-highs"), gpus)
    assert via_cvxpy.agent_stats["planner_stats"]["solver"] == "cvxpy-highs"
    assert via_cvxpy.metrics["makespan_s"] == pytest.approx(direct.metrics["makespan_s"], rel=0.05)


def test_options_are_validated():
    with pytest.raises(InputError, match="unknown Shockwave option"):
        make_agent("shockwave", bogus=1)
    with pytest.raises(InputError):
        ShockwaveConfig(planning_rounds=0)
    with pytest.raises(InputError):
        ShockwaveConfig(log_breakpoints=(0.0, 0.5, 0.4, 1.0))
    with pytest.raises(InputError):
        ShockwaveConfig(noise=-0.1)
    assert make_agent("shockwave-normalized").config.objective == "normalized"
    assert make_agent("shockwave", noise=0.5).config.noise == 0.5


def test_noisy_runs_are_reproducible_for_a_seed(teaching):
    gpus = BUNDLED_GPUS["teaching-12"]
    noisy = [run(teaching, make_agent("shockwave", noise=1.0), gpus).result.completion_s for _ in range(2)]
    np.testing.assert_array_equal(noisy[0], noisy[1])


@pytest.mark.skipif(not SCRIPT.is_file(), reason=f"console script not installed at {SCRIPT}")
def test_cli_json_includes_planner_stats(tmp_path):
    completed = subprocess.run(
        [str(SCRIPT), "run", "--agent", "shockwave", "--trace", "teaching-12", "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.strip().splitlines()
    assert len(lines) == 1  # HiGHS' banner must not reach stdout
    record = json.loads(lines[0])
    assert record["completed_jobs"] == 12
    assert record["planner_stats"]["plans"] >= 1 and "solve_s" in record["planner_stats"]


def test_canonical_trace_matches_the_authors_figures():
    throughputs = ThroughputTable.builtin("v100")
    trace = load_trace("authors-canonical-120", throughputs, gpus=32)
    outcome = run_episode(trace, make_agent("shockwave"), SimConfig(gpus=32), throughputs)
    metrics, theirs = outcome.metrics, authors_canonical().policy("shockwave")
    assert metrics["makespan_s"] == pytest.approx(theirs.makespan_s, rel=0.10)
    assert metrics["avg_jct_s"] == pytest.approx(theirs.avg_jct_s, rel=0.10)
    assert metrics["worst_ftf"] <= 2.0
    assert metrics["unfair_fraction"] <= 0.10

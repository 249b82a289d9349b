"""The licensed solver paths, run for real: Gurobi's size-limited pip licence and unlicensed MOSEK.

These tests need ``gurobipy`` and ``Mosek`` installed (the ``gurobi`` and ``mosek`` extras);
they skip only when a package is missing. The Gurobi tests assume the licence that ships with
the pip package (size-limited: 2,000 variables and constraints); the MOSEK tests point
``MOSEKLM_LICENSE_FILE`` at a file that does not exist, so MOSEK is unlicensed whatever the
machine has.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from shockwave_agents import make_agent
from shockwave_agents.shockwave.agent import ShockwaveAgent
from shockwave_agents.shockwave.fallback import FallbackBackend
from shockwave_agents.shockwave.highs_backend import HighsBackend
from shockwave_agents.shockwave.licences import LicenceState, SolverFallbackWarning, check_licence
from shockwave_agents.shockwave.limits import UNLIMITED
from shockwave_agents.shockwave.solvers import OPTIMAL, backend_works, select_backend
from shockwave_gym.runner import run_episode
from shockwave_gym.simulator import SimConfig
from shockwave_gym.traces import BUNDLED_GPUS

SCRIPT = Path(sys.executable).parent / "shockwave-gym"


def needs(module: str):
    return pytest.importorskip(module, reason=f"{module} is not installed (make install in the clone brings it)")


def run(trace, agent):
    return run_episode(trace, agent, SimConfig(gpus=BUNDLED_GPUS[trace.name]), seed=0)


def fallback_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, SolverFallbackWarning)]


@pytest.fixture(scope="module")
def highs_run(teaching):
    return run(teaching, make_agent("shockwave", solver="highs"))


@pytest.fixture(scope="module")
def size_limited_gurobi():
    needs("gurobipy")
    check = check_licence("gurobi")
    assert check.state is LicenceState.SIZE_LIMITED, f"these tests expect the pip licence, found {check}"
    return check


@pytest.fixture
def unlicensed_mosek(monkeypatch, tmp_path):
    """MOSEK installed, and pointed at a licence file that does not exist."""
    needs("mosek")
    monkeypatch.setenv("MOSEKLM_LICENSE_FILE", str(tmp_path / "no-such-mosek.lic"))
    check_licence.cache_clear()
    backend_works.cache_clear()
    yield check_licence("mosek")
    check_licence.cache_clear()
    backend_works.cache_clear()


# --- Gurobi -------------------------------------------------------------------------------


def test_gurobi_plans_teaching_12_end_to_end_like_highs(teaching, highs_run, size_limited_gurobi):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = run(teaching, make_agent("shockwave", solver="gurobi"))
    stats = outcome.agent_stats["planner_stats"]
    assert stats["solver"] == "gurobi" and "size-limited" in stats["solver_note"]
    assert stats["solver_fallbacks"] == 0 and not fallback_warnings(caught)  # every program fits
    assert stats["paths"]["fallback"] == 0 and set(stats["statuses"]) == {"optimal"}
    # measured: the same plans as HiGHS, hence the same episode (docs/SOLVERS.md)
    assert outcome.metrics == highs_run.metrics
    np.testing.assert_array_equal(outcome.result.completion_s, highs_run.result.completion_s)


#: Objective differences both solvers may leave below their gaps (in units of the program's
#: largest objective coefficient): their feasibility and optimality tolerances.
SOLVER_TOLERANCE = 1e-7


def assert_within_gaps(program, ours, theirs):
    """Both objectives of the same program agree within its absolute + relative gap."""
    scaled = abs(ours.objective / program.objective_unit)
    difference = abs(ours.objective - theirs.objective) / abs(program.objective_unit)
    assert difference <= program.abs_gap + program.rel_gap * scaled + SOLVER_TOLERANCE


class BothSolvers:
    """Gurobi plans; HiGHS solves every program too, and both optima are kept."""

    name = "gurobi+highs"

    def __init__(self):
        from shockwave_agents.shockwave.gurobi_backend import GurobiBackend

        self.gurobi, self.highs, self.pairs = GurobiBackend(), HighsBackend(), []

    def solve(self, program, *, limits=UNLIMITED, warm_start=None):
        ours = self.gurobi.solve(program, limits=limits, warm_start=warm_start)
        theirs = self.highs.solve(program, limits=limits, warm_start=warm_start)
        self.pairs.append((program, ours, theirs))
        return ours


@pytest.mark.parametrize("variant", ["shockwave", "shockwave-normalized"])
def test_every_plan_objective_matches_highs_within_the_gaps(teaching, variant, size_limited_gurobi):
    config = make_agent(variant).config
    backend = BothSolvers()
    outcome = run(teaching, ShockwaveAgent(config, name=variant, backend=backend))
    assert outcome.metrics["completed_jobs"] == teaching.num_jobs
    assert len(backend.pairs) > outcome.agent_stats["planner_stats"]["plans"]  # plans and re-rankings
    for program, ours, theirs in backend.pairs:
        assert ours.status == OPTIMAL and theirs.status == OPTIMAL
        assert_within_gaps(program, ours, theirs)


def test_a_replan_above_the_size_limit_falls_back_to_highs_mid_episode(teaching, size_limited_gurobi):
    # 200 planned rounds: the first plans' re-ranking programs fit the 2,000-variable limit,
    # the later ones (more jobs x 200 rounds) do not
    agent = make_agent("shockwave", solver="gurobi", planning_rounds=200)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = run(teaching, agent)
    assert outcome.metrics["completed_jobs"] == teaching.num_jobs
    records = agent.plan_records
    assert records[0].solver_fallbacks == 0
    later = [r for r in records if r.solver_fallbacks > 0]
    assert later and later[0].round > records[0].round
    stats = outcome.agent_stats["planner_stats"]
    assert stats["solver_fallbacks"] == sum(r.solver_fallbacks for r in records) >= 1
    assert "Model too large for size-limited license" in stats["solver_fallback_reason"]
    assert stats["paths"]["fallback"] == 0 and stats["warnings"] == 0
    messages = fallback_warnings(caught)
    assert len(messages) == 1 and "HiGHS solves every program gurobi cannot take" in messages[0]


def test_auto_never_takes_a_size_limited_licence_on_any_trace(size_limited_gurobi):
    choice = select_backend("auto")
    assert type(choice.backend) is HighsBackend and "gurobi's licence is size-limited" in choice.note
    assert choice.warning is None  # under auto, HiGHS is the expected outcome (debug log only)
    assert vars(choice.backend) == vars(select_backend("highs").backend)  # same threads, same seed
    named = select_backend("gurobi")
    assert isinstance(named.backend, FallbackBackend) and named.warning is None


def test_auto_with_gurobi_installed_equals_highs_on_teaching_12(teaching, highs_run, size_limited_gurobi):
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        outcome = run(teaching, make_agent("shockwave"))
    assert outcome.agent_stats["planner_stats"]["solver"] == "highs"
    assert outcome.metrics == highs_run.metrics
    np.testing.assert_array_equal(outcome.result.completion_s, highs_run.result.completion_s)


# --- MOSEK --------------------------------------------------------------------------------


@pytest.mark.parametrize("solver", ["mosek", "auto"])
def test_unlicensed_mosek_plans_with_highs_and_warns_only_when_named(teaching, highs_run, unlicensed_mosek,
                                                                     solver, caplog):
    assert unlicensed_mosek.state is LicenceState.MISSING
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.DEBUG, "shockwave_agents"):
        warnings.simplefilter("always")
        outcome = run(teaching, make_agent("shockwave", solver=solver))
    messages = fallback_warnings(caught)
    stats = outcome.agent_stats["planner_stats"]
    for words in ("mosek is installed but has no usable licence", "err_missing_license_file",
                  "~/mosek/mosek.lic", "MOSEKLM_LICENSE_FILE", "using highs"):
        assert words in stats["solver_note"]
    if solver == "mosek":  # the user asked for MOSEK: say once why it was not used
        assert messages == [stats["solver_note"]]
    else:  # solver=auto: HiGHS is the expected outcome; the reason is logged at debug level
        assert messages == []
        debug = [r for r in caplog.records if r.levelno == logging.DEBUG and "no usable licence" in r.getMessage()]
        assert debug and debug[0].getMessage() == stats["solver_note"]
    assert stats["solver"] == "highs"
    assert outcome.metrics == highs_run.metrics
    np.testing.assert_array_equal(outcome.result.completion_s, highs_run.result.completion_s)


# --- stdout stays one JSON object ---------------------------------------------------------


@pytest.mark.skipif(not SCRIPT.is_file(), reason=f"console script not installed at {SCRIPT}")
@pytest.mark.parametrize(("solver", "used"), [
    ("auto", "highs"), ("highs", "highs"), ("cvxpy-highs", "cvxpy-highs"), ("gurobi", "gurobi"),
    ("mosek", "highs"), ("greedy", "greedy"),
])
def test_json_stdout_is_one_object_whatever_the_solver(tmp_path, solver, used):
    if solver == "gurobi":
        needs("gurobipy")
    completed = subprocess.run(
        [str(SCRIPT), "run", "--agent", "shockwave", "--trace", "teaching-12", "--json",
         "--max-rounds", "12", "--agent-opt", f"solver={solver}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "MOSEKLM_LICENSE_FILE": str(tmp_path / "none.lic")},
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.count("\n") == 1  # no banner, licence line or log before or after
    # the one-time banners are dropped, not moved: on stderr they would break progress lines
    assert "Running HiGHS" not in completed.stderr and "Restricted license" not in completed.stderr
    record = json.loads(completed.stdout)
    assert record["planner_stats"]["solver"] == used and record["planner_stats"]["plans"] >= 1

"""Shockwave's solves stop on work limits, not on the clock, and its decision sums are exact."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from shockwave_agents import make_agent
from shockwave_agents.shockwave.config import MIP_NODE_LIMIT, ShockwaveConfig
from shockwave_agents.shockwave.highs_backend import HighsBackend, _limit_options
from shockwave_agents.shockwave.limits import UNLIMITED, WorkLimits, fdot
from shockwave_agents.shockwave.mip import MipProgram
from shockwave_agents.shockwave.results import SolveStatus
from shockwave_gym.errors import InputError
from shockwave_gym.runner import run_episode
from shockwave_gym.simulator import SimConfig
from shockwave_gym.traces import BUNDLED_GPUS, load_trace


def test_defaults_have_work_limits_and_no_wall_clock():
    config = ShockwaveConfig.authors()
    assert config.time_limit_s is None and config.rank_time_limit_s is None and config.threads == 1
    assert config.main_limits() == WorkLimits(MIP_NODE_LIMIT, config.lp_iteration_limit, None)
    assert config.main_limits().deterministic and config.rank_limits().deterministic
    options = dict(_limit_options(config.main_limits()))
    assert "time_limit" not in options and options["mip_max_nodes"] == MIP_NODE_LIMIT
    capped = ShockwaveConfig.authors(time_limit_s=5, rank_time_limit_s=2.5)
    assert dict(_limit_options(capped.main_limits()))["time_limit"] == 5.0
    assert capped.rank_limits().wall_clock_s == 2.5 and not capped.rank_limits().deterministic


@pytest.mark.parametrize("options, message", [
    ({"time_limit_s": 0}, "time_limit_s must be None"),
    ({"rank_time_limit_s": float("inf")}, "rank_time_limit_s must be None"),
    ({"time_limit_s": True}, "time_limit_s must be None"),
    ({"mip_node_limit": 0}, "mip_node_limit must be an integer >= 1"),
    ({"rank_node_limit": 2.5}, "rank_node_limit must be an integer >= 1"),
    ({"lp_iteration_limit": False}, "lp_iteration_limit must be an integer >= 1"),
])
def test_bad_limits_are_rejected(options, message):
    with pytest.raises(InputError, match=message):
        ShockwaveConfig.authors(**options)


def _knapsack(seed: int = 3, n: int = 40) -> MipProgram:
    """A three-row 0/1 knapsack that HiGHS needs many nodes to close."""
    rng = np.random.default_rng(seed)
    weights = rng.integers(20, 60, size=(3, n)).astype(np.float64)
    values = weights.sum(axis=0) / 3 + rng.integers(-5, 6, size=n)
    return MipProgram(c=-values, A=sp.csc_matrix(weights), row_lo=np.full(3, -np.inf),
                      row_hi=weights.sum(axis=1) / 2 + 0.5, col_lo=np.zeros(n), col_hi=np.ones(n),
                      integer=np.ones(n, dtype=bool))


def test_a_node_limit_stops_at_the_same_point_under_load():
    program = _knapsack()
    full = HighsBackend().solve(program, limits=UNLIMITED)
    limited = HighsBackend().solve(program, limits=WorkLimits(mip_nodes=2))
    assert full.status is SolveStatus.OPTIMAL and limited.status is SolveStatus.FEASIBLE  # the limit binds
    assert limited.bound > full.objective - 1e-9 and limited.objective <= full.objective + 1e-9
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        again = [HighsBackend().solve(program, limits=WorkLimits(mip_nodes=2)) for _ in range(3)]
    finally:
        burner.kill()
        burner.wait()
    for result in again:
        assert result.status is SolveStatus.FEASIBLE
        assert np.array_equal(result.vector, limited.vector) and result.objective == limited.objective
        assert result.bound == limited.bound


def test_fdot_is_exactly_rounded_and_order_free():
    assert fdot([1e16, 1.0, -1e16], [1.0, 1.0, 1.0]) == 1.0
    rng = np.random.default_rng(0)
    a = rng.standard_normal(1000) * 10.0 ** rng.integers(-8, 9, 1000)
    b = rng.standard_normal(1000)
    order = rng.permutation(1000)
    assert fdot(a, b) == fdot(a[order], b[order]) == math.fsum((a * b).tolist())


class RecordingBackend(HighsBackend):
    """HiGHS, recording the limits of every solve."""

    def __init__(self):
        super().__init__()
        self.limits: list[WorkLimits] = []

    def solve(self, program, *, limits=UNLIMITED, warm_start=None):
        self.limits.append(limits)
        return super().solve(program, limits=limits, warm_start=warm_start)


def test_every_solve_of_an_episode_has_deterministic_limits():
    trace = load_trace("teaching-12")
    agent = make_agent("shockwave", solver="highs")
    backend = RecordingBackend()
    original_reset = agent.reset

    def reset(view, seed):
        original_reset(view, seed)
        agent.planner.backend = agent.planner.reranker.backend = backend

    agent.reset = reset
    run_episode(trace, agent, SimConfig(gpus=BUNDLED_GPUS["teaching-12"]), seed=0, progress=False)
    config = agent.config
    assert backend.limits and all(limits.deterministic for limits in backend.limits)
    assert set(backend.limits) == {config.main_limits(), config.rank_limits()}

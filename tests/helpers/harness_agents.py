"""Agents and helpers shared by the harness tests (tests/test_harness_agents.py checks that
they are sound).

The harness tests need three cheap agents with *different* schedules. They use the built-in
cheap baselines that exist (srtf, las, gavel, ...) and fill up with the fifo variants below,
which are registered with ``register_agent``. The ``Slow*`` variants sleep in ``act`` so that
a run can be interrupted mid-way reliably; sleeping does not change a single decision.
Worker processes import this module by name, so everything here is at module level.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

from shockwave_agents import available_agents, register_agent
from shockwave_agents.base import Agent, pack_in_order
from shockwave_agents.fifo import FifoAgent
from shockwave_gym.simulator import SimConfig
from shockwave_gym.traces import BUNDLED_GPUS, load_trace

TRACE = "teaching-12"
GPUS = BUNDLED_GPUS[TRACE]
SEEDS = (0, 1)
#: Cheap built-in agents, in order of preference.
CHEAP_BUILTINS = ("srtf", "las", "gavel", "gandiva_fair", "mst")
#: Columns every results.csv row must have, with a type check.
METRIC_COLUMNS = (
    "num_jobs", "completed_jobs", "makespan_s", "avg_jct_s", "geomean_jct_s", "median_jct_s",
    "worst_ftf", "unfair_fraction", "worst_ftf_themis", "unfair_fraction_themis",
    "utilization", "busy_utilization", "restart_overhead_gpu_s", "rounds",
)
#: Metrics compared between harness and individual runs (all deterministic).
COMPARED = ("makespan_s", "avg_jct_s", "geomean_jct_s", "worst_ftf", "unfair_fraction",
            "worst_ftf_themis", "unfair_fraction_themis", "utilization", "rounds")


class LifoAgent(Agent):
    """Newest arrival first, with backfill: a schedule clearly different from FIFO."""

    name = "test-lifo"

    def act(self, view) -> np.ndarray:
        return pack_in_order(view.active_job_ids[::-1], view.gang, view.gpus)


class RandomOrderAgent(Agent):
    """A fresh random order of the active jobs each round, from the episode's seed: the one
    test agent whose results depend on the seed."""

    name = "test-random"

    def reset(self, view, seed=None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, view) -> np.ndarray:
        return pack_in_order(self.rng.permutation(view.active_job_ids), view.gang, view.gpus)


class _Slow(Agent):
    delay_s = 0.06  # ~3 s per teaching cell: seconds of margin for the interrupt under load

    def __init__(self, inner: Agent):
        self.inner = inner

    def reset(self, view, seed=None) -> None:
        self.inner.reset(view, seed)

    def act(self, view):
        time.sleep(self.delay_s)
        return self.inner.act(view)


def slow_fifo() -> Agent:
    return _Slow(FifoAgent())


def slow_lifo() -> Agent:
    return _Slow(LifoAgent())


def slow_random() -> Agent:
    return _Slow(RandomOrderAgent())


class TorchProbe(FifoAgent):
    """FIFO that imports torch and reports its thread count in ``stats()``."""

    def stats(self) -> dict:
        import torch

        return {"torch_threads": torch.get_num_threads()}


def torch_probe() -> Agent:
    import torch  # noqa: F401 - the import is the point: an agent that needs torch

    return TorchProbe()


def failing_agent() -> Agent:
    raise RuntimeError("this agent is broken on purpose")


register_agent("test-lifo", LifoAgent, overwrite=True)
register_agent("test-random", RandomOrderAgent, overwrite=True)

#: The plain agent each slow variant reproduces.
SLOW_EQUIVALENT = {"slow_fifo": FifoAgent, "slow_lifo": LifoAgent, "slow_random": RandomOrderAgent}


def three_agents() -> list[str]:
    """fifo, a cheap built-in (else the registered LIFO) and the seeded random order: two
    agents that ignore the seed (run once) and one that uses it (run per seed)."""
    have = available_agents()
    cheap = [name for name in CHEAP_BUILTINS if name in have][:1] or ["test-lifo"]
    return ["fifo", *cheap, "test-random"]


#: Agents of these tests that use the seed (``test-random``) or do not declare that they
#: ignore it (the module:factory ``slow_*`` variants): the harness runs them once per seed.
SEEDED = {"test-random", "slow_fifo", "slow_lifo", "slow_random"}


def expected_cells(agents, seeds=SEEDS) -> list[tuple[str, int]]:
    """(agent, seed) rows in report order: every seed for a seeded agent, else the first."""
    return [(a, s) for a in agents for s in (seeds if a in SEEDED else seeds[:1])]


def module_spec(attr: str) -> str:
    """``module:attr`` naming a factory of this module, importable by a subprocess run with
    :func:`subprocess_env`."""
    return f"{__name__}:{attr}"


def subprocess_env() -> dict[str, str]:
    """Environment in which a subprocess can import this module under its current name."""
    tests_dir = Path(__file__).resolve().parents[1]
    paths = [str(tests_dir), str(tests_dir.parent), *sys.path]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def direct_metrics(agent: Agent, seed: int) -> dict:
    """Metrics of one episode played directly with the runner (no harness)."""
    from shockwave_gym.runner import run_episode

    trace = load_trace(TRACE, gpus=GPUS)
    return run_episode(trace, agent, SimConfig(gpus=GPUS), seed=seed, progress=False).metrics

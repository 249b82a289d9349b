"""The compiled kernels against the reference rules, over generated episodes.

The reference is the env's Python path (``ClusterEnv`` with its compiled step turned off:
the numpy :class:`~shockwave_gym.simulator.Simulator`, the interface's action modes, features
and rewards). The kernels are the vector env's, run by the single env's compiled step (``gym.make``:
:class:`~shockwave_gym.env.vector.single.SingleStep`, K = 1) and by the native vector env
(K clusters). Hypothesis draws the trace (size, seed, GPUs), the action
mode, the reward (each built-in term, or a weighted mix), the observation version, the
slot count and ``skip_trivial``; every observation, reward, termination, truncation and
info must be equal, bit for bit, across autoresets.

Also the kernels' shape: each takes its state struct by name (no function of the kernel
modules over 12 parameters or 60 lines of code), and no module of the env reads the
simulator's private state.
"""

from __future__ import annotations

import ast
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import SyncVectorEnv
from helpers.vector import assert_same, random_actions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shockwave_gym  # noqa: F401  (registers the ids)
from shockwave_gym.batch import jit as batch_jit
from shockwave_gym.env.rewards import REWARDS
from shockwave_gym.env.vector.state import ClusterState
from shockwave_gym.env.vector.vector_env import ClusterVectorEnv
from shockwave_gym.traces import GeneratedTraceSource, GeneratorConfig

ENV_ID = "shockwave_gym/Cluster-v0"
ROOT = Path(__file__).resolve().parents[1]
#: The compiled kernels (numba): every one reads a state struct by name.
KERNEL_MODULES = ("shockwave_gym/batch/jit.py", "shockwave_gym/env/vector/fused.py",
                  "shockwave_gym/env/vector/jit.py", "shockwave_gym/env/vector/features.py")
BUILT_IN = ("jct", "makespan", "ftf", "ftf_excess")

needs_numba = pytest.mark.skipif(not batch_jit.AVAILABLE, reason="numba missing")


def _reference(kwargs: dict):
    """``gym.make`` on the Python path (the compiled step turned off)."""
    env = gym.make(ENV_ID, **kwargs)
    env.unwrapped._compiled_allowed = False
    return env


@st.composite
def configurations(draw) -> dict:
    num_jobs = draw(st.integers(4, 18))
    trace = GeneratedTraceSource(GeneratorConfig(num_jobs=num_jobs, seed=draw(st.integers(0, 10_000)),
                                                 max_duration_h=1.0, name="gen"),
                                 num_jobs_range=(max(2, num_jobs // 2), num_jobs))
    terms = draw(st.sampled_from([*BUILT_IN, "mix"]))
    if terms == "mix":
        chosen = draw(st.lists(st.sampled_from(BUILT_IN), min_size=2, max_size=4, unique=True))
        reward = {name: draw(st.floats(0.05, 3.0)) for name in chosen}
    else:
        reward = terms
    return {"trace": trace, "gpus": draw(st.sampled_from([8, 12, 16])), "reward": reward,
            "action_mode": draw(st.sampled_from(["priority", "select", "sequential"])),
            "obs_version": draw(st.sampled_from([1, 2])), "max_jobs": draw(st.integers(3, 12)),
            "skip_trivial": draw(st.booleans())}


@needs_numba
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=configurations(), seed=st.integers(0, 1000))
def test_kernels_equal_the_reference_over_generated_episodes(config, seed):
    """Single env (K = 1) and vector env (K = 3) on the kernels equal K reference envs."""
    mode = config["action_mode"]
    steps = 60 if mode == "sequential" else 30
    k = 3
    reference = SyncVectorEnv([lambda: _reference(config) for _ in range(k)])
    native = ClusterVectorEnv(k, max_episode_steps=100_000, **config)
    single, single_reference = gym.make(ENV_ID, **config), _reference(config)
    assert_same(native.reset(seed=seed), reference.reset(seed=seed), "reset")
    assert_same(single.reset(seed=seed), single_reference.reset(seed=seed), "single reset")
    rng = np.random.default_rng(seed)
    for t in range(steps):
        masks = native.action_masks()
        assert_same(masks, np.stack(reference.call("action_masks")), f"step {t} masks")
        actions = random_actions(mode, masks, rng)
        assert_same(native.step(actions), reference.step(actions), f"step {t}")
        action = actions[0] if mode == "sequential" else actions[0].copy()
        if mode == "sequential" and not single.unwrapped.action_masks()[action]:
            action = int(np.flatnonzero(single.unwrapped.action_masks())[0])
        got, want = single.step(action), single_reference.step(action)
        assert_same(got, want, f"single step {t}")
        if got[2] or got[3]:
            assert_same(single.reset(), single_reference.reset(), f"single reset {t}")
    for env in (reference, native, single, single_reference):
        env.close()


def _functions(path: Path):
    tree = ast.parse(path.read_text())
    lines = path.read_text().splitlines()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            count = len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs) + bool(args.vararg) + bool(args.kwarg)
            body = node.body
            docstring = set()
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
                docstring = set(range(body[0].lineno, body[0].end_lineno + 1))
            code = sum(1 for i in range(node.lineno, node.end_lineno + 1)
                       if i not in docstring and lines[i - 1].strip() and not lines[i - 1].strip().startswith("#"))
            yield node.name, count, code


def test_every_kernel_takes_few_parameters_and_is_short():
    """The kernels read a state struct by name: none takes more than 12 parameters or
    spans more than 60 lines of code (docstrings excluded)."""
    for module in KERNEL_MODULES:
        for name, params, code in _functions(ROOT / module):
            assert params <= 12, f"{module}:{name} takes {params} parameters"
            assert code <= 60, f"{module}:{name} has {code} lines of code"


def test_the_env_reads_no_private_state_of_the_simulator():
    """The env's modules use the simulator's public members (commit_round, num_arrived,
    num_done) and the slot map's (seated_elsewhere), not their private ones."""
    private = {"_commit_round", "_next_arrival", "_num_done", "_reset_dynamic", "_round_constants",
               "_seen", "_gather", "_by_job", "_jobs_by_id"}
    for path in sorted((ROOT / "shockwave_gym" / "env").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in private:
                raise AssertionError(f"{path.relative_to(ROOT)}:{node.lineno} reads {node.attr}")


@needs_numba
def test_the_state_struct_holds_the_owners_arrays_and_follows_replacements():
    """The vector env's struct is built from the owners' own arrays (no copies), kept while
    they hold, and built again when an owner replaces one (more round records)."""
    env = ClusterVectorEnv(2, trace="teaching-12", action_mode="priority")
    env.reset(seed=0)
    env.step(np.zeros((2, env.max_jobs), np.float32))
    struct, boxed = env._kernel_struct
    assert struct.sim.work_done_s is env.sim.work_done_s and struct.slots.slot_job is env.slots.slot_job
    assert struct.est.rho is env._est.rho and struct.reward.jct_normaliser_s is env.jct_normaliser_s
    env.step(np.zeros((2, env.max_jobs), np.float32))
    assert env._kernel_struct[1] is boxed  # nothing replaced: the same struct
    env.sim.reserve_rounds(env.sim.round_start_s.shape[1] + 1)
    env.step(np.zeros((2, env.max_jobs), np.float32))
    assert env._kernel_struct[0].sim.round_start_s is env.sim.round_start_s
    assert env._kernel_struct[1] is not boxed
    assert set(REWARDS) >= set(BUILT_IN)


@needs_numba
def test_the_single_env_runs_the_vector_kernels_on_the_simulators_own_arrays():
    """The single env's compiled step is the vector env's kernels at K = 1: its struct's
    per-job arrays are views of the Simulator's and the SlotMap's own arrays (row 0 of a
    (1, n) batch), so the kernels write the arrays the view reads; a reset builds it again."""
    env = gym.make(ENV_ID, trace="teaching-12").unwrapped
    env.reset(seed=0)
    env.step(np.zeros(env.max_jobs, np.float32))
    step, sim = env._compiled, env.simulator
    assert type(step).__name__ == "SingleStep"
    struct = step._struct[0]
    assert type(struct) is ClusterState  # the vector env's struct
    for name, own in (("work_done_s", "work_done_s"), ("status", "status"), ("pos", "epoch_pos")):
        assert getattr(struct.sim, name).base is getattr(sim, own) and getattr(struct.sim, name).shape == (1, sim.num_jobs)
    assert struct.slots.slot_job.base is env.slots.slot_job
    env.reset(seed=1)
    env.step(np.zeros(env.max_jobs, np.float32))
    assert env._compiled._struct[0].sim.status.base is env.simulator.status

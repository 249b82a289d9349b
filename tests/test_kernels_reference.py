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


if batch_jit.AVAILABLE:
    import numba

    @numba.njit
    def _typed_round(boxed, sel, order, n, by_rule, scratch):
        """One round of cluster 0 as a driver would run it: the default placement over
        ``order[:n]`` (``by_rule``; else ``sel`` and ``job_type`` are given), the round, the
        arrivals. Returns (start, end, GPUs busy)."""
        sim = boxed
        paid, completed, free = scratch
        if by_rule:
            batch_jit.place_one(0, order, n, sim, sel, free)
        start, end, busy, _ = batch_jit.step_one(0, sel, sim, True, paid, completed)
        if sim.num_done[0] < sim.num_jobs[0]:
            batch_jit.admit_one(0, sim)
        return start, end, busy


def _random_placement(sim, order, rng):
    """An explicit placement over ``order``: each job on a random runnable type with room."""
    free = sim.typed.capacity.copy()
    ids, types = [], []
    for j in order.tolist():
        fits = np.flatnonzero(sim.typed.runnable[j] & (sim.static.gang[j] <= free))
        if fits.size:
            t = int(rng.choice(fits))
            free[t] -= sim.static.gang[j]
            ids.append(j)
            types.append(t)
    return np.array(ids, np.int64), np.array(types, np.int64)


@needs_numba
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(num_jobs=st.integers(4, 18), trace_seed=st.integers(0, 10_000), seed=st.integers(0, 1000),
       counts=st.tuples(st.integers(1, 8), st.integers(0, 8), st.integers(0, 8)))
def test_the_typed_round_kernels_equal_the_heterogeneous_reference(num_jobs, trace_seed, seed, counts):
    """On a cluster of several GPU types, the kernels' round (placement by the default rule
    or given, the map between reference work and time on a type, the restart on a move of
    type) leaves every per-job array and round record as HeteroSimulator does, bit for bit."""
    from hypothesis import assume

    from shockwave_gym.batch import BatchSimulator
    from shockwave_gym.cluster import ClusterSpec
    from shockwave_gym.config import SimConfig
    from shockwave_gym.errors import InputError
    from shockwave_gym.hetero_simulator import HeteroSimulator
    from shockwave_gym.placement import place_in_order

    spec = ",".join(f"{name}={c}" for name, c in zip(("v100", "p100", "k80"), counts, strict=True) if c)
    config = SimConfig(cluster=ClusterSpec.parse(spec))
    jobs = GeneratedTraceSource(GeneratorConfig(num_jobs=num_jobs, seed=trace_seed, max_duration_h=1.0,
                                                name="gen")).sample(np.random.default_rng(trace_seed)).jobs
    try:
        ref = HeteroSimulator(jobs, config)
    except InputError:
        assume(False)
    batch = BatchSimulator(1)
    batch.load(0, ref.static, config, typed=ref.typed)
    rng = np.random.default_rng(seed)
    width = batch.width
    scratch = (np.empty(width), np.empty(width, np.int64), np.empty(3, np.int64))
    while not ref.done:
        order = rng.permutation(ref.active_job_ids())
        sel = np.zeros((1, width), bool)
        by_rule = bool(rng.random() < 0.6)
        if by_rule:
            placed = place_in_order(order, ref.static.gang, ref.view.throughput_by_type, ref.typed.runnable,
                                    ref.typed.capacity)
            ids, types = placed.job_ids, placed.gpu_types
        else:
            ids, types = _random_placement(ref, order, rng)
            sel[0, ids] = True
            batch.job_type[0, ids] = types
        start, end, busy = _typed_round(batch.boxed, sel, order, order.size, by_rule, scratch)
        assert sorted(np.flatnonzero(sel[0]).tolist()) == sorted(ids.tolist())
        assert batch.job_type[0, ids].tolist() == types.tolist()
        sort = np.argsort(ids, kind="stable")
        record = ref.run_round(ids[sort], types[sort])
        assert (start, end, busy) == (record.start_s, record.end_s, record.gpus_busy)
        n = ref.num_jobs
        for name in ("work_done_s", "completion_s", "status", "run_time_s", "rounds_run", "last_run_s",
                     "last_overhead_s", "ran_last_round", "last_type"):
            assert getattr(batch, name)[0, :n].tobytes() == getattr(ref, name).tobytes(), name
        assert (batch.pos[0, :n] - batch.first[0, :n]).tolist() == (ref.epoch_pos - ref.static.first_epoch_index).tolist()
        assert batch.time_s[0] == ref.time_s


#: Heterogeneous clusters the typed kernels are checked on (each type wide enough for a gang).
TYPED_CLUSTERS = ("v100=8,p100=8,k80=8", "p100=8,k80=8", "v100=8,k80=16", "p100=12", "v100=8,p100=4,k80=8")


@st.composite
def typed_configurations(draw) -> dict:
    """configurations() on a heterogeneous cluster, in the modes the kernels run typed."""
    config = draw(configurations())
    config.pop("gpus")
    config.update(cluster=draw(st.sampled_from(TYPED_CLUSTERS)), action_mode=draw(st.sampled_from(["priority", "select"])))
    return config


@needs_numba
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=typed_configurations(), seed=st.integers(0, 1000))
def test_kernels_equal_the_reference_on_typed_clusters(config, seed):
    """On a heterogeneous cluster, the single env's compiled step (observation version 2)
    and the native vector env (K = 3) equal the Python path, bit for bit, across autoresets,
    every round record's types too."""
    from hypothesis import assume

    from shockwave_gym.errors import InputError

    mode, k = config["action_mode"], 3
    single, single_reference = gym.make(ENV_ID, **config), _reference(config)
    try:
        first = single.reset(seed=seed)
    except InputError:  # a generated job fits no type of the cluster
        assume(False)
    assert_same(first, single_reference.reset(seed=seed), "single reset")
    reference = SyncVectorEnv([lambda: _reference(config) for _ in range(k)])
    native = ClusterVectorEnv(k, max_episode_steps=100_000, **config)
    try:
        want = reference.reset(seed=seed)
    except InputError:
        assume(False)
    assert_same(native.reset(seed=seed), want, "reset")
    rng = np.random.default_rng(seed)
    compiled = 0
    for t in range(30):
        masks = native.action_masks()
        assert_same(masks, np.stack(reference.call("action_masks")), f"step {t} masks")
        actions = random_actions(mode, masks, rng)
        try:
            want = reference.step(actions)
        except InputError:  # an autoreset drew a trace with a job that fits no type
            break
        assert_same(native.step(actions), want, f"step {t}")
        got, want = single.step(actions[0].copy()), single_reference.step(actions[0].copy())
        assert_same(got, want, f"single step {t}")
        ours, theirs = single.unwrapped.simulator.history[-1], single_reference.unwrapped.simulator.history[-1]
        assert ours.gpu_types.tolist() == theirs.gpu_types.tolist()
        compiled += single.unwrapped._compiled is not None
        if got[2] or got[3]:
            try:
                assert_same(single.reset(), single_reference.reset(), f"single reset {t}")
            except InputError:
                break
    assert compiled > 0 or config["obs_version"] != 2
    for env in (reference, native, single, single_reference):
        env.close()

"""The native vector env against K separate ``gym.make`` envs, bit for bit.

The reference is Gymnasium's own ``SyncVectorEnv`` over ``gym.make`` envs with the same
arguments (the standard wrappers and autoreset included); every observation, reward,
termination, truncation and info (metrics at episode end included) must be equal in value,
dtype and shape. Five clusters with different traces, GPU counts and sizes; enough steps
for several episodes per cluster, so autoresets are crossed.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from helpers.vector import BACKENDS, assert_same, random_actions

import shockwave_gym  # noqa: F401  (registers the ids)
from shockwave_gym.batch import EpochBank
from shockwave_gym.batch import jit as batch_jit
from shockwave_gym.env.vector.estimates import TraceJobTables
from shockwave_gym.env.vector.vector_env import ClusterVectorEnv
from shockwave_gym.errors import InputError, InvalidActionError
from shockwave_gym.interface.actions import ACTION_MODES
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import GeneratedTraceSource, GeneratorConfig

ENV_ID = "shockwave_gym/Cluster-v0"
MAX_JOBS = 24  # below the canonical trace's 120 jobs: its queue is exercised too


def generated(num_jobs: int, seed: int) -> GeneratedTraceSource:
    """A fresh trace per episode (different sizes per cluster)."""
    return GeneratedTraceSource(GeneratorConfig(num_jobs=num_jobs, seed=seed, max_duration_h=1.0, name="gen"),
                                num_jobs_range=(num_jobs // 2, num_jobs))


def mixed_kwargs(mode: str) -> list[dict]:
    common = {"action_mode": mode, "max_jobs": MAX_JOBS}
    return [
        {**common, "trace": "teaching-12"},
        {**common, "trace": generated(10, 1), "gpus": 8},
        {**common, "trace": generated(20, 2), "gpus": 12, "reward": {"jct": 1.0, "makespan": 0.1, "ftf": 0.2, "ftf_excess": 0.5}},
        {**common, "trace": "canonical-analogue-120", "max_rounds": 40},
        {**common, "trace": "teaching-12", "gpus": 6},
    ]


def same_reward(kwargs: list[dict]) -> list[dict]:
    return [{k: v for k, v in kw.items() if k != "reward"} for kw in kwargs]


def compare_rollouts(kwargs: list[dict], mode: str, steps: int, *, max_episode_steps: int | None = None,
                     autoreset_mode=AutoresetMode.NEXT_STEP, seed: int = 3, compiled: bool | None = None) -> int:
    """Step the native and the reference vector envs alike; returns episodes ended."""
    extra = {} if max_episode_steps is None else {"max_episode_steps": max_episode_steps}
    reference = SyncVectorEnv([lambda kw=kw: gym.make(ENV_ID, **kw, **extra) for kw in kwargs],
                              autoreset_mode=autoreset_mode)
    native = ClusterVectorEnv.from_env_kwargs(kwargs, max_episode_steps=max_episode_steps or 100_000,
                                              autoreset_mode=autoreset_mode)
    assert native.single_observation_space == reference.single_observation_space
    assert native.single_action_space == reference.single_action_space
    assert native.observation_space == reference.observation_space
    assert native.action_space == reference.action_space
    obs, info = native.reset(seed=seed)
    ref_obs, ref_info = reference.reset(seed=seed)
    assert_same(obs, ref_obs, "reset obs")
    assert_same(info, ref_info, "reset info")
    assert native.observation_space.contains(obs)
    rng = np.random.default_rng(seed)
    ended = 0
    for t in range(steps):
        masks = native.action_masks()
        assert_same(masks, np.stack(reference.call("action_masks")), f"step {t} masks")
        actions = random_actions(mode, masks, rng)
        got = native.step(actions)
        want = reference.step(actions)
        for name, a, b in zip(("obs", "reward", "terminated", "truncated", "info"), got, want, strict=True):
            assert_same(a, b, f"step {t} {name}")
        assert native.observation_space.contains(got[0])
        ended += int(np.count_nonzero(got[2] | got[3]))
    reference.close()
    native.close()
    return ended


@pytest.mark.parametrize("compiled", BACKENDS)
@pytest.mark.parametrize("mode", ACTION_MODES)
def test_trajectories_equal_separate_envs_across_autoresets(mode, compiled):
    steps = 500 if mode == "sequential" else 250
    ended = compare_rollouts(mixed_kwargs(mode), mode, steps)
    assert ended >= 5  # autoresets crossed


#: The env options of issue 14, each against separate envs with the same option.
OPTIONS = {
    "skip-trivial": {"skip_trivial": True},
    "obs-v1": {"obs_version": 1},
    "idle-allowed-skip": {"idle_allowed": True, "skip_trivial": True},
}


@pytest.mark.parametrize("compiled", BACKENDS)
@pytest.mark.parametrize("option", sorted(OPTIONS))
@pytest.mark.parametrize("mode", ACTION_MODES)
def test_env_options_match_separate_envs(mode, option, compiled):
    kwargs = [{**kw, **OPTIONS[option]} for kw in mixed_kwargs(mode)]
    steps = 300 if mode == "sequential" else 150
    ended = compare_rollouts(kwargs, mode, steps)
    assert ended >= (1 if mode == "sequential" else 5)


@pytest.mark.parametrize("compiled", BACKENDS)
def test_skipped_rounds_and_same_step_autoreset_match(compiled):
    kwargs = [{**kw, "skip_trivial": True} for kw in same_reward(mixed_kwargs("priority"))]
    assert compare_rollouts(kwargs, "priority", 120, max_episode_steps=25, autoreset_mode=AutoresetMode.SAME_STEP) >= 10


@pytest.mark.parametrize("compiled", BACKENDS)
def test_time_limit_truncation_and_same_step_autoreset_match(compiled):
    kwargs = same_reward(mixed_kwargs("select"))
    assert compare_rollouts(kwargs, "select", 120, max_episode_steps=30, autoreset_mode=AutoresetMode.SAME_STEP) >= 10


@pytest.mark.parametrize("compiled", BACKENDS)
def test_epoch_bank_compaction_keeps_trajectories(monkeypatch, compiled):
    monkeypatch.setattr(EpochBank, "min_dead_epochs", 0)  # rebuild the bank at every chance
    monkeypatch.setattr(TraceJobTables, "slack_rows", 0)  # and the per-trace job tables
    kwargs = [{"trace": generated(12, s), "gpus": 6, "max_jobs": 12, "action_mode": "priority"} for s in range(3)]
    assert compare_rollouts(kwargs, "priority", 200) >= 3


def test_integer_priority_scores_and_a_non_integral_restart_loss_match():
    """Off the usual path: integer scores (ties everywhere) and a restart loss whose GPU-second
    sums are not exact, so the per-round sum must add in the metrics' order."""
    kwargs = [{"trace": "teaching-12", "max_jobs": 12, "action_mode": "priority", "restart_overhead_s": 20.3,
               "gpus": g} for g in (4, 5)]
    reference = SyncVectorEnv([lambda kw=kw: gym.make(ENV_ID, **kw) for kw in kwargs])
    native = ClusterVectorEnv.from_env_kwargs(kwargs, max_episode_steps=100_000)
    assert_same(native.reset(seed=1), reference.reset(seed=1), "reset")
    rng = np.random.default_rng(0)
    ended = 0
    for t in range(150):
        actions = rng.integers(-1, 2, (2, 12)).astype(np.int64)
        got, want = native.step(actions), reference.step(actions)
        assert_same(got, want, f"step {t}")
        ended += int(got[2].sum())
    assert ended >= 2


def test_rewards_whose_weights_differ_past_six_digits_and_throughput_tables_stay_apart():
    """Two clusters whose reward weights print alike (repr rounds to 6 digits) keep their own
    rewards, and two clusters on one trace object with different tables keep their own epochs."""
    trace = generated(10, 4).sample(np.random.default_rng(0))
    slow = ThroughputTable({key: 0.5 * rate for key, rate in ThroughputTable.builtin_v100().items()}, source="half")
    kwargs = [{"trace": "teaching-12", "action_mode": "priority", "max_jobs": 12, "reward": {"jct": 1.0000001}},
              {"trace": "teaching-12", "action_mode": "priority", "max_jobs": 12, "reward": {"jct": 1.0000002}},
              {"trace": trace, "gpus": 8, "action_mode": "priority", "max_jobs": 12},
              {"trace": trace, "gpus": 8, "action_mode": "priority", "max_jobs": 12, "throughputs": slow}]
    compare_rollouts(kwargs, "priority", 60, seed=5)


def test_make_vec_uses_the_native_vector_env():
    envs = gym.make_vec("shockwave_gym/Teaching-v0", num_envs=3, vectorization_mode="vector_entry_point",
                        action_mode="select")
    assert isinstance(envs, ClusterVectorEnv)
    assert envs.max_episode_steps == 10_000  # the registered TimeLimit
    obs, _ = envs.reset(seed=0)
    assert obs["jobs"].shape == (3, 12, 14) and envs.action_masks().shape == (3, 24)
    again, _ = envs.reset(seed=0)
    assert_same(obs, again, "reset determinism")
    generated_envs = gym.make_vec("shockwave_gym/Generated-v0", num_envs=2, vectorization_mode="vector_entry_point")
    first, _ = generated_envs.reset(seed=1)
    assert not np.array_equal(first["job_valid"][0], np.zeros(40, np.int8))


def test_vector_wrappers_see_episodes():
    envs = gym.wrappers.vector.RecordEpisodeStatistics(
        gym.make_vec("shockwave_gym/Teaching-v0", num_envs=2, vectorization_mode="vector_entry_point"))
    envs.reset(seed=0)
    for _ in range(200):
        _, _, terminated, _, info = envs.step(envs.action_space.sample())
        if terminated.any():
            assert info["_episode"][terminated].all() and (info["metrics"]["avg_jct_s"][terminated] > 0).all()
            return
    pytest.fail("no episode ended in 200 rounds")


def test_bad_arguments_and_actions_are_refused():
    with pytest.raises(InputError, match="custom callable"):
        ClusterVectorEnv(2, trace="teaching-12", reward=lambda t: 0.0)
    with pytest.raises(InputError, match="same max_jobs"):
        ClusterVectorEnv.from_env_kwargs([{"trace": "teaching-12"}, {"trace": "teaching-12", "max_jobs": 5}])
    envs = ClusterVectorEnv(2, trace="teaching-12")
    envs.reset(seed=0)
    scores = np.zeros((2, 12), np.float32)
    scores[1, 0] = np.nan
    with pytest.raises(InvalidActionError, match=r"sub-env\(s\) \[1\]"):
        envs.step(scores)
    with pytest.raises(InvalidActionError, match="shape"):
        envs.step(np.zeros((2, 11), np.float32))


@pytest.mark.parametrize("compiled", BACKENDS)
@pytest.mark.parametrize("mode", ["priority", "select"])
def test_skipped_rounds_that_outgrow_the_round_records_match(mode, compiled):
    """Clusters large enough that every round is forced: a whole episode of long jobs runs in
    one step, past the simulator's initial 64 round records (the compiled step stops, grows
    them and resumes), with the same rounds, rewards and metrics as the single envs."""
    long_jobs = GeneratedTraceSource(GeneratorConfig(num_jobs=6, seed=7, min_duration_h=3.0, max_duration_h=6.0,
                                                     arrival_rate_per_hour=20.0, name="long"),
                                     num_jobs_range=(4, 6))
    kwargs = [{"trace": long_jobs, "gpus": 64, "max_jobs": 6, "action_mode": mode, "skip_trivial": True},
              {"trace": "teaching-12", "max_jobs": 6, "action_mode": mode, "skip_trivial": True}]
    reference = SyncVectorEnv([lambda kw=kw: gym.make(ENV_ID, **kw) for kw in kwargs])
    native = ClusterVectorEnv.from_env_kwargs(kwargs, max_episode_steps=10_000)
    assert_same(native.reset(seed=2), reference.reset(seed=2), "reset")
    rng = np.random.default_rng(1)
    most = 0
    for t in range(30):
        actions = random_actions(mode, native.action_masks(), rng)
        got, want = native.step(actions), reference.step(actions)
        assert_same(got, want, f"step {t}")
        most = max(most, int(got[4]["rounds_elapsed"].max()))
    assert most > 64, most  # some step ran more rounds than the records first hold


@pytest.mark.skipif(not batch_jit.AVAILABLE, reason="numba missing")
def test_per_trace_job_tables_are_shared_and_rebuilt(monkeypatch):
    """Clusters on one trace share its rows; once fresh traces pile up, only the tables some
    cluster runs are kept, and every cluster still reads its own trace's values."""
    monkeypatch.setattr(TraceJobTables, "slack_rows", 0)
    kwargs = [{"trace": "teaching-12", "max_jobs": 12}] * 2 + [{"trace": generated(12, 9), "gpus": 6, "max_jobs": 12}]
    native = ClusterVectorEnv.from_env_kwargs(kwargs)
    native.reset(seed=0)
    tables = native.job_tables
    assert tables.row0[0] == tables.row0[1] != tables.row0[2]
    for _ in range(6):  # new generated traces for cluster 2
        native.reset(seed=None, options={"reset_mask": np.array([False, False, True])})
        assert tables.size <= 2 * (12 + int(native.sim.num_jobs[2]))
        for k in range(3):
            predictor = native._tables[k][2]
            n = predictor.prior.shape[0]
            rows = slice(tables.row0[k], tables.row0[k] + n)
            assert np.array_equal(tables.prior[rows, : predictor.prior.shape[1]], predictor.prior)
            assert np.array_equal(tables.duration_at_s[rows, : predictor.prior.shape[1]], predictor.duration_at_s)
            sizes, relative = native._tables[k][3]
            assert np.array_equal(tables.type_sizes[rows, : sizes.shape[1]], sizes)
            assert np.array_equal(tables.type_relative[rows, : sizes.shape[1]], relative)


@pytest.mark.parametrize("compiled", BACKENDS)
def test_refused_actions_leave_the_clusters_as_they_were(compiled):
    """Non-finite priority scores and select entries other than 0 and 1 (in any dtype) are
    refused before any cluster runs a round; bool, integer and float 0/1 selects agree."""
    priority = ClusterVectorEnv(2, trace="teaching-12")
    reference = ClusterVectorEnv(2, trace="teaching-12")
    priority.reset(seed=0)
    reference.reset(seed=0)
    scores = np.zeros((2, 12), np.float32)
    for bad in (np.nan, np.inf):
        scores[1, 0] = bad
        with pytest.raises(InvalidActionError, match=r"sub-env\(s\) \[1\]: priority scores must be finite"):
            priority.step(scores)
    scores[1, 0] = 0.5
    assert_same(priority.step(scores), reference.step(scores), "after refused scores")
    select = ClusterVectorEnv(2, trace="teaching-12", action_mode="select")
    select.reset(seed=0)
    for bad in (np.full((2, 12), 2, np.int64), np.full((2, 12), 0.5), np.full((2, 12), np.nan),
                np.full((2, 12), "1")):
        with pytest.raises(InvalidActionError, match="only 0 and 1"):
            select.step(bad)
    bits = np.random.default_rng(0).random((2, 12)) < 0.5
    results = []
    for dtype in (bool, np.int8, np.int64, np.float32):
        envs = ClusterVectorEnv(2, trace="teaching-12", action_mode="select")
        envs.reset(seed=0)
        results.append(envs.step(bits.astype(dtype)))
    results.append(select.step(bits))  # the refused actions left it at its reset state
    for other in results[1:]:
        assert_same(other, results[0], "select dtypes")


@pytest.mark.parametrize("compiled", BACKENDS)
def test_huge_finite_scores_are_accepted_on_every_step_autoresets_included(compiled):
    """Each score is checked, not their sum: finite scores whose sum overflows (1e308 each)
    are accepted on the steps that reset a cluster too, and order the jobs as the same
    scores scaled down do."""
    huge = ClusterVectorEnv(2, trace="teaching-12")
    small = ClusterVectorEnv(2, trace="teaching-12")
    assert_same(huge.reset(seed=0), small.reset(seed=0), "reset")
    rng = np.random.default_rng(0)
    resets = 0
    for t in range(400):
        base = rng.uniform(0.5, 1.0, (2, 12))
        step = huge.step(base * 1e308)
        assert_same(step, small.step(base), f"step {t}")
        resets += int(np.sum(step[2] | step[3]))
        if resets >= 3:
            break
    assert resets >= 3, "no cluster reset: the autoreset steps were not exercised"


@pytest.mark.parametrize(("env_id", "kwargs", "parts"), [
    (ENV_ID, {"trace": "teaching-12"}, 1),  # the compiled step
    (ENV_ID, {"trace": "teaching-12", "obs_version": 3}, 1),  # the Python step
    ("shockwave_gym/Elastic-v0", {}, 2),  # scores, then count preferences
])
def test_the_single_env_accepts_huge_finite_scores_too(env_id, kwargs, parts):
    """The single env checks each score as the vector env does: 1e308 per job (whose sum
    overflows) orders the jobs as the same scores scaled down."""
    huge, small = gym.make(env_id, **kwargs), gym.make(env_id, **kwargs)
    huge.reset(seed=0)
    small.reset(seed=0)
    slots = huge.action_space.shape[0] // parts
    rng = np.random.default_rng(0)
    for _ in range(30):
        base = rng.uniform(0.5, 1.0, huge.action_space.shape)
        scaled = base.copy()
        scaled[:slots] *= 1e308
        got, want = huge.step(scaled), small.step(base)
        assert all(np.array_equal(got[0][k], want[0][k]) for k in want[0]) and got[1:4] == want[1:4]
        if want[2] or want[3]:
            break
    huge.reset(seed=0)
    bad = np.zeros(huge.action_space.shape)
    bad[:slots] = np.inf
    with pytest.raises(InvalidActionError, match="must be finite"):
        huge.step(bad)


@pytest.mark.parametrize("mode", ["priority", "sequential"])
def test_compiled_false_gives_the_single_envs_with_the_same_trajectories(mode):
    """``compiled=False`` (and a missing numba) takes the fallback: K single envs, each on its
    reference path where the kernels do not serve it; the trajectories are the native env's."""
    from shockwave_gym.env.vector.fallback import SyncClusterVectorEnv

    kwargs = {"trace": "teaching-12", "action_mode": mode, "max_jobs": 8}
    fallback = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="vector_entry_point", compiled=False, **kwargs)
    assert isinstance(fallback, SyncClusterVectorEnv)
    if not batch_jit.AVAILABLE:
        return
    native = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="vector_entry_point", **kwargs)
    assert isinstance(native, ClusterVectorEnv)
    assert_same(native.reset(seed=5), fallback.reset(seed=5), "reset")
    rng = np.random.default_rng(5)
    for t in range(40):
        actions = random_actions(mode, native.action_masks(), rng)
        assert_same(native.step(actions), fallback.step(actions), f"step {t}")


def test_without_numba_the_envs_run_the_reference(monkeypatch):
    """No numba: ``gym.make`` steps on its Python path (no compiled step), ``gym.make_vec``
    gives K single envs, and the native env refuses to start; the trajectories are the same."""
    from shockwave_gym.env.vector import single
    from shockwave_gym.env.vector.fallback import SyncClusterVectorEnv

    kwargs = {"trace": "teaching-12", "action_mode": "priority", "max_jobs": 8}
    actions = np.random.default_rng(2).uniform(-1, 1, (40, 8)).astype(np.float32)
    kernels = gym.make(ENV_ID, **kwargs)
    expected = [kernels.reset(seed=2)] + [kernels.step(a) for a in actions]
    assert type(kernels.unwrapped._compiled).__name__ == "SingleStep"
    monkeypatch.setattr(batch_jit, "AVAILABLE", False)
    monkeypatch.setattr(single, "AVAILABLE", False)
    assert isinstance(gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="vector_entry_point", **kwargs),
                      SyncClusterVectorEnv)
    with pytest.raises(InputError, match="numba"):
        ClusterVectorEnv(2, **kwargs)
    plain = gym.make(ENV_ID, **kwargs)
    got = [plain.reset(seed=2)] + [plain.step(a) for a in actions]
    assert plain.unwrapped._compiled is None
    for t, (a, b) in enumerate(zip(got, expected, strict=True)):
        assert_same(a, b, f"step {t}")

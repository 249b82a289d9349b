"""Information regimes and scored tasks in the env (docs/ENV.md, "Information regimes",
"Rewards"): the ``regime=`` / ``early_endings=`` / ``task=`` options, observation version 3,
the vector entry point's fallback, the episode return against the task's cost, and the
information boundary through the env's public outputs (observations, masks, infos).
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import shockwave_gym  # noqa: F401  (registers the ids)
from shockwave_gym import regimes as regimes_module
from shockwave_gym.env.cluster_env import ClusterEnv
from shockwave_gym.env.rewards import DEFAULT_REWARD, make_reward
from shockwave_gym.env.vector.fallback import SyncClusterVectorEnv
from shockwave_gym.env.vector.vector_env import ClusterVectorEnv
from shockwave_gym.errors import InputError
from shockwave_gym.interface.observation import (
    OBSERVATION_VERSIONS,
    build_observation,
    feature_names,
    observation_signature,
)
from shockwave_gym.jobs import JobSpec
from shockwave_gym.regimes import Regime, apply_regime
from shockwave_gym.tasks import DEFAULT_TASK, TASKS, get_task
from shockwave_gym.testing import check_env
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import Trace

TEACHING = "shockwave_gym/Teaching-v0"
GENERATED = "shockwave_gym/Generated-v0"
#: every knowledge regime, and one with early endings
REGIMES = {
    "exact": {},
    "estimate": {"regime": "estimate", "obs_version": 3},
    "unknown": {"regime": "unknown", "obs_version": 3},
    "unknown-early": {"regime": "unknown", "early_endings": 0.3, "obs_version": 3},
}
MODES = ("priority", "select", "sequential")


def _policy_actions(env, rng: np.random.Generator, steps: int) -> list:
    space = env.action_space
    space.seed(int(rng.integers(2**31)))
    return [space.sample() for _ in range(steps)]


def _run(env, seed: int, actions) -> list[tuple]:
    """(observation, reward, terminated, truncated, info) of every step, from a reset."""
    out = [env.reset(seed=seed)]
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        out.append((obs, reward, terminated, truncated, info))
        if terminated or truncated:
            break
    return out


# --- the options -------------------------------------------------------------------------

def test_regime_takes_a_regime_a_name_or_none():
    env = ClusterEnv(trace="teaching-12")
    assert env.regime == Regime() and env.regime.is_default
    named = ClusterEnv(trace="teaching-12", regime="unknown", early_endings=0.25, obs_version=3)
    assert named.regime == Regime("unknown", 0.25)
    given = Regime("estimate", early_endings="logged", seed=7)
    assert ClusterEnv(trace="teaching-12", regime=given, obs_version=3).regime is given


@pytest.mark.parametrize("kwargs, message", [
    ({"regime": "sometimes", "obs_version": 3}, "regime must be a Regime or one of exact, estimate, unknown"),
    ({"regime": Regime("unknown"), "early_endings": 0.1, "obs_version": 3}, "pass one or the other"),
    ({"regime": "unknown", "early_endings": 1.5, "obs_version": 3}, "early-endings must be a share"),
    ({"regime": "estimate"}, "obs_version=2 reads each job's length, which regime='estimate' hides: pass obs_version=3"),
    ({"regime": "unknown", "obs_version": 1}, "obs_version=1 reads each job's length"),
    ({"obs_version": 4}, "obs_version must be one of 1, 2, 3"),
    ({"task": "speed"}, "unknown task 'speed'; tasks: jct, fairness, balanced"),
    ({"task": "jct", "reward": "makespan"}, r"give reward= or task=, not both"),
    ({"task": 3}, "task must be one of"),
])
def test_bad_regime_and_task_options_are_refused_in_one_line(kwargs, message):
    with pytest.raises(InputError, match=message) as caught:
        ClusterEnv(trace="teaching-12", **kwargs)
    assert "\n" not in str(caught.value)


def test_early_endings_alone_keep_the_length_public_so_every_version_works():
    for version in OBSERVATION_VERSIONS:
        env = ClusterEnv(trace="teaching-12", regime="exact", early_endings=0.5, obs_version=version)
        obs, _ = env.reset(seed=0)
        assert env.observation_space.contains(obs)
        assert env.view.length_model.early_share == 0.5


def test_the_env_runs_the_jobs_the_regime_gives_like_run_episode():
    """The env's simulator holds apply_regime(trace jobs, regime), the function run_episode uses."""
    regime = Regime("estimate", early_endings=0.4, seed=5)
    env = ClusterEnv(trace="teaching-12", regime=regime, obs_version=3)
    env.reset(seed=0)
    assert env.simulator.static.specs == apply_regime(env.trace.jobs, regime)
    assert env.view.length_regime == "estimate" and not hasattr(env.view, "num_epochs")
    assert env.episode_regime is regime  # a fixed trace: the Regime's own seed


def test_default_regime_changes_nothing_and_keeps_the_compiled_step():
    actions = _policy_actions(ClusterEnv(trace="teaching-12"), np.random.default_rng(0), 30)
    runs = [_run(ClusterEnv(trace="teaching-12", **kw), 4, actions)
            for kw in ({}, {"regime": None}, {"regime": "exact"}, {"regime": Regime(seed=9)})]
    for run in runs[1:]:
        _assert_same_runs(runs[0], run)
    env = ClusterEnv(trace="teaching-12", regime="exact")
    env.reset(seed=0)
    from shockwave_gym.env.vector import single

    assert (env._compiled_step() is not None) == single.AVAILABLE
    early = ClusterEnv(trace="teaching-12", regime="exact", early_endings=0.3)
    early.reset(seed=0)
    assert early._compiled_step() is None  # a non-default regime takes the Python step


def test_a_fixed_trace_repeats_its_regime_and_a_drawing_source_draws_one_per_reset():
    fixed = ClusterEnv(trace="teaching-12", regime="unknown", early_endings=0.5, obs_version=3)
    fixed.reset(seed=1)
    first = fixed.simulator.static.specs
    fixed.reset(seed=2)
    assert fixed.simulator.static.specs == first and fixed.episode_regime.seed == 0

    def episode(seed, **kw):
        env = gym.make(GENERATED, **kw).unwrapped
        env.reset(seed=seed)
        return env.trace, env.episode_regime, env.simulator.static.specs

    drawn = {"regime": "unknown", "early_endings": 0.5, "obs_version": 3}
    trace, regime, specs = episode(3, **drawn)
    again = episode(3, **drawn)
    assert again[1] == regime and again[2] == specs  # deterministic per reset seed
    assert episode(4, **drawn)[1].seed != regime.seed
    assert episode(3)[0].jobs == trace.jobs  # the regime's seed is drawn after the trace
    assert specs == apply_regime(trace.jobs, regime)


# --- observation version 3 ---------------------------------------------------------------

def test_version_3_is_version_2_plus_beliefs_and_equals_it_in_the_exact_regime():
    jobs2, cluster2 = feature_names(2)
    jobs3, cluster3 = feature_names(3)
    assert jobs3[: len(jobs2)] == jobs2 and jobs3[len(jobs2):] == ("remaining_std", "remaining_cv", "end_hazard")
    assert cluster3[: len(cluster2)] == cluster2
    assert cluster3[len(cluster2):] == ("length_exact", "length_estimate", "length_unknown", "early_share")
    assert len({observation_signature(v) for v in OBSERVATION_VERSIONS}) == 3
    actions = _policy_actions(ClusterEnv(trace="teaching-12"), np.random.default_rng(1), 40)
    run2 = _run(ClusterEnv(trace="teaching-12"), 0, actions)
    run3 = _run(ClusterEnv(trace="teaching-12", obs_version=3), 0, actions)
    assert len(run2) == len(run3)
    for a, b in zip(run2, run3, strict=True):
        np.testing.assert_array_equal(a[0]["jobs"], b[0]["jobs"][:, : len(jobs2)])
        np.testing.assert_array_equal(a[0]["cluster"], b[0]["cluster"][: len(cluster2)])
        assert b[0]["cluster"][len(cluster2):].tolist() == [1.0, 0.0, 0.0, 0.0]
        assert not b[0]["jobs"][:, len(jobs2):2 + len(jobs2)].any()  # known lengths: no spread


@pytest.mark.parametrize("name", ["estimate", "unknown", "unknown-early"])
def test_version_3_reads_the_belief_and_the_builder_agrees_with_the_env(name):
    env = gym.make(TEACHING, **REGIMES[name]).unwrapped
    obs, _ = env.reset(seed=0)
    spread, moved = [], False
    for action in _policy_actions(env, np.random.default_rng(2), 30):
        obs, _, terminated, truncated, _ = env.step(action)
        assert env.observation_space.contains(obs)
        rebuilt = build_observation(env.view, env.slots, version=3)
        np.testing.assert_array_equal(rebuilt["jobs"], obs["jobs"])
        np.testing.assert_array_equal(rebuilt["cluster"], obs["cluster"])
        valid = obs["job_valid"].astype(bool)
        spread.append(obs["jobs"][valid, 14:16])
        moved |= bool((obs["jobs"][valid, 1] > 0).any())
        if terminated or truncated:
            break
    knowledge = REGIMES[name]["regime"]
    assert obs["cluster"][8:11].tolist() == [float(k == knowledge) for k in ("exact", "estimate", "unknown")]
    assert obs["cluster"][11] == np.float32(REGIMES[name].get("early_endings", 0.0))
    assert moved and np.concatenate(spread).max() > 0  # progress and uncertainty are read


# --- tasks -------------------------------------------------------------------------------

def test_the_default_reward_is_the_declared_default_task():
    assert DEFAULT_REWARD == get_task(DEFAULT_TASK).reward == {"jct": 1.0}
    env = ClusterEnv(trace="teaching-12")
    assert [(n, w) for n, _, w in env.reward_fn.terms] == [("jct", 1.0)]
    for name, task in TASKS.items():
        made = ClusterEnv(trace="teaching-12", task=name).reward_fn
        assert [(n, w) for n, _, w in made.terms] == [(n, w) for n, _, w in make_reward(task.reward).terms]
    assert ClusterEnv(trace="teaching-12", task="jct", reward="default").reward_fn.terms == env.reward_fn.terms


@pytest.mark.parametrize("regime", ["exact", "unknown-early"])
@pytest.mark.parametrize("task", [None, *TASKS])
def test_the_return_of_a_full_episode_is_minus_the_tasks_cost(task, regime):
    """score = (cost_FIFO + return) / (cost_FIFO - cost_reference), since return = -cost."""
    env = gym.make(TEACHING, task=task, **REGIMES[regime]).unwrapped
    env.reset(seed=0)
    total, metrics = 0.0, None
    rng = np.random.default_rng(5)
    while metrics is None:
        _, reward, terminated, truncated, info = env.step(rng.uniform(-1, 1, env.max_jobs))
        total += reward
        assert not truncated
        metrics = info.get("metrics")
    chosen = get_task(DEFAULT_TASK if task is None else task)
    cost = chosen.cost(metrics, first_arrival_s=min(j.arrival_s for j in env.trace.jobs),
                       round_s=env.sim_config.round_s)
    assert math.isfinite(cost) and cost > 0
    assert total == pytest.approx(-cost, rel=1e-9)


# --- vector env --------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, native", [
    ({}, True), ({"task": "jct"}, True), ({"task": "fairness"}, False), ({"task": "balanced"}, False),
    ({"obs_version": 3}, False), ({"regime": "exact", "early_endings": 0.2}, False),
    ({"regime": "unknown", "obs_version": 3}, False),
])
def test_make_vec_falls_back_for_what_the_native_env_does_not_batch(kwargs, native):
    for env_id in (TEACHING, GENERATED, "shockwave_gym/Suite-small-light-v0"):
        envs = gym.make_vec(env_id, num_envs=2, **kwargs)
        assert isinstance(envs, ClusterVectorEnv if native else SyncClusterVectorEnv)
        envs.close()
    if not native:
        with pytest.raises(InputError, match="native vector env|not batched"):
            ClusterVectorEnv(2, trace="teaching-12", **kwargs)


def _assert_same(a, b, where=""):
    if isinstance(a, dict):
        assert set(a) == set(b), where
        for key in a:
            _assert_same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, tuple | list):
        assert isinstance(b, tuple | list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray | np.generic) or isinstance(b, np.ndarray | np.generic):
        assert np.asarray(a).dtype == np.asarray(b).dtype, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, float) and math.isnan(a):
        assert isinstance(b, float) and math.isnan(b), where
    else:
        assert a == b, where


def _assert_same_runs(a: list, b: list) -> None:
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        _assert_same(x, y, f"step {i}")


@pytest.mark.parametrize("task", list(TASKS))
@pytest.mark.parametrize("regime", list(REGIMES))
def test_the_vector_env_equals_k_single_envs_in_every_regime_and_task(regime, task):
    k, seed, steps = 3, 11, 120
    kwargs = {**REGIMES[regime], "task": task, "action_mode": "select"}
    envs = gym.make_vec(TEACHING, num_envs=k, **kwargs)
    singles = [gym.make(TEACHING, **kwargs) for _ in range(k)]
    rng = np.random.default_rng(0)
    actions = (rng.random((steps, k, envs.single_action_space.n)) < 0.8).astype(np.int8)
    obs, infos = envs.reset(seed=seed)
    expected = [env.reset(seed=seed + i) for i, env in enumerate(singles)]
    ended = np.zeros(k, bool)
    ends = 0
    for i in range(k):
        _assert_same({key: value[i] for key, value in obs.items()}, expected[i][0], f"reset {i}")
    for t in range(steps):
        obs, rewards, terminated, truncated, infos = envs.step(actions[t])
        for i, env in enumerate(singles):
            if ended[i]:  # next-step autoreset: the single env resets with its own RNG
                single_obs, _ = env.reset()
                single = (single_obs, 0.0, False, False)
            else:
                single = env.step(actions[t, i])
            _assert_same({key: value[i] for key, value in obs.items()}, single[0], f"step {t} env {i}")
            assert (rewards[i], terminated[i], truncated[i]) == tuple(single[1:4]), (t, i)
            for key, value in (single[4] if len(single) > 4 else {}).items():
                if key != "metrics":
                    assert np.array_equal(np.asarray(infos[key][i]), np.asarray(value)), (t, i, key)
            if not ended[i] and (single[2] or single[3]):
                batched = infos["metrics"]
                for key, value in single[4]["metrics"].items():
                    got = batched[key][i]
                    assert got == value or (math.isnan(got) and math.isnan(value)), (t, i, key)
                ends += 1
        np.testing.assert_array_equal(envs.action_masks(),
                                      np.stack([env.unwrapped.action_masks() for env in singles]))
        ended = terminated | truncated
    assert ends >= k  # every cluster finished an episode: the metrics were compared
    envs.close()


@pytest.mark.parametrize("regime", list(REGIMES))
def test_check_env_and_determinism_in_every_regime_and_action_mode(regime):
    report = check_env(TEACHING, action_modes=MODES, steps=40, **REGIMES[regime])
    assert report.action_modes == MODES


# --- the information boundary through the env --------------------------------------------

MODEL = "Transformer"
TABLE = ThroughputTable({(MODEL, 100, 1): 100.0, (MODEL, 100, 2): 180.0}, source="env regimes table")
#: true epochs of two traces that differ only there (jobs 0 and 2); arrivals, gangs and
#: everything else the same
TRUE_A, TRUE_B = (370, 530, 200, 610, 440), (450, 530, 290, 610, 440)


def _trace(epochs, name):
    gangs, arrivals = (1, 2, 1, 1, 2), (0.0, 0.0, 30.0, 250.0, 400.0)
    return Trace(name, tuple(JobSpec(i, MODEL, 100, 100 * e, g, "static", a)
                             for i, (e, g, a) in enumerate(zip(epochs, gangs, arrivals, strict=True))))


@pytest.mark.parametrize("regime", [Regime("unknown"), Regime("unknown", early_endings=0.5, seed=3),
                                    Regime("estimate", seed=1), Regime("estimate", early_endings=0.5, seed=11)],
                         ids=lambda r: r.describe())
@pytest.mark.parametrize("mode", MODES)
def test_traces_differing_only_in_hidden_lengths_look_the_same_until_one_of_them_ends(
        regime, mode, monkeypatch):
    """Observations (v3), masks and infos are identical until the first completion of a job
    whose true run differs; afterwards they differ (the comparison can fail). In ``estimate``
    the user's estimate is held fixed (it is public), so only the truth differs."""
    if regime.knowledge == "estimate":
        monkeypatch.setattr(regimes_module, "estimated_iterations", lambda job, _regime: 100 * 500)
    envs = [ClusterEnv(trace=_trace(epochs, "secret"), gpus=3, throughputs=TABLE, action_mode=mode,
                       regime=regime, obs_version=3, round_s=7.0,
                       restart_overhead_s=1.0) for epochs in (TRUE_A, TRUE_B)]
    for env in envs:
        env.reset(seed=0)
    runs = [[run.run_epochs(list(range(e))) for run, e in zip(env.simulator.static.specs, epochs, strict=True)]
            for env, epochs in zip(envs, (TRUE_A, TRUE_B), strict=True)]
    differ = np.flatnonzero(np.array(runs[0]) != np.array(runs[1]))
    assert differ.size
    rng = np.random.default_rng(0)
    same_steps, diverged = 0, False
    a = b = None
    for _ in range(2000):
        masks = [env.action_masks() for env in envs]
        np.testing.assert_array_equal(masks[0], masks[1])
        action = envs[0].action_space.sample() if mode != "sequential" else int(
            rng.choice(np.flatnonzero(masks[0])))
        if mode == "priority":
            action = rng.uniform(-1, 1, envs[0].max_jobs).astype(np.float32)
        a, b = (env.step(action) for env in envs)
        if any(env.view.is_done[differ].any() for env in envs):
            break  # this step's round ended a job whose true run differs
        assert set(a[4]) == set(b[4]) and "metrics" not in a[4]
        _assert_same(a, b, f"step {same_steps}")
        same_steps += 1
    assert same_steps >= 20
    try:  # the step that ended such a job: the runs part there, so the comparison can fail
        _assert_same(a[:4], b[:4])
    except AssertionError:
        diverged = True
    assert diverged


def test_the_ansi_render_shows_believed_totals_where_the_length_is_hidden():
    hidden = ClusterEnv(trace="teaching-12", regime="unknown", obs_version=3, render_mode="ansi")
    exact = ClusterEnv(trace="teaching-12", render_mode="ansi")
    for env in (hidden, exact):
        env.reset(seed=0)
        for _ in range(3):
            env.step(np.zeros(env.max_jobs, np.float32))
    assert "/~" in hidden.render() and "/~" not in exact.render()
    totals = {str(n) for n in exact.view.num_epochs.tolist()}
    assert any(f"/{n}" in exact.render() for n in totals)


def test_a_regime_suite_id_runs_each_trace_in_the_suites_regime():
    """Suite ids of regime suites play the leaderboard's episodes: the suite's regime with the
    per-trace seed of its split entry, observation version 3 by default."""
    import gymnasium as gym

    from shockwave_gym.traces.suites import split_entries, suite_regime

    entries = split_entries(["small-overloaded-unknown"], "test")
    env = gym.make("shockwave_gym/Suite-small-overloaded-unknown-v0", split="test")
    for i in range(2):
        env.reset(seed=i)
        inner = env.unwrapped
        assert inner.obs_version == 3 and inner.trace.name == entries[i].trace_name
        assert inner.episode_regime == entries[i].regime
        assert inner.simulator.view.length_regime == "unknown"
    train = gym.make("shockwave_gym/Suite-small-overloaded-unknown-v0")
    train.reset(seed=5)
    seed = int(train.unwrapped.trace.name.rsplit("-s", 1)[1])
    assert train.unwrapped.episode_regime == suite_regime("small-overloaded-unknown", seed)
    exact = gym.make("shockwave_gym/Suite-small-overloaded-unknown-v0", split="test", regime="exact")
    exact.reset(seed=0)
    assert exact.unwrapped.obs_version == 2 and exact.unwrapped.episode_regime.is_default

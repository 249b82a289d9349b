"""The env on a heterogeneous cluster: exact masks (every unmasked pick is accepted by the
simulator, every masked one rejected), placements the simulator accepts in every mode, types
chosen in sequential mode, check_env and determinism for the heterogeneous ids, the vector
fallback for the sequential mode and the native vector env in the others (same trajectories
as K separate envs), and the V100-only typed path equal to the
homogeneous env."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import shockwave_gym  # noqa: F401  (registers the ids)
from shockwave_gym.batch import jit as batch_jit
from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.env import ClusterEnv
from shockwave_gym.env.vector.fallback import SyncClusterVectorEnv
from shockwave_gym.env.vector.vector_env import ClusterVectorEnv
from shockwave_gym.errors import InputError, InvalidActionError
from shockwave_gym.placement import Placement
from shockwave_gym.testing import check_env
from shockwave_gym.testing.env import random_valid_action, rollout_digest
from shockwave_gym.traces import GeneratedTraceSource, GeneratorConfig

HETERO_ID = "shockwave_gym/Hetero-v0"
#: tight per-type capacity, so that masks and repairs are exercised: gangs up to 4
SMALL = "v100=4,p100=2,k80=4"


def small_source(num_jobs: int = 16) -> GeneratedTraceSource:
    config = GeneratorConfig(num_jobs=num_jobs, seed=0, max_duration_h=1.0, name="hetero-small",
                             gang_mix={1: 0.5, 2: 0.3, 4: 0.2})
    return GeneratedTraceSource(config, num_jobs_range=(num_jobs // 2, num_jobs),
                                arrival_rate_range_per_hour=(60.0, 120.0))


def small_env(mode: str, **kwargs) -> ClusterEnv:
    return ClusterEnv(trace=small_source(), cluster=SMALL, action_mode=mode, max_jobs=10, **kwargs)


def test_cluster_argument_builds_the_heterogeneous_env_and_checks_gpus():
    env = small_env("sequential")
    assert env.cluster == ClusterSpec.parse(SMALL) and env.gpus == 10
    assert env.action_space.n == 3 * 10 + 1
    env.reset(seed=0)
    assert env.view.heterogeneous and env.view.type_gpus.tolist() == [4, 2, 4]
    with pytest.raises(InputError, match="disagrees"):
        ClusterEnv(trace=small_source(), cluster=SMALL, gpus=12)
    with pytest.raises(InputError, match="unknown GPU type"):
        ClusterEnv(trace=small_source(), cluster="a100=4")
    # V100 only is the homogeneous path
    plain = ClusterEnv(trace="teaching-12", cluster="v100=4")
    assert plain.cluster is None and plain.gpus == 4 and plain.action_space == ClusterEnv(trace="teaching-12").action_space
    assert ClusterEnv(trace=small_source(), cluster="v100=6").gpus == 6  # no gpus= needed
    with pytest.raises(InputError, match="disagrees"):
        ClusterEnv(trace="teaching-12", cluster="v100=6", gpus=4)


def _advance(env: ClusterEnv, rng: np.random.Generator, mode: str, steps: int):
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(random_valid_action(env, rng, mode))
        if terminated or truncated:
            env.reset()


@pytest.mark.parametrize("idle_allowed", [False, True])
def test_sequential_masks_are_exact_against_the_simulator(idle_allowed):
    """At many sub-steps: every unmasked (slot, type) pick, added to the round built so far,
    is a placement the simulator accepts; every masked pick of an occupied slot is one it
    rejects; stepping an unmasked action is never counted as illegal. "End round" is legal
    exactly with ``idle_allowed``; without it the rounds are work-conserving: a round closes
    only when no pick is legal."""
    env = small_env("sequential", idle_allowed=idle_allowed)
    env.reset(seed=1)
    rng = np.random.default_rng(1)
    checked_legal = checked_illegal = 0
    for _ in range(150):
        mode, sim, slots = env._mode, env.simulator, env.slots
        mask = env.action_masks()
        assert mask.shape == (3 * env.max_jobs + 1,) and mask[-1] == idle_allowed
        ids, types = mode.placed(slots)
        for action in range(mode.end_action):
            t, s = divmod(action, env.max_jobs)
            job = int(slots.slot_job[s])
            if job < 0:
                assert not mask[action]
                continue
            placement = Placement(np.append(ids, job), np.append(types, t))
            if mask[action]:
                sim.validate_placement(placement)
                checked_legal += 1
            else:
                with pytest.raises(InvalidActionError):
                    sim.validate_placement(placement)
                checked_illegal += 1
        action = random_valid_action(env, rng, "sequential")
        picked_before = mode.placed(slots)[0].size
        _, _, terminated, truncated, info = env.step(action)
        assert info["action_repairs"] == 0
        if info["round_closed"] and not idle_allowed and action != mode.end_action:
            # the round closed by itself: the last pick left no legal pick
            record = env.simulator.history[-1]
            assert record.job_ids.size == picked_before + 1
        if terminated or truncated:
            env.reset()
    assert checked_legal > 100 and checked_illegal > 100


@pytest.mark.parametrize("mode", ["priority", "select"])
def test_priority_and_select_place_fastest_free_first_and_are_accepted(mode):
    """The decoded placement is the simulator's default rule on the agent's order (priority:
    by score, then the queue; select: the set in arrival order), it is accepted, and priority
    is work-conserving per type."""
    env = small_env(mode)
    env.reset(seed=2)
    rng = np.random.default_rng(2)
    rounds = 0
    for _ in range(120):
        view, slots = env.view, env.slots
        action = random_valid_action(env, rng, mode)
        if mode == "select":
            action[:] = env.action_masks()[1::2]  # ask for every slotted job: the repair rule places
        sim_copy = env.simulator.copy()
        ids, types, _ = env._mode.place(action, view, slots, env._types)
        sim_copy.validate_placement(Placement(ids, types))
        # the default rule's own choice for the same order
        expected = sim_copy.validate_placement(ids)
        order = ids.argsort()
        assert expected[0].tolist() == ids[order].tolist() and expected[1].tolist() == types[order].tolist()
        if mode == "priority":  # nothing left waiting fits any type it can run on
            used = np.bincount(types, weights=view.gang[ids], minlength=3)
            free = view.type_gpus - used
            waiting = np.setdiff1d(view.active_job_ids, ids)
            fits = view.runnable[waiting] & (view.gang[waiting, None] <= free[None, :])
            assert not fits.any()
        _, _, terminated, truncated, _ = env.step(action)
        record = env.simulator.history[-1]
        assert record.job_ids.tolist() == np.sort(ids).tolist()
        assert record.gpu_types.tolist() == types[order].tolist()
        rounds += 1
        if terminated or truncated:
            env.reset()
    assert rounds == 120


def _run_alone(env: ClusterEnv, job: int, gpu_type: int) -> None:
    """One round in which only ``job`` runs, on ``gpu_type``."""
    *_, info = env.step(gpu_type * env.max_jobs + int(env.slots.job_slot[job]))
    assert info["action_repairs"] == 0
    if not info["round_closed"]:
        *_, info = env.step(env._mode.end_action)
    assert info["round_closed"]


def test_sequential_runs_a_job_on_the_type_it_picks_and_a_move_pays_the_restart():
    env = small_env("sequential", idle_allowed=True)  # rounds with one job, by "end round"
    env.reset(seed=3)
    job = int(env.slots.slot_job[np.flatnonzero(env.slots.slot_job >= 0)[0]])
    k80, v100 = env.cluster.index("k80"), env.cluster.index("v100")
    _run_alone(env, job, k80)
    record = env.simulator.history[-1]
    assert record.job_ids.tolist() == [job] and record.gpu_types.tolist() == [k80]
    assert env.view.last_type[job] == k80
    # the same type again: no restart; another type: the restart is paid
    _run_alone(env, job, k80)
    assert env.view.last_overhead_s[job] == 0.0
    _run_alone(env, job, v100)
    assert env.simulator.history[-1].gpu_types.tolist() == [v100]
    assert env.view.last_overhead_s[job] == env.view.restart_overhead_s


def test_observation_carries_per_type_throughput_and_free_capacity():
    from shockwave_gym.interface.observation import feature_names

    env = small_env("sequential")
    obs, _ = env.reset(seed=4)
    rng = np.random.default_rng(4)
    while env.view.num_active < 3:  # a round start with a choice to make
        obs, *_, info = env.step(random_valid_action(env, rng, "sequential"))
        while not info["round_closed"]:
            obs, *_, info = env.step(random_valid_action(env, rng, "sequential"))
    job_names, cluster_names = feature_names(2)
    free = {t: obs["cluster"][cluster_names.index(f"free_{t}")] for t in ("v100", "p100", "k80")}
    assert free == pytest.approx({"v100": 0.4, "p100": 0.2, "k80": 0.4})
    # per slot: rate on each type / V100 rate, as the view's per-type rates say
    view, slots = env.view, env.slots
    valid = slots.slot_job >= 0
    jobs = slots.slot_job[valid]
    rel = view.throughput_by_type[jobs] / view.throughput_by_type[jobs, :1]
    for t, name in enumerate(("v100", "p100", "k80")):
        got = obs["jobs"][valid, job_names.index(f"throughput_{name}")]
        assert got == pytest.approx(np.minimum(rel[:, t], 4.0), rel=1e-6)
    # mid-round: picking a job on p100 takes its gang from p100's free capacity only
    mask = env.action_masks()
    p100 = env.cluster.index("p100")
    pick = int(np.flatnonzero(mask[p100 * env.max_jobs:(p100 + 1) * env.max_jobs])[0])
    gang = int(view.gang[slots.slot_job[pick]])
    obs, *_, info = env.step(p100 * env.max_jobs + pick)
    assert not info["round_closed"]
    after = {t: obs["cluster"][cluster_names.index(f"free_{t}")] for t in ("v100", "p100", "k80")}
    assert after == pytest.approx({"v100": 0.4, "p100": (2 - gang) / 10, "k80": 0.4})
    assert obs["picked"][pick] == 1


def test_v100_only_typed_path_equals_the_homogeneous_env(monkeypatch):
    """The heterogeneous machinery (typed modes, HeteroSimulator) on a cluster of V100s only
    gives the homogeneous env's trajectories bit for bit, in every mode."""
    import shockwave_gym.env.cluster_env as module

    for mode in ("priority", "select", "sequential"):
        plain = ClusterEnv(trace="teaching-12", action_mode=mode)
        with monkeypatch.context() as patch:
            patch.setattr(module, "resolve_cluster", lambda spec: spec)  # keep the V100-only spec
            typed = ClusterEnv(trace="teaching-12", action_mode=mode, cluster="v100=4")
        assert typed.cluster is not None and typed.action_space == plain.action_space
        rng_a, rng_b = np.random.default_rng(7), np.random.default_rng(7)
        out_a, out_b = plain.reset(seed=7), typed.reset(seed=7)
        for step in range(400):
            for key in out_a[0]:
                assert np.array_equal(out_a[0][key], out_b[0][key]), (mode, step, key)
            action = random_valid_action(plain, rng_a, mode)
            assert np.array_equal(action, random_valid_action(typed, rng_b, mode))
            out_a, out_b = plain.step(action), typed.step(action)
            assert out_a[1:4] == out_b[1:4], (mode, step)
            if out_a[2] or out_a[3]:
                plain_metrics, typed_metrics = out_a[4]["metrics"], out_b[4]["metrics"]
                # the heterogeneous path adds the cluster and per-type utilisation
                assert {k: typed_metrics[k] for k in plain_metrics} == plain_metrics
                assert typed_metrics["utilization_v100"] == pytest.approx(plain_metrics["utilization"], rel=1e-12)
                break
        else:
            pytest.fail(f"{mode}: no episode end in 400 steps")


def test_check_env_and_determinism_pass_for_the_heterogeneous_ids():
    report = check_env(HETERO_ID, steps=40)
    assert report.action_modes == ("select", "priority", "sequential")
    for mode in ("priority", "sequential"):
        assert rollout_digest(HETERO_ID, mode, 5, 40) == rollout_digest(HETERO_ID, mode, 5, 40)
        assert rollout_digest(HETERO_ID, mode, 5, 40) != rollout_digest(HETERO_ID, mode, 6, 40)
    check_env("shockwave_gym/Suite-hetero-mixed-v0", action_modes=("sequential",), steps=30)


def test_make_vec_falls_back_for_sequential_and_matches_separate_envs():
    k = 3
    envs = gym.make_vec(HETERO_ID, num_envs=k, vectorization_mode="vector_entry_point", action_mode="sequential")
    assert isinstance(envs, SyncClusterVectorEnv) and envs.max_episode_steps == 50_000
    singles = [gym.make(HETERO_ID, action_mode="sequential") for _ in range(k)]
    obs, _ = envs.reset(seed=10)
    single_obs = [env.reset(seed=10 + i)[0] for i, env in enumerate(singles)]
    rng = np.random.default_rng(0)
    last_done = np.zeros(k, bool)
    for step in range(120):
        for i in range(k):
            for key in obs:
                assert np.array_equal(obs[key][i], single_obs[i][key]), (step, i, key)
        masks = envs.action_masks()
        assert masks.shape == (k, envs.single_action_space.n)
        actions = np.array([int(rng.choice(np.flatnonzero(m))) for m in masks])
        obs, rewards, terminated, truncated, _ = envs.step(actions)
        for i, env in enumerate(singles):
            if last_done[i]:
                single_obs[i] = env.reset()[0]  # next-step autoreset
                assert rewards[i] == 0.0
                continue
            o, r, te, tr, _ = env.step(int(actions[i]))
            single_obs[i] = o
            assert (r, te, tr) == (rewards[i], terminated[i], truncated[i]), (step, i)
        last_done = terminated | truncated
    # homogeneous ids keep the native vector env
    native = gym.make_vec("shockwave_gym/Teaching-v0", num_envs=2, vectorization_mode="vector_entry_point")
    assert isinstance(native, ClusterVectorEnv)
    suite = gym.make_vec("shockwave_gym/Suite-hetero-mixed-v0", num_envs=2, vectorization_mode="vector_entry_point",
                         action_mode="sequential")
    assert isinstance(suite, SyncClusterVectorEnv)
    assert suite.reset(seed=0)[0]["jobs"].shape[0] == 2
    with pytest.raises(InputError, match="sequential mode on one GPU type"):
        ClusterVectorEnv(2, trace="teaching-12", cluster="v100=4,p100=4", action_mode="sequential")
    # priority and select on several types: the native vector env
    for mode in ("priority", "select"):
        native = gym.make_vec("shockwave_gym/Suite-hetero-mixed-v0", num_envs=2, vectorization_mode="vector_entry_point",
                              action_mode=mode)
        assert isinstance(native, ClusterVectorEnv)
        assert native.reset(seed=0)[0]["jobs"].shape[0] == 2


@pytest.mark.skipif(not batch_jit.AVAILABLE, reason="numba missing")
@pytest.mark.parametrize("mode", ["priority", "select"])
@pytest.mark.parametrize("obs_version", [1, 2])
@pytest.mark.parametrize("skip", [False, True])
def test_the_native_vector_env_equals_separate_reference_envs_on_typed_clusters(mode, obs_version, skip):
    """The native vector env batches heterogeneous clusters (different types per cluster):
    every observation, reward, termination, truncation and info equals K single envs on
    their Python path, across autoresets."""
    from helpers.vector import assert_same, random_actions

    clusters = ["v100=4,p100=4,k80=4", "p100=6,k80=6", "v100=2,p100=2,k80=8"]
    kwargs = [dict(trace="teaching-12", cluster=c, action_mode=mode, obs_version=obs_version, skip_trivial=skip)
              for c in clusters]
    native = ClusterVectorEnv.from_env_kwargs(kwargs, max_episode_steps=100_000)
    singles = []
    for kw in kwargs:
        env = ClusterEnv(**kw)
        env._compiled_allowed = False
        singles.append(env)
    obs, info = native.reset(seed=5)
    for i, env in enumerate(singles):
        want = env.reset(seed=5 + i)
        assert_same(({key: value[i] for key, value in obs.items()},), (want[0],), f"reset {i}")
    rng = np.random.default_rng(1)
    done = np.zeros(len(singles), bool)
    for step in range(200):
        masks = native.action_masks()
        actions = random_actions(mode, masks, rng)
        obs, rewards, terminated, truncated, info = native.step(actions)
        for i, env in enumerate(singles):
            if done[i]:
                o = env.reset()[0]
                assert rewards[i] == 0.0
            else:
                o, r, te, tr, _ = env.step(actions[i].copy())
                assert (r, te, tr) == (rewards[i], terminated[i], truncated[i]), (step, i)
            for key in o:
                assert np.array_equal(obs[key][i], o[key]), (step, i, key)
        done = terminated | truncated
    assert done.any() or native.sim.round_index.min() > 0


def test_ansi_render_names_the_types():
    env = ClusterEnv(trace="teaching-12", cluster="v100=2,p100=2,k80=4", action_mode="sequential", render_mode="ansi")
    env.reset(seed=0)
    env.step(2 * env.max_jobs + 0)  # job 0 on k80; the only active job, so the round closes
    env.step(1 * env.max_jobs + 1)  # job 1 picked on p100
    text = env.render()
    assert "GPUs v100=2,p100=2,k80=4" in text
    rows = {int(line.split()[1]): line.split() for line in text.splitlines() if line.split()[:1] in (["0"], ["1"])}
    assert rows[0][-2:] == ["k80", "."] and rows[1][-2:] == [".", "p100"]


class _ScoreByProgress:
    """A stand-in slot network: scores (or logits) from one observation feature, so the
    policy's choices vary with the state."""

    kind = "gaussian"

    def __init__(self, max_jobs: int, extra: int = 0):
        self.max_jobs = max_jobs
        self.extra = extra

    def outputs(self, obs):
        scores = obs["jobs"][:, 1] - obs["job_valid"]  # least progress first among valid
        return np.concatenate([scores, np.zeros(self.extra)]).astype(np.float32)


@pytest.mark.parametrize("mode", ["priority", "sequential"])
def test_learned_policy_adapter_places_on_a_heterogeneous_cluster(mode):
    from shockwave_agents.learned.adapter import PolicyAgent
    from shockwave_gym import SimConfig
    from shockwave_gym.runner import run_episode

    trace = small_source().sample(np.random.default_rng(0))
    network = _ScoreByProgress(16, extra=1 if mode == "sequential" else 0)
    cluster = ClusterSpec.parse(SMALL)
    agent = PolicyAgent(network, mode)
    seen = []

    def on_round(status):
        seen.append(status)

    outcome = run_episode(trace, agent, SimConfig(cluster=cluster), progress=False, on_round=on_round)
    assert outcome.metrics["num_jobs"] == trace.num_jobs and np.isfinite(outcome.metrics["avg_jct_s"])
    assert agent.rounds == outcome.metrics["rounds"] and seen


@pytest.mark.parametrize("mode", ["priority", "select", "sequential"])
def test_skip_trivial_skips_only_rounds_no_action_could_change(mode):
    """A fixed policy (constant scores / every bit / the first legal pick) gets the same
    episode with and without skipping: the skipped rounds are the ones the default rule (or
    a single legal pick) decides anyway. In priority and select some rounds are skipped."""
    def policy(env):
        if mode == "priority":
            return np.zeros(env.max_jobs, np.float32)
        if mode == "select":
            return env.action_masks()[1::2].astype(np.int8)
        return int(np.flatnonzero(env.action_masks())[0])

    results = {}
    for skip in (False, True):
        env = small_env(mode, skip_trivial=skip)
        env.reset(seed=8)
        total, done, info = 0.0, False, {}
        while not done:
            _, reward, terminated, truncated, info = env.step(policy(env))
            total += reward
            done = terminated or truncated
        results[skip] = (info["metrics"], total, info["rounds_skipped_total"], env.simulator.history)
    (plain, plain_return, none_skipped, plain_history), (skipped, skip_return, num_skipped, history) = (
        results[False], results[True])
    assert none_skipped == 0
    # sequential: a round is skipped only when one (slot, type) pick is legal at a time,
    # rare with three types (a lone job still chooses its type)
    if mode != "sequential":
        assert num_skipped > 0
    assert [r.job_ids.tolist() for r in history] == [r.job_ids.tolist() for r in plain_history]
    assert [r.gpu_types.tolist() for r in history] == [r.gpu_types.tolist() for r in plain_history]
    assert skipped["avg_jct_s"] == plain["avg_jct_s"] and skip_return == pytest.approx(plain_return, rel=1e-12)

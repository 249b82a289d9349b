"""The env with elastic jobs on a typed cluster (docs/ENV.md, "Elastic jobs"): a (GPU type,
count) configuration per job in every action mode, exact masks, the observation's elastic
entry with a type axis, Gymnasium's checker, determinism and the vector entry point's
fallback giving the single envs' trajectories."""

import copy
import dataclasses

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from helpers.vector import assert_same, step_with_single_envs

import shockwave_gym  # noqa: F401 - registers the ids
from shockwave_gym.env.cluster_env import ClusterEnv
from shockwave_gym.env.registration import ELASTIC_HETERO_CLUSTER
from shockwave_gym.env.vector.fallback import SyncClusterVectorEnv
from shockwave_gym.env.wrappers import ActionMaskObservation
from shockwave_gym.errors import InvalidActionError
from shockwave_gym.interface.actions import ACTION_MODES
from shockwave_gym.jobs import JobSpec
from shockwave_gym.placement import Allocation
from shockwave_gym.testing.env import random_valid_action
from shockwave_gym.traces import Trace, load_trace

MODES = list(ACTION_MODES)
ENV_ID = "shockwave_gym/Elastic-Hetero-v0"
C = 4  # counts 1, 2, 4, 8
SMALL_CLUSTER = "v100=4,p100=2,k80=2"
T = 3


def _three_jobs() -> Trace:
    """Two elastic Transformer jobs (counts 1, 2, 4) and a rigid 1-GPU ResNet-50, all at 0.
    On SMALL_CLUSTER the elastic ones may use 1, 2, 4 V100s, 1 or 2 P100s, 1 or 2 K80s (each
    of those two types has 2 GPUs); the rigid one its 1 GPU on every type."""
    common = dict(mode="static", arrival_s=0.0)
    jobs = [
        JobSpec(job_id=0, model="Transformer", initial_batch_size=32, total_iterations=3000, gang=1,
                gangs=(1, 2, 4), **common),
        JobSpec(job_id=1, model="ResNet-50", initial_batch_size=32, total_iterations=3000, gang=1, **common),
        JobSpec(job_id=2, model="Transformer", initial_batch_size=128, total_iterations=3000, gang=2,
                gangs=(1, 2, 4), **common),
    ]
    return Trace.from_jobs("three", jobs, "test")


def _three_env(mode: str) -> ClusterEnv:
    env = ClusterEnv(trace=_three_jobs(), cluster=SMALL_CLUSTER, action_mode=mode)
    env.reset(seed=0)
    assert env.slots.slot_job.tolist() == [0, 1, 2]
    return env


def _small_elastic_env(mode: str) -> ClusterEnv:
    trace = load_trace("teaching-12")
    jobs = tuple(dataclasses.replace(job, gangs=(1, 2, 4)) if job.job_id % 2 == 0 else job for job in trace.jobs)
    trace = dataclasses.replace(trace, jobs=jobs, name="teaching-12-elastic")
    return ClusterEnv(trace=trace, cluster=SMALL_CLUSTER, action_mode=mode)


def _last_round(env) -> dict[int, tuple[int, int]]:
    """{job id: (type index, count)} of the round that just ran."""
    record = env.simulator.history[-1]
    return {j: (t, c) for j, t, c in zip(record.job_ids.tolist(), record.gpu_types.tolist(),
                                          record.gpu_counts.tolist(), strict=True)}


# --- Gymnasium's checker, spaces, determinism, the vector entry point ----------------------


@pytest.mark.parametrize("mode", MODES)
def test_gymnasium_checker_and_spaces_on_the_registered_id(mode):
    env = gym.make(ENV_ID, action_mode=mode).unwrapped
    check_env(env, skip_render_check=True)
    assert str(env.cluster) == ELASTIC_HETERO_CLUSTER and env.gpus == 32
    n, m = T * C, env.max_jobs
    expected = {"select": gym.spaces.MultiDiscrete([n + 1] * m),
                "priority": gym.spaces.Box(-1.0, 1.0, (3 * m,), np.float32),
                "sequential": gym.spaces.Discrete(m * n + 1)}[mode]
    assert env.action_space == expected
    obs, _ = env.reset(seed=0)
    assert obs["elastic"].shape == (m, 2 * n) and env.observation_space.contains(obs)
    assert type(env.simulator).__name__ == "ElasticSimulator" and env._compiled_step() is None


@pytest.mark.parametrize("env_id", [ENV_ID, "shockwave_gym/Elastic-v0"])
@pytest.mark.parametrize("mode", MODES)
def test_the_mask_in_the_observation_has_the_mode_layout(env_id, mode):
    env = ActionMaskObservation(gym.make(env_id, action_mode=mode, max_jobs=8))
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert obs["action_mask"].tolist() == env.unwrapped.action_masks().astype(np.int8).tolist()


def _rollout(env, seed: int, steps: int):
    rng = np.random.default_rng(seed)
    out = [env.reset(seed=seed)]
    for _ in range(steps):
        out.append(env.step(random_valid_action(env, rng, env.unwrapped.action_mode)))
        if out[-1][2] or out[-1][3]:
            out.append(env.reset())
    return out


@pytest.mark.parametrize("mode", MODES)
def test_determinism(mode):
    steps = 160 if mode == "sequential" else 40
    a = _rollout(gym.make(ENV_ID, action_mode=mode), 5, steps)
    b = _rollout(gym.make(ENV_ID, action_mode=mode), 5, steps)
    assert_same(a, b, mode)
    c = _rollout(gym.make(ENV_ID, action_mode=mode), 6, steps)  # other actions, another trajectory
    assert not all(np.array_equal(x[0]["elastic"], y[0]["elastic"]) and x[1:3] == y[1:3]
                   for x, y in zip(a[1:], c[1:], strict=True))


@pytest.mark.parametrize("mode", MODES)
def test_vector_entry_point_falls_back_and_equals_single_envs(mode):
    kwargs = dict(action_mode=mode, max_jobs=16)
    vec = gym.make_vec(ENV_ID, num_envs=3, **kwargs)
    assert isinstance(vec, SyncClusterVectorEnv)
    singles = [gym.make(ENV_ID, **kwargs) for _ in range(3)]
    first = step_with_single_envs(vec, singles, mode, 40 if mode == "sequential" else 15, masks=True)
    assert first["elastic"].shape == (3, 16, 2 * T * C)
    vec.close()


# --- hand-checked decoding ------------------------------------------------------------------


def test_the_allowed_configurations_have_a_type_axis():
    env = _three_env("select")
    view = env.simulator.view
    assert [view.allowed_counts(0, t) for t in range(T)] == [(1, 2, 4), (1, 2), (1, 2)]
    assert [view.allowed_counts(1, t) for t in range(T)] == [(1,), (1,), (1,)]
    mask = env.action_masks().reshape(3, T * C + 1)
    #                       do-not-run, v100 1 2 4 8,   p100 1 2 4 8,  k80 1 2 4 8
    assert mask[0].astype(int).tolist() == [1, 1, 1, 1, 0, 1, 1, 0, 0, 1, 1, 0, 0]
    assert mask[1].astype(int).tolist() == [1, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0]
    assert mask[2].tolist() == mask[0].tolist()


def test_select_decodes_type_and_count():
    env = _three_env("select")
    # entry n + 1, n = t * C + k: job 0 on 4 V100s (n=2), job 1 on 1 P100 (n=4), job 2 on 2 K80s (n=9)
    _, _, _, _, info = env.step(np.array([3, 5, 10]))
    assert info["action_repairs"] == 0
    assert _last_round(env) == {0: (0, 4), 1: (1, 1), 2: (2, 2)}


def test_select_repair_rule_on_types():
    env = _three_env("select")
    # job 0 asks 4 P100s (n = 6: not allowed, dropped), job 2 2 P100s (n = 5)
    _, _, _, _, info = env.step(np.array([7, 0, 6]))
    assert info["action_repairs"] == 1 and _last_round(env) == {2: (1, 2)}
    env = _three_env("select")
    # jobs 0 and 2 both ask 2 P100s: the later arrival no longer fits and is dropped
    _, _, _, _, info = env.step(np.array([6, 0, 6]))
    assert info["action_repairs"] == 1 and _last_round(env) == {0: (1, 2)}
    with pytest.raises(InvalidActionError, match="0..12"):
        env.step(np.array([13, 0, 0]))


def test_priority_decodes_scores_count_and_type_preferences():
    env = _three_env("priority")
    scores = [0.1, 0.9, 0.5]  # order: job 1, job 2, job 0
    counts = [0.0, 1.0, 1.0]  # count index floor((u + 1) / 2 * 4): 2 (4 GPUs), 3 (8), 3 (8)
    types = [-1.0, 1.0, -1.0]  # type index floor((w + 1) / 2 * 3), at most 2: v100, k80, v100
    env.step(np.array(scores + counts + types, dtype=np.float32))
    # job 1 (rigid) on its 1 GPU of the asked K80s; job 2 on the largest allowed V100 count up
    # to 8: 4, which fills the V100s; job 0 asks 4 V100s, none is free, so it takes the next
    # type in cluster order, P100, at its largest allowed count there up to 4: 2
    assert _last_round(env) == {0: (1, 2), 1: (2, 1), 2: (0, 4)}


def test_priority_queued_jobs_take_their_smallest_count_on_the_first_type_that_fits():
    env = ClusterEnv(trace=_three_jobs(), cluster=SMALL_CLUSTER, action_mode="priority", max_jobs=1)
    env.reset(seed=0)
    assert env.slots.slot_job.tolist() == [0] and env.slots.queue.tolist() == [1, 2]
    env.step(np.array([0.0, 1.0, 0.0], dtype=np.float32))  # job 0 asks 8 P100s: gets its largest, 2
    # queued, in arrival order: job 1 on 1 V100, job 2 at its smallest count, 1, on V100
    assert _last_round(env) == {0: (1, 2), 1: (0, 1), 2: (0, 1)}


def test_sequential_decodes_slot_type_and_count():
    env = _three_env("sequential")
    n = T * C
    assert env.action_space.n == 3 * n + 1
    _, _, _, _, info = env.step(0 * n + 1 * C + 1)  # slot 0 on 2 P100s
    assert not info["round_closed"]
    mask = env.action_masks()[:-1].reshape(3, n)
    assert not mask[0].any()  # picked
    assert not mask[:, C:2 * C].any()  # the P100s are full
    env.step(2 * n + 0 * C + 2)  # slot 2 on 4 V100s
    _, _, _, _, info = env.step(1 * n + 2 * C + 0)  # slot 1 on 1 K80: nothing else left
    assert info["round_closed"] and info["action_repairs"] == 0
    assert _last_round(env) == {0: (1, 2), 1: (2, 1), 2: (0, 4)}


def test_sequential_illegal_pick_fills_at_the_smallest_count():
    env = _three_env("sequential")
    n = T * C
    env.step(0 * n + 0 * C + 2)  # slot 0 on 4 V100s
    _, _, _, _, info = env.step(2 * n + 0 * C + 0)  # slot 2 on a V100: none left, illegal
    assert info["round_closed"] and info["action_repairs"] == 1
    # the fill, in arrival order, at the smallest allowed count that fits (ties: cluster order)
    assert _last_round(env) == {0: (0, 4), 1: (1, 1), 2: (1, 1)}


def test_observation_allowed_and_marginals_per_type():
    env = _three_env("select")
    obs = env._observation()
    view = env.simulator.view
    n = T * C
    elastic = obs["elastic"]
    assert elastic.shape == (3, 2 * n)
    assert elastic[0, :n].astype(int).tolist() == [1, 1, 1, 0, 1, 1, 0, 0, 1, 1, 0, 0]
    for job in range(3):
        ref = view.current_throughput[job]
        for t in range(T):
            prev_c, prev_s = 0, 0.0
            for k, count in enumerate(view.gpu_counts):
                value = elastic[job, n + t * C + k]
                if count not in view.allowed_counts(job, t):
                    assert value == 0.0
                    continue
                speedup = view.throughput_by_count[job, t, k] / ref
                assert value == pytest.approx((speedup - prev_s) / (count - prev_c), rel=1e-6)
                prev_c, prev_s = count, speedup
    assert elastic[0, n + C] != elastic[0, n]  # the P100 and V100 rates differ


# --- exact masks ----------------------------------------------------------------------------


def _placed(env, ids, columns) -> dict[int, tuple[int, int]]:
    """{job: (type, count)} of configuration columns."""
    counts = env.simulator.view.gpu_counts
    return {j: (c // C, counts[c % C]) for j, c in zip(ids.tolist(), columns.tolist(), strict=True)}


def _accepts(env, placed: dict[int, tuple[int, int]]) -> bool:
    """Whether the simulator accepts ``placed`` ({job: (type, count)}) as an explicit allocation."""
    ids = sorted(placed)
    try:
        env.simulator.validate_placement(Allocation(ids, [placed[j][1] for j in ids], [placed[j][0] for j in ids]))
    except InvalidActionError:
        return False
    return True


def _decision_points(mode: str, count: int):
    """Envs at ``count`` decision points of a small typed elastic episode."""
    env = _small_elastic_env(mode)
    env.reset(seed=0)
    rng = np.random.default_rng(3)
    for _ in range(count):
        yield env
        env.step(random_valid_action(env, rng, mode))
        for _ in range(3):  # let more jobs arrive between the points
            env.step(random_valid_action(env, rng, mode))


def test_select_masks_are_exact():
    n = T * C
    for env in _decision_points("select", 4):
        mask = env.action_masks().reshape(env.max_jobs, n + 1)
        for slot, job in enumerate(env.slots.slot_job.tolist()):
            for entry in range(1, n + 1):
                action = np.zeros(env.max_jobs, dtype=np.int64)
                action[slot] = entry
                trial = copy.deepcopy(env)
                _, _, _, _, info = trial.step(action)
                t, count = (entry - 1) // C, env.simulator.view.gpu_counts[(entry - 1) % C]
                if mask[slot, entry]:
                    assert info["action_repairs"] == 0 and _last_round(trial) == {job: (t, count)}
                else:
                    assert info["action_repairs"] == 1 and not trial.simulator.history[-1].job_ids.size
                    assert job < 0 or not _accepts(env, {job: (t, count)})


def test_sequential_masks_are_exact():
    n = T * C
    checked = 0
    for env in _decision_points("sequential", 6):
        mask = env.action_masks()
        assert mask.shape == (env.max_jobs * n + 1,) and not mask[-1]  # no idling by default
        before = _placed(env, *env._mode.placed(env.slots))  # picks made earlier this round
        for action in range(mask.size - 1):
            trial = copy.deepcopy(env)
            _, _, _, _, info = trial.step(action)
            assert (info["action_repairs"] == 0) == bool(mask[action]), action
            slot, config = divmod(action, n)
            job = int(env.slots.slot_job[slot])
            if job < 0 or job in before:
                assert not mask[action]
                continue
            wanted = before | {job: (config // C, env.simulator.view.gpu_counts[config % C])}
            assert _accepts(env, wanted) == bool(mask[action]), action
            if mask[action]:
                after = _last_round(trial) if info["round_closed"] else _placed(trial, *trial._mode.placed(trial.slots))
                assert after[job] == wanted[job]
                checked += 1
    assert checked > 10


def test_priority_decodes_only_allocations_the_simulator_accepts_and_ignores_empty_slots():
    rng = np.random.default_rng(0)
    for env in _decision_points("priority", 5):
        mask = env.action_masks()
        assert mask.shape == (3 * env.max_jobs,)
        assert mask.tolist() == np.tile(env.slots.slot_job >= 0, 3).tolist()
        for _ in range(5):
            action = rng.uniform(-1, 1, mask.size).astype(np.float32)
            noise = np.where(mask, action, rng.uniform(-1, 1, mask.size)).astype(np.float32)
            ids, columns, repairs = env._mode.place(action, env.simulator.view, env.slots)
            assert repairs == 0 and _accepts(env, _placed(env, ids, columns))
            same = env._mode.place(noise, env.simulator.view, env.slots)
            assert same[0].tolist() == ids.tolist() and same[1].tolist() == columns.tolist()


@pytest.mark.parametrize("cluster", [None, "v100=8,p100=8,k80=8"])
@pytest.mark.parametrize("mode", ACTION_MODES)
def test_a_rigid_only_draw_of_an_elastic_source_keeps_the_elastic_mode(mode, cluster):
    """A generated source with a small elastic share can draw a trace without elastic jobs:
    the env's spaces are the source's (elastic), so its simulator is the elastic one too."""
    from shockwave_gym.elastic import ElasticSimulator, is_elastic_trace
    from shockwave_gym.traces import GeneratedTraceSource, GeneratorConfig

    source = GeneratedTraceSource(GeneratorConfig(num_jobs=3, seed=0, elastic_share=0.1, min_duration_h=0.2,
                                                  max_duration_h=0.4), num_jobs_range=(2, 3))
    env = ClusterEnv(trace=source, action_mode=mode, **({"gpus": 8} if cluster is None else {"cluster": cluster}))

    def rigid_only(seed):
        env.reset(seed=seed)
        return not is_elastic_trace(env.trace.jobs)

    env.reset(seed=next(s for s in range(40) if rigid_only(s)))
    assert isinstance(env.simulator, ElasticSimulator)
    rng = np.random.default_rng(0)
    for _ in range(2_000):
        _, _, terminated, truncated, _ = env.step(random_valid_action(env, rng, mode))
        if terminated or truncated:
            break
    assert terminated and env.simulator.done

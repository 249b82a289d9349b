"""Learned agents, unit level: the slot policy's symmetry, weights-only storage, the adapter
deciding exactly as the env would, disjoint training / held-out seeds, behaviour cloning."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

import gymnasium as gym  # noqa: E402
from helpers.policies import obs_to_tensors, perturbed, random_obs  # noqa: E402

import shockwave_gym  # noqa: E402,F401  (registers the env ids)
from shockwave_agents.learned.adapter import PolicyAgent  # noqa: E402
from shockwave_agents.learned.inference import NumpySlotNetwork  # noqa: E402
from shockwave_agents.learned.weights import (  # noqa: E402
    UntrustedFileWarning,
    build_policy,
    load_network,
    load_policy,
    load_sb3_zip,
    save_policy,
)
from shockwave_gym.errors import InputError  # noqa: E402
from shockwave_gym.runner import run_episode  # noqa: E402
from shockwave_gym.simulator import SimConfig  # noqa: E402
from shockwave_gym.training.imitation import ImitationConfig, clone  # noqa: E402
from shockwave_gym.training.workload import (  # noqa: E402
    TRAIN_SEED_MIN,
    TrainingTraceSource,
    Workload,
    held_out_traces,
)

torch.set_num_threads(1)
MODES = [("ppo", "priority"), ("ppo", "select"), ("maskable_ppo", "select"), ("maskable_ppo", "sequential"), ("ppo", "sequential")]


@pytest.mark.parametrize(("algo", "mode"), MODES)
def test_outputs_follow_slot_permutations_and_value_does_not_move(algo, mode):
    policy = perturbed(build_policy(algo, mode, 12, embed_dim=16, hidden_dim=32))
    obs = random_obs(12, 7, seed=1)
    perm = np.random.default_rng(2).permutation(12)
    shuffled = {key: (value[perm] if key != "cluster" else value) for key, value in obs.items()}
    with torch.no_grad():
        out, out_shuffled = (policy.action_outputs(obs_to_tensors(o))[0].numpy() for o in (obs, shuffled))
        logits, logits_shuffled = (policy.slot_logits(obs_to_tensors(o))[0].numpy() for o in (obs, shuffled))
        value, value_shuffled = (float(policy.predict_values(obs_to_tensors(o))) for o in (obs, shuffled))
    np.testing.assert_allclose(logits_shuffled, logits[perm], rtol=1e-5, atol=1e-6)
    if policy.head_kind == "binary":
        out, out_shuffled = out.reshape(12, 2), out_shuffled.reshape(12, 2)
    if policy.head_kind == "pick":
        assert out.shape == (13,)
        assert out_shuffled[-1] == pytest.approx(out[-1], rel=1e-5)  # "end round" is pooled
        out, out_shuffled = out[:-1], out_shuffled[:-1]
    np.testing.assert_allclose(out_shuffled, out[perm], rtol=1e-5, atol=1e-6)
    assert value_shuffled == pytest.approx(value, rel=1e-5, abs=1e-6)
    assert not np.allclose(logits, logits[0])  # the check above is not vacuous


def test_weights_load_into_any_slot_count_and_empty_slots_change_nothing(tmp_path):
    small = perturbed(build_policy("ppo", "priority", 6, embed_dim=16, hidden_dim=32))
    save_policy(small, tmp_path / "p", algo="ppo", action_mode="priority")
    large, meta = load_policy(tmp_path / "p.npz", max_jobs=20)
    assert meta["max_jobs"] == 6 and large.max_jobs == 20
    obs = random_obs(6, 4, seed=3)
    padded = {key: (np.concatenate([value, np.zeros((14, *value.shape[1:]), value.dtype)]) if key != "cluster" else value)
              for key, value in obs.items()}
    with torch.no_grad():
        a = small.action_outputs(obs_to_tensors(obs))[0].numpy()
        b = large.action_outputs(obs_to_tensors(padded))[0].numpy()
    np.testing.assert_allclose(b[:6], a, rtol=1e-5, atol=1e-6)
    assert np.all(b[6:] == 0)  # empty slots score 0 in priority mode
    network, _ = load_network(tmp_path / "p.json", max_jobs=20)  # numpy only, no torch
    np.testing.assert_allclose(network.outputs(padded), b, rtol=1e-4, atol=1e-5)


def test_weights_file_is_weights_only_and_checked(tmp_path):
    policy = perturbed(build_policy("maskable_ppo", "sequential", 8, embed_dim=16, hidden_dim=32))
    weights, meta_path = save_policy(policy, tmp_path / "seq", algo="maskable_ppo", action_mode="sequential",
                                     training={"note": "test"})
    assert weights.suffix == ".npz" and weights.read_bytes()[:2] == b"PK"
    reloaded, meta = load_policy(weights)
    obs = obs_to_tensors(random_obs(8, 5, seed=4))
    with torch.no_grad():
        np.testing.assert_array_equal(reloaded.action_outputs(obs).numpy(), policy.action_outputs(obs).numpy())
    assert meta["training"] == {"note": "test"} and meta["action_mode"] == "sequential"
    # an .npz holding a pickled object array under a real weight's name is refused unread
    # (allow_pickle=False; the member's declared dtype is checked before it is read)
    arrays = dict(np.load(weights))
    first = next(iter(arrays))
    arrays[first] = np.array([InputError("not a weight")] * arrays[first].size, dtype=object).reshape(arrays[first].shape)
    np.savez(tmp_path / "evil.npz", **arrays)
    (tmp_path / "evil.json").write_text(meta_path.read_text())
    with pytest.raises(InputError, match=rf"{first}.*(weights-only|dtype)"):
        load_network(tmp_path / "evil.npz")
    # an extra member, whatever it holds, is refused by name
    np.savez(tmp_path / "extra.npz", **dict(np.load(weights)), payload=np.array([InputError("x")], dtype=object))
    (tmp_path / "extra.json").write_text(meta_path.read_text())
    with pytest.raises(InputError, match="payload: unexpected array"):
        load_network(tmp_path / "extra.npz")
    # a description written for other observation features is refused
    stale = json.loads(meta_path.read_text())
    stale["job_features"] = stale["job_features"][:-1]
    (tmp_path / "stale.json").write_text(json.dumps(stale))
    (tmp_path / "stale.npz").write_bytes(weights.read_bytes())
    with pytest.raises(InputError, match="other observation features"):
        load_policy(tmp_path / "stale.npz")
    # weights that do not match the described head
    wrong = json.loads(meta_path.read_text())
    wrong["action_mode"] = "select"
    (tmp_path / "wrong.json").write_text(json.dumps(wrong))
    (tmp_path / "wrong.npz").write_bytes(weights.read_bytes())
    with pytest.raises(InputError, match="do not fit"):
        load_network(tmp_path / "wrong.npz")
    with pytest.raises(InputError, match="not found"):
        load_network(tmp_path / "missing.npz")


def _env_round_sets(env, model_predict, masked: bool, rounds: int) -> list[tuple[int, ...]]:
    obs, _ = env.reset(seed=0)
    sets = []
    base = env.unwrapped
    while len(sets) < rounds:
        masks = base.action_masks() if masked else None
        action = model_predict(obs, masks)
        obs, _, terminated, truncated, info = env.step(action)
        if info["round_closed"]:
            record = base.simulator.history[-1]
            sets.append(tuple(sorted(record.job_ids.tolist())))
        if terminated or truncated:
            break
    return sets


@pytest.mark.parametrize(("algo", "mode"), [("ppo", "priority"), ("maskable_ppo", "select"), ("maskable_ppo", "sequential")])
def test_adapter_decides_exactly_like_the_env(algo, mode):
    trace = held_out_traces([7], num_jobs=14, arrival_rates_per_hour=(240.0,))[0]
    policy = perturbed(build_policy(algo, mode, 10, embed_dim=16, hidden_dim=32), seed=5)
    env = gym.make("shockwave_gym/Generated-v0", trace=trace, gpus=8, action_mode=mode, max_jobs=10)

    def predict(obs, masks):
        kwargs = {"action_masks": masks} if masks is not None else {}
        return policy.predict(obs, deterministic=True, **kwargs)[0]

    from_env = _env_round_sets(env, predict, algo == "maskable_ppo", rounds=40)
    agent = PolicyAgent(NumpySlotNetwork.from_policy(policy), mode)
    outcome = run_episode(trace, agent, SimConfig(gpus=8), max_rounds=len(from_env), progress=False)
    from_agent = [tuple(sorted(ids.tolist())) for ids in outcome.result.round_job_ids]
    assert len(from_env) >= 10
    assert from_agent == from_env


def test_training_and_held_out_seeds_are_disjoint():
    source = TrainingTraceSource(Workload(num_jobs_range=(3, 5), arrival_rate_range_per_hour=(20.0, 40.0)))
    rng = np.random.default_rng(0)
    names = [source.sample(rng).name for _ in range(5)]
    assert all(int(name.removeprefix("train-")) >= TRAIN_SEED_MIN for name in names)
    assert len(set(names)) == 5
    with pytest.raises(InputError, match="held-out seeds"):
        held_out_traces([TRAIN_SEED_MIN])
    first, again = held_out_traces([11, 12], num_jobs=5), held_out_traces([11, 12], num_jobs=5)
    assert [t.jobs for t in first] == [t.jobs for t in again]


def test_sb3_zip_loads_only_when_trusted_and_with_a_warning(tmp_path):
    from stable_baselines3 import PPO

    from shockwave_agents.learned.policy import SlotPolicy

    env = gym.make("shockwave_gym/Generated-v0", trace=held_out_traces([3], num_jobs=6)[0], gpus=8, max_jobs=6)
    model = PPO(SlotPolicy, env, n_steps=16, batch_size=16, policy_kwargs={"embed_dim": 8, "hidden_dim": 16}, device="cpu")
    model.save(tmp_path / "model.zip")
    with pytest.raises(InputError, match="without trust"):
        load_sb3_zip(tmp_path / "model.zip", max_jobs=9)
    with pytest.warns(UntrustedFileWarning, match="arbitrary code"):
        policy, meta = load_sb3_zip(tmp_path / "model.zip", max_jobs=9, trust=True)
    assert (meta["algo"], meta["action_mode"], policy.max_jobs) == ("ppo", "priority", 9)
    (tmp_path / "other.zip").write_bytes(b"not a zip")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UntrustedFileWarning)
        with pytest.raises(InputError, match="not an SB3 model zip"):
            load_sb3_zip(tmp_path / "other.zip", trust=True)


def test_behaviour_cloning_fits_the_teacher_labels():
    """The supervised loop drives the per-slot loss down on a learnable rule (run the job
    iff its first feature > 0.5), and decisions then follow the rule."""
    rng = np.random.default_rng(0)
    rounds, slots = 600, 8
    obs = [random_obs(slots, int(rng.integers(2, slots + 1)), seed=s) for s in range(rounds)]
    arrays = {key: np.stack([o[key] for o in obs]) for key in obs[0]}
    arrays["label"] = ((arrays["jobs"][:, :, 0] > 0.5) & (arrays["job_valid"] == 1)).astype(np.int8)
    arrays["episode"] = np.arange(rounds) // 60
    torch.manual_seed(0)
    policy = build_policy("ppo", "priority", slots, embed_dim=16, hidden_dim=32)
    config = ImitationConfig(out="unused", episodes=1, epochs=15, batch_size=64, learning_rate=3e-3)
    report = clone(policy, arrays, config)
    assert report["val_slot_accuracy"] > 0.9
    assert report["val_loss"] < 0.3


def test_behaviour_cloning_fit_all_learns_from_the_newest_episodes():
    """By default the last 10% of episodes are held out (after DAgger: the student's newest
    rounds); ``fit_all`` fits on them too. The labels follow one rule (run a job iff its first
    feature > 0.5), but only the last episode has jobs the rule runs, so only the fit that
    sees it runs any."""
    rng = np.random.default_rng(1)
    rounds, slots = 400, 8
    obs = [random_obs(slots, int(rng.integers(2, slots + 1)), seed=s) for s in range(rounds)]
    arrays = {key: np.stack([o[key] for o in obs]) for key in obs[0]}
    arrays["episode"] = np.minimum(np.arange(rounds) // 50, 3)  # 4 episodes: the default holds out episode 3
    last = arrays["episode"] == 3
    arrays["jobs"][~last, :, 0] *= 0.5  # random_obs draws features in [0, 1)
    arrays["label"] = ((arrays["jobs"][:, :, 0] > 0.5) & (arrays["job_valid"] == 1)).astype(np.int8)
    positive = arrays["label"][last] == 1

    def ran_share(fit_all):
        torch.manual_seed(0)
        policy = build_policy("ppo", "priority", slots, embed_dim=16, hidden_dim=32)
        config = ImitationConfig(out="unused", episodes=1, epochs=15, batch_size=64, learning_rate=3e-3, fit_all=fit_all)
        report = clone(policy, arrays, config)
        with torch.no_grad():
            logits = policy.slot_logits({key: torch.from_numpy(arrays[key][last].astype(np.float32))
                                         for key in ("jobs", "job_valid", "picked", "cluster")})
        return report, float((logits.numpy() > 0)[positive].mean())

    held, held_share = ran_share(False)
    fitted, fitted_share = ran_share(True)
    assert "val_loss" in held and "val_loss" not in fitted
    assert held_share < 0.5 < fitted_share


def test_policy_agent_sequential_fills_rounds_with_legal_picks():
    trace = held_out_traces([21], num_jobs=16, arrival_rates_per_hour=(240.0,))[0]
    policy = perturbed(build_policy("maskable_ppo", "sequential", 12, embed_dim=16, hidden_dim=32), seed=9)
    agent = PolicyAgent(NumpySlotNetwork.from_policy(policy), "sequential")
    outcome = run_episode(trace, agent, SimConfig(gpus=8), max_rounds=60, progress=False)
    assert all(int(np.sum(outcome.result.gang[ids])) <= 8 for ids in outcome.result.round_job_ids)
    assert agent.stats()["policy_substeps"] >= agent.stats()["policy_rounds"] > 0


@pytest.mark.parametrize(("algo", "mode"), MODES)
def test_numpy_forward_matches_torch(algo, mode):
    policy = perturbed(build_policy(algo, mode, 10, embed_dim=16, hidden_dim=32), seed=11)
    network = NumpySlotNetwork.from_policy(policy)
    for seed, valid_slots in ((1, 10), (2, 3), (3, 1)):
        obs = random_obs(10, valid_slots, seed)
        with torch.no_grad():
            expected = policy.action_outputs(obs_to_tensors(obs))[0].numpy()
        got = network.outputs(obs)
        assert got.shape == expected.shape
        valid = obs["job_valid"].astype(bool)
        per_slot = 2 if policy.head_kind == "binary" else 1
        slots_part = slice(0, 10 * per_slot)
        np.testing.assert_allclose(got[slots_part].reshape(10, per_slot)[valid],
                                   expected[slots_part].reshape(10, per_slot)[valid], rtol=1e-4, atol=1e-5)
        # empty slots: both networks give the heads' outputs for z = 0 (the torch encoder
        # skips them), and what an empty slot holds cannot change any output
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
        garbage = dict(obs, jobs=np.where(valid[:, None], obs["jobs"], np.float32(7.5)).astype(np.float32))
        with torch.no_grad():
            np.testing.assert_array_equal(policy.action_outputs(obs_to_tensors(garbage))[0].numpy(), expected)
        if policy.head_kind == "score":
            assert np.all(got[~valid] == 0)
        if policy.head_kind == "pick":
            assert got[-1] == pytest.approx(expected[-1], rel=1e-4, abs=1e-5)


def test_shipped_policies_match_this_observation_version():
    """A change to any observation feature must come with retrained shipped policies."""
    import json
    from pathlib import Path

    from shockwave_agents.learned.pretrained import SHIPPED, TASK_POLICIES
    from shockwave_gym.interface.observation import (
        DEFAULT_OBSERVATION_VERSION,
        observation_signature,
    )

    shipped = Path(__file__).resolve().parents[1] / "agents" / "pretrained"
    for name in SHIPPED:
        meta = json.loads((shipped / f"{name}.json").read_text())
        # the per-task policies (ppo-balanced too, beside cem-balanced) and shockwave-distilled read
        # version 3 (every regime); the earlier ones the env's default
        version = 3 if name in (*TASK_POLICIES.values(), "ppo-balanced", "shockwave-distilled") else DEFAULT_OBSERVATION_VERSION
        assert meta["obs_version"] == version, name
        assert meta["observation_signature"] == observation_signature(version), name


def test_policy_from_another_observation_version_is_refused(tmp_path):
    import json
    import shutil
    from pathlib import Path

    from shockwave_agents.learned.weights import read_meta
    from shockwave_gym.errors import InputError

    shipped = Path(__file__).resolve().parents[1] / "agents" / "pretrained"
    for suffix in (".json", ".npz"):
        shutil.copy(shipped / f"ppo{suffix}", tmp_path / f"ppo{suffix}")
    meta = json.loads((tmp_path / "ppo.json").read_text())
    meta["observation_signature"] = "0" * 16
    (tmp_path / "ppo.json").write_text(json.dumps(meta))
    with pytest.raises(InputError, match="another version of the observation"):
        read_meta(tmp_path / "ppo.json")

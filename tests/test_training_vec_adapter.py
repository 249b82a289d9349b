"""The SB3 adapter over the native vector env: the same data as SB3's own ``DummyVecEnv``
over ``gym.make`` envs (SB3's reset-on-done convention), action masks for sb3-contrib, and
training through both paths (``vec="native"``, the default, and ``vec="subproc"``)."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

import shockwave_gym  # noqa: E402,F401  (registers the ids)
from shockwave_gym.training.train import TrainConfig, train  # noqa: E402
from shockwave_gym.training.vec_adapter import NativeVecEnv  # noqa: E402
from shockwave_gym.training.workload import Workload  # noqa: E402

SMALL = Workload(gpus=8, num_jobs_range=(8, 12), arrival_rate_range_per_hour=(60.0, 120.0), max_duration_h=0.5)


def assert_obs_equal(a: dict, b: dict, where: str) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert a[key].dtype == b[key].dtype and np.array_equal(a[key], b[key]), (where, key)


@pytest.mark.parametrize("mode", ["select", "sequential"])
def test_adapter_matches_dummy_vec_env_across_episode_ends(mode):
    kwargs = {"trace": "teaching-12", "action_mode": mode}
    native = NativeVecEnv(3, **kwargs)
    reference = DummyVecEnv([lambda: gym.make("shockwave_gym/Teaching-v0", action_mode=mode) for _ in range(3)])
    for env in (native, reference):
        env.seed(7)
    assert_obs_equal(native.reset(), reference.reset(), "reset")
    assert is_masking_supported(native)
    rng = np.random.default_rng(0)
    ends = 0
    for t in range(300 if mode == "sequential" else 150):
        masks = get_action_masks(native)
        assert np.array_equal(masks, get_action_masks(reference)), t
        if mode == "select":
            actions = ((rng.random((3, 12)) < 0.5) & masks[:, 1::2]).astype(np.int8)
        else:
            actions = np.array([rng.choice(np.flatnonzero(row)) for row in masks])
        obs, rewards, dones, infos = native.step(actions)
        ref_obs, ref_rewards, ref_dones, ref_infos = reference.step(actions)
        assert_obs_equal(obs, ref_obs, f"step {t}")
        assert rewards.dtype == ref_rewards.dtype and np.array_equal(rewards, ref_rewards), t
        assert np.array_equal(dones, ref_dones), t
        for i in np.flatnonzero(dones):
            ends += 1
            assert_obs_equal(infos[i]["terminal_observation"], ref_infos[i]["terminal_observation"], f"final {t}")
            assert infos[i]["TimeLimit.truncated"] == ref_infos[i]["TimeLimit.truncated"]
            assert infos[i]["metrics"] == ref_infos[i]["metrics"]
    assert ends >= 3
    native.close()
    reference.close()


@pytest.mark.parametrize(("algo", "mode", "vec", "envs"), [
    ("ppo", "priority", "native", 4), ("maskable_ppo", "select", "native", 3), ("ppo", "priority", "subproc", 1),
])
def test_training_runs_through_both_vectorisations(tmp_path, algo, mode, vec, envs):
    steps = 32 * envs * 2
    report = train(TrainConfig(
        out=str(tmp_path), algo=algo, action_mode=mode, vec=vec, envs=envs, timesteps=steps, n_steps=32,
        batch_size=32, n_epochs=1, embed_dim=8, hidden_dim=16, workload=SMALL, eval_every=10 * steps,
        checkpoint_every=10 * steps, eval_seeds=(5,), progress_every_s=1e9,
    ))
    assert report["timesteps"] == steps and report["episodes"] >= 1
    saved = json.loads((tmp_path / "eval.json").read_text())
    assert saved["config"]["vec"] == vec and saved["config"]["envs"] == envs


def test_default_is_native_and_bad_vec_is_refused(tmp_path):
    assert TrainConfig(out=str(tmp_path)).vec == "native"
    assert TrainConfig(out=str(tmp_path)).envs == 1
    assert TrainConfig(out=str(tmp_path), vec="subproc").envs == 2
    from shockwave_gym.errors import InputError

    with pytest.raises(InputError, match="vec must be one of"):
        TrainConfig(out=str(tmp_path), vec="threads")


def test_cli_vec_flag_defaults_to_native_and_keeps_the_old_path():
    from shockwave_gym.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["train", "--out", "x"]).vec == "native"
    args = parser.parse_args(["train", "--out", "x", "--vec", "subproc", "--envs", "2"])
    assert (args.vec, args.envs) == ("subproc", 2)
    with pytest.raises(SystemExit):
        parser.parse_args(["train", "--out", "x", "--vec", "threads"])


def test_set_attr_is_refused_for_some_clusters_only():
    """The clusters share one vector env: setting an attribute for a subset would set it for
    all, so it is refused; for every cluster it is set."""
    native = NativeVecEnv(2, trace="teaching-12")
    with pytest.raises(ValueError, match="share one native vector env"):
        native.set_attr("probe", 1, indices=[0])
    native.set_attr("probe", 2)
    native.set_attr("probe", 3, indices=[1, 0])
    assert native.get_attr("probe") == [3, 3]
    native.close()

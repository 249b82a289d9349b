"""Learned policies in every information regime: `train --obs-version 3` on regime suites
(each training and validation trace in its suite's regime), and the policy agent deciding
from the view where lengths are hidden, while observation version 2 stays refused there."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("stable_baselines3")

from shockwave_agents import make_agent  # noqa: E402
from shockwave_gym.cli import main  # noqa: E402
from shockwave_gym.config import SimConfig  # noqa: E402
from shockwave_gym.errors import InputError  # noqa: E402
from shockwave_gym.runner import run_episode  # noqa: E402
from shockwave_gym.traces.suites import entry_trace, get_suite, split_entries  # noqa: E402
from shockwave_gym.view import HiddenLengthError  # noqa: E402

EARLY = "medium-nominal-unknown-early"  # lengths hidden and 20% of jobs end early


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_suite_tasks_give_each_cluster_and_validation_trace_its_suites_regime():
    from shockwave_gym.training.tasks import suite_tasks

    tasks = suite_tasks(f"small-nominal,{EARLY}", envs=None, val_traces=2, obs_version=3)
    assert "regime" not in tasks.env_kwargs[0]
    regime = tasks.env_kwargs[1]["regime"]
    assert (regime.knowledge, regime.early_endings) == ("unknown", 0.2)
    entries = split_entries(EARLY, "validation")[:2]
    assert tasks.val_regimes == [None, None] + [e.regime for e in entries]
    assert [t.name for t in tasks.val_traces[2:]] == [e.trace_name for e in entries]
    with pytest.raises(InputError, match="observation version 2"):
        suite_tasks(EARLY, envs=None, val_traces=1, obs_version=2)


def test_a_training_cluster_runs_each_train_trace_in_the_regime_its_suite_seeds_it():
    from shockwave_gym.env.cluster_env import ClusterEnv
    from shockwave_gym.traces.suites import suite_regime
    from shockwave_gym.training.tasks import suite_tasks

    kwargs = suite_tasks(EARLY, envs=None, val_traces=1, obs_version=3).env_kwargs[0]
    env = ClusterEnv(**kwargs, obs_version=3)
    env.reset(seed=3)
    seed = int(env.trace.name.rsplit("-s", 1)[1])
    assert env.episode_regime == suite_regime(EARLY, seed)


def test_train_on_a_regime_suite_validates_in_its_regime_and_the_policy_runs_where_lengths_are_hidden(tmp_path):
    out = tmp_path / "v3"
    code, _, stderr = run_cli([
        "train", "--obs-version", "3", "--vec", "single", "--suites", EARLY, "--val-traces", "1",
        "--timesteps", "256", "--n-steps", "128", "--batch-size", "64", "--eval-every", "256",
        "--embed-dim", "8", "--hidden-dim", "16", "--progress-every-s", "0", "--prior", "srtf", "--out", str(out),
    ])
    assert code == 0, stderr
    report = json.loads((out / "eval.json").read_text())
    assert json.loads((out / "policy.json").read_text())["obs_version"] == 3
    # FIFO's validation figures are those of the trace in its regime (early endings shorten jobs)
    entry = split_entries(EARLY, "validation")[0]
    trace, config = entry_trace(entry), SimConfig(gpus=get_suite(EARLY).gpus)
    in_regime = run_episode(trace, make_agent("fifo"), config, progress=False, regime=entry.regime).metrics
    exact = run_episode(trace, make_agent("fifo"), config, progress=False).metrics
    assert report["fifo"]["avg_jct_s"] == pytest.approx(in_regime["avg_jct_s"])
    assert in_regime["avg_jct_s"] != pytest.approx(exact["avg_jct_s"])
    # the version-3 policy decides from the view in a regime that hides lengths; version 2 cannot
    test = split_entries("small-overloaded-unknown", "test")[0]
    small = SimConfig(gpus=get_suite("small-overloaded-unknown").gpus)
    played = run_episode(entry_trace(test), make_agent("policy", path=str(out)), small, progress=False,
                         regime=test.regime).metrics
    assert played["completed_jobs"] == played["num_jobs"]
    with pytest.raises(HiddenLengthError):
        run_episode(entry_trace(test), make_agent("ppo"), small, progress=False, regime=test.regime)


def test_version_3_and_regime_suites_need_single_envs_or_workers(tmp_path):
    code, _, stderr = run_cli(["train", "--obs-version", "3", "--suites", "small-light", "--timesteps", "8",
                               "--out", str(tmp_path)])
    assert code == 2 and "does not batch obs_version=3" in stderr and "--vec single" in stderr
    code, _, stderr = run_cli(["train", "--suites", "small-overloaded-unknown", "--vec", "single", "--timesteps", "8",
                               "--out", str(tmp_path)])
    assert code == 2 and "pass --obs-version 3" in stderr

"""Rendering (ANSI and rgb_array; the Gantt from an EpisodeResult), wrappers, the README
figures and the env spec page kept in sync with the docstring."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import shockwave_gym  # noqa: F401
from shockwave_gym.env import ClusterEnv
from shockwave_gym.env.docs import env_spec_markdown
from shockwave_gym.env.wrappers import ActionMaskObservation, FlattenClusterObservation
from shockwave_gym.gantt import gantt_figure, gantt_rgb
from shockwave_gym.interface.observation import (
    CLUSTER_FEATURES,
    CLUSTER_FEATURES_V2,
    JOB_FEATURES,
    JOB_FEATURES_V2,
    OBSERVATION_VERSIONS,
    feature_tables,
    observation_signature,
)
from shockwave_gym.runner import run_episode
from shockwave_gym.simulator import SimConfig
from shockwave_gym.traces import load_trace

REPO = Path(__file__).resolve().parents[1]


def _finished(render_mode: str):
    env = gym.make("shockwave_gym/Teaching-v0", action_mode="priority", render_mode=render_mode)
    env.reset(seed=0)
    while True:
        *_, terminated, truncated, info = env.step(np.zeros(12, np.float32))
        if terminated or truncated:
            return env, info


def test_ansi_render_shows_the_round_and_the_final_metrics():
    env = gym.make("shockwave_gym/Teaching-v0", action_mode="sequential", render_mode="ansi")
    env.reset(seed=0)
    while env.unwrapped.view.num_active < 3:
        env.step(12)  # end the round with nothing picked
    rounds = env.unwrapped.view.round_index
    first = int(np.flatnonzero(env.unwrapped.action_masks()[:-1])[0])
    env.step(first)  # a sub-step: the round is still being built
    text = env.render()
    assert text.startswith(f"round {rounds:>4}")
    header = next(line for line in text.splitlines() if line.startswith("slot"))
    assert header.endswith("pick")
    assert sum(line.endswith("*") for line in text.splitlines()) == 1
    env, info = _finished("ansi")
    final = env.render()
    assert f"makespan {info['metrics']['makespan_s']:.0f}s" in final
    assert len([line for line in final.splitlines() if re.match(r"^\s+\d+ \w", line)]) == 12


def test_rgb_render_is_the_gantt_of_the_episode():
    env, _ = _finished("rgb_array")
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    np.testing.assert_array_equal(frame, gantt_rgb(env.unwrapped.simulator.result()))
    assert (frame < 250).any()  # something was drawn


def test_gantt_draws_from_a_runner_result():
    from shockwave_agents.fifo import FifoAgent

    outcome = run_episode(load_trace("teaching-12"), FifoAgent(), SimConfig(gpus=4), progress=False)
    fig = gantt_figure(outcome.result, title="fifo")
    ax_gpu, ax_jobs = fig.axes[:2]
    assert ax_gpu.get_title() == "fifo"
    bars = ax_jobs.collections[1]  # waiting spans first, then the run bars
    assert len(bars.get_paths()) == sum(ids.size for ids in outcome.result.round_job_ids)


def test_flatten_wrapper_layout_and_mask_forwarding():
    env = FlattenClusterObservation(gym.make("shockwave_gym/Teaching-v0", action_mode="select"))
    flat, _ = env.reset(seed=0)
    raw = env.unwrapped._observation()
    np.testing.assert_array_equal(flat[: 12 * 14], raw["jobs"].ravel())
    np.testing.assert_array_equal(flat[-8:], raw["cluster"])
    assert env.observation_space.contains(flat)
    np.testing.assert_array_equal(env.action_masks(), env.unwrapped.action_masks())


@pytest.mark.parametrize("mode, size", [("select", 24), ("sequential", 13), ("priority", 12)])
def test_action_mask_observation(mode, size):
    env = ActionMaskObservation(gym.make("shockwave_gym/Teaching-v0", action_mode=mode))
    obs, _ = env.reset(seed=0)
    assert obs["action_mask"].shape == (size,) and env.observation_space.contains(obs)
    np.testing.assert_array_equal(obs["action_mask"].astype(bool), env.unwrapped.action_masks())


def test_env_md_is_generated_from_the_docstring():
    committed = (REPO / "docs" / "ENV.md").read_text(encoding="utf-8")
    assert committed == env_spec_markdown(), "run: python -m shockwave_gym.env.docs docs/ENV.md"


def test_docstring_tables_match_the_feature_definitions():
    doc = ClusterEnv.__doc__
    for section in ("Description", "Action Space", "Observation Space", "Rewards", "Starting State",
                    "Episode End", "Arguments", "Version History"):
        assert f"## {section}" in doc
    for version in OBSERVATION_VERSIONS:
        for features in feature_tables(version):
            for index, (name, low, high, _) in enumerate(features):
                assert f"| {index} | `{name}` | [{low:g}, {high:g}] |" in doc, (version, name)
        assert f"signature `{observation_signature(version)}`" in doc
    assert f"| `jobs` | (max_jobs, {len(JOB_FEATURES_V2)}) |" in doc and f"(v1: {len(JOB_FEATURES)})" in doc
    assert f"| `cluster` | ({len(CLUSTER_FEATURES_V2)},) |" in doc and f"(v1: {len(CLUSTER_FEATURES)})" in doc


def test_committed_render_text_is_current():
    spec = importlib.util.spec_from_file_location("make_env_figures", REPO / "scripts" / "make_env_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = (REPO / "docs" / "img" / "teaching_render.txt").read_text(encoding="utf-8")
    assert committed == module.render_text(), "run: python scripts/make_env_figures.py"
    assert (REPO / "docs" / "img" / "teaching_gantt.png").stat().st_size > 10_000

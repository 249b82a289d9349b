"""A learned agent builds its observation's feature buffer once per episode, and the
observations it sees equal freshly built ones."""

from __future__ import annotations

import numpy as np

import shockwave_gym.interface.observation as observation
from shockwave_agents import make_agent
from shockwave_gym.interface.observation import build_observation
from shockwave_gym.runner import run_episode
from shockwave_gym.simulator import SimConfig
from shockwave_gym.traces import BUNDLED_GPUS, load_trace

TRACE = "teaching-12"


def test_feature_buffer_is_built_once_per_episode(monkeypatch):
    built = []
    real = observation.type_throughput_table
    monkeypatch.setattr(observation, "type_throughput_table", lambda view: built.append(1) or real(view))
    agent = make_agent("shockwave-distilled")
    run_episode(load_trace(TRACE), agent, SimConfig(gpus=BUNDLED_GPUS[TRACE]), seed=0)
    assert agent.rounds > 10
    assert len(built) == 1
    run_episode(load_trace(TRACE), agent, SimConfig(gpus=BUNDLED_GPUS[TRACE]), seed=0)
    assert len(built) == 2  # a new episode (a new view) builds its own


def test_cached_observations_equal_fresh_ones():
    agent = make_agent("ppo")
    seen = []
    real_outputs = agent.network.outputs

    def outputs(obs):
        seen.append({key: value.copy() for key, value in obs.items()})
        return real_outputs(obs)

    agent.network.outputs = outputs
    fresh = []
    real_act = agent.act

    def act(view):
        agent.slots.update(view)
        fresh.append(build_observation(view, agent.slots, version=agent.obs_version))
        return real_act(view)

    agent.act = act
    run_episode(load_trace(TRACE), agent, SimConfig(gpus=BUNDLED_GPUS[TRACE]), seed=0)
    assert len(seen) == len(fresh) > 10
    for cached, built in zip(seen, fresh, strict=True):
        assert cached.keys() == built.keys()
        for key in cached:
            np.testing.assert_array_equal(cached[key], built[key])

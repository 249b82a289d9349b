"""A trained slot policy as an :class:`~shockwave_agents.base.Agent`.

The agent rebuilds, from the view it gets in ``act(view)``, exactly the observation the env
would show (:class:`~shockwave_gym.interface.observation.SlotMap` and
:func:`~shockwave_gym.interface.observation.build_observation`, the env's own code), runs the
network deterministically, and turns its output into job ids with the env's own action mode
(:mod:`shockwave_gym.interface.actions`), so the repair and packing rules are the env's:

* ``priority``: the Gaussian means (the scores) go to ``PriorityMode.choose``;
* ``select``: a bit is set where its logit favours 1, then ``SelectMode.choose`` repairs;
* ``sequential``: masked arg-max picks, one sub-step at a time, until the round closes.

These are the modes of SB3's distributions (mean, per-bit arg-max, masked arg-max). The
network is a :class:`~shockwave_agents.learned.inference.NumpySlotNetwork` (no torch
needed) or a :class:`~shockwave_agents.learned.inference.TorchSlotNetwork`.
"""

from __future__ import annotations

import numpy as np

from shockwave_agents.base import Agent
from shockwave_gym.interface.actions import make_action_mode
from shockwave_gym.interface.observation import build_observation
from shockwave_gym.interface.slots import SlotMap
from shockwave_gym.view import ClusterView


class PolicyAgent(Agent):
    """Schedules with a slot network (anything with ``outputs(obs)``, ``kind`` and
    ``max_jobs``) in ``action_mode``."""

    def __init__(self, network, action_mode: str, *, name: str = "learned"):
        self.network = network
        self.max_jobs = int(network.max_jobs)
        self.action_mode = action_mode
        self.name = name
        self.mode = make_action_mode(action_mode, self.max_jobs)
        self.slots = SlotMap(self.max_jobs)
        self.rounds = 0
        self.substeps = 0

    def reset(self, view: ClusterView, seed: int | None = None) -> None:
        self.slots.reset(view.num_jobs)
        self.rounds = 0
        self.substeps = 0

    def act(self, view: ClusterView) -> np.ndarray:
        slots = self.slots
        slots.update(view)
        self.rounds += 1
        if self.action_mode == "sequential":
            return self._act_sequential(view)
        out = self.network.outputs(build_observation(view, slots))
        if self.action_mode == "priority":
            action = out
        elif self.network.kind == "binary":
            action = (out.reshape(-1, 2).argmax(axis=1) == 1).astype(np.int8)
        else:  # Bernoulli logits
            action = (out > 0).astype(np.int8)
        job_ids, _ = self.mode.choose(action, view, slots)
        return job_ids

    def _act_sequential(self, view: ClusterView) -> np.ndarray:
        mode, slots = self.mode, self.slots
        mode.start_round(view, slots)
        while True:
            mask = mode.masks(slots)
            if not mask[:-1].any():
                break
            obs = build_observation(view, slots, picked=mode.picked, free_gpus=mode.free_gpus)
            logits = self.network.outputs(obs)
            choice = int(np.argmax(np.where(mask, logits, -np.inf)))
            self.substeps += 1
            closes, _ = mode.pick(np.int64(choice))
            if closes:
                break
        return mode.chosen(slots)

    def stats(self) -> dict:
        stats = {"policy_rounds": self.rounds}
        if self.action_mode == "sequential":
            stats["policy_substeps"] = self.substeps
        return stats

"""A trained slot policy as an :class:`~shockwave_agents.base.Agent`.

The agent rebuilds, from the view it gets in ``act(view)``, exactly the observation the env
would show (:class:`~shockwave_gym.interface.observation.SlotMap` and
:func:`~shockwave_gym.interface.observation.build_observation`, the env's own code), runs the
network deterministically, and turns its output into job ids with the env's own action mode
(:mod:`shockwave_gym.interface.actions`), so the repair and packing rules are the env's:

* ``priority``: the Gaussian means (the scores) go to ``PriorityMode.choose``;
* ``select``: a bit is set where its logit favours 1, then ``SelectMode.choose`` repairs;
* ``sequential``: masked arg-max picks, one sub-step at a time, until the round closes
  (for a version-2 policy, as in the env's default ``idle_allowed=False``: "end round" is
  never chosen, the round closes once no further job fits; version 1's policies ran with
  "end round" always legal).

These are the modes of SB3's distributions (mean, per-bit arg-max, masked arg-max). On a
heterogeneous view (``view.heterogeneous``) the same decoding goes through the typed modes
(:mod:`shockwave_gym.interface.typed_actions`): the policy's order or set is placed by the
simulator's default rule (each job on its fastest type with room) and returned as a
:class:`~shockwave_gym.placement.Placement`; a ``sequential`` policy picks slots (masked to
jobs that fit some type) and each pick goes to its fastest type with room.

An **elastic** policy (head kind ``elastic``: a score and a GPU-count preference per slot)
runs on clusters of one GPU type: it reads the env's observation plus its ``elastic`` entry
(:func:`~shockwave_gym.interface.elastic_features.elastic_features`) and its outputs go to
the env's elastic ``priority`` mode
(:class:`~shockwave_gym.interface.elastic_actions.ElasticPriorityMode`), which gives each
job its count; the decision is an :class:`~shockwave_gym.placement.Allocation`. It is trained
for traces with elastic jobs; on a rigid trace every job's only allowed count is its gang,
so it orders jobs by its scores like a ``priority`` policy (as the elastic baselines run
rigid traces). On a cluster of several GPU types the elastic modes have no counts to give,
so it refuses with one :class:`~shockwave_gym.errors.InputError` line. A rigid policy on an
elastic view runs every job at its reference count, as every rigid agent does
(docs/SEMANTICS.md). The network
is a :class:`~shockwave_agents.learned.inference.NumpySlotNetwork` (no torch needed) or a :class:`~shockwave_agents.learned.inference.TorchSlotNetwork`.
"""

from __future__ import annotations

import numpy as np

from shockwave_agents.base import Agent
from shockwave_gym.errors import UnsupportedClusterError
from shockwave_gym.interface.elastic_features import elastic_features
from shockwave_gym.interface.modes import make_action_mode
from shockwave_gym.interface.observation import build_observation, job_features_for
from shockwave_gym.interface.slots import SlotMap
from shockwave_gym.interface.typed_actions import TypeContext
from shockwave_gym.placement import Allocation, Placement
from shockwave_gym.view import ClusterView


class PolicyAgent(Agent):
    """Schedules with a slot network (anything with ``outputs(obs)``, ``kind`` and
    ``max_jobs``) in ``action_mode``, reading observation version ``obs_version`` (default:
    the network's ``obs_version``, i.e. the saved policy's, else the env's default)."""

    def __init__(self, network, action_mode: str, *, name: str = "learned", obs_version: int | None = None):
        from shockwave_gym.interface.observation import DEFAULT_OBSERVATION_VERSION

        self.network = network
        if obs_version is None:
            obs_version = getattr(network, "obs_version", None) or DEFAULT_OBSERVATION_VERSION
        self.obs_version = int(obs_version)
        # sequential mode: version 1's env let "end round" be chosen at any time; version 2's
        # default env (idle_allowed=False) closes a round only once no further job fits
        self.idle_allowed = self.obs_version == 1
        self.max_jobs = int(network.max_jobs)
        self.action_mode = action_mode
        self.name = name
        self.elastic = getattr(network, "kind", None) == "elastic"
        self.mode = make_action_mode(action_mode, self.max_jobs, idle_allowed=self.idle_allowed, elastic=self.elastic)
        self.typed_mode = None  # the typed variant, made for the first heterogeneous view
        self.slots = SlotMap(self.max_jobs)
        self.rounds = 0
        self.substeps = 0
        self._features = self._features_view = None  # the feature buffer of the view's trace

    def reset(self, view: ClusterView, seed: int | None = None) -> None:
        self.slots.reset(view.num_jobs)
        self.rounds = 0
        self.substeps = 0
        self._features = self._features_view = None

    def _observe(self, view: ClusterView, **partial_round) -> dict[str, np.ndarray]:
        """The env's observation of ``view`` (``picked`` / ``free_gpus`` for a partly built
        round), reusing one feature buffer per view (built once per episode)."""
        if self._features_view is not view:
            self._features = job_features_for(view, self.obs_version, padded=False)
            self._features_view = view
        return build_observation(view, self.slots, version=self.obs_version, features=self._features, **partial_round)

    def act(self, view: ClusterView) -> np.ndarray | Placement:
        """Job ids; a :class:`Placement` on a heterogeneous cluster."""
        slots = self.slots
        if self.elastic:
            return self._act_elastic(view)
        slots.update(view)
        self.rounds += 1
        if view.heterogeneous and (self.typed_mode is None or self.typed_mode.num_types != view.cluster.num_types):
            self.typed_mode = make_action_mode(self.action_mode, self.max_jobs, idle_allowed=self.idle_allowed,
                                               cluster=view.cluster)
        if self.action_mode == "sequential":
            return self._act_sequential_typed(view) if view.heterogeneous else self._act_sequential(view)
        out = self.network.outputs(self._observe(view))
        if self.action_mode == "priority":
            action = out
        elif self.network.kind == "binary":
            action = (out.reshape(-1, 2).argmax(axis=1) == 1).astype(np.int8)
        else:  # Bernoulli logits
            action = (out > 0).astype(np.int8)
        if view.heterogeneous:
            job_ids, types, _ = self.typed_mode.place(action, view, slots, TypeContext.of(view))
            return Placement(job_ids, types)
        job_ids, _ = self.mode.choose(action, view, slots)
        return job_ids

    def _act_elastic(self, view: ClusterView) -> Allocation:
        """Scores and count preferences through the env's elastic ``priority`` mode."""
        if len(view.type_gpus) > 1:
            raise UnsupportedClusterError(
                f"agent {self.name!r}: an elastic policy of one GPU type cannot run on a cluster of "
                f"{len(view.type_gpus)} GPU types; run it on one type (--gpus N)")
        slots = self.slots
        slots.update(view)
        self.rounds += 1
        obs = self._observe(view)
        obs["elastic"] = elastic_features(view, slots)
        job_ids, columns, _ = self.mode.place(self.network.outputs(obs), view, slots)
        return Allocation(job_ids, np.asarray(view.gpu_counts, dtype=np.int64)[columns])

    def _act_sequential(self, view: ClusterView) -> np.ndarray:
        mode, slots = self.mode, self.slots
        mode.start_round(view, slots)
        while True:
            mask = mode.masks(slots)
            if not mask[:-1].any():
                break
            obs = self._observe(view, picked=mode.picked, free_gpus=mode.free_gpus)
            logits = self.network.outputs(obs)
            choice = int(np.argmax(np.where(mask, logits, -np.inf)))
            self.substeps += 1
            closes, _ = mode.pick(np.int64(choice))
            if closes:
                break
        return mode.chosen(slots)

    def _act_sequential_typed(self, view: ClusterView) -> Placement:
        mode, slots, max_jobs = self.typed_mode, self.slots, self.max_jobs
        context = TypeContext.of(view)
        mode.start_round(view, slots, context)
        while True:
            legal = mode.pickable()  # (types, slots)
            fits = legal.any(axis=0)
            if not fits.any():
                break
            free = mode.free.copy() if self.obs_version >= 2 else mode.free_gpus  # v2 and later: per type
            obs = self._observe(view, picked=mode.picked, free_gpus=free)
            logits = self.network.outputs(obs)[:max_jobs]
            slot = int(np.argmax(np.where(fits, logits, -np.inf)))
            job = int(slots.slot_job[slot])
            types = np.flatnonzero(legal[:, slot])
            gpu_type = int(types[np.argmax(context.rates[job, types])])  # fastest with room
            self.substeps += 1
            closes, _ = mode.pick(np.int64(gpu_type * max_jobs + slot))
            if closes:
                break
        return Placement(*mode.placed(slots))

    def stats(self) -> dict:
        stats = {"policy_rounds": self.rounds}
        if self.action_mode == "sequential":
            stats["policy_substeps"] = self.substeps
        return stats

"""A permutation-invariant actor-critic for the cluster env's Dict observation (SB3 policies).

One network handles any number of job slots, and permuting the slots permutes its per-slot
outputs the same way (the value does not change):

1. **Job encoder**, shared by every slot: ``[job features | picked | cluster features]``
   -> MLP -> ``h_s`` (``embed_dim``), computed for occupied slots only (an empty slot's
   ``h_s`` and ``z_s`` are 0, so its outputs are the heads' biases).
2. **Cluster context**: masked mean and max of ``h`` over the occupied slots, with the
   cluster features -> MLP -> ``c``.
3. **Mixing**, shared by every slot: ``[h_s | c]`` -> MLP -> ``z_s``. Each slot now knows
   what it competes with.
4. **Heads** (:class:`SlotHead`), shared by every slot, by action space:

   * ``Box`` (``priority`` mode, PPO): ``score_s = tanh(w . z_s)`` is the Gaussian mean (0
     for empty slots), with one learned log-std for all slots;
   * ``MultiBinary`` (``select`` mode): two logits per slot in sb3-contrib's ``[bit=0,
     bit=1]`` layout (MaskablePPO), or one Bernoulli logit per slot (PPO);
   * ``Discrete(max_jobs + 1)`` (``sequential`` mode, MaskablePPO): one logit per slot plus
     an "end round" logit computed from ``c``.

   The value is an MLP of ``[mean_s z_s | c]``.
5. **Linear skip** (optional, ``prior=...``; :mod:`~shockwave_agents.learned.priors`):
   each slot's pre-activation (pre-tanh score, bit-1 logit, pick logit) gets
   ``skip . job_features_s + skip_bias`` added, a ``Linear(num_job_features, 1)`` of the
   slot's raw job features shared by every slot. With ``prior="srtf"`` the network starts
   as SRTF (the skip on ``predicted_remaining``, the deep output at 0) and learns a
   residual. Without a prior there is no skip term (the weights of older files).

No parameter's shape depends on ``max_jobs``, so weights trained with one slot count load
into a network built for another (:mod:`shockwave_agents.learned.weights`).
:class:`SlotPolicy` plugs into PPO, :class:`MaskableSlotPolicy` into MaskablePPO.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.distributions import DiagGaussianDistribution
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

#: Head kinds: a score per slot (Box), a bit per slot as two logits (sb3-contrib's masked
#: MultiBinary) or one logit (SB3's Bernoulli), one pick plus "end round" (Discrete), or
#: a score and a GPU-count preference per slot (``elastic``: the elastic ``priority`` mode's
#: Box of ``2 * max_jobs``, scores first; shockwave_gym/interface/elastic_actions.py).
HEAD_KINDS = ("score", "binary", "bernoulli", "pick", "elastic")


def head_kind(action_space: spaces.Space, max_jobs: int, *, maskable: bool) -> str:
    """The :class:`SlotHead` kind for the env's action space with ``max_jobs`` slots."""
    if isinstance(action_space, spaces.Box) and action_space.shape == (max_jobs,):
        return "score"
    if isinstance(action_space, spaces.Box) and action_space.shape == (2 * max_jobs,):
        return "elastic"
    if isinstance(action_space, spaces.MultiBinary) and np.shape(action_space.n) in ((), (1,)) \
            and int(np.ravel(action_space.n)[0]) == max_jobs:
        return "binary" if maskable else "bernoulli"
    if isinstance(action_space, spaces.Discrete) and int(action_space.n) == max_jobs + 1:
        return "pick"
    raise ValueError(f"no slot head for action space {action_space} with {max_jobs} slots")


def _mlp(in_dim: int, hidden_dim: int, out_dim: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(in_dim, hidden_dim), nn.ReLU(), nn.Linear(hidden_dim, out_dim), nn.ReLU())


class SlotFeatures(NamedTuple):
    """What :class:`SlotEncoder` hands the heads and the critic: the occupied slots as rows
    (no tensor is padded to ``max_jobs`` slots), the cluster context and where the rows go."""

    z: torch.Tensor  # (N, d): the mixed embedding of each occupied slot, row-major by (observation, slot)
    context: torch.Tensor  # (B, d)
    valid: torch.Tensor  # (B, M) float, 1 where the slot holds a job
    where: tuple[torch.Tensor, torch.Tensor]  # (observation, slot) of each row
    jobs: torch.Tensor | None  # (N, F): the rows' raw job features (``pass_jobs``), else None


def segment_pool(rows: torch.Tensor, owner: torch.Tensor, valid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean, max) over each observation's rows of ``rows`` (N, d), non-negative, with
    ``owner`` (N,) the observation of each row; both are 0 for an observation without rows.
    ``valid`` (B, M) gives the batch size and the row counts."""
    batch, width = valid.shape[0], rows.shape[1]
    total = rows.new_zeros(batch, width).index_add(0, owner, rows)
    mean = total / valid.sum(dim=1, keepdim=True).clamp(min=1.0)
    peak = rows.new_zeros(batch, width).scatter_reduce(0, owner.unsqueeze(1).expand(-1, width), rows, reduce="amax")
    return mean, peak


def shared_input_mlp(mlp: nn.Sequential, rows: torch.Tensor, shared: torch.Tensor, owner: torch.Tensor) -> torch.Tensor:
    """``mlp`` (Linear, ReLU, Linear, ReLU) of ``[rows | shared[owner]]``, with the first
    layer's ``shared`` columns applied once per observation (B rows) instead of once per slot
    (N rows): the same function, with fewer multiplications (the per-slot layers are most of
    an update's arithmetic)."""
    first, width = mlp[0], rows.shape[1]
    per_observation = nn.functional.linear(shared, first.weight[:, width:], first.bias)
    hidden = torch.relu(nn.functional.linear(rows, first.weight[:, :width]) + per_observation[owner])
    return torch.relu(mlp[2](hidden))


class SlotEncoder(BaseFeaturesExtractor):
    """Observation dict -> :class:`SlotFeatures` (the raw job features of the occupied slots
    ride along when ``pass_jobs``, for the head's linear skip term). ``features_dim`` is
    nominal (SB3 asks for one; the slot modules read the named fields)."""

    def __init__(self, observation_space: spaces.Dict, embed_dim: int = 64, hidden_dim: int = 128,
                 pass_jobs: bool = False):
        max_jobs, num_job_features = observation_space["jobs"].shape
        num_cluster_features = observation_space["cluster"].shape[0]
        # elastic traces: each slot's row also holds its ``elastic`` entry (allowed counts and
        # marginal speedups, 2 C values), after its job features
        num_elastic = observation_space["elastic"].shape[1] if "elastic" in observation_space.spaces else 0
        self.pass_jobs = bool(pass_jobs)
        super().__init__(observation_space, features_dim=embed_dim)
        self.max_jobs, self.embed_dim, self.elastic = max_jobs, embed_dim, num_elastic > 0
        self.job_mlp = _mlp(num_job_features + num_elastic + 1 + num_cluster_features, hidden_dim, embed_dim)
        self.context_mlp = _mlp(2 * embed_dim + num_cluster_features, hidden_dim, embed_dim)
        self.mix_mlp = _mlp(2 * embed_dim, hidden_dim, embed_dim)

    def forward(self, observations: dict[str, torch.Tensor]) -> SlotFeatures:
        jobs = observations["jobs"]
        valid = observations["job_valid"].to(jobs.dtype)
        picked = observations["picked"].to(jobs.dtype)
        cluster = observations["cluster"]
        # every per-slot computation runs on the occupied slots only, as rows (most slots are
        # empty in training); an empty slot's embedding is 0, as in the numpy inference
        occupied = valid.bool()
        where = occupied.nonzero(as_tuple=True)
        job_rows = jobs[where]
        owner = where[0]
        row_inputs = [job_rows, observations["elastic"][where]] if self.elastic else [job_rows]
        rows = shared_input_mlp(self.job_mlp, torch.cat([*row_inputs, picked[where].unsqueeze(-1)], dim=-1), cluster, owner)
        rows = self._attend(rows, occupied, where)
        mean, peak = segment_pool(rows, owner, valid)
        context = self.context_mlp(torch.cat([mean, peak, cluster], dim=-1))
        mixed = shared_input_mlp(self.mix_mlp, rows, context, owner)
        return SlotFeatures(mixed, context, valid, where, job_rows if self.pass_jobs else None)

    def _attend(self, rows: torch.Tensor, occupied: torch.Tensor, where) -> torch.Tensor:
        """The occupied slots' rows after they see each other: the identity here (the pooled
        context is all they share); :class:`~shockwave_agents.learned.attention.AttentionEncoder`
        adds self-attention."""
        return rows


class SlotLatents(nn.Module):
    """SB3's ``mlp_extractor``: the actor keeps the slot features; the critic pools them."""

    def __init__(self, max_jobs: int, embed_dim: int, hidden_dim: int):
        super().__init__()
        self.max_jobs, self.embed_dim = max_jobs, embed_dim
        self.latent_dim_pi = embed_dim  # nominal: the actor's latent is the SlotFeatures
        self.latent_dim_vf = hidden_dim
        self.value_mlp = nn.Sequential(nn.Linear(2 * embed_dim, hidden_dim), nn.ReLU())

    def forward(self, features: SlotFeatures) -> tuple[SlotFeatures, torch.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: SlotFeatures) -> SlotFeatures:
        return features

    def forward_critic(self, features: SlotFeatures) -> torch.Tensor:
        mean, _ = segment_pool(features.z, features.where[0], features.valid)
        return self.value_mlp(torch.cat([mean, features.context], dim=-1))


class SlotHead(nn.Module):
    """SB3's ``action_net``: per-slot outputs from shared weights (see the module docstring).
    With ``num_job_features``, a linear skip ``Linear(num_job_features, 1)`` of each slot's
    raw job features is added to its pre-activation (the bit-1 logit for ``binary``, the
    score for ``elastic``)."""

    def __init__(self, kind: str, max_jobs: int, embed_dim: int, num_job_features: int | None = None):
        super().__init__()
        if kind not in HEAD_KINDS:
            raise ValueError(f"head kind must be one of {HEAD_KINDS}, got {kind!r}")
        self.kind, self.max_jobs, self.embed_dim = kind, max_jobs, embed_dim
        self.slot_out = nn.Linear(embed_dim, 2 if kind in ("binary", "elastic") else 1)
        self.end_out = nn.Linear(embed_dim, 1) if kind == "pick" else None
        self.skip = nn.Linear(num_job_features, 1) if num_job_features is not None else None

    def _slot_out(self, latent: SlotFeatures) -> torch.Tensor:
        """(B, M, 1 or 2): the deep term plus the skip term, before any activation; an empty
        slot's is the layers' bias (their output for zero inputs)."""
        out = self.slot_out(latent.z)
        empty = self.slot_out.bias
        if self.skip is not None:
            skip = self.skip(latent.jobs)
            if self.kind == "binary":
                out = torch.cat([out[:, :1], out[:, 1:] + skip], dim=-1)
                empty = torch.cat([empty[:1], empty[1:] + self.skip.bias])
            elif self.kind == "elastic":
                out = torch.cat([out[:, :1] + skip, out[:, 1:]], dim=-1)
                empty = torch.cat([empty[:1] + self.skip.bias, empty[1:]])
            else:
                out, empty = out + skip, empty + self.skip.bias
        batch, slots = latent.valid.shape
        return empty.expand(batch, slots, -1).index_put(latent.where, out)

    def slot_logits(self, latent: SlotFeatures) -> torch.Tensor:
        """(B, M): the evidence for running each slot's job (pre-tanh score, bit-1 minus
        bit-0 logit, pick logit, or an elastic slot's pre-tanh score)."""
        out = self._slot_out(latent)
        if self.kind == "binary":
            return out[..., 1] - out[..., 0]
        if self.kind == "elastic":
            return out[..., 0]
        return out.squeeze(-1)

    def forward(self, latent: SlotFeatures) -> torch.Tensor:
        out = self._slot_out(latent)
        if self.kind == "score":
            return torch.tanh(out.squeeze(-1)) * latent.valid
        if self.kind == "elastic":  # (B, 2M): the scores, then the count preferences
            return (torch.tanh(out) * latent.valid.unsqueeze(-1)).transpose(1, 2).flatten(1)
        if self.kind == "binary":
            return out.flatten(1)
        if self.kind == "bernoulli":
            return out.squeeze(-1)
        return torch.cat([out.squeeze(-1), self.end_out(latent.context)], dim=-1)


class SlotPolicyMixin:
    """Replaces SB3's dense MLP extractor and action layer with the slot modules."""

    def __init__(self, observation_space, action_space, lr_schedule, *, embed_dim: int = 64,
                 hidden_dim: int = 128, prior: str | None = None, **kwargs):
        from shockwave_agents.learned.priors import PRIOR_LOG_STD_INIT, check_prior

        if not isinstance(observation_space, spaces.Dict) or "jobs" not in observation_space.spaces:
            raise ValueError("slot policies need the cluster env's Dict observation")
        self.max_jobs = int(observation_space["jobs"].shape[0])
        self.num_job_features = int(observation_space["jobs"].shape[1])
        self.embed_dim, self.hidden_dim = int(embed_dim), int(hidden_dim)
        self.prior = check_prior(prior)
        self.head_kind = head_kind(action_space, self.max_jobs, maskable=self._maskable)
        if (self.head_kind == "elastic") != ("elastic" in observation_space.spaces):
            raise ValueError("an elastic head (a score and a count preference per slot) needs the observation's "
                             "elastic entry, and the elastic entry needs that head")
        kwargs.setdefault("features_extractor_class", SlotEncoder)
        kwargs.setdefault("features_extractor_kwargs", {"embed_dim": self.embed_dim, "hidden_dim": self.hidden_dim})
        if self.prior is not None:
            if not issubclass(kwargs["features_extractor_class"], SlotEncoder):
                raise ValueError("a prior (linear skip term) needs the SlotEncoder features extractor")
            kwargs["features_extractor_kwargs"] = {**kwargs["features_extractor_kwargs"], "pass_jobs": True}
            if "log_std_init" in self._default_kwargs:
                kwargs.setdefault("log_std_init", PRIOR_LOG_STD_INIT)
        # SB3's Adam settings (eps 1e-5) with the multi-tensor step: one call per update over
        # all parameters instead of a Python loop over them (a measurable share of an update)
        kwargs.setdefault("optimizer_kwargs", {"eps": 1e-5, "foreach": True})
        if not kwargs.get("share_features_extractor", True):
            raise ValueError("slot policies share one features extractor between actor and critic")
        for key, value in self._default_kwargs.items():
            kwargs.setdefault(key, value)
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)

    _default_kwargs: dict = {}
    _maskable = False
    #: The slot encoder: "mlp" (this module's), "attention" (shockwave_agents.learned.attention).
    encoder = "mlp"

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = SlotLatents(self.max_jobs, self.embed_dim, self.hidden_dim)

    def _build(self, lr_schedule) -> None:
        self._build_mlp_extractor()
        skip_width = self.num_job_features if self.prior is not None else None
        self.action_net = SlotHead(self.head_kind, self.max_jobs, self.embed_dim, skip_width)
        if isinstance(self.action_dist, DiagGaussianDistribution):
            # one log-std shared by every slot keeps the distribution permutation-invariant
            self.log_std = nn.Parameter(torch.full((1,), float(self.log_std_init)), requires_grad=True)
        self.value_net = nn.Linear(self.mlp_extractor.latent_dim_vf, 1)
        if self.ortho_init:
            gains = {self.features_extractor: np.sqrt(2), self.mlp_extractor: np.sqrt(2),
                     self.action_net: 0.01, self.value_net: 1.0}
            for module, gain in gains.items():
                module.apply(partial(self.init_weights, gain=gain))
        if self.prior is not None:
            from shockwave_agents.learned.priors import initialise

            initialise(self.action_net, self.prior, self._job_feature_names())
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def _job_feature_names(self) -> tuple[str, ...]:
        from shockwave_gym.interface.observation import OBSERVATION_VERSIONS, feature_names

        widths = (self.num_job_features, int(self.observation_space["cluster"].shape[0]))
        for version in OBSERVATION_VERSIONS:
            jobs, cluster = feature_names(version)
            if widths == (len(jobs), len(cluster)):
                return tuple(jobs)
        raise ValueError(f"no observation version has {widths[0]} job and {widths[1]} cluster features")

    def slot_logits(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """(B, M) per-slot evidence for running the job (see :meth:`SlotHead.slot_logits`);
        ``obs`` holds float tensors. Used for behaviour cloning and fast inference."""
        latent = self.mlp_extractor.forward_actor(self.features_extractor(obs))
        return self.action_net.slot_logits(latent)

    def action_outputs(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The head's raw output: Gaussian means, flattened bit logits, or pick logits."""
        latent = self.mlp_extractor.forward_actor(self.features_extractor(obs))
        return self.action_net(latent)

    def _get_constructor_parameters(self) -> dict:
        data = super()._get_constructor_parameters()
        data.update(embed_dim=self.embed_dim, hidden_dim=self.hidden_dim, prior=self.prior)
        return data


class SlotPolicy(SlotPolicyMixin, ActorCriticPolicy):
    """Permutation-invariant policy for :class:`stable_baselines3.PPO` (any action mode).

    In ``priority`` mode the scores live in [-1, 1]; the Gaussian's shared standard
    deviation starts at exp(-0.5) ~ 0.6 rather than SB3's 1, which would swamp them.
    """

    _default_kwargs = {"log_std_init": -0.5}


class MaskableSlotPolicy(SlotPolicyMixin, MaskableActorCriticPolicy):
    """Permutation-invariant policy for :class:`sb3_contrib.MaskablePPO` (``select`` and
    ``sequential`` modes; masks come from the env's ``action_masks()``)."""

    _maskable = True

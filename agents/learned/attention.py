"""The attention slot policy: self-attention over the job slots and a Plackett-Luce head.

**Encoder** (:class:`AttentionEncoder`): the MLP slot encoder of
:mod:`~shockwave_agents.learned.policy` with ``num_layers`` transformer blocks (pre-norm,
``num_heads``-head self-attention over the occupied slots, a ReLU feed-forward layer, both
residual) between the per-slot job MLP and the pooling, so each slot's embedding depends on
every other job, not only on their mean and max. Empty slots are neither queries nor keys:
the occupied slots of each observation are packed to the front and the batch is cut to the
largest count, so padding slots cost nothing. No positional encoding: permuting the slots
permutes the outputs. The output has the MLP encoder's layout, so its heads, value and the
linear skip of a prior (``prior=...``) work unchanged.

**Plackett-Luce head** (``priority`` mode, :class:`PlackettLuceDistribution`): the policy
outputs one logit ``l_s`` per occupied slot (the MLP head's pre-tanh score, scaled by
``exp(-log_temperature)``, a learned scalar started at ``log_temperature_init``) and samples
an *ordering* of the occupied slots: the first job with probability softmax(l) over all of
them, the next by softmax over those left, and so on. The log-probability of an ordering
``o`` is ``sum_i (l_{o_i} - logsumexp_{j >= i} l_{o_j})``. Sampling uses the Gumbel trick
(sorting ``l_s + Gumbel noise`` draws exactly this distribution); the deterministic action
sorts by ``l``. The entropy is estimated along the evaluated ordering by the chain rule,
``sum_i H(softmax over the slots left at step i)`` (unbiased for orderings drawn from the
policy). The env's action is a Box of scores, packed by descending score, so an ordering is
sent as the scores ``1 - 2 rank / (n - 1)`` (n occupied slots; 1 for a single job; 0 for
empty slots), which the env packs in exactly that order; the log-probability of a stored
action is that of the ordering its scores imply (descending, ties by slot).

``select`` and ``sequential`` modes keep the MLP policy's heads on the attention encoder.
:class:`AttentionSlotPolicy` plugs into PPO, :class:`MaskableAttentionSlotPolicy` into
MaskablePPO; ``policy_class(algo, "attention")`` returns them.
"""

from __future__ import annotations

import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.distributions import Distribution
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn

from shockwave_agents.learned.policy import (
    MaskableSlotPolicy,
    SlotEncoder,
    SlotPolicy,
    SlotPolicyMixin,
)

#: Logit given to empty slots inside the Plackett-Luce sums (exp of it is 0 in float32).
_EMPTY = -1e4


class AttentionBlock(nn.Module):
    """Pre-norm transformer block over packed slots: ``x + MHA(LN(x))``, then ``+ FF(LN(x))``."""

    def __init__(self, embed_dim: int, num_heads: int, hidden_dim: int):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(embed_dim), nn.LayerNorm(embed_dim)
        self.attn = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(embed_dim, hidden_dim), nn.ReLU(), nn.Linear(hidden_dim, embed_dim))

    def forward(self, x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
        y = self.norm1(x)
        x = x + self.attn(y, y, y, key_padding_mask=padding, need_weights=False)[0]
        return x + self.ff(self.norm2(x))


class AttentionEncoder(SlotEncoder):
    """:class:`~shockwave_agents.learned.policy.SlotEncoder` with self-attention blocks
    between the job MLP and the pooling (module docstring)."""

    def __init__(self, observation_space, embed_dim: int = 64, hidden_dim: int = 128, pass_jobs: bool = False,
                 num_heads: int = 4, num_layers: int = 2):
        super().__init__(observation_space, embed_dim=embed_dim, hidden_dim=hidden_dim, pass_jobs=pass_jobs)
        self.attention = nn.ModuleList(AttentionBlock(embed_dim, num_heads, hidden_dim) for _ in range(num_layers))

    def _attend(self, rows: torch.Tensor, occupied: torch.Tensor, where) -> torch.Tensor:
        # each observation's occupied slots packed to the front, in slot order, the batch cut
        # to the largest count: padding slots are neither queries nor keys and cost nothing
        counts = occupied.sum(dim=1)
        width = max(int(counts.max()) if counts.numel() else 0, 1)
        position = (occupied.cumsum(dim=1) - 1)[where]
        packed = rows.new_zeros(occupied.shape[0], width, rows.shape[1]).index_put((where[0], position), rows)
        padding = torch.arange(width, device=rows.device).unsqueeze(0) >= counts.unsqueeze(1)
        padding[:, 0] &= counts > 0  # an observation without jobs attends to one zero row (discarded)
        for block in self.attention:
            packed = block(packed, padding)
        return torch.relu(packed[where[0], position])


def _suffix_logsumexp(values: torch.Tensor) -> torch.Tensor:
    """``out[:, i] = logsumexp(values[:, i:])``."""
    return torch.logcumsumexp(values.flip(1), dim=1).flip(1)


def ordering_from_scores(scores: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """(B, M) slot indices: occupied slots by descending score (ties by slot), then the empty ones."""
    key = torch.where(valid, scores, torch.full_like(scores, -torch.inf))
    return torch.argsort(key, dim=1, descending=True, stable=True)


def scores_from_ordering(order: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """The env's scores for an ordering: ``1 - 2 rank / (n - 1)`` on occupied slots, 0 elsewhere."""
    positions = torch.arange(order.shape[1], device=order.device).expand_as(order)
    rank = torch.empty_like(order).scatter_(1, order, positions).to(torch.float32)
    count = valid.sum(dim=1, keepdim=True).to(torch.float32)
    scores = 1.0 - 2.0 * rank / (count - 1.0).clamp(min=1.0)
    return torch.where(valid, scores, torch.zeros_like(scores))


def plackett_luce_terms(logits: torch.Tensor, valid: torch.Tensor, order: torch.Tensor):
    """(log-probability, chain-rule entropy estimate), each (B,), of orderings ``order``."""
    ranked = logits.gather(1, order)
    live = valid.gather(1, order)
    filled = torch.where(live, ranked, torch.full_like(ranked, _EMPTY))
    normaliser = _suffix_logsumexp(filled)
    log_prob = torch.where(live, ranked - normaliser, torch.zeros_like(ranked)).sum(dim=1)
    # H_i = logsumexp_i - E_i[l]; E_i[l] from a log-domain suffix sum of l shifted to >= 1
    low = torch.where(live, ranked, torch.full_like(ranked, torch.inf)).min(dim=1, keepdim=True).values.detach()
    low = torch.where(torch.isfinite(low), low, torch.zeros_like(low))
    shifted = (ranked - low + 1.0).clamp(min=1.0)
    weighted = torch.where(live, ranked + torch.log(shifted), torch.full_like(ranked, _EMPTY))
    expected = torch.exp(_suffix_logsumexp(weighted) - normaliser) + low - 1.0
    entropy = torch.where(live, normaliser - expected, torch.zeros_like(ranked)).sum(dim=1)
    return log_prob, entropy


class PlackettLuceDistribution(Distribution):
    """A distribution over orderings of the occupied slots, as env scores (module docstring)."""

    def __init__(self):
        super().__init__()
        self.logits = self.valid = self._entropy = None

    def proba_distribution_net(self, *args, **kwargs):
        raise NotImplementedError("the attention policy builds its own logits (AttentionSlotPolicy)")

    def proba_distribution(self, logits: torch.Tensor, valid: torch.Tensor) -> PlackettLuceDistribution:
        self.logits, self.valid, self._entropy = logits, valid.bool(), None
        return self

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        order = ordering_from_scores(actions.reshape(self.logits.shape), self.valid)
        log_prob, self._entropy = plackett_luce_terms(self.logits, self.valid, order)
        return log_prob

    def entropy(self) -> torch.Tensor:
        if self._entropy is None:
            self.log_prob(self.sample())
        return self._entropy

    def sample(self) -> torch.Tensor:
        uniform = torch.rand_like(self.logits).clamp(1e-12, 1.0 - 1e-7)
        perturbed = self.logits.detach() - torch.log(-torch.log(uniform))
        return scores_from_ordering(ordering_from_scores(perturbed, self.valid), self.valid)

    def mode(self) -> torch.Tensor:
        return scores_from_ordering(ordering_from_scores(self.logits.detach(), self.valid), self.valid)

    def actions_from_params(self, logits, valid, deterministic: bool = False) -> torch.Tensor:
        self.proba_distribution(logits, valid)
        return self.get_actions(deterministic=deterministic)

    def log_prob_from_params(self, logits, valid):
        actions = self.actions_from_params(logits, valid)
        return actions, self.log_prob(actions)


class _AttentionMixin:
    """The attention encoder (and, in priority mode, the Plackett-Luce head) on a slot policy."""

    def __init__(self, observation_space, action_space, lr_schedule, *, embed_dim: int = 64, hidden_dim: int = 128,
                 num_heads: int = 4, num_layers: int = 2, log_temperature_init: float | None = None, **kwargs):
        self.num_heads, self.num_layers = int(num_heads), int(num_layers)
        if self.num_heads < 1 or self.num_layers < 1 or int(embed_dim) % self.num_heads:
            raise ValueError(f"the attention encoder needs num_heads >= 1 dividing embed_dim ({embed_dim}) and "
                             f"num_layers >= 1, got {num_heads} heads, {num_layers} layers")
        if log_temperature_init is None:  # like the Gaussian's log-std: sharper with a prior
            from shockwave_agents.learned.priors import PRIOR_LOG_STD_INIT

            log_temperature_init = -0.5 if kwargs.get("prior") is None else PRIOR_LOG_STD_INIT
        self.log_temperature_init = float(log_temperature_init)
        kwargs.setdefault("features_extractor_class", AttentionEncoder)
        kwargs.setdefault("features_extractor_kwargs", {"embed_dim": int(embed_dim), "hidden_dim": int(hidden_dim),
                                                        "num_heads": self.num_heads, "num_layers": self.num_layers})
        super().__init__(observation_space, action_space, lr_schedule, embed_dim=embed_dim, hidden_dim=hidden_dim, **kwargs)

    encoder = "attention"

    def _build(self, lr_schedule) -> None:
        if self.head_kind == "score":
            self.action_dist = PlackettLuceDistribution()
            self.log_temperature = nn.Parameter(torch.full((1,), self.log_temperature_init))
        super()._build(lr_schedule)

    def _get_action_dist_from_latent(self, latent_pi: torch.Tensor):
        if self.head_kind != "score":
            return super()._get_action_dist_from_latent(latent_pi)
        logits = self.action_net.slot_logits(latent_pi) * torch.exp(-self.log_temperature)
        return self.action_dist.proba_distribution(logits, latent_pi.valid)

    def action_outputs(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """Priority mode: the scores of the most likely ordering (slots by descending logit)."""
        if self.head_kind != "score":
            return super().action_outputs(obs)
        latent = self.mlp_extractor.forward_actor(self.features_extractor(obs))
        return self._get_action_dist_from_latent(latent).mode()

    def _get_constructor_parameters(self) -> dict:
        data = super()._get_constructor_parameters()
        data.update(num_heads=self.num_heads, num_layers=self.num_layers, log_temperature_init=self.log_temperature_init)
        return data


class AttentionSlotPolicy(_AttentionMixin, SlotPolicyMixin, ActorCriticPolicy):
    """The attention policy for :class:`stable_baselines3.PPO`: a Plackett-Luce ordering in
    ``priority`` mode, the MLP policy's heads in the others."""


class MaskableAttentionSlotPolicy(_AttentionMixin, SlotPolicyMixin, MaskableActorCriticPolicy):
    """The attention policy for :class:`sb3_contrib.MaskablePPO` (``select``, ``sequential``)."""

    _maskable = True


#: The slot encoders: the MLP-pooling one (policy.py) and self-attention (this module).
ENCODERS = ("mlp", "attention")


def policy_class(algo: str, encoder: str = "mlp") -> type:
    """The slot policy class for ``"ppo"`` or ``"maskable_ppo"`` with the ``"mlp"`` or
    ``"attention"`` encoder."""
    if encoder not in ENCODERS:
        raise ValueError(f"encoder must be one of {', '.join(ENCODERS)}, got {encoder!r}")
    if encoder == "attention":
        classes = {"ppo": AttentionSlotPolicy, "maskable_ppo": MaskableAttentionSlotPolicy}
    else:
        classes = {"ppo": SlotPolicy, "maskable_ppo": MaskableSlotPolicy}
    if algo not in classes:
        raise ValueError(f"algo must be one of {', '.join(classes)}, got {algo!r}")
    return classes[algo]

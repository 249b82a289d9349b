"""Priors of the slot policy's linear skip ("wide") term: residual policy learning.

A slot policy built with ``prior=...`` adds to each slot's pre-activation (the priority
score's pre-tanh value, the bit-1 logit, the pick logit) a linear function of that slot's raw
job features, ``skip . job_features_s + skip_bias`` (``action_net.skip``: one
``Linear(num_job_features, 1)`` shared by every slot), beside the deep term
``slot_out . z_s``. The prior decides how the two start:

* ``"zero"``: the skip starts at 0 and the deep term as usual (SB3's orthogonal init, gain
  0.01): a plain wide-and-deep network;
* ``"srtf"``: the skip starts at :data:`SRTF_WEIGHT` x ``predicted_remaining`` +
  :data:`SRTF_BIAS` and the deep term's output layer at exactly 0, so the initial
  deterministic policy scores each job ``tanh(1 - 2 x predicted_remaining)``, a strictly
  decreasing function of the core predictor's remaining time: in ``priority`` mode it packs
  the jobs in SRTF's order (ascending predicted remaining time, ties by arrival), and in
  ``sequential`` mode its masked arg-max picks the shortest job that fits. Training then
  learns a residual on top of SRTF;
* ``"srtf-fair"``: like ``"srtf"`` plus :data:`FAIR_WEIGHT` x ``ftf_estimate`` (``log2(1 +
  rho-hat)``, the projected finish-time fairness) with bias :data:`FAIR_BIAS`: SRTF's order
  bent towards the jobs projected to finish least fairly. It is not SRTF: on the suites'
  validation split (2 traces of each in-distribution suite) it lowered the mean worst FTF
  (Themis rho) from SRTF's 1.91 to 1.74 and raised the Themis unfair fraction from 55.7% to
  59.1%, at 0.898x FIFO's avg JCT (SRTF: 0.891x). The shipped ``ppo-fair`` starts from it.
* ``"srtf-gang"``: like ``"srtf"`` plus :data:`GANG_WEIGHT` x ``gang_share`` (gang size /
  cluster GPUs): SRTF's order bent towards small gangs, a cheap stand-in for the remaining
  GPU-area. Made for the elastic head (below), where ``gang_share`` is the job's reference
  gang: with the count preference at 4 GPUs it scored 0.785x FIFO's avg JCT on the first 4
  validation traces of ``elastic-nominal`` (the weights -2, -4, -5, -6, -8, -12 gave 0.797,
  0.787, 0.785, 0.788, 0.792, 0.795; ``"srtf"``: 0.812; ``sia``: 0.774, ``pollux``: 0.790).
  The shipped ``ppo-elastic`` starts from it.
* ``"wsrpt"``: like ``"srtf"`` plus :data:`WSRPT_GANG_WEIGHT` x ``gang`` (observation
  version 2 and 3's ``log2(gang size) / 3``): close to weighted SRPT's order (smallest
  predicted remaining GPU-area first). With ``predicted_remaining = log1p(s / 60) / L`` (``L
  =`` :data:`~shockwave_gym.interface.observation.LOG_TIME`), the skip is exactly ``1 - (2 /
  L) x log((1 + s / 60) x gang)``: it falls with ``(s + 60) x gang``, the remaining area with
  a minute added to the remaining time. It ranks two jobs as weighted SRPT does unless their
  areas differ by less than 60 s times their gangs' difference (a few GPU-minutes). Its
  pre-tanh values stay in about [-2.2, 1] for jobs up to a week. Observation version 1's
  ``gang`` is linear (gang / GPUs), so the prior needs version 2 or 3.

On the elastic head (a score and a GPU-count preference per slot,
:mod:`~shockwave_agents.learned.policy`), the skip term feeds the score only, and a prior
other than ``"zero"`` also starts the count preference at the constant
:data:`ELASTIC_PREFERENCE` (the deep output layer is 0): it asks every job for 4 of the
counts (1, 2, 4, 8) GPUs, and the elastic ``priority`` mode gives each the largest allowed
count up to that which still fits. Among the constant preferences, asking for 4 gave the
lowest avg JCT with SRTF's scores on the first 3 validation traces of ``elastic-nominal``
(0.572, 0.459, 0.700 h; asking for 1, 2 or 8: 0.818/0.565/0.842, 0.687/0.511/0.775,
0.609/0.535/0.780 h), beside ``elastic-srpt``'s 0.663/0.502/0.777 h and ``sia``'s
0.553/0.446/0.664 h.

``predicted_remaining`` is, in observation version 2, ``log1p(s / 60) / log1p(1440)`` of the
prediction in seconds (0.1 for a minute, 0.56 for an hour, 1 for a day), so the pre-tanh
value ``1 - 2x`` stays in about [-1.6, 1] for jobs up to a week long: tanh is far from
saturation, and float32 keeps jobs apart whose features differ. ``-2`` and ``1`` are exact in
float32, so ``1 - 2x`` is the float32 rounding of a monotone function: jobs tie only where
their float32 features tie (the observation stores float32), which SRTF breaks, like the env,
by arrival. Policies without a prior (``prior=None``) have no skip term at all, so existing
weights files load and decide unchanged.
"""

from __future__ import annotations

import math

from shockwave_gym.interface.observation import LOG_TIME

#: The accepted priors (``None``: no skip term).
PRIORS = ("zero", "srtf", "srtf-fair", "srtf-gang", "wsrpt")
#: The SRTF prior: weight on ``predicted_remaining`` and bias of the skip term.
SRTF_WEIGHT = -2.0
SRTF_BIAS = 1.0
#: The srtf-fair prior's weight on ``ftf_estimate`` and its bias (the srtf weight stays).
FAIR_WEIGHT = 0.5
FAIR_BIAS = 0.5
#: The srtf-gang prior's weight on ``gang_share`` (the srtf weight and bias stay).
GANG_WEIGHT = -5.0
#: The wsrpt prior's weight on version 2's ``gang`` (log2(gang) / 3): SRTF_WEIGHT x 3 log(2) /
#: LOG_TIME, so the skip is a decreasing function of log((remaining s + 60) x gang).
WSRPT_GANG_WEIGHT = SRTF_WEIGHT * 3 * math.log(2) / LOG_TIME
#: Initial log-std of PPO's Gaussian over priority scores for a policy with a prior:
#: exp(-2) ~ 0.14, so early rollouts stay near the prior's order (-0.5 without a prior).
PRIOR_LOG_STD_INIT = -2.0
#: The elastic head's starting count preference under a prior other than "zero": in
#: [0, 0.5), the preferences that ask for count index 2 (4 GPUs).
ELASTIC_PREFERENCE = 0.25


def check_prior(prior) -> str | None:
    """``prior`` if it is ``None`` or one of :data:`PRIORS`, else ``ValueError`` naming them."""
    if prior is None or (isinstance(prior, str) and prior in PRIORS):
        return prior
    raise ValueError(f"prior must be one of {', '.join(PRIORS)} (or None: no skip term), got {prior!r}")


def initialise(head, prior: str, job_feature_names: tuple[str, ...]) -> None:
    """Set a :class:`~shockwave_agents.learned.policy.SlotHead`'s skip (and, for
    ``"srtf"``, its deep output layer) to ``prior``'s starting values, in place."""
    import torch

    check_prior(prior)
    with torch.no_grad():
        head.skip.weight.zero_()
        head.skip.bias.zero_()
        if prior == "zero":
            return
        if "predicted_remaining" not in job_feature_names:
            raise ValueError(f"the {prior} prior needs a predicted_remaining job feature, got {job_feature_names}")
        head.skip.weight[0, job_feature_names.index("predicted_remaining")] = SRTF_WEIGHT
        head.skip.bias[0] = SRTF_BIAS
        if prior == "srtf-fair":
            if "ftf_estimate" not in job_feature_names:
                raise ValueError(f"the srtf-fair prior needs an ftf_estimate job feature, got {job_feature_names}")
            head.skip.weight[0, job_feature_names.index("ftf_estimate")] = FAIR_WEIGHT
            head.skip.bias[0] = FAIR_BIAS
        if prior == "srtf-gang":
            if "gang_share" not in job_feature_names:
                raise ValueError(f"the srtf-gang prior needs a gang_share job feature, got {job_feature_names}")
            head.skip.weight[0, job_feature_names.index("gang_share")] = GANG_WEIGHT
        if prior == "wsrpt":
            if "gang_share" not in job_feature_names or "gang" not in job_feature_names:
                raise ValueError("the wsrpt prior needs observation version 2 or 3 (a log2 gang feature beside "
                                 f"gang_share), got {job_feature_names}")
            head.skip.weight[0, job_feature_names.index("gang")] = WSRPT_GANG_WEIGHT
        head.slot_out.weight.zero_()
        head.slot_out.bias.zero_()
        if head.kind == "elastic":
            head.slot_out.bias[1] = math.atanh(ELASTIC_PREFERENCE)

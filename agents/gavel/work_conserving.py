"""Work-conserving variants of the six Gavel-mechanism baselines (``gavel-wc``, ``themis-wc``,
``allox-wc``, ``ossp-wc``, ``mst-wc``, ``gandiva_fair-wc``).

Each is its base agent with the two mechanism settings that make the authors' baselines leave
GPUs idle switched off:

- ``min_recompute_interval_s=0``: the allocation is recomputed at every round boundary at
  which the set of active jobs changed (an arrival or a completion; M1 without the 1,000 s
  interval), so a new job never waits for the next recompute to get an allocation;
- ``hold_unallocated_gpus=False``: a job without an allocation is passed over instead of
  holding its gang's GPUs without running. With the interval at 0 every tracked job has an
  allocation at selection time, so this only guards the invariant.

The selection scan (M4) then takes every job in priority order whose gang fits, jobs with
``x = 0`` last, so free GPUs are backfilled with any active job that fits: a round leaves GPUs
idle only when no waiting job fits in them (on a cluster of several GPU types: no waiting job
fits the free GPUs of any one type it can run on). Allocation rules, credits, deficits and
priorities are the base agent's, unchanged, on one GPU type and on several (a rule with a
heterogeneous form runs it through the per-type mechanism, as its base agent does).

The authors' versions (``gavel``, ...) stay as they are, for reproducing the paper. These
variants are ours: the paper's baselines as a deployment would run them, so that a comparison
measures the allocation rule rather than the idling the mechanism's settings add.
"""

from __future__ import annotations

from shockwave_agents.gavel.allox import AlloxAgent
from shockwave_agents.gavel.gandiva_fair import GandivaFairAgent
from shockwave_agents.gavel.gavel import GavelAgent
from shockwave_agents.gavel.mechanism import GavelRoundAgent
from shockwave_agents.gavel.mst import MstAgent
from shockwave_agents.gavel.ossp import OsspAgent
from shockwave_agents.gavel.themis import ThemisAgent

#: The mechanism settings every ``*-wc`` variant fixes (its other options are its base agent's).
WORK_CONSERVING = {"min_recompute_interval_s": 0.0, "hold_unallocated_gpus": False}
#: Variant name -> base agent name.
VARIANTS = {
    "gavel-wc": "gavel", "themis-wc": "themis", "allox-wc": "allox",
    "ossp-wc": "ossp", "mst-wc": "mst", "gandiva_fair-wc": "gandiva_fair",
}


def _variant(agent: GavelRoundAgent, name: str) -> GavelRoundAgent:
    agent.name = name
    return agent


def make_gavel_wc(*, count_restart_overhead: bool = False, heterogeneity_aware: bool = True) -> GavelAgent:
    """``gavel`` (max-min fairness), recomputed every round, holding no GPUs."""
    return _variant(GavelAgent(count_restart_overhead=count_restart_overhead,
                               heterogeneity_aware=heterogeneity_aware, **WORK_CONSERVING), "gavel-wc")


def make_themis_wc(*, remaining: str = "current_rate", count_restart_overhead: bool = False,
                   heterogeneity_aware: bool = True) -> ThemisAgent:
    """``themis`` (Gavel's finish-time-fairness policy), recomputed every round, holding no GPUs."""
    return _variant(ThemisAgent(remaining=remaining, count_restart_overhead=count_restart_overhead,
                                heterogeneity_aware=heterogeneity_aware, **WORK_CONSERVING), "themis-wc")


def make_allox_wc(*, alpha: float = 0.2, remaining: str = "current_rate", count_restart_overhead: bool = False,
                  heterogeneity_aware: bool = True) -> AlloxAgent:
    """``allox``, recomputed every round, holding no GPUs."""
    return _variant(AlloxAgent(alpha=alpha, remaining=remaining, count_restart_overhead=count_restart_overhead,
                               heterogeneity_aware=heterogeneity_aware, **WORK_CONSERVING), "allox-wc")


def make_ossp_wc(*, remaining: str = "current_rate", count_restart_overhead: bool = False,
                 heterogeneity_aware: bool = True) -> OsspAgent:
    """``ossp`` (Gavel's min-total-duration policy), recomputed every round, holding no GPUs."""
    return _variant(OsspAgent(remaining=remaining, count_restart_overhead=count_restart_overhead,
                              heterogeneity_aware=heterogeneity_aware, **WORK_CONSERVING), "ossp-wc")


def make_mst_wc(*, count_restart_overhead: bool = False, heterogeneity_aware: bool = True) -> MstAgent:
    """``mst`` (max sum of throughputs), recomputed every round, holding no GPUs."""
    return _variant(MstAgent(count_restart_overhead=count_restart_overhead,
                             heterogeneity_aware=heterogeneity_aware, **WORK_CONSERVING), "mst-wc")


def make_gandiva_fair_wc(*, count_restart_overhead: bool = False, heterogeneity_aware: bool = True) -> GandivaFairAgent:
    """``gandiva_fair`` (equal time shares whatever the gang), recomputed every round, holding no GPUs."""
    return _variant(GandivaFairAgent(count_restart_overhead=count_restart_overhead,
                                     heterogeneity_aware=heterogeneity_aware, **WORK_CONSERVING), "gandiva_fair-wc")

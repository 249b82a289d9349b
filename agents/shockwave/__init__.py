"""Shockwave (NSDI '23) on an open solver: predictor, planning program, solver backends, agent.

``make_agent("shockwave")`` is the faithful variant (the authors' objective and canonical
configuration); ``make_agent("shockwave-normalized")`` is ours (comparable NSW and makespan
scales); ``make_agent("shockwave-fair")`` is ours tuned for the fairness-efficiency frontier.
All accept any :class:`ShockwaveConfig` field as a keyword, e.g. ``noise=0.5``.
"""

from shockwave_agents.shockwave.agent import (
    ShockwaveAgent,
    make_shockwave,
    make_shockwave_fair,
    make_shockwave_normalized,
)
from shockwave_agents.shockwave.config import ShockwaveConfig
from shockwave_agents.shockwave.licences import SolverFallbackWarning
from shockwave_agents.shockwave.record import PlanPath, PlanRecord

__all__ = [
    "PlanPath", "PlanRecord", "ShockwaveAgent", "ShockwaveConfig", "SolverFallbackWarning",
    "make_shockwave", "make_shockwave_fair", "make_shockwave_normalized",
]

"""The paper's six baselines: one shared Gavel round mechanism, one module per allocation rule.

- :mod:`~shockwave_agents.gavel.mechanism` - recompute rule, credits and deficits,
  priorities, sort key and backfilling selection (docs/SEMANTICS.md M1–M4), implemented once;
- :mod:`~shockwave_agents.gavel.gavel` (max-min fairness), :mod:`.themis` (finish-time
  fairness), :mod:`.allox`, :mod:`.ossp` (min total duration), :mod:`.mst` (max sum
  throughput), :mod:`.gandiva_fair` - the allocation rules.

Each rule is registered by name (``make_agent("themis")``); cvxpy is imported only by the
rules that solve a program (Themis, OSSP), and only when they first solve one.
"""

from shockwave_agents.gavel.mechanism import GavelMechanism, GavelRoundAgent, remaining_iterations

__all__ = ["GavelMechanism", "GavelRoundAgent", "remaining_iterations"]

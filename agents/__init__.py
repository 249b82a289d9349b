"""Agents for shockwave-gym, installed under the import name ``shockwave_agents``.

``make_agent("gavel")`` builds an agent by name; ``available_agents()`` lists the names.
Every agent implements :class:`shockwave_agents.base.Agent`.
"""

from shockwave_agents.base import Agent, pack_in_order
from shockwave_agents.registry import available_agents, make_agent, register_agent

__all__ = ["Agent", "available_agents", "make_agent", "pack_in_order", "register_agent"]

"""Agents for shockwave-gym (import name ``shockwave_agents``)."""

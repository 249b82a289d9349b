"""Shortcut: the shipped SRTF agent's own estimate (the package predictor)."""
from shockwave_agents.srtf import SrtfAgent

_agent = SrtfAgent()


def remaining_time_estimate(view):
    return _agent._remaining_s(view)

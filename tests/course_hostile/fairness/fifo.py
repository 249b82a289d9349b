"""Honest: the placeholder, FIFO."""
from shockwave_agents.base import Agent
from shockwave_gym.interface import pack_in_order


class MyAgent(Agent):
    name = "my-agent"

    def act(self, view):
        return pack_in_order(view.active_job_ids, view.gang, view.gpus)

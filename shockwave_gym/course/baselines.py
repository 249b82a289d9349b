"""The built-in agents' metrics on a grading case, run once per process.

Grading a batch of submissions compares each with the same baselines on the same cases
(FIFO and Themis in the fairness lab, SRTF in the adaptation lab). Those runs do not depend
on the submission, so they are kept here (in the grader's process, never the child's), keyed by agent, cluster size and the trace's
content, and every later submission reuses them.
"""

from __future__ import annotations

import dataclasses

from shockwave_agents import make_agent
from shockwave_gym.runner import run_episode
from shockwave_gym.simulator import SimConfig, Simulator

_METRICS: dict[tuple, dict] = {}
_CHOICES: dict[tuple, list] = {}


def _trace_key(trace) -> str:
    return repr([dataclasses.astuple(job) for job in trace.jobs])


def baseline_metrics(name: str, case) -> dict:
    """The metrics of built-in agent ``name`` on ``case`` (its trace on ``case.gpus`` GPUs);
    a fresh dict each call."""
    key = (name, int(case.gpus), _trace_key(case.trace))
    if key not in _METRICS:
        _METRICS[key] = run_episode(case.trace, make_agent(name), SimConfig(gpus=case.gpus), progress=False).metrics
    return dict(_METRICS[key])


def baseline_choices(name: str, case) -> list[list[int]]:
    """The job ids built-in agent ``name`` (seed 0) runs in each round of ``case``, as the
    simulator validates them; a fresh list each call."""
    key = (name, int(case.gpus), _trace_key(case.trace))
    if key not in _CHOICES:
        sim = Simulator(case.trace.jobs, SimConfig(gpus=case.gpus))
        agent, choices = make_agent(name), []
        agent.reset(sim.view, 0)
        while not sim.done:
            ids = sim.validate_selection(agent.act(sim.view))
            choices.append([int(j) for j in ids])
            sim.step(ids)
        _CHOICES[key] = choices
    return [list(choice) for choice in _CHOICES[key]]

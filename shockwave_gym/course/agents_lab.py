"""What the two agent labs share: their trace cases and grading an agent with ``check_agent``.

A case is a trace and its cluster size. Public cases are named traces or fixed generator
seeds; instructor-only cases come from seeds kept in the instructor kit
(:mod:`shockwave_gym.course.kit`). Every agent is played through
:func:`shockwave_gym.testing.check_agent` in the grading child, so a submission is held to
exactly the simulator's validation (valid choices every round, finishes, deterministic under
its seed); the grader replays the choices it hands back (:func:`replay`) and measures them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shockwave_gym.config import DEFAULT_MAX_ROUNDS, SimConfig
from shockwave_gym.course.child import trace_data
from shockwave_gym.errors import InvalidActionError
from shockwave_gym.metrics import compute_metrics
from shockwave_gym.simulator import Simulator
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import GeneratorConfig, Trace, generate_trace, load_trace

#: The generated cases of the agent labs: small, on 4 GPUs, few 4-GPU gangs.
CASE_GPUS = 4


@dataclass(frozen=True)
class Case:
    name: str
    trace: Trace
    gpus: int


def bundled_case(name: str, gpus: int) -> Case:
    return Case(name, load_trace(name, gpus=gpus), gpus)


def generated_case(seed: int, num_jobs: int = 16) -> Case:
    name = f"generated-{num_jobs}-seed{seed}"
    config = GeneratorConfig(num_jobs=num_jobs, seed=seed, arrival_rate_per_hour=30.0, max_duration_h=1.5,
                             gang_mix={1: 0.6, 2: 0.3, 4: 0.1}, name=name)
    return Case(name, generate_trace(config), CASE_GPUS)


def payload(cases: Sequence[Case]) -> list[dict]:
    """What the child gets of the cases: each trace's jobs and cluster size, as data."""
    return [trace_data(case.trace, case.gpus) for case in cases]


class ReplayError(ValueError):
    """Choices handed back for a case are not a run of it (invalid, or it does not finish)."""


def replay(case: Case, choices) -> dict:
    """The metrics of playing ``choices`` (job ids per round) on ``case``, each checked by
    the simulator's own validation: the grader's figures never come from the submission."""
    if not isinstance(choices, list) or len(choices) > DEFAULT_MAX_ROUNDS:
        raise ReplayError("the handed-back choices are not a list of rounds")
    sim = Simulator(case.trace.jobs, SimConfig(gpus=case.gpus), ThroughputTable.builtin_v100(),
                    trace_name=case.trace.name)
    for index, choice in enumerate(choices):
        if sim.done or not isinstance(choice, list) or not all(type(j) is int for j in choice):
            raise ReplayError(f"round {index}: the handed-back choice is not a list of job ids of a running trace")
        try:
            sim.step(sim.validate_selection(choice))
        except (InvalidActionError, TypeError, ValueError) as exc:
            raise ReplayError(f"round {index}: {exc}") from None
    if not sim.done:
        raise ReplayError(f"the handed-back choices end at round {len(choices)} with jobs unfinished")
    return compute_metrics(sim.result())


def problem_text(problem, cases: Sequence[Case], sep: str = ": ") -> str:
    """A child's problem (``{"case": index or None, "text": ...}``) as a line naming the case."""
    if not isinstance(problem, dict) or not isinstance(problem.get("text"), str):
        return "the handed-back answers are malformed"
    index = problem.get("case")
    if type(index) is int and 0 <= index < len(cases):
        return f"{cases[index].name}{sep}{problem['text']}"
    return problem["text"]


def metrics_from(answer, cases: Sequence[Case]) -> tuple[dict[str, dict], str | None]:
    """Metrics of the agent's handed-back choices on every case (replayed here), or the first
    problem: ``check_agent``'s refusal in the child, or choices that do not replay."""
    if not isinstance(answer, dict) or not isinstance(answer.get("choices"), list):
        return {}, "the handed-back answers are malformed"
    metrics = {}
    for case, choices in zip(cases, answer["choices"], strict=False):
        try:
            metrics[case.name] = replay(case, choices)
        except ReplayError as exc:
            return metrics, f"{case.name}: {exc}"
    if answer.get("problem") is not None:
        return metrics, problem_text(answer["problem"], cases)
    if len(metrics) != len(cases):
        return metrics, "the handed-back answers miss cases"
    return metrics, None


def worst_ratio(values: dict[str, float], limits: dict[str, float]) -> tuple[str, float]:
    """The case where ``values / limits`` is largest, and that ratio."""
    name = max(values, key=lambda key: values[key] / limits[key])
    return name, values[name] / limits[name]

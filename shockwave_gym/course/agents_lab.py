"""What the two agent labs share: their trace cases and grading an agent with ``check_agent``.

A case is a trace and its cluster size. Public cases are named traces or fixed generator
seeds; instructor-only cases come from seeds kept in the instructor kit
(:mod:`shockwave_gym.course.kit`). Every agent is played through
:func:`shockwave_gym.testing.check_agent`, so a submission is held to exactly the
simulator's validation (valid choices every round, finishes, deterministic under its seed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shockwave_gym.course.submission import describe_exception
from shockwave_gym.testing.agent import AgentCheckError, check_agent
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


def check_on_cases(make: Callable[[], object], cases: Sequence[Case]) -> tuple[dict[str, dict], str | None]:
    """Metrics of the agent from ``make`` on every case, or the first ``check_agent`` error."""
    metrics = {}
    for case in cases:
        try:
            metrics[case.name] = check_agent(make, case.trace, gpus=case.gpus).metrics
        except AgentCheckError as exc:
            return metrics, f"{case.name}: {exc}"
        except Exception as exc:  # the student's code raised: a broken rule, not a grader bug
            return metrics, f"{case.name}: the agent raised {describe_exception(exc)}"
    return metrics, None


def worst_ratio(values: dict[str, float], limits: dict[str, float]) -> tuple[str, float]:
    """The case where ``values / limits`` is largest, and that ratio."""
    name = max(values, key=lambda key: values[key] / limits[key])
    return name, values[name] / limits[name]

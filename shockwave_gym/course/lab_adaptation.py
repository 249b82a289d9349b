"""Lab 1, dynamic adaptation: grade a remaining-time estimate ``estimate(view) -> array``.

The task: on every case, (1) **accuracy**: the mean relative error of the estimate of each
job when it arrives (before any of its epochs is observed; along a fixed FIFO schedule) at
most 1.05x that of the package's Bayesian predictor (plus 0.005); (2) **scheduling**: SRTF ordered by the estimate (played
through ``check_agent``) has an average JCT at most 1.01x that of SRTF on the package's
predictor. The placeholder, the reactive estimate (remaining epochs x current epoch
duration), fails both: it ignores the batch sizes still to come.

The lab's 3-job example (:func:`toy_trace`) is a case: there a reactive SRTF runs the wrong
job first and loses average JCT that no later decision wins back.
"""

from __future__ import annotations

import math

import numpy as np

from shockwave_gym.config import SimConfig
from shockwave_gym.course.agents_lab import (
    Case,
    bundled_case,
    generated_case,
    metrics_from,
    problem_text,
    worst_ratio,
)
from shockwave_gym.course.baselines import baseline_choices, baseline_metrics
from shockwave_gym.course.child import trace_data
from shockwave_gym.course.report import Criterion, GradeReport
from shockwave_gym.interface import predicted_remaining_s
from shockwave_gym.jobs import DATASET_SIZES, JobSpec
from shockwave_gym.simulator import Simulator
from shockwave_gym.traces import Trace
from shockwave_gym.view import ClusterView

#: The task criteria, as (name, points).
TASK = (("accuracy", 50), ("scheduling", 50))
PUBLIC_SEEDS = (1, 2)
ACCURACY_FACTOR, ACCURACY_SLACK = 1.05, 0.005
JCT_FACTOR = 1.01
#: Names whose use means the submission calls the package's predictor instead of its own.
FORBIDDEN_NAMES = ("predicted_remaining_s", "RemainingTimePredictor", "ftf_estimate", "make_agent",
                   "shockwave_gym.course")


def make_job(job_id: int, model: str, batch_size: int, epochs: int, mode: str,
             arrival_s: float = 0.0, gang: int = 1) -> JobSpec:
    """A job of ``epochs`` epochs (traces give iterations at the initial batch size)."""
    iterations = epochs * math.ceil(DATASET_SIZES[model] / batch_size)
    return JobSpec(job_id, model, batch_size, iterations, gang, mode, arrival_s)


def toy_trace() -> Trace:
    """A (LM, Accordion, 60 epochs), B (LM, static, 64 epochs) at 0 s, C (ResNet-18, static,
    20 epochs) at 1,500 s: on one GPU, reactive SRTF runs B before A."""
    return Trace.from_jobs("toy-3", [
        make_job(0, "LM", 5, 60, "accordion"),
        make_job(1, "LM", 10, 64, "static"),
        make_job(2, "ResNet-18", 32, 20, "static", arrival_s=1500.0),
    ])


def public_cases():
    return [Case("toy-3", toy_trace(), 1), bundled_case("teaching-12", 4)] + [generated_case(s) for s in PUBLIC_SEEDS]


def hidden_cases(seeds):
    return [generated_case(int(seed)) for seed in seeds]


def payload(cases) -> list[dict]:
    """What the child gets: each case's jobs and cluster size, and FIFO's choices on it (the
    fixed schedule along which estimates at arrival are taken)."""
    return [{**trace_data(case.trace, case.gpus), "fifo": baseline_choices("fifo", case)} for case in cases]


def arrival_errors(at_arrival, case: Case) -> tuple[float, float]:
    """(the estimate's, the package predictor's) mean relative error over jobs, each taken in
    the first round the job is active (``at_arrival[j]``, handed back by the child): the
    estimate a scheduler has when it first ranks the job, before any of its epochs is
    observed. The schedule is FIFO's, the same for every submission; the truth and the
    predictor's figures are computed here."""
    sim = Simulator(case.trace.jobs, SimConfig(gpus=case.gpus))
    view, truth = sim.view, ClusterView(sim, oracle=True)
    values = np.asarray(at_arrival, dtype=float)
    if values.shape != (view.num_jobs,) or not np.all(np.isfinite(values) & (values >= 0)):
        raise ValueError("the handed-back estimates are malformed")
    seen = np.zeros(view.num_jobs, dtype=bool)
    errors, reference = [], []
    for choice in baseline_choices("fifo", case):
        new = view.active_job_ids[~seen[view.active_job_ids]]
        if new.size:
            seen[new] = True
            true = truth.remaining_s[new]
            errors.append(np.abs(values[new] - true) / true)
            reference.append(np.abs(predicted_remaining_s(view)[new] - true) / true)
        sim.step(choice)
    return float(np.concatenate(errors).mean()), float(np.concatenate(reference).mean())


def _estimate_problem(answers, cases) -> tuple[dict, str | None]:
    if not isinstance(answers, dict) or not isinstance(answers.get("arrivals"), list):
        return {}, "the handed-back answers are malformed"
    if answers.get("problem") is not None:
        return {}, problem_text(answers["problem"], cases, sep=", ")
    if len(answers["arrivals"]) != len(cases):
        return {}, "the handed-back answers miss cases"
    try:
        return {case.name: arrival_errors(at, case) for case, at in zip(cases, answers["arrivals"], strict=True)}, None
    except (TypeError, ValueError) as exc:
        return {}, str(exc)


def grade(answers, cases, report: GradeReport) -> None:
    """Add lab 1's criteria to ``report`` for ``answers``: the estimates at arrival and SRTF's
    choices on the estimate (from :func:`shockwave_gym.course.child.adaptation_answers`)."""
    errors, problem = _estimate_problem(answers, cases)
    report.add(Criterion("returns estimates", 0, problem is None,
                         problem or "an array of finite, non-negative seconds per job, every round"))
    if problem is not None:
        return
    mine = {name: pair[0] for name, pair in errors.items()}
    limit = {name: ACCURACY_FACTOR * pair[1] + ACCURACY_SLACK for name, pair in errors.items()}
    case, ratio = worst_ratio(mine, limit)
    report.add(Criterion(
        "accuracy", 50, ratio <= 1.0,
        f"mean relative error at arrival must be <= {ACCURACY_FACTOR}x the Bayesian predictor's + {ACCURACY_SLACK} on every "
        f"case; tightest: {case} {mine[case]:.3f} vs limit {limit[case]:.3f}"))
    metrics, problem = metrics_from(answers.get("srtf"), cases)
    if problem is not None:
        report.add(Criterion("scheduling", 50, False, f"SRTF on the estimate: {problem}"))
        return
    jct = {name: m["avg_jct_s"] for name, m in metrics.items()}
    srtf = {case.name: JCT_FACTOR * baseline_metrics("srtf", case)["avg_jct_s"] for case in cases}
    case, ratio = worst_ratio(jct, srtf)
    report.add(Criterion(
        "scheduling", 50, ratio <= 1.0,
        f"SRTF on the estimate: average JCT must be <= {JCT_FACTOR}x Bayesian SRTF's on every case; "
        f"tightest: {case} {jct[case]:.0f} s vs limit {srtf[case]:.0f} s"))

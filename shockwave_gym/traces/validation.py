"""From raw rows to checked :class:`~shockwave_gym.jobs.JobSpec` objects.

A *raw row* maps each field key (see :mod:`shockwave_gym.traces.fields`) to the value the
file gave. :func:`build_job` checks every field, then, only when all fields are valid, the
check that needs the whole job: its profile can be derived (:func:`shockwave_gym.profile.job_profile`: epoch count within
:data:`~shockwave_gym.profile.MAX_EPOCHS`, the mode's schedule within the sizes it declares
reachable, a positive rate for every reachable size).

All problems are returned, not raised, so that ``validate-trace`` can list them all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shockwave_gym.errors import TraceError
from shockwave_gym.jobs import JobSpec
from shockwave_gym.profile import MAX_EPOCHS, ProfileError, job_profile
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces.elastic_fields import parse_gangs
from shockwave_gym.traces.fields import FIELDS, FieldProblem, parse_field
from shockwave_gym.traces.origin_fields import parse_origin

#: Most epochs a whole trace may hold (documented in docs/TRACES.md, "Limits"). The
#: simulator keeps a few numbers per epoch of every job, so this bounds its memory (about
#: 25 times the largest bundled trace, scale-900, at 803,238 epochs). One job's epochs are
#: bounded by :data:`~shockwave_gym.profile.MAX_EPOCHS`.
MAX_TRACE_EPOCHS = 10 * MAX_EPOCHS
#: Most jobs a trace may hold (docs/TRACES.md, "Limits"): over 20 times scale-900. The
#: loader counts a file's non-blank lines before it parses any, and refuses a file with
#: more at the line of job MAX_TRACE_JOBS + 1.
MAX_TRACE_JOBS = 20_000
#: Longest line a trace may have, in bytes (a job's line is under 300 bytes).
MAX_LINE_BYTES = 65_536


class EpochBudget:
    """Counts the epochs of a trace's jobs and reports the line that exceeds
    :data:`MAX_TRACE_EPOCHS`, before the simulator would allocate them."""

    def __init__(self, limit: int = MAX_TRACE_EPOCHS):
        self.limit, self.total = limit, 0
        self.exceeded = False

    def add(self, spec: JobSpec, row: RawRow, file: str) -> TraceError | None:
        self.total += min(spec.num_epochs, MAX_EPOCHS + 1)  # one job's excess is its own error
        self.exceeded = self.total > self.limit
        if self.total <= self.limit:
            return None
        return TraceError(
            file,
            f"the jobs up to this line need {self.total:,} epochs in all; a trace may hold at "
            f"most {self.limit:,} (docs/TRACES.md, Limits)",
            row.line, row.names["total_iterations"],
        )


@dataclass(frozen=True)
class RawRow:
    """One non-blank line of a trace file, before checking.

    ``values`` maps field keys to raw values; ``names`` maps field keys to the name the
    file's format uses for them (reported in errors).
    """

    line: int
    values: dict[str, Any]
    names: dict[str, str]
    from_text: bool


def job_problems(spec: JobSpec, throughputs: ThroughputTable) -> list[tuple[str, str]]:
    """Whole-job problems of ``spec`` as ``(field key, message)`` pairs; ``[]`` if none.

    The rules are :func:`~shockwave_gym.profile.job_profile`'s, the same the simulator
    applies, so a trace that validates also simulates.
    """
    try:
        job_profile(spec, throughputs)
    except ProfileError as exc:
        return [(exc.field, exc.message)]
    return []


def build_job(
    row: RawRow, file: str, throughputs: ThroughputTable, gpus: int | None,
    budget: EpochBudget | None = None,
) -> tuple[JobSpec | None, list[TraceError]]:
    """Check every field of ``row``; return the job (``job_id`` 0) and the problems found.

    The job is ``None`` whenever a problem was found. With ``budget``, the job's epochs
    count against the trace's :data:`MAX_TRACE_EPOCHS` before its profile is derived.
    """
    errors: list[TraceError] = []
    parsed: dict[str, Any] = {}
    for field in FIELDS:
        if field.key not in row.values:
            continue  # absent optional JSON key; required keys are checked by the reader
        try:
            parsed[field.key] = parse_field(
                field, row.values[field.key], from_text=row.from_text, gpus=gpus
            )
        except FieldProblem as exc:
            errors.append(TraceError(file, str(exc), row.line, row.names[field.key]))
    origin, origin_problems = parse_origin(row.values)
    errors.extend(TraceError(file, message, row.line, key) for key, message in origin_problems)
    gangs, gang_problems = parse_gangs(row.values, parsed.get("gang"))
    errors.extend(TraceError(file, message, row.line, key) for key, message in gang_problems)
    if errors:
        return None, errors

    model, batch_size = parsed["job_type"]
    optional = {key: parsed[key] for key in ("command", "working_dir", "step_arg") if key in parsed}
    if "needs_data_dir" in parsed:
        optional["needs_data_dir"] = parsed["needs_data_dir"]
    if "duration" in parsed:
        optional["duration_s"] = parsed["duration"]
    if origin is not None:
        optional["origin"] = origin
    if gangs:
        optional["gangs"] = gangs
    spec = JobSpec(
        job_id=0,
        model=model,
        initial_batch_size=batch_size,
        total_iterations=parsed["total_iterations"],
        gang=parsed["gang"],
        mode=parsed["mode"],
        arrival_s=parsed["arrival"],
        priority=parsed["priority"],
        slo_s=parsed["slo"],
        **optional,
    )
    over = None if budget is None else budget.add(spec, row, file)
    if over is not None:
        return None, [over]
    for key, message in job_problems(spec, throughputs):
        errors.append(TraceError(file, message, row.line, row.names[key]))
    return (None, errors) if errors else (spec, [])

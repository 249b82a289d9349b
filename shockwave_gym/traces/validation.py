"""From raw rows to checked :class:`~shockwave_gym.jobs.JobSpec` objects.

A *raw row* maps each field key (see :mod:`shockwave_gym.traces.fields`) to the value the
file gave. :func:`build_job` checks every field, then, only when all fields are valid, the
checks that need the whole job:

* the job's epoch count is small enough to simulate (:data:`MAX_EPOCHS`);
* every batch size its adaptation mode can reach, and every size in its schedule, has a
  positive isolated rate for (model, size, gang) in the throughput table.

All problems are returned, not raised, so that ``validate-trace`` can list them all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shockwave_gym.adaptation import get_mode
from shockwave_gym.errors import TraceError
from shockwave_gym.jobs import GANG_SIZES, JobSpec
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces.fields import FIELDS, FieldProblem, parse_field

#: Upper bound on a job's epochs. The simulator holds one entry per epoch; a trace that
#: asks for more almost certainly has a typo in ``total_iterations``.
MAX_EPOCHS = 1_000_000


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
    """Whole-job problems of ``spec`` as ``(field key, message)`` pairs; ``[]`` if none."""
    if spec.num_epochs > MAX_EPOCHS:
        return [(
            "total_iterations",
            f"{spec.total_iterations} iterations make {spec.num_epochs} epochs of "
            f"{spec.model}; at most {MAX_EPOCHS} are supported",
        )]
    mode = get_mode(spec.mode)
    try:
        reachable = mode.reachable(spec)
        schedule = mode.schedule(spec)
    except Exception as exc:  # a user-registered mode's own code failed on this job
        return [("mode", f"adaptation mode {spec.mode!r} failed on this job: {exc}")]
    if schedule.shape != (spec.num_epochs,):
        return [(
            "mode",
            f"adaptation mode {spec.mode!r} gave {schedule.size} batch sizes "
            f"for a job of {spec.num_epochs} epochs",
        )]
    sizes = sorted({int(b) for b in reachable} | set(schedule.tolist()))
    if not throughputs.batch_sizes(spec.model, spec.gang):
        gangs = [g for g in GANG_SIZES if throughputs.batch_sizes(spec.model, g)]
        if not gangs:  # the table does not know the model at all
            return [("job_type", f"{spec.model} has no positive throughput in {throughputs.source}")]
        return [(
            "gang",
            f"{spec.model} has no positive throughput on {spec.gang} GPU(s) in "
            f"{throughputs.source}; it runs on {', '.join(map(str, gangs))} GPU(s)",
        )]
    missing = [b for b in sizes if not throughputs.has(spec.model, b, spec.gang)]
    if missing:
        listed = ", ".join(map(str, missing))
        return [(
            "job_type",
            f"no positive throughput for {spec.model} at batch size {listed} on "
            f"{spec.gang} GPU(s) in {throughputs.source}; mode {spec.mode!r} can reach "
            f"batch sizes {', '.join(map(str, sizes))}",
        )]
    return []


def build_job(
    row: RawRow, file: str, throughputs: ThroughputTable, gpus: int | None
) -> tuple[JobSpec | None, list[TraceError]]:
    """Check every field of ``row``; return the job (``job_id`` 0) and the problems found.

    The job is ``None`` whenever a problem was found.
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
    if errors:
        return None, errors

    model, batch_size = parsed["job_type"]
    optional = {key: parsed[key] for key in ("command", "working_dir", "step_arg") if key in parsed}
    if "needs_data_dir" in parsed:
        optional["needs_data_dir"] = parsed["needs_data_dir"]
    if "duration" in parsed:
        optional["duration_s"] = parsed["duration"]
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
    for key, message in job_problems(spec, throughputs):
        errors.append(TraceError(file, message, row.line, row.names[key]))
    return (None, errors) if errors else (spec, [])

"""The authors' TSV trace format: twelve tab-separated fields per line, no header.

Columns, in order (docs/TRACES.md, "The two formats")::

    job_type  command  working_dir  step_arg  needs_data_dir  total_iterations
    gang  mode  priority  slo  duration  arrival

``job_type`` reads ``"<Model> (batch size <B>)"``; ``slo`` is -1 for none; ``duration`` is
kept for round trips but ignored by the simulation; ``arrival`` is in seconds. Errors name
fields by these column names.

Written files load in the authors' simulator, whose parser reads ``needs_data_dir``,
``total_iterations``, ``gang`` and ``duration`` with ``int()``: those columns are always
written as integers (``duration`` rounded to whole seconds, see :func:`duration_text`).
"""

from __future__ import annotations

import math

from shockwave_gym.errors import TraceError
from shockwave_gym.jobs import JobSpec
from shockwave_gym.traces.fields import FIELDS, NUM_FIELDS
from shockwave_gym.traces.validation import RawRow

_NAMES = {field.key: field.key for field in FIELDS}


def read_rows(lines: list[tuple[int, str]], file: str) -> tuple[list[RawRow], list[TraceError]]:
    """Split each ``(line number, text)`` into a raw row; bad column counts are errors."""
    rows: list[RawRow] = []
    errors: list[TraceError] = []
    for line_no, text in lines:
        parts = text.split("\t")
        if len(parts) == NUM_FIELDS:
            rows.append(RawRow(line_no, dict(zip(_NAMES, parts, strict=True)), _NAMES, True))
        elif len(parts) == 1 and " " in text:
            errors.append(TraceError(
                file,
                f"no tab characters: the {NUM_FIELDS} fields must be separated by tabs, "
                "not spaces",
                line_no,
            ))
        else:
            hint = ""
            if len(parts) < NUM_FIELDS and any("  " in part for part in parts):
                hint = " (are some fields separated by spaces instead of tabs?)"
            errors.append(TraceError(
                file,
                f"expected {NUM_FIELDS} tab-separated fields, found {len(parts)}{hint}",
                line_no,
            ))
    return rows, errors


def format_number(value: float) -> str:
    """Shortest text that reads back as exactly ``value`` (integers without ``.0``)."""
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


#: Largest duration the TSV writer rounds to whole seconds (longer texts would not read back).
MAX_TSV_DURATION_S = 1e15


def duration_text(job: JobSpec) -> str:
    """The ``duration`` column: whole seconds, as the authors' TSV has it (their parser calls
    ``int()`` on it, so ``1243.636`` would stop it). The simulation never reads it."""
    if not abs(job.duration_s) < MAX_TSV_DURATION_S:
        raise TraceError(
            "<writing TSV>",
            f"job {job.job_id}: duration {job.duration_s!r} s is too large to write in whole "
            f"seconds (at most {MAX_TSV_DURATION_S:g}); save as .jsonl instead",
        )
    return str(round(job.duration_s))


def _check_text(job: JobSpec, name: str, value: str) -> str:
    if any(ch in value for ch in "\t\r\n"):
        raise TraceError(
            "<writing TSV>",
            f"job {job.job_id}: {name} {value!r} contains a tab or line break, "
            "which TSV cannot hold; save as .jsonl instead",
        )
    return value


def format_line(job: JobSpec) -> str:
    """One TSV line (without the line break) for ``job``."""
    if job.origin is not None:
        raise TraceError(
            "<writing TSV>", f"job {job.job_id} carries origin keys (status, user, ...) that the TSV "
            "format cannot hold; write a .jsonl trace instead",
        )
    if job.gangs:
        raise TraceError(
            "<writing TSV>", f"job {job.job_id} is elastic (gangs {list(job.gangs)}), which the TSV "
            "format cannot hold; write a .jsonl trace instead",
        )
    fields = (
        job.job_type,
        _check_text(job, "command", job.command),
        _check_text(job, "working_dir", job.working_dir),
        _check_text(job, "step_arg", job.step_arg),
        str(job.needs_data_dir),
        str(job.total_iterations),
        str(job.gang),
        job.mode,
        format_number(job.priority),
        format_number(job.slo_s),
        duration_text(job),
        format_number(job.arrival_s),
    )
    return "\t".join(fields)

"""Microsoft Philly (ATC '19): ``cluster_job_log``, one JSON array of job objects.

Fields read from each object (the dataset README's names)::

    jobid           text                      the job's id
    user, vc        text                      its user and virtual cluster
    status          Pass / Killed / Failed    how it ended
    submitted_time  "YYYY-MM-DD HH:MM:SS"     its submission: the arrival
    attempts        list of {start_time, end_time, detail: [{ip, gpus: [...]}]}

Rules: the run time is the sum over attempts of ``end_time - start_time`` (every attempt
held its GPUs); an attempt without a start or end time (a logging gap, per the README)
adds nothing (flag ``untimed-attempt``). The GPU count is that of the last attempt (the one
that ended the job), the number of entries of ``gpus`` summed over its ``detail``. A job
without attempts, whose last attempt has no end time (still running when the log was
taken) or with no timed attempt never finished a run in the log (``not-run``).
Status: Pass is completed, Killed is killed, Failed is failed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from shockwave_gym.traces.importers.jsonarray import iter_array
from shockwave_gym.traces.importers.records import (
    FieldError,
    LoggedJob,
    RowProblem,
    parse_text,
    parse_time,
    run_between,
)

STATUSES = {"Pass": "completed", "Killed": "killed", "Failed": "failed"}
#: Most attempts or nodes read per job (a bound on one element's work).
MAX_ATTEMPTS = 10_000


def _attempt_gpus(attempt: dict, where: str) -> int:
    detail = attempt.get("detail")
    if not isinstance(detail, list):
        raise FieldError(f"{where}.detail", f"must be a list of nodes, got {type(detail).__name__}")
    gpus = 0
    for node_index, node in enumerate(detail[:MAX_ATTEMPTS]):
        node_gpus = node.get("gpus") if isinstance(node, dict) else None
        if not isinstance(node_gpus, list):
            raise FieldError(f"{where}.detail[{node_index}].gpus", "must be a list of GPU names")
        gpus += len(node_gpus)
    return gpus


def job_from_object(obj: object, line: int, file: str = "") -> LoggedJob:
    """One ``cluster_job_log`` element as a :class:`LoggedJob`; raises :class:`FieldError`."""
    if not isinstance(obj, dict):
        raise FieldError("job", f"must be a JSON object, got {type(obj).__name__}")
    source_id = parse_text("jobid", obj.get("jobid"))
    user = parse_text("user", obj.get("user"), required=False)
    vc = parse_text("vc", obj.get("vc"), required=False)
    raw_status = obj.get("status")
    if raw_status not in STATUSES:
        raise FieldError("status", f"must be one of {', '.join(STATUSES)}, got {raw_status!r}")
    submit_s = parse_time("submitted_time", obj.get("submitted_time"))
    attempts = obj.get("attempts")
    if not isinstance(attempts, list):
        raise FieldError("attempts", f"must be a list, got {type(attempts).__name__}")
    if not attempts:
        raise FieldError("attempts", "no attempt: the job never ran", "not-run")
    if len(attempts) > MAX_ATTEMPTS:
        raise FieldError("attempts", f"more than {MAX_ATTEMPTS} attempts")
    run_s, untimed = 0.0, False
    last = len(attempts) - 1
    for index, attempt in enumerate(attempts):
        where = f"attempts[{index}]"
        if not isinstance(attempt, dict):
            raise FieldError(where, f"must be an object, got {type(attempt).__name__}")
        if index == last and _missing(attempt.get("end_time")):
            raise FieldError(f"{where}.end_time", "the last attempt has no end: still running in the log", "not-run")
        if _missing(attempt.get("start_time")) or _missing(attempt.get("end_time")):
            untimed = True
            continue
        start = parse_time(f"{where}.start_time", attempt.get("start_time"))
        end = parse_time(f"{where}.end_time", attempt.get("end_time"))
        if start < submit_s:
            raise FieldError(f"{where}.start_time", "is before submitted_time")
        run_s += run_between(f"{where}.start_time", start, end)
    if run_s <= 0:
        raise FieldError("attempts", "no attempt has both a start and an end time", "not-run")
    gpus = _attempt_gpus(attempts[last], f"attempts[{last}]")
    flags = ("untimed-attempt",) if untimed else ()
    return LoggedJob(source_id, user, vc, STATUSES[raw_status], submit_s, run_s, float(gpus), line, flags, file=file)


def _missing(raw: object) -> bool:
    return raw is None or (isinstance(raw, str) and raw.strip() in ("", "None"))


def read(paths: list[str | Path]) -> Iterator[LoggedJob | RowProblem]:
    """Every job or problem of the ``cluster_job_log`` files, in file order."""
    for path in paths:
        file = str(path)
        for line, index, obj in iter_array(path):
            try:
                yield job_from_object(obj, line, file)
            except FieldError as exc:
                yield RowProblem(file, line, exc.field, f"{exc.message} (job {index})", exc.reason)

"""Slurm job tables, the shared reading of SenseTime Helios and Shanghai AI Lab Acme.

Both datasets publish one CSV per cluster with a header row
(:mod:`~shockwave_gym.traces.importers.helios`, :mod:`~shockwave_gym.traces.importers.acme`).
Columns read::

    job_id                       text      the job's id
    user                         text      its user
    vc                           text      its virtual cluster (Helios only)
    gpu_num                      integer   GPUs; 0 is a CPU-only job, filtered and counted
    state                        COMPLETED / CANCELLED / FAILED / TIMEOUT / NODE_FAIL
                                 (and Slurm's OUT_OF_MEMORY, PREEMPTED)
    submit_time                  time      the arrival
    start_time, end_time         time      the run; no start or end: the job never ran
    duration                     seconds   Helios: checked against end - start (1 s tolerance);
                                           Acme: a number >= 0 (the published Kalos example
                                           gives end_time - submit_time there)
    fail_time                    time      Acme Kalos only: when the failure happened

Times are seconds or ``YYYY-MM-DD HH:MM:SS`` (Acme adds a UTC offset). The run time is ``end_time - start_time``;
for a failed or node-failed job with a ``fail_time`` inside its run, ``fail_time -
start_time`` (flagged ``fail-time``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from shockwave_gym.traces.importers.csvrows import read_csv
from shockwave_gym.traces.importers.records import (
    FieldError,
    LoggedJob,
    RowProblem,
    parse_count,
    parse_text,
    parse_time,
    run_between,
)

STATUSES = {
    "COMPLETED": "completed", "CANCELLED": "cancelled", "FAILED": "failed", "TIMEOUT": "timeout",
    "NODE_FAIL": "node_fail", "OUT_OF_MEMORY": "failed", "PREEMPTED": "killed",
}
_REQUIRED = ("job_id", "user", "gpu_num", "state", "submit_time", "start_time", "end_time")
#: Slack between ``duration`` and ``end_time - start_time`` (the logs round to seconds).
DURATION_TOLERANCE_S = 1.0


def job_from_row(row: dict[str, str], line: int, check_duration: bool = True, file: str = "") -> LoggedJob:
    """One CSV row as a :class:`LoggedJob`; raises :class:`FieldError`."""
    source_id = parse_text("job_id", row["job_id"])
    user = parse_text("user", row["user"], required=False)
    vc = parse_text("vc", row.get("vc", ""), required=False)
    raw_state = row["state"].strip()
    if raw_state not in STATUSES:
        raise FieldError("state", f"must be one of {', '.join(STATUSES)}, got {raw_state!r}")
    gpus = parse_count("gpu_num", row["gpu_num"])
    if gpus == 0:
        raise FieldError("gpu_num", "a CPU-only job (0 GPUs)", "cpu-only")
    submit_s = parse_time("submit_time", row["submit_time"])
    start_s = parse_time("start_time", row["start_time"], missing="no start: the job never ran")
    end_s = parse_time("end_time", row["end_time"], missing="no end in the log")
    if start_s < submit_s:
        raise FieldError("start_time", "is before submit_time")
    run_s = run_between("start_time", start_s, end_s)
    if row.get("duration", "").strip():
        logged = parse_count("duration", row["duration"], fractional=True)
        if check_duration and abs(logged - run_s) > DURATION_TOLERANCE_S:
            raise FieldError("duration", f"{logged:g} s disagrees with end_time - start_time = {run_s:g} s")
    flags: tuple[str, ...] = ()
    status = STATUSES[raw_state]
    if status in ("failed", "node_fail") and row.get("fail_time", "").strip() not in ("", "None", "NaN"):
        fail_s = parse_time("fail_time", row["fail_time"])
        if not start_s < fail_s <= end_s:
            raise FieldError("fail_time", "is not inside the run (start_time, end_time]")
        run_s, flags = fail_s - start_s, ("fail-time",)
    return LoggedJob(source_id, user, vc, status, submit_s, run_s, gpus, line, flags, file=file)


def read_slurm(paths: list[str | Path], columns: tuple[str, ...], check_duration: bool) -> Iterator[LoggedJob | RowProblem]:
    """Every job or problem of Slurm job tables; ``columns`` is the order for a file
    without a header."""
    for path in paths:
        file = str(path)
        for item in read_csv(path, columns, _REQUIRED):
            if isinstance(item, RowProblem):
                yield item
                continue
            line, row = item
            try:
                yield job_from_row(row, line, check_duration, file)
            except FieldError as exc:
                yield RowProblem(file, line, exc.field, exc.message, exc.reason)

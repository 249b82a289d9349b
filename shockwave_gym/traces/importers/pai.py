"""Alibaba PAI GPU trace v2020 (NSDI '22): ``pai_job_table`` joined with ``pai_task_table``.

Both tables are CSV, headerless in the published data (a header row naming the columns is
also accepted); which file is which is told by the first row's width (6 and 10 columns)::

    pai_job_table   job_name, inst_id, user, status, start_time, end_time
    pai_task_table  job_name, task_name, inst_num, status, start_time, end_time,
                    plan_cpu, plan_mem, plan_gpu, gpu_type

Rules (docs/TRACES.md, "Real cluster traces"):

* GPUs: ``plan_gpu`` is in percent of one GPU per instance. Each instance of a task needs
  ``ceil(plan_gpu / 100)`` whole GPUs; a fractional request (e.g. 50) is rounded up to a whole
  GPU and the job flagged ``fractional``. The job's GPU count is the sum over its tasks of
  ``inst_num`` times that. A job with no GPU (parameter servers only) is ``cpu-only``.
* Tasks named in :data:`NON_TRAINING_TASKS` (``evaluator``, the role the dataset's README
  gives inference jobs) hold no training work: they add no GPUs, and a job made only of
  them is ``non-training``.
* Arrival: the job's ``start_time`` (its submission, per the README); run time: the latest
  task end minus the earliest task start, over the job's GPU tasks.
* Status: Terminated is completed, Failed is failed; Running and Waiting never finished in
  the trace (``not-run``).

The task table is read first and held per job (a few numbers per job); the job table is
then streamed.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

from shockwave_gym.errors import InputError
from shockwave_gym.traces.importers.csvrows import first_row, read_csv
from shockwave_gym.traces.importers.records import (
    FieldError,
    LoggedJob,
    RowProblem,
    parse_count,
    parse_text,
    parse_time,
    run_between,
)

JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
TASK_COLUMNS = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time",
                "plan_cpu", "plan_mem", "plan_gpu", "gpu_type")
STATUSES = {"Terminated": "completed", "Failed": "failed"}
UNFINISHED = ("Running", "Waiting")
NON_TRAINING_TASKS = frozenset({"evaluator"})


class _TaskSum:
    __slots__ = ("gpus", "logged", "fractional", "training", "start_s", "end_s", "problem")

    def __init__(self) -> None:
        self.gpus, self.logged, self.fractional, self.training = 0, 0.0, False, False
        self.start_s, self.end_s = math.inf, -math.inf
        self.problem: str | None = None


def _tables(paths: list[str | Path]) -> tuple[list[str | Path], list[str | Path]]:
    jobs, tasks = [], []
    for path in paths:
        width = len(first_row(path))
        if width == len(JOB_COLUMNS):
            jobs.append(path)
        elif width == len(TASK_COLUMNS):
            tasks.append(path)
        else:
            raise InputError(f"{path}: a PAI table has 6 (pai_job_table) or 10 (pai_task_table) columns, this one {width}")
    if not jobs or not tasks:
        raise InputError("--format pai needs both pai_job_table.csv and pai_task_table.csv")
    return jobs, tasks


def _add_task(sums: dict[str, _TaskSum], row: dict[str, str]) -> None:
    job = parse_text("job_name", row["job_name"])
    task_name = parse_text("task_name", row["task_name"])
    inst_num = parse_count("inst_num", row["inst_num"])
    text = row["plan_gpu"].strip()
    plan_gpu = 0.0 if text in ("", "NaN", "nan", "None") else parse_count("plan_gpu", text, fractional=True)
    entry = sums.setdefault(job, _TaskSum())
    if task_name in NON_TRAINING_TASKS:
        return
    entry.training = True
    whole = math.ceil(plan_gpu / 100.0)
    entry.gpus += int(inst_num) * whole
    entry.logged += inst_num * plan_gpu / 100.0
    entry.fractional |= plan_gpu > 0 and plan_gpu % 100 != 0
    if plan_gpu > 0:
        start = parse_time("start_time", row["start_time"], missing="the task never started")
        end = parse_time("end_time", row["end_time"], missing="the task has no end in the trace")
        entry.start_s, entry.end_s = min(entry.start_s, start), max(entry.end_s, end)


def read(paths: list[str | Path]) -> Iterator[LoggedJob | RowProblem]:
    """Every job or problem of the PAI job table(s), joined with the task table(s)."""
    job_files, task_files = _tables(paths)
    sums: dict[str, _TaskSum] = {}
    for path in task_files:
        for item in read_csv(path, TASK_COLUMNS, ("job_name", "task_name", "inst_num", "plan_gpu")):
            if isinstance(item, RowProblem):
                yield item
                continue
            line, row = item
            try:
                _add_task(sums, row)
            except FieldError as exc:
                yield RowProblem(str(path), line, exc.field, exc.message, exc.reason)
                name = row["job_name"].strip()
                if name:
                    sums.setdefault(name, _TaskSum()).problem = f"task row at {path}:{line} is unusable"
    for path in job_files:
        for item in read_csv(path, JOB_COLUMNS, ("job_name", "user", "status", "start_time")):
            if isinstance(item, RowProblem):
                yield item
                continue
            line, row = item
            try:
                yield _job(row, line, sums, str(path))
            except FieldError as exc:
                yield RowProblem(str(path), line, exc.field, exc.message, exc.reason)


def _job(row: dict[str, str], line: int, sums: dict[str, _TaskSum], file: str) -> LoggedJob:
    name = parse_text("job_name", row["job_name"])
    user = parse_text("user", row["user"], required=False)
    raw_status = row["status"].strip()
    if raw_status in UNFINISHED:
        raise FieldError("status", f"{raw_status}: the job did not finish within the trace", "not-run")
    if raw_status not in STATUSES:
        known = ", ".join([*STATUSES, *UNFINISHED])
        raise FieldError("status", f"must be one of {known}, got {raw_status!r}")
    submit_s = parse_time("start_time", row["start_time"])
    entry = sums.get(name)
    if entry is None:
        raise FieldError("job_name", "has no row in pai_task_table")
    if entry.problem is not None:
        raise FieldError("job_name", entry.problem)
    if not entry.training:
        raise FieldError("job_name", "only non-training tasks (" + ", ".join(sorted(NON_TRAINING_TASKS)) + ")", "non-training")
    if entry.gpus == 0:
        raise FieldError("plan_gpu", "no task asks for a GPU", "cpu-only")
    if entry.start_s < submit_s:
        raise FieldError("start_time", "a task starts before the job's start_time")
    run_s = run_between("start_time", entry.start_s, entry.end_s)
    flags = ("fractional",) if entry.fractional else ()
    return LoggedJob(name, user, "", STATUSES[raw_status], submit_s, run_s, entry.logged, line, flags, entry.gpus, file)

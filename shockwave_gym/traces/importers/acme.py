"""Shanghai AI Lab Acme (NSDI '24): ``trace_seren.csv`` and ``trace_kalos.csv``.

Read by :mod:`~shockwave_gym.traces.importers.slurm`. Kalos adds ``fail_time`` (used for
failed jobs) and memory and ``stop_time`` columns (not read). ``duration`` is checked to be
a number but not compared with ``end_time - start_time``: in the published Kalos example it
equals ``end_time - submit_time``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from shockwave_gym.traces.importers.records import LoggedJob, RowProblem
from shockwave_gym.traces.importers.slurm import read_slurm

COLUMNS = ("job_id", "user", "node_num", "gpu_num", "cpu_num", "type", "state",
           "submit_time", "start_time", "end_time", "duration", "queue", "gpu_time")


def read(paths: list[str | Path]) -> Iterator[LoggedJob | RowProblem]:
    """Every job or problem of Acme ``trace_*.csv`` files."""
    return read_slurm(paths, COLUMNS, check_duration=False)

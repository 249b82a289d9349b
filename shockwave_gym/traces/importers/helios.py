"""SenseTime Helios (SC '21): ``<cluster>/cluster_log.csv``, one Slurm job table per cluster.

Read by :mod:`~shockwave_gym.traces.importers.slurm`; ``duration`` must agree with
``end_time - start_time`` (the README defines it so).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from shockwave_gym.traces.importers.records import LoggedJob, RowProblem
from shockwave_gym.traces.importers.slurm import read_slurm

COLUMNS = ("job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state",
           "submit_time", "start_time", "end_time", "duration", "queue")


def read(paths: list[str | Path]) -> Iterator[LoggedJob | RowProblem]:
    """Every job or problem of Helios ``cluster_log.csv`` files."""
    return read_slurm(paths, COLUMNS, check_duration=True)

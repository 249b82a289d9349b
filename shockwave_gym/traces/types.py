"""The :class:`Trace` container: an ordered, immutable list of jobs."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from shockwave_gym.jobs import JobSpec


@dataclass(frozen=True)
class Trace:
    """A workload: jobs sorted by arrival, with ``jobs[i].job_id == i``.

    ``name`` is a short label (a bundled trace's name or the file stem); ``source`` says
    where the jobs came from (a file path or ``"generated(seed=..., ...)"``). Construction
    checks the ordering contract and raises ``ValueError`` if it is broken; use
    :meth:`from_jobs` to sort and renumber arbitrary jobs.
    """

    name: str
    jobs: tuple[JobSpec, ...]
    source: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.jobs, tuple):
            object.__setattr__(self, "jobs", tuple(self.jobs))
        for index, job in enumerate(self.jobs):
            if job.job_id != index:
                raise ValueError(f"trace {self.name!r}: job at index {index} has job_id {job.job_id}")
            if index and job.arrival_s < self.jobs[index - 1].arrival_s:
                raise ValueError(
                    f"trace {self.name!r}: job {index} arrives at {job.arrival_s} s, before "
                    f"job {index - 1} ({self.jobs[index - 1].arrival_s} s)"
                )

    @property
    def num_jobs(self) -> int:
        return len(self.jobs)

    @property
    def first_arrival_s(self) -> float:
        """When the first job arrives (jobs are in arrival order)."""
        return self.jobs[0].arrival_s

    @classmethod
    def from_jobs(cls, name: str, jobs: Iterable[JobSpec], source: str = "") -> Trace:
        """Sort ``jobs`` stably by arrival and renumber them ``0..n-1`` in that order."""
        ordered = sorted(jobs, key=lambda job: job.arrival_s)
        return cls(
            name,
            tuple(dataclasses.replace(job, job_id=i) for i, job in enumerate(ordered)),
            source,
        )

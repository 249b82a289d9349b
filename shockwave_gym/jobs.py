"""Job specifications: what one line of a trace describes.

A :class:`JobSpec` is immutable and holds only what the trace says; :class:`PublicJobSpec`
is the part of it a scheduler may see. Everything derived (batch-size schedule, epoch
durations, isolated time) is computed by :func:`shockwave_gym.profile.job_profile`.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass

#: Samples per epoch of each model's dataset (docs/SEMANTICS.md, "Adaptation modes").
DATASET_SIZES: dict[str, int] = {
    "ResNet-18": 50_000,
    "ResNet-50": 100_000,
    "Transformer": 10_000,
    "LM": 59_675,
    "Recommendation": 117_907,
}

#: Largest batch size a model grows to under dynamic adaptation.
MAX_BATCH_SIZE: dict[str, int] = {
    "ResNet-18": 256,
    "ResNet-50": 128,
    "Transformer": 128,
    "LM": 80,
    "Recommendation": 8192,
}

MODELS: tuple[str, ...] = tuple(DATASET_SIZES)
GANG_SIZES: tuple[int, ...] = (1, 2, 4, 8)

#: How an imported job ended in its cluster's log (docs/TRACES.md, "Real cluster traces").
#: ``completed`` ran to its nominal length; every other status ended early.
JOB_STATUSES: tuple[str, ...] = ("completed", "killed", "failed", "cancelled", "timeout", "node_fail")

_JOB_TYPE = re.compile(r"^(?P<model>.+?) \(batch size (?P<bs>[0-9]+)\)$")  # ASCII digits only


def parse_job_type(job_type: str) -> tuple[str, int]:
    """Split ``"ResNet-18 (batch size 32)"`` into ``("ResNet-18", 32)``.

    Raises ``ValueError`` with a readable message when the string does not have that form
    or names a model we have no dataset size for.
    """
    match = _JOB_TYPE.match(job_type.strip())
    if match is None:
        raise ValueError(
            f"job type {job_type!r} is not of the form '<Model> (batch size <B>)'"
        )
    model, batch_size = match.group("model"), int(match.group("bs"))
    if model not in DATASET_SIZES:
        raise ValueError(f"unknown model {model!r}; known models: {', '.join(MODELS)}")
    if batch_size < 1:
        raise ValueError(f"batch size must be >= 1, got {batch_size}")
    return model, batch_size


def format_job_type(model: str, batch_size: int) -> str:
    return f"{model} (batch size {batch_size})"


@dataclass(frozen=True, slots=True)
class JobOrigin:
    """Where an imported job came from and how its log says it ended (hidden facts).

    ``source_id`` is the dataset's job id (``#k`` appended for the k-th part of a split
    job), ``user`` and ``vc`` its user and virtual cluster (kept for multi-tenant work),
    ``status`` one of :data:`JOB_STATUSES`, ``logged_run_s`` the isolated seconds after
    which the log says the job ended (only for early endings; below the job's isolated
    time), ``logged_gpus`` the GPU count the log gives (fractional for Alibaba PAI).
    Schedulers never see these. Jobs run to their nominal length unless a run honours the
    logged endings (``--early-endings logged``, :mod:`shockwave_gym.regimes`).
    """

    source_id: str = ""
    user: str = ""
    vc: str = ""
    status: str = ""
    logged_run_s: float = -1.0
    logged_gpus: float = -1.0


def spec_row(job: JobSpec) -> tuple:
    """Every field of ``job`` as a tuple, the origin and the elastic counts only when present
    (so a trace without them has the digest of its twelve trace fields and job ids alone)."""
    row = dataclasses.astuple(job)
    gangs, row = row[-1], row[:-1]
    row = row if job.origin is not None else row[:-1]
    return (*row, gangs) if gangs else row


class _ModelFacts:
    """What both job specs derive from their model and initial batch size."""

    __slots__ = ()
    model: str
    initial_batch_size: int

    @property
    def job_type(self) -> str:
        return format_job_type(self.model, self.initial_batch_size)

    @property
    def dataset_size(self) -> int:
        return DATASET_SIZES[self.model]


@dataclass(frozen=True, slots=True)
class JobSpec(_ModelFacts):
    """One training job as a trace describes it. Times are in seconds.

    ``command``, ``working_dir``, ``step_arg`` and ``needs_data_dir`` say how to launch the
    real job; the simulation ignores them but keeps them so that traces round-trip.
    ``origin`` (imported traces only) holds the job's log facts, hidden from schedulers.
    """

    job_id: int
    model: str
    initial_batch_size: int
    total_iterations: int
    gang: int
    mode: str
    arrival_s: float
    priority: float = 1.0
    slo_s: float = -1.0
    command: str = ""
    working_dir: str = ""
    step_arg: str = ""
    needs_data_dir: int = 1
    duration_s: float = 0.0
    origin: JobOrigin | None = None
    gangs: tuple[int, ...] = ()

    @property
    def elastic(self) -> bool:
        """Whether the trace lets the scheduler choose this job's GPU count each round
        (docs/SEMANTICS.md, "Elastic jobs"); ``gangs`` then lists the counts it declares."""
        return bool(self.gangs)

    @property
    def iterations_per_epoch_at_initial(self) -> int:
        return math.ceil(self.dataset_size / self.initial_batch_size)

    @property
    def num_epochs(self) -> int:
        """Epochs = ceil(total iterations / ceil(dataset / initial batch size))."""
        return math.ceil(self.total_iterations / self.iterations_per_epoch_at_initial)

    def run_epochs(self, epoch_durations_s) -> int:
        """How many of its epochs the simulated job runs: all of them (a job of an
        information regime may end early, :class:`~shockwave_gym.regimes.RegimeJobSpec`)."""
        return len(epoch_durations_s)

    def public(self) -> PublicJobSpec:
        """The facts of this job a scheduler may know."""
        return PublicJobSpec(
            job_id=self.job_id, model=self.model, initial_batch_size=self.initial_batch_size,
            gang=self.gang, mode=self.mode, arrival_s=self.arrival_s, num_epochs=self.num_epochs,
            total_iterations=self.total_iterations, priority=self.priority, slo_s=self.slo_s,
        )


@dataclass(frozen=True, slots=True)
class PublicJobSpec(_ModelFacts):
    """What a scheduler may know of a job from its trace line: no generator duration and
    no launch details. The read-only view hands these out; the hidden schedule cannot be
    derived from them through :func:`~shockwave_gym.profile.job_profile`."""

    job_id: int
    model: str
    initial_batch_size: int
    gang: int
    mode: str
    arrival_s: float
    num_epochs: int
    total_iterations: int
    priority: float = 1.0
    slo_s: float = -1.0



@dataclass(frozen=True, slots=True)
class EstimatedJobSpec(_ModelFacts):
    """What a scheduler may know of a job in the ``estimate`` regime: the trace facts of
    :class:`PublicJobSpec` with the user's estimate of the length in place of the length
    (docs/SEMANTICS.md, "Information regimes"). ``estimated_epochs`` is
    ``ceil(estimated_iterations / iterations per epoch at the initial batch size)``."""

    job_id: int
    model: str
    initial_batch_size: int
    gang: int
    mode: str
    arrival_s: float
    estimated_epochs: int
    estimated_iterations: int
    priority: float = 1.0
    slo_s: float = -1.0


@dataclass(frozen=True, slots=True)
class UnknownLengthJobSpec(_ModelFacts):
    """What a scheduler may know of a job in the ``unknown`` regime: the trace facts of
    :class:`PublicJobSpec` without any length (only the regime's length prior is known)."""

    job_id: int
    model: str
    initial_batch_size: int
    gang: int
    mode: str
    arrival_s: float
    priority: float = 1.0
    slo_s: float = -1.0

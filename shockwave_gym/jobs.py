"""Job specifications: what one line of a trace describes.

A :class:`JobSpec` is immutable and holds only what the trace says. Everything derived
(epochs, batch-size schedule, epoch durations, isolated time) is computed by
:func:`job_profile` from the spec, its adaptation mode and a throughput table.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

#: Samples per epoch of each model's dataset (SPEC.md).
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

_JOB_TYPE = re.compile(r"^(?P<model>.+?) \(batch size (?P<bs>\d+)\)$")


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
class JobSpec:
    """One training job as a trace describes it. Times are in seconds.

    ``command``, ``working_dir``, ``step_arg`` and ``needs_data_dir`` say how to launch the
    real job; the simulation ignores them but keeps them so that traces round-trip.
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

    @property
    def job_type(self) -> str:
        return format_job_type(self.model, self.initial_batch_size)

    @property
    def dataset_size(self) -> int:
        return DATASET_SIZES[self.model]

    @property
    def iterations_per_epoch_at_initial(self) -> int:
        return math.ceil(self.dataset_size / self.initial_batch_size)

    @property
    def num_epochs(self) -> int:
        """Epochs = ceil(total iterations / ceil(dataset / initial batch size))."""
        return math.ceil(self.total_iterations / self.iterations_per_epoch_at_initial)


@dataclass(frozen=True, slots=True)
class JobProfile:
    """The full (hidden) batch-size schedule of one job and its consequences.

    ``batch_sizes[e]`` and ``epoch_durations_s[e]`` describe epoch ``e`` (0-based).
    """

    batch_sizes: np.ndarray
    epoch_durations_s: np.ndarray
    throughputs: np.ndarray  # iterations/s of the whole gang in each epoch

    @property
    def isolated_time_s(self) -> float:
        return float(self.epoch_durations_s.sum())


def job_profile(spec: JobSpec, throughputs, modes=None) -> JobProfile:
    """Batch size, throughput and duration of every epoch of ``spec``.

    Epoch duration at batch size b = (dataset / b) / throughput(model, b, gang): a
    fractional number of iterations, exactly as SPEC.md prescribes.
    Raises ``KeyError``/``ValueError`` (from the throughput table) when a reachable
    configuration has no positive rate; trace loading turns that into a ``TraceError``.
    """
    from shockwave_gym.adaptation import get_mode

    mode = get_mode(spec.mode) if modes is None else modes[spec.mode]
    sizes = np.asarray(mode.schedule(spec), dtype=np.int64)
    if sizes.shape != (spec.num_epochs,):
        raise ValueError(
            f"adaptation mode {spec.mode!r} returned {sizes.shape[0]} batch sizes "
            f"for a job of {spec.num_epochs} epochs"
        )
    distinct = np.unique(sizes)
    rate_of = {int(b): throughputs.rate(spec.model, int(b), spec.gang) for b in distinct}
    rates = np.array([rate_of[int(b)] for b in sizes], dtype=np.float64)
    durations = (spec.dataset_size / sizes) / rates
    return JobProfile(batch_sizes=sizes, epoch_durations_s=durations, throughputs=rates)

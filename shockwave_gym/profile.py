"""A job's profile: the one place that derives what a trace line implies.

From a :class:`~shockwave_gym.jobs.JobSpec`, its adaptation mode and a throughput table,
:func:`job_profile` derives

* the batch sizes the mode can *reach* (public: a scheduler may use them),
* the batch size, throughput and duration of every epoch (the hidden schedule; for a job
  that ends early, :class:`~shockwave_gym.regimes.RegimeJobSpec`, the epochs it runs), and

checks every consistency rule on the way. Trace validation (``validate-trace``), the trace
generator and the simulator all call it, so whatever the simulator would reject,
validation reports first, with the field to blame. Semantics: docs/SEMANTICS.md,
"Adaptation modes".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shockwave_gym.adaptation import get_mode
from shockwave_gym.errors import InputError
from shockwave_gym.jobs import GANG_SIZES, JobSpec

#: Upper bound on a job's epochs. The simulator holds one entry per epoch; a trace that
#: asks for more almost certainly has a typo in ``total_iterations``.
MAX_EPOCHS = 1_000_000


class ProfileError(InputError):
    """A job's profile cannot be derived; ``field`` names the trace field to blame."""

    def __init__(self, field: str, message: str):
        self.field, self.message = field, message
        super().__init__(message)

    def __reduce__(self):
        return (type(self), (self.field, self.message))


@dataclass(frozen=True, slots=True)
class JobProfile:
    """Everything a job's spec implies. ``batch_sizes[e]``, ``throughputs[e]`` and
    ``epoch_durations_s[e]`` describe epoch ``e`` (0-based) and are hidden from schedulers;
    ``reachable_sizes`` (ascending) is public."""

    reachable_sizes: tuple[int, ...]
    batch_sizes: np.ndarray
    throughputs: np.ndarray  # iterations/s of the whole gang in each epoch
    epoch_durations_s: np.ndarray

    @property
    def isolated_time_s(self) -> float:
        return float(self.epoch_durations_s.sum())


def job_profile(spec: JobSpec, throughputs, modes=None) -> JobProfile:
    """Derive and check the profile of ``spec``; raise :class:`ProfileError` on the first
    problem.

    Epoch duration at batch size b = (dataset / b) / throughput(model, b, gang): a
    fractional number of iterations. Checked: the epoch count is at most
    :data:`MAX_EPOCHS`; the mode's code runs and gives one size per epoch; every scheduled
    size is one the mode declares reachable; every reachable size has a positive rate.
    ``modes`` maps mode names to modes (default: the registry).
    """
    if not isinstance(spec, JobSpec):
        raise TypeError(
            f"job_profile needs the trace's JobSpec, got {type(spec).__name__}: a scheduler's "
            "view hands out public job facts only, from which the hidden schedule is not derived"
        )
    if spec.num_epochs > MAX_EPOCHS:
        raise ProfileError(
            "total_iterations",
            f"{spec.total_iterations} iterations make {spec.num_epochs} epochs of "
            f"{spec.model}; at most {MAX_EPOCHS} are supported",
        )
    mode = get_mode(spec.mode) if modes is None else modes[spec.mode]
    try:
        reachable = mode.reachable(spec)
        sizes = np.asarray(mode.schedule(spec), dtype=np.int64)
    except Exception as exc:  # a user-registered mode's own code failed on this job
        raise ProfileError("mode", f"adaptation mode {spec.mode!r} failed on this job: {exc}") from exc
    if sizes.shape != (spec.num_epochs,):
        raise ProfileError(
            "mode",
            f"adaptation mode {spec.mode!r} gave {sizes.size} batch sizes "
            f"for a job of {spec.num_epochs} epochs",
        )
    unique_sizes, size_index = np.unique(sizes, return_inverse=True)
    distinct = unique_sizes.tolist()
    outside = sorted(set(distinct) - set(reachable))
    if outside:
        raise ProfileError(
            "mode",
            f"adaptation mode {spec.mode!r} schedules batch size(s) "
            f"{', '.join(map(str, outside))}, outside the sizes it declares reachable "
            f"({', '.join(map(str, reachable))})",
        )
    _check_rates(spec, reachable, throughputs)
    # one lookup per distinct size, spread to the epochs by index (the same floats)
    rates = np.array([throughputs.rate(spec.model, b, spec.gang) for b in distinct], dtype=np.float64)[size_index]
    durations = (spec.dataset_size / sizes) / rates
    run = spec.run_epochs(durations)
    if run < durations.size:  # a hidden early end (an information regime's): its first epochs
        sizes, rates, durations = sizes[:run], rates[:run], durations[:run]
    return JobProfile(
        reachable_sizes=tuple(reachable),
        batch_sizes=sizes,
        throughputs=rates,
        epoch_durations_s=durations,
    )


def _check_rates(spec: JobSpec, reachable: tuple[int, ...], throughputs) -> None:
    """Every reachable size needs a positive rate for (model, size, gang)."""
    if not throughputs.batch_sizes(spec.model, spec.gang):
        gangs = [g for g in GANG_SIZES if throughputs.batch_sizes(spec.model, g)]
        if not gangs:  # the table does not know the model at all
            raise ProfileError("job_type", f"{spec.model} has no positive throughput in {throughputs.source}")
        raise ProfileError(
            "gang",
            f"{spec.model} has no positive throughput on {spec.gang} GPU(s) in "
            f"{throughputs.source}; it runs on {', '.join(map(str, gangs))} GPU(s)",
        )
    missing = [b for b in reachable if not throughputs.has(spec.model, b, spec.gang)]
    if missing:
        raise ProfileError(
            "job_type",
            f"no positive throughput for {spec.model} at batch size "
            f"{', '.join(map(str, missing))} on {spec.gang} GPU(s) in {throughputs.source}; "
            f"mode {spec.mode!r} can reach batch sizes {', '.join(map(str, reachable))}",
        )

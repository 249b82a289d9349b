"""Information regimes: what a scheduler may know of a job's length, and whether jobs end
early (docs/SEMANTICS.md, "Information regimes").

A :class:`Regime` is a run option (``shockwave-gym run/compare --regime ... --early-endings
...``, :func:`~shockwave_gym.runner.run_episode`'s ``regime``). :func:`apply_regime` turns a
trace's jobs into the jobs the simulator runs: each a
:class:`RegimeJobSpec`, which carries the hidden true end and hands the view the public spec
of its regime. The default regime (``exact``, no early endings) returns the jobs unchanged,
so every result of the paper's setting stays bit-identical.

* ``exact``: the trace's length (:class:`~shockwave_gym.jobs.PublicJobSpec`), the paper's setting.
* ``estimate``: a user's estimate of the length instead
  (:class:`~shockwave_gym.jobs.EstimatedJobSpec`), drawn by :class:`EstimateModel`.
* ``unknown``: no length (:class:`~shockwave_gym.jobs.UnknownLengthJobSpec`); only the
  regime's :class:`DurationPrior` is known.

Early endings (any regime): ``early_endings`` is a share ``p`` in [0, 1) or ``"logged"``.
With a share, each job independently ends early with probability ``p``, after
``max(1, ceil(U * N))`` of its ``N`` nominal epochs (``U`` uniform on [0, 1)); with
``"logged"``, an imported job whose log says it ended early (``status`` other than
completed) ends after the epoch in which its ``logged_run_s`` falls. Either way the job runs
its nominal batch-size schedule up to that epoch and completes there; schedulers learn it
only when it completes.

Every random draw is seeded per job: ``SeedSequence([seed, job_id, stream])``, one stream per
kind of draw, so a job's draws do not depend on the other jobs, and the estimates do not
change with the early-ending share.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

import numpy as np

from shockwave_gym.errors import InputError
from shockwave_gym.jobs import EstimatedJobSpec, JobSpec, PublicJobSpec, UnknownLengthJobSpec
from shockwave_gym.seeds import check_seed

#: What a scheduler may know of a job's length (``--regime``).
KNOWLEDGE_REGIMES: tuple[str, ...] = ("exact", "estimate", "unknown")
#: ``early_endings`` value that honours the trace's logged early endings.
LOGGED = "logged"

# --- the estimate error model, fixed in one place ---------------------------------------------
#: accuracy = true length / estimate ~ Uniform(ESTIMATE_ACCURACY_LOW, ESTIMATE_ACCURACY_HIGH].
#: Mu'alem & Feitelson (IEEE TPDS 12(6), 2001) measured the accuracy of user runtime
#: estimates (actual run time / requested time) on the CTC and KTH IBM SP2 logs and found it
#: spread roughly uniformly over (0, 1]: users overestimate, by any factor. We cut the range
#: at 0.1 (no estimate above ten times the length): in a log, accuracies near 0 belong to jobs
#: that ended soon after starting, which this project models apart, as early endings.
ESTIMATE_ACCURACY_LOW = 0.1
ESTIMATE_ACCURACY_HIGH = 1.0

_STREAM_ESTIMATE, _STREAM_ENDING = 1, 2


@dataclass(frozen=True)
class EstimateModel:
    """The user-estimate error model: ``estimated_iterations = ceil(total_iterations / A)``,
    ``A ~ Uniform(low, high]`` per job. The default is the published measurement above;
    ``high > 1`` allows underestimates (a symmetric band around 1 gives multiplicative noise
    like Shockwave's RQ3 study, there applied to the predictions, here to the user's figure)."""

    low: float = ESTIMATE_ACCURACY_LOW
    high: float = ESTIMATE_ACCURACY_HIGH

    def __post_init__(self):
        for name in ("low", "high"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise InputError(f"estimate model {name} must be a finite number, got {value!r}")
        if not 0 < self.low <= self.high:
            raise InputError(f"estimate model needs 0 < low <= high, got low={self.low!r}, high={self.high!r}")


@dataclass(frozen=True)
class DurationPrior:
    """The public prior of a job's length: durations in seconds at the job's initial batch
    size alone on its gang (the generator's ``duration_s``) with their probabilities. A job's
    prior in epochs follows from its public facts: ``ceil(round(d * rate) / iterations per
    epoch)`` (:mod:`shockwave_gym.interface.lengths`)."""

    durations_s: tuple[float, ...]
    probs: tuple[float, ...]
    source: str = ""

    def __post_init__(self):
        d, p = np.asarray(self.durations_s, dtype=float), np.asarray(self.probs, dtype=float)
        if d.ndim != 1 or d.size == 0 or d.shape != p.shape:
            raise InputError("a duration prior needs as many probabilities as durations (at least one)")
        if not (np.all(np.isfinite(d)) and np.all(d > 0) and np.all(np.isfinite(p)) and np.all(p >= 0)):
            raise InputError("a duration prior needs durations > 0 and probabilities >= 0")
        if abs(float(p.sum()) - 1.0) > 1e-9:
            raise InputError(f"a duration prior's probabilities must sum to 1, got {float(p.sum()):g}")

    @classmethod
    def from_generator(cls, config=None) -> DurationPrior:
        """The generator's duration distribution (its default config when ``config`` is None):
        the suites' traces are drawn from it, and it is the documented default for any trace."""
        from shockwave_gym.traces.generator import GeneratorConfig, duration_distribution

        config = GeneratorConfig(num_jobs=1, seed=0) if config is None else config
        durations, probs = duration_distribution(config)
        source = f"generator durations {config.min_duration_h:g}-{config.max_duration_h:g} h"
        return cls(tuple(durations.tolist()), tuple(probs.tolist()), source)


@dataclass(frozen=True)
class LengthModel:
    """The public facts of a run's regime (what :attr:`ClusterView.length_model` gives): the
    knowledge regime, the share of jobs that end early (the option's share, or the trace's
    share of logged early endings), the estimate model and the duration prior. No seed: the
    per-job draws stay hidden."""

    knowledge: str
    early_share: float
    estimate: EstimateModel
    prior: DurationPrior


@dataclass(frozen=True)
class Regime:
    """A run's information regime (module docstring). ``prior`` None: the generator's."""

    knowledge: str = "exact"
    early_endings: float | str = 0.0
    seed: int = 0
    estimate: EstimateModel = field(default_factory=EstimateModel)
    prior: DurationPrior | None = None

    def __post_init__(self):
        if self.knowledge not in KNOWLEDGE_REGIMES:
            raise InputError(f"--regime must be one of {', '.join(KNOWLEDGE_REGIMES)}, got {self.knowledge!r}")
        object.__setattr__(self, "early_endings", parse_early_endings(self.early_endings))
        check_seed(self.seed, "regime seed")

    @property
    def is_default(self) -> bool:
        """The paper's setting: exact lengths, every job runs to its nominal length."""
        return self.knowledge == "exact" and self.early_endings == 0.0

    def describe(self) -> str:
        return f"{self.knowledge}, early endings {self.early_endings}, seed {self.seed}"


def parse_early_endings(value) -> float | str:
    """``value`` as an early-endings option: ``"logged"`` or a share in [0, 1)."""
    if value == LOGGED:
        return LOGGED
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise InputError(f"--early-endings must be a share in [0, 1) or 'logged', got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not (0.0 <= value < 1.0):
        raise InputError(f"--early-endings must be a share in [0, 1) or 'logged', got {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class RegimeJobSpec(JobSpec):
    """A trace job as one regime runs it: the trace's fields, plus hidden facts.

    ``estimated_iterations`` (``estimate`` regime) is the user's figure the scheduler sees;
    ``end_epochs`` (> 0) or ``end_s`` (> 0) the hidden true end (the epochs run, or the
    isolated seconds of a logged ending); ``length_model`` the regime's public facts.
    """

    knowledge: str = "exact"
    estimated_iterations: int = 0
    end_epochs: int = 0
    end_s: float = -1.0
    length_model: LengthModel | None = None

    def run_epochs(self, epoch_durations_s) -> int:
        """The epochs the job runs before its true end (all of them without an early end)."""
        count = len(epoch_durations_s)
        if self.end_epochs > 0:
            return min(self.end_epochs, count)
        if self.end_s > 0:
            ends = np.cumsum(np.asarray(epoch_durations_s, dtype=np.float64))
            return min(int(np.searchsorted(ends, self.end_s, side="left")) + 1, count)
        return count

    def public(self) -> PublicJobSpec | EstimatedJobSpec | UnknownLengthJobSpec:
        """The facts of this job a scheduler may know in its regime."""
        common = dict(job_id=self.job_id, model=self.model, initial_batch_size=self.initial_batch_size,
                      gang=self.gang, mode=self.mode, arrival_s=self.arrival_s,
                      priority=self.priority, slo_s=self.slo_s)
        if self.knowledge == "estimate":
            epochs = math.ceil(self.estimated_iterations / self.iterations_per_epoch_at_initial)
            return EstimatedJobSpec(**common, estimated_epochs=epochs, estimated_iterations=self.estimated_iterations)
        if self.knowledge == "unknown":
            return UnknownLengthJobSpec(**common)
        return JobSpec.public(self)


def _rng(seed: int, job_id: int, stream: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([seed, job_id, stream]))


def estimated_iterations(job: JobSpec, regime: Regime) -> int:
    """The user's estimate of ``job``'s iterations under ``regime``'s seed and model."""
    accuracy = regime.estimate.low + (regime.estimate.high - regime.estimate.low) * (
        1.0 - _rng(regime.seed, job.job_id, _STREAM_ESTIMATE).random())
    return max(1, math.ceil(job.total_iterations / accuracy))


def drawn_end_epochs(job: JobSpec, share: float, seed: int) -> int:
    """The epochs after which ``job`` ends early under a share ``share``; 0: it does not."""
    rng = _rng(seed, job.job_id, _STREAM_ENDING)
    ends_early, position = rng.random() < share, rng.random()
    end = max(1, math.ceil(position * job.num_epochs))
    return end if ends_early and end < job.num_epochs else 0


def logged_end_s(job: JobSpec) -> float:
    """The isolated seconds after which ``job``'s log says it ended early; -1 if it did not."""
    origin = job.origin
    if origin is None or origin.status in ("", "completed"):
        return -1.0
    return float(origin.logged_run_s)


def early_share(jobs: Sequence[JobSpec], regime: Regime) -> float:
    """The public share of early endings: the option's, or the trace's logged share."""
    if regime.early_endings != LOGGED:
        return float(regime.early_endings)
    return sum(logged_end_s(job) > 0 for job in jobs) / max(len(jobs), 1)


def length_model(jobs: Sequence[JobSpec], regime: Regime) -> LengthModel:
    prior = regime.prior if regime.prior is not None else DurationPrior.from_generator()
    return LengthModel(regime.knowledge, early_share(jobs, regime), regime.estimate, prior)


def apply_regime(jobs: Sequence[JobSpec], regime: Regime | None) -> tuple[JobSpec, ...]:
    """The jobs the simulator runs under ``regime`` (unchanged for the default regime)."""
    if regime is None or regime.is_default:
        return tuple(jobs)
    model = length_model(jobs, regime)
    base = [f.name for f in fields(JobSpec)]
    out = []
    for job in jobs:
        hidden = dict(knowledge=regime.knowledge, length_model=model)
        if regime.knowledge == "estimate":
            hidden["estimated_iterations"] = estimated_iterations(job, regime)
        if regime.early_endings == LOGGED:
            hidden["end_s"] = logged_end_s(job)
        elif regime.early_endings > 0:
            hidden["end_epochs"] = drawn_end_epochs(job, regime.early_endings, regime.seed)
        out.append(RegimeJobSpec(**{name: getattr(job, name) for name in base}, **hidden))
    return tuple(out)


@functools.cache
def default_length_model() -> LengthModel:
    """The default regime's public facts (exact lengths, no early endings)."""
    return LengthModel("exact", 0.0, EstimateModel(), DurationPrior.from_generator())


def length_model_of(specs: Sequence[JobSpec]) -> LengthModel | None:
    """The public regime facts the simulator's jobs carry; None for the default regime."""
    first = specs[0] if specs else None
    return first.length_model if isinstance(first, RegimeJobSpec) else None

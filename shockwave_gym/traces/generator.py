"""Synthetic traces following the authors' methodology (docs/TRACES.md, "The generator").

Each job is drawn independently, in this order, from one ``np.random.default_rng(seed)``
(after all inter-arrival times have been drawn):

1. **template**: uniform over the (model, initial batch size) templates. A model's
   templates are the doubling sizes in :data:`TEMPLATE_BATCH_RANGES` (ResNet-18 16-256,
   ResNet-50 16-128, Transformer 16-128, LM 5-80, Recommendation 512-8192) that the
   throughput table lists with a positive rate. With the built-in table that is 23
   templates, so a model's share is proportional to its number of sizes.
2. **gang**: from ``gang_mix``; Recommendation is single-GPU only, so its gang is 1.
3. **mode**: from ``mode_mix``.
4. **duration**: ``num_durations`` candidates evenly spaced from ``min_duration_h`` to
   ``max_duration_h``; a bucket is picked with ``bucket_probs`` over the first 20%, next
   30%, next 40% and last 10% of the candidates, then a candidate uniformly inside it.
   An accordion job shorter than ``accordion_min_s`` becomes static.
5. ``total_iterations = round(duration_s * rate(model, batch size, gang))``, at least 1.

Arrivals: the first at 0 s, then exponential inter-arrival times with mean
``3600 / arrival_rate_per_hour`` s.

**Heterogeneous clusters** (``cluster``, e.g. ``"v100=12,p100=12,k80=12"``;
docs/HETEROGENEOUS.md, "Traces"). Durations and iterations stay in V100 terms (the reference
table), and a drawn job is kept only if, besides the V100 checks, it can run on at least one
type of the cluster: every batch size its mode can reach has a positive rate there at its
gang, and the type has at least ``gang`` GPUs. The load is set relative to capacity with
``arrival_rate_per_gpu_hour``: arrivals per hour per *V100-equivalent GPU*, where the
cluster's V100-equivalent size is ``E = sum_t G_t s_t`` and ``s_t`` the geometric mean, over
the generator's templates on one GPU with a positive rate on both, of
``rate_t / rate_v100`` (:func:`v100_equivalent_gpus`; with the built-in tables s = 1, 1.068,
0.300 for v100, p100, k80). The paper's canonical load, 90 jobs/h on 32 V100s, is
``arrival_rate_per_gpu_hour = 2.8125``. Arrivals and durations are rounded to milliseconds so
files stay readable.

**Feasibility.** A drawn job is kept only if every batch size its mode can reach has a
positive rate at its gang (the loader's rule). Otherwise the whole job (steps 1-5) is drawn
again, at most :data:`MAX_DRAWS_PER_JOB` times. With the built-in V100 table every draw is
feasible, so the mixes hold exactly in expectation; with a sparser custom table the mixes
become conditional on feasibility.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

import numpy as np

from shockwave_gym.adaptation import registered_modes
from shockwave_gym.errors import InputError
from shockwave_gym.jobs import GANG_SIZES, JobSpec
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces.fields import MAX_ARRIVAL_S
from shockwave_gym.traces.types import Trace
from shockwave_gym.traces.validation import MAX_TRACE_JOBS, job_problems

#: Smallest and largest initial batch size of each model's templates (doubling steps).
TEMPLATE_BATCH_RANGES: dict[str, tuple[int, int]] = {
    "ResNet-18": (16, 256),
    "ResNet-50": (16, 128),
    "Transformer": (16, 128),
    "LM": (5, 80),
    "Recommendation": (512, 8192),
}
#: Models whose jobs always use one GPU.
SINGLE_GPU_MODELS: frozenset[str] = frozenset({"Recommendation"})
#: Where the four duration buckets end, as shares of the candidate list.
BUCKET_ENDS: tuple[float, ...] = (0.2, 0.5, 0.9, 1.0)
MAX_DRAWS_PER_JOB = 1000

#: Generator bounds (docs/TRACES.md, "Limits"): durations from one second to 10,000 hours
#: (a longer job would exceed the per-job epoch limit), arrival rates that keep every
#: arrival far within the loader's arrival limit, and at most a million jobs.
MIN_DURATION_H = 1 / 3600
MAX_DURATION_H = 10_000.0
MIN_ARRIVAL_RATE_PER_HOUR = 1e-3
MAX_ARRIVAL_RATE_PER_HOUR = 1e6
MAX_GENERATED_JOBS = MAX_TRACE_JOBS  # what the loader reads back


def _default_gang_mix() -> dict[int, float]:
    return {1: 0.6, 2: 0.3, 4: 0.09, 8: 0.01}


def _default_mode_mix() -> dict[str, float]:
    return {"static": 0.0, "accordion": 0.5, "gns": 0.5}


def _check_probabilities(label: str, probs: Mapping) -> dict:
    for key, p in probs.items():
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p) or p < 0:
            raise InputError(f"{label}: probability of {key!r} must be a finite number >= 0, got {p!r}")
    total = sum(probs.values())
    if not probs or abs(total - 1.0) > 1e-6:
        raise InputError(f"{label}: probabilities must sum to 1, got {total:g}")
    return {key: float(p) for key, p in probs.items()}


def _normalised(probs) -> np.ndarray:
    # Mixes sum to 1 within 1e-6 (checked); renormalise so rng.choice's tighter check holds.
    weights = np.asarray(list(probs), dtype=np.float64)
    return weights / weights.sum()


def _check_share(share) -> None:
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
        raise InputError(f"elastic_share must be a number from 0 to 1, got {share!r}")


@dataclass(frozen=True)
class GeneratorConfig:
    """Parameters of :func:`generate_trace`; checked on construction (``InputError``).

    Mixes map a gang size (1, 2, 4, 8) or a registered mode name to its probability; each
    mix must sum to 1. ``bucket_probs`` weighs the small / medium / large / extra-large
    duration buckets.
    """

    num_jobs: int
    seed: int
    arrival_rate_per_hour: float = 90.0
    gang_mix: Mapping[int, float] = field(default_factory=_default_gang_mix)
    mode_mix: Mapping[str, float] = field(default_factory=_default_mode_mix)
    min_duration_h: float = 0.2
    max_duration_h: float = 5.0
    num_durations: int = 100
    bucket_probs: tuple[float, float, float, float] = (0.72, 0.20, 0.05, 0.03)
    accordion_min_s: float = 1000.0
    name: str | None = None
    #: heterogeneous cluster the jobs must run on (``--cluster`` text), or None
    cluster: str | None = None
    #: arrivals per hour per V100-equivalent GPU of ``cluster``; overrides arrival_rate_per_hour
    arrival_rate_per_gpu_hour: float | None = None
    #: share of jobs declared elastic (``gangs`` 1, 2, 4, 8; docs/SEMANTICS.md, "Elastic jobs"),
    #: drawn after the jobs from a stream of their own, so the jobs are those of share 0
    elastic_share: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        for label, minimum in (("num_jobs", 1), ("seed", 0), ("num_durations", 1)):
            value = getattr(self, label)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
                raise InputError(f"{label} must be an integer >= {minimum}, got {value!r}")
            object.__setattr__(self, label, int(value))  # numpy ints -> plain ints
        if self.num_jobs > MAX_GENERATED_JOBS:
            raise InputError(f"num_jobs must be at most {MAX_GENERATED_JOBS:,}, got {self.num_jobs:,}")
        rate = self.arrival_rate_per_hour
        if (isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate)
                or not MIN_ARRIVAL_RATE_PER_HOUR <= rate <= MAX_ARRIVAL_RATE_PER_HOUR):
            raise InputError(
                f"arrival_rate_per_hour must be a number from {MIN_ARRIVAL_RATE_PER_HOUR:g} to "
                f"{MAX_ARRIVAL_RATE_PER_HOUR:g}, got {rate!r}"
            )
        lo, hi = self.min_duration_h, self.max_duration_h
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (lo, hi))
        if not (numbers and MIN_DURATION_H <= lo <= hi <= MAX_DURATION_H):
            raise InputError(
                f"durations need {MIN_DURATION_H:g} <= min_duration_h <= max_duration_h <= "
                f"{MAX_DURATION_H:g} hours, got {lo!r} and {hi!r}"
            )
        if not math.isfinite(self.accordion_min_s) or self.accordion_min_s < 0:
            raise InputError(f"accordion_min_s must be finite and >= 0, got {self.accordion_min_s!r}")
        bad_gangs = [g for g in self.gang_mix if g not in GANG_SIZES]
        if bad_gangs:
            raise InputError(f"gang_mix: gang sizes must be among {GANG_SIZES}, got {bad_gangs}")
        bad_modes = [m for m in self.mode_mix if m not in registered_modes()]
        if bad_modes:
            raise InputError(
                f"mode_mix: unknown modes {bad_modes}; registered: {', '.join(registered_modes())}"
            )
        gang_mix = _check_probabilities("gang_mix", self.gang_mix)
        mode_mix = _check_probabilities("mode_mix", self.mode_mix)
        if len(self.bucket_probs) != len(BUCKET_ENDS):
            raise InputError(f"bucket_probs needs {len(BUCKET_ENDS)} entries, got {self.bucket_probs!r}")
        buckets = _check_probabilities("bucket_probs", dict(enumerate(self.bucket_probs)))
        for index, (lo, hi) in enumerate(bucket_bounds(self.num_durations)):
            if hi <= lo and buckets[index] > 0:
                raise InputError(
                    f"num_durations={self.num_durations} leaves duration bucket {index} "
                    "empty; use more candidates or give it probability 0"
                )
        if self.cluster is not None:
            from shockwave_gym.cluster import ClusterSpec

            spec = ClusterSpec.parse(self.cluster, where="cluster") if isinstance(self.cluster, str) else self.cluster
            if not isinstance(spec, ClusterSpec):
                raise InputError(f"cluster must be a spec such as 'v100=12,p100=12,k80=12', got {self.cluster!r}")
            object.__setattr__(self, "cluster", str(spec))
        _check_share(self.elastic_share)
        per_gpu = self.arrival_rate_per_gpu_hour
        if per_gpu is not None:
            if self.cluster is None:
                raise InputError("arrival_rate_per_gpu_hour needs a cluster (its V100-equivalent size sets the rate)")
            if isinstance(per_gpu, bool) or not isinstance(per_gpu, (int, float)) or not math.isfinite(per_gpu) or per_gpu <= 0:
                raise InputError(f"arrival_rate_per_gpu_hour must be a finite number > 0, got {per_gpu!r}")
        # Canonical order, so that equal mixes written in another order give the same trace.
        object.__setattr__(self, "gang_mix", {int(g): p for g, p in sorted(gang_mix.items())})
        object.__setattr__(self, "mode_mix", dict(sorted(mode_mix.items())))
        object.__setattr__(self, "bucket_probs", tuple(buckets[i] for i in range(len(buckets))))

    def describe(self) -> str:
        """``"generated(seed=..., ...)"``: every parameter, for a trace's ``source``."""
        optional = ("cluster", "arrival_rate_per_gpu_hour", "elastic_share")  # listed only when set
        parts = [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)
                 if f.name != "name" and not (f.name in optional and getattr(self, f.name) in (None, 0))]
        return f"generated({', '.join(parts)})"


def bucket_bounds(num_durations: int) -> list[tuple[int, int]]:
    """Candidate index ranges ``[lo, hi)`` of the four duration buckets."""
    ends = [math.floor(share * num_durations + 0.5) for share in BUCKET_ENDS]
    starts = [0, *ends[:-1]]
    return list(zip(starts, ends, strict=True))


def duration_distribution(config: GeneratorConfig) -> tuple[np.ndarray, np.ndarray]:
    """The distribution step 4 draws a job's duration from: the candidate durations in
    seconds (rounded to milliseconds as drawn) and their probabilities (a bucket's probability
    spread evenly over its candidates). The ``unknown`` regime's default length prior
    (:mod:`shockwave_gym.regimes`)."""
    candidates_h = np.linspace(config.min_duration_h, config.max_duration_h, config.num_durations)
    durations_s = np.array([round(float(h) * 3600.0, 3) for h in candidates_h])
    probs = np.zeros(config.num_durations)
    for p, (lo, hi) in zip(_normalised(config.bucket_probs), bucket_bounds(config.num_durations), strict=True):
        if hi > lo:
            probs[lo:hi] += p / (hi - lo)
    return durations_s, probs / probs.sum()


def v100_equivalent_gpus(cluster, typed) -> float:
    """``E = sum_t G_t s_t``: the cluster's size in V100s, ``s_t`` the geometric mean over the
    generator's templates on one GPU (positive on both tables) of ``rate_t / rate_v100``
    (``typed``: a :class:`~shockwave_gym.throughput.TypedThroughputs`)."""
    reference = typed.reference
    total = 0.0
    for name, count in zip(cluster.types, cluster.counts, strict=True):
        table = typed.table(name)
        ratios = [table.rate(m, b, 1) / reference.rate(m, b, 1) for m, b in templates(reference)
                  if reference.has(m, b, 1) and table.has(m, b, 1)]
        if not ratios:
            raise InputError(f"{table.source}: no generator template runs on one {name} GPU")
        total += count * math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    return total


def _runs_on_cluster(spec: JobSpec, cluster, typed) -> bool:
    """Some type of ``cluster`` has ``gang`` GPUs and a rate for every reachable size."""
    from shockwave_gym.adaptation import get_mode

    reachable = get_mode(spec.mode).reachable(spec)
    for name, count in zip(cluster.types, cluster.counts, strict=True):
        table = typed.table(name)
        if count >= spec.gang and all(table.has(spec.model, b, spec.gang) for b in reachable):
            return True
    return False


def templates(throughputs: ThroughputTable) -> list[tuple[str, int]]:
    """(model, initial batch size) templates the table can run on one GPU at least."""
    out = []
    for model, (lo, hi) in TEMPLATE_BATCH_RANGES.items():
        size = lo
        while size <= hi:
            if any(throughputs.has(model, size, gang) for gang in GANG_SIZES):
                out.append((model, size))
            size *= 2
    return out


class _Draws:
    """What every job draw of one trace shares: the mixes as choice lists and normalised
    probabilities, the duration buckets (computed once per trace, the same values
    :func:`_draw_job` would compute per job)."""

    __slots__ = ("gangs", "gang_probs", "modes", "mode_probs", "bucket_probs", "buckets")

    def __init__(self, config: GeneratorConfig):
        self.gangs, self.gang_probs = list(config.gang_mix), _normalised(config.gang_mix.values())
        self.modes, self.mode_probs = list(config.mode_mix), _normalised(config.mode_mix.values())
        self.bucket_probs = _normalised(config.bucket_probs)
        self.buckets = bucket_bounds(config.num_durations)


def _draw_job(
    rng: np.random.Generator,
    config: GeneratorConfig,
    table: ThroughputTable,
    choices: list[tuple[str, int]],
    candidates_h: np.ndarray,
    arrival_s: float,
    hetero=None,
    draws: _Draws | None = None,
) -> JobSpec | None:
    """One job drawn from ``rng``, or ``None`` if it is not feasible under ``table``."""
    if draws is None:
        draws = _Draws(config)
    model, batch_size = choices[int(rng.integers(len(choices)))]
    gang = int(draws.gangs[int(rng.choice(len(draws.gangs), p=draws.gang_probs))])
    if model in SINGLE_GPU_MODELS:
        gang = 1
    mode = draws.modes[int(rng.choice(len(draws.modes), p=draws.mode_probs))]
    bucket = int(rng.choice(len(BUCKET_ENDS), p=draws.bucket_probs))
    lo, hi = draws.buckets[bucket]
    duration_s = round(float(candidates_h[int(rng.integers(lo, hi))]) * 3600.0, 3)
    if mode == "accordion" and duration_s < config.accordion_min_s:
        mode = "static"
    if not table.has(model, batch_size, gang):
        return None
    iterations = max(1, round(duration_s * table.rate(model, batch_size, gang)))
    spec = JobSpec(
        job_id=0,
        model=model,
        initial_batch_size=batch_size,
        total_iterations=iterations,
        gang=gang,
        mode=mode,
        arrival_s=arrival_s,
        duration_s=duration_s,
    )
    if job_problems(spec, table):
        return None
    if hetero is not None and not _runs_on_cluster(spec, *hetero):
        return None
    return spec


def generate_trace(config: GeneratorConfig, throughputs: ThroughputTable | None = None) -> Trace:
    """A trace drawn from ``config`` (deterministic in ``config``; see the module docstring).

    Every job satisfies the loader's checks against ``throughputs`` (built-in V100 table by
    default). Raises ``InputError`` if the table cannot host any template, or a job stays
    infeasible after :data:`MAX_DRAWS_PER_JOB` draws.
    """
    hetero = None
    rate_per_hour = config.arrival_rate_per_hour
    if config.cluster is not None:
        from shockwave_gym.cluster import ClusterSpec
        from shockwave_gym.throughput import TypedThroughputs

        spec = ClusterSpec.parse(config.cluster, where="cluster")
        typed = TypedThroughputs.resolve(throughputs, spec.types)
        throughputs = None if throughputs is None else typed.reference
        hetero = (spec, typed)
        if config.arrival_rate_per_gpu_hour is not None:
            rate_per_hour = config.arrival_rate_per_gpu_hour * v100_equivalent_gpus(spec, typed)
    table = ThroughputTable.builtin_v100() if throughputs is None else throughputs
    choices = templates(table)
    if not choices:
        raise InputError(f"{table.source} has no positive rate for any generator template")
    rng = np.random.default_rng(config.seed)
    gaps_s = rng.exponential(3600.0 / rate_per_hour, size=config.num_jobs - 1)
    arrivals_s = np.round(np.concatenate(([0.0], np.cumsum(gaps_s))), 3)
    if arrivals_s[-1] > MAX_ARRIVAL_S:
        raise InputError(
            f"{config.num_jobs} jobs at {rate_per_hour:g} per hour arrive until "
            f"{arrivals_s[-1]:.3g} s, beyond the trace limit of {MAX_ARRIVAL_S:g} s: raise the arrival rate"
        )
    candidates_h = np.linspace(config.min_duration_h, config.max_duration_h, config.num_durations)
    jobs = []
    draws = _Draws(config)
    for arrival_s in arrivals_s.tolist():
        for _ in range(MAX_DRAWS_PER_JOB):
            job = _draw_job(rng, config, table, choices, candidates_h, arrival_s, hetero, draws)
            if job is not None:
                jobs.append(job)
                break
        else:
            raise InputError(
                f"no feasible job in {MAX_DRAWS_PER_JOB} draws: {table.source} lacks rates for "
                "most (template, gang, mode) combinations of this config"
            )
    if config.elastic_share > 0:
        jobs = declare_elastic(jobs, config.elastic_share, config.seed)
    name = config.name or f"generated-{config.num_jobs}-seed{config.seed}"
    source = config.describe()
    if throughputs is not None:
        source = source[:-1] + f", throughputs={table.source!r})"
    return Trace.from_jobs(name, jobs, source)


#: Seed of the stream that picks the elastic jobs: ``default_rng([seed, ELASTIC_STREAM])``.
ELASTIC_STREAM = 37


def declare_elastic(jobs: list[JobSpec], share: float, seed: int) -> list[JobSpec]:
    """``jobs`` with each declared elastic (``gangs`` 1, 2, 4, 8) with probability ``share``,
    drawn from a stream of its own so that the jobs themselves do not change."""
    marks = np.random.default_rng([seed, ELASTIC_STREAM]).random(len(jobs)) < share
    return [replace(job, gangs=GANG_SIZES) if mark else job for job, mark in zip(jobs, marks.tolist(), strict=True)]

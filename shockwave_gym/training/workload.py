"""Generated workloads for learning: fresh training traces, and held-out evaluation traces.

**Disjoint seeds by construction.** Training traces draw their generator seed from
``[TRAIN_SEED_MIN, 2**63)``; held-out traces must use seeds below ``TRAIN_SEED_MIN``
(checked), so no evaluation trace can ever be one the policy trained on. Neither ever
reads the canonical trace or a bundled one.

Training traces randomise the load (job count and arrival rate) and, with ``mix=True``, the
mix: the share of single-GPU jobs and the static / Accordion / GNS proportions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

import numpy as np

from shockwave_gym.config import require_positive_int
from shockwave_gym.errors import InputError
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import GeneratorConfig, Trace, TraceSource, generate_trace

#: Training seeds are drawn at or above this; held-out seeds must stay below it.
TRAIN_SEED_MIN = 2**32
#: Multi-GPU gang proportions of the default mix (docs/TRACES.md, "The generator": 0.3 / 0.09 / 0.01 of 2 / 4 / 8).
_MULTI_GPU_SHARES = {2: 0.3, 4: 0.09, 8: 0.01}


@dataclass(frozen=True)
class Workload:
    """The family of generated traces a policy trains and is evaluated on."""

    gpus: int = 12
    num_jobs_range: tuple[int, int] = (20, 40)
    arrival_rate_range_per_hour: tuple[float, float] = (15.0, 60.0)
    max_duration_h: float = 2.0
    mix: bool = True

    def __post_init__(self) -> None:
        lo, hi = self.num_jobs_range
        if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi):
            raise InputError(f"num_jobs_range needs integers 1 <= lo <= hi, got {self.num_jobs_range!r}")
        lo_rate, hi_rate = self.arrival_rate_range_per_hour
        if not (0 < lo_rate <= hi_rate < float("inf")):
            raise InputError(f"arrival_rate_range_per_hour needs 0 < lo <= hi, got {self.arrival_rate_range_per_hour!r}")
        require_positive_int(self.gpus, "gpus")
        if not 0.2 <= self.max_duration_h:
            raise InputError(f"max_duration_h must be >= 0.2 (the generator's minimum), got {self.max_duration_h!r}")

    @property
    def max_num_jobs(self) -> int:
        return self.num_jobs_range[1]

    def to_dict(self) -> dict:
        return asdict(self)


class TrainingTraceSource(TraceSource):
    """A fresh trace per episode from the env's RNG, with a seed >= :data:`TRAIN_SEED_MIN`."""

    fresh_samples = True

    def __init__(self, workload: Workload, throughputs: ThroughputTable | None = None):
        self.workload = workload
        self.throughputs = ThroughputTable.builtin_v100() if throughputs is None else throughputs

    def sample(self, rng: np.random.Generator) -> Trace:
        w = self.workload
        seed = int(rng.integers(TRAIN_SEED_MIN, 2**63 - 1))
        num_jobs = int(rng.integers(w.num_jobs_range[0], w.num_jobs_range[1] + 1))
        rate = float(rng.uniform(*w.arrival_rate_range_per_hour))
        extra = {}
        if w.mix:
            single = float(rng.uniform(0.4, 0.8))
            scale = (1.0 - single) / sum(_MULTI_GPU_SHARES.values())
            extra["gang_mix"] = {1: single, **{g: p * scale for g, p in _MULTI_GPU_SHARES.items()}}
            static, accordion, gns = rng.dirichlet([1.0, 2.0, 2.0]).tolist()
            extra["mode_mix"] = {"static": static, "accordion": accordion, "gns": gns}
        config = GeneratorConfig(
            num_jobs=num_jobs, seed=seed, arrival_rate_per_hour=rate,
            max_duration_h=w.max_duration_h, name=f"train-{seed}", **extra,
        )
        return generate_trace(config, self.throughputs)

    @property
    def max_num_jobs(self) -> int:
        return self.workload.max_num_jobs

    def __repr__(self) -> str:
        return f"TrainingTraceSource({self.workload!r})"


def held_out_traces(
    seeds: Iterable[int],
    *,
    num_jobs: int = 40,
    arrival_rates_per_hour: Iterable[float] = (30.0,),
    max_duration_h: float = 2.0,
    throughputs: ThroughputTable | None = None,
) -> list[Trace]:
    """Evaluation traces, one per seed (each < :data:`TRAIN_SEED_MIN`), default generator
    mixes; arrival rates cycle over ``arrival_rates_per_hour``. Named ``heldout-<seed>``."""
    rates = list(arrival_rates_per_hour)
    traces = []
    for index, seed in enumerate(seeds):
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < TRAIN_SEED_MIN:
            raise InputError(f"held-out seeds must be integers in [0, {TRAIN_SEED_MIN}), got {seed!r}")
        config = GeneratorConfig(
            num_jobs=num_jobs, seed=seed, arrival_rate_per_hour=rates[index % len(rates)],
            max_duration_h=max_duration_h, name=f"heldout-{seed}",
        )
        traces.append(generate_trace(config, throughputs))
    return traces


def require_workload_unused(suites, workload: Workload) -> None:
    """A run on suites (``suites`` not None) has no generated workload: refuse one given
    anyway (:class:`InputError`), rather than record it and ignore it."""
    if suites is not None and workload != Workload():
        raise InputError("workload: a generated workload is used with suites=None only (CLI --suites none)")


def require_positive_ints(config, names: Iterable[str]) -> None:
    """Raise :class:`InputError` unless each named attribute of ``config`` is an int >= 1
    (:func:`~shockwave_gym.config.require_positive_int`'s rule)."""
    for name in names:
        require_positive_int(getattr(config, name), name)


def eval_rates(workload: Workload) -> tuple[float, ...]:
    """Arrival rates of the held-out traces: a third, two thirds and all the way up the
    workload's range (the busier end is where schedulers differ)."""
    lo, hi = workload.arrival_rate_range_per_hour
    return tuple(float(v) for v in np.round(lo + (hi - lo) * np.array([1 / 3, 2 / 3, 1.0]), 3))

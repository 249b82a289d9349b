"""Episode metrics (docs/SEMANTICS.md, "Metrics and finish-time fairness"; the metric card in
docs/METRICS.md), computed by one function from a finished episode.

- makespan = last completion - 0; JCT = completion - arrival (the basis of every comparison
  with the authors' figures: their trace driver records the arrival as the job's start);
  avg and geometric-mean JCT.
- JCT from admission (``*_admission``): completion - admission, where a job is admitted at the
  first round boundary at or after its arrival. Shorter by the wait for the next boundary,
  under one round; an extra view of JCT, not the authors' basis.
- Fair-share rho (the headline, ``rho_*``): rho_j = JCT_j / T_fair_j with T_fair_j the job's
  time in the policy-independent fluid equal-share reference (:mod:`shockwave_gym.fair_reference`);
  mean and p95 first, then max and the shares above 1.05 and 1.25.
- Gang-aware contention rho (``gang_ftf_*``): rho_j = JCT_j / (iso_j * max(1, n_j * g_j / G)),
  n_j the time-averaged number of active jobs over the job's life: Gavel's isolated share
  (``scheduler/policies/isolated.py``, (G / m) / scale_factor capped at 1), integrated.
- The Shockwave paper's two measures (gang-blind; key names kept): static contention,
  rho_j = JCT_j / (iso_j * max(1, N/G)) (``worst_ftf``, ``unfair_fraction``), and the
  contention-based variant with N replaced by n_j (``*_themis`` keys; the authors' code calls
  it "themis"). unfair fraction = share of jobs with rho > threshold (1.05 by default);
  worst = max rho.
- utilization = sum(gang * isolated time) / (G * makespan): restart overhead counts as idle.
  ``busy_utilization`` counts every GPU-second a job held, overhead included.

Heterogeneous clusters (docs/HETEROGENEOUS.md, "Metrics"): isolated time stays the V100
reference's (so ``utilization`` is reference work over capacity); the paper's measures and the
gang-aware one divide by the *equal-share* isolated time ``iso_fair_j`` instead (every epoch at
``sum_t w_t rate_t``, ``w_t = G_t / G``), which is the isolated time itself on a V100-only
cluster; the fair-share reference runs on the reference work of
:func:`~shockwave_gym.fair_reference.typed_reference_work_s`. Per type ``t``:
``utilization_<t>`` = GPU-seconds of work (run - overhead) on ``t`` / (G_t x makespan),
``busy_utilization_<t>`` the same with overhead.
"""

from __future__ import annotations

import csv
import io
import math
import sys
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from shockwave_gym import portable_math
from shockwave_gym.fair_reference import fair_time_s, typed_reference_work_s

UNFAIR_THRESHOLD = 1.05
#: The second threshold of the fair-share rho (``rho_over_1_25``).
SEVERE_THRESHOLD = 1.25
#: Each of the authors' published figures -> our metric on their basis (JCT from arrival:
#: their trace driver records a job's arrival as its start), for comparisons with them.
AUTHORS_BASIS = {"makespan_s": "makespan_s", "avg_jct_s": "avg_jct_s",
                 "worst_ftf": "worst_ftf", "unfair_fraction": "unfair_fraction"}
#: The same figures with JCT from admission (the first round boundary at or after arrival):
#: an extra view of JCT, shorter by under one round per job.
ADMISSION_BASIS = {"makespan_s": "makespan_s", "avg_jct_s": "avg_jct_admission_s",
                   "worst_ftf": "worst_ftf_admission", "unfair_fraction": "unfair_fraction_admission"}


@dataclass(frozen=True)
class EpisodeResult:
    """Everything metrics need from a finished (or truncated) episode; plain arrays only."""

    trace_name: str
    gpus: int
    round_s: float
    arrival_s: np.ndarray
    completion_s: np.ndarray  # NaN for jobs that did not finish (truncated episodes)
    isolated_time_s: np.ndarray
    gang: np.ndarray
    run_time_s: np.ndarray
    round_start_s: np.ndarray
    round_end_s: np.ndarray
    round_gpus_busy: np.ndarray
    round_job_ids: tuple[np.ndarray, ...] = field(repr=False)
    round_run_s: tuple[np.ndarray, ...] = field(repr=False)
    round_overhead_s: tuple[np.ndarray, ...] = field(repr=False)
    end_time_s: float = 0.0
    # heterogeneous runs only (empty / None on the homogeneous path)
    gpu_types: tuple[str, ...] = ()
    type_gpus: tuple[int, ...] = ()
    fair_isolated_time_s: np.ndarray | None = None  # FTF basis (equal-share isolated time)
    round_gpu_types: tuple[np.ndarray, ...] = field(repr=False, default=())
    #: reference work of the fair-share reference on a heterogeneous cluster
    #: (:func:`~shockwave_gym.fair_reference.typed_reference_work_s`); None: the isolated time
    fair_work_s: np.ndarray | None = None
    #: elastic runs only (:mod:`shockwave_gym.elastic`): GPU-seconds each job held, and the
    #: GPU count of each job of every round; None / empty: every job ran on its gang
    gpu_time_s: np.ndarray | None = None
    round_gpu_counts: tuple[np.ndarray, ...] = field(repr=False, default=())
    #: heterogeneous runs whose per-round job sets are not kept (the batched env): per type,
    #: GPU-seconds held (row 0) and held minus restart overhead (row 1), summed over the
    #: rounds in order; None: summed from the round lists
    type_gpu_s: np.ndarray | None = None

    @property
    def heterogeneous(self) -> bool:
        return bool(self.gpu_types)

    @property
    def ftf_isolated_time_s(self) -> np.ndarray:
        """The isolated time FTF divides by: the equal-share one on a heterogeneous cluster."""
        return self.isolated_time_s if self.fair_isolated_time_s is None else self.fair_isolated_time_s

    @property
    def reference_work_s(self) -> np.ndarray:
        """The work the fair-share reference runs: the isolated time on a homogeneous cluster,
        the equal-share reference work on a heterogeneous one."""
        if self.fair_work_s is not None:
            return self.fair_work_s
        return self.ftf_isolated_time_s

    @property
    def fair_time_s(self) -> np.ndarray:
        """T_fair per job: its time from arrival to completion in the fluid equal-share
        reference (:func:`~shockwave_gym.fair_reference.fair_time_s`, cached per trace,
        cluster and table)."""
        return fair_time_s(self.arrival_s, self.gang, self.reference_work_s, self.gpus)

    @classmethod
    def from_simulator(cls, sim) -> EpisodeResult:
        history = sim.history
        typed = getattr(sim, "typed", None)
        extra = {}
        if typed is not None:
            extra = dict(
                gpu_types=tuple(typed.cluster.types),
                type_gpus=tuple(typed.cluster.counts),
                fair_isolated_time_s=typed.fair_isolated_time_s.copy(),
                round_gpu_types=tuple(r.gpu_types for r in history),
                fair_work_s=_typed_work(sim),
            )
        if getattr(sim, "gpu_time_s", None) is not None:
            extra.update(gpu_time_s=sim.gpu_time_s.copy(), round_gpu_counts=tuple(r.gpu_counts for r in history))
        return cls(
            trace_name=sim.trace_name,
            gpus=sim.config.gpus,
            round_s=sim.config.round_s,
            arrival_s=sim.static.arrival_s.copy(),
            completion_s=sim.completion_s.copy(),
            isolated_time_s=sim.static.isolated_time_s.copy(),
            gang=sim.static.gang.copy(),
            run_time_s=sim.run_time_s.copy(),
            round_start_s=np.array([r.start_s for r in history]),
            round_end_s=np.array([r.end_s for r in history]),
            round_gpus_busy=np.array([r.gpus_busy for r in history], dtype=np.int64),
            round_job_ids=tuple(r.job_ids for r in history),
            round_run_s=tuple(r.run_s for r in history),
            round_overhead_s=tuple(r.overhead_s for r in history),
            end_time_s=sim.time_s,
            **extra,
        )

    @property
    def num_jobs(self) -> int:
        return int(self.arrival_s.size)

    @property
    def completed(self) -> np.ndarray:
        return ~np.isnan(self.completion_s)

    @property
    def jct_s(self) -> np.ndarray:
        return self.completion_s - self.arrival_s

    @property
    def admission_s(self) -> np.ndarray:
        """The first round boundary at or after each job's arrival (NaN if none came)."""
        starts = np.append(self.round_start_s, np.nan)  # index past the last round: NaN
        return starts[np.searchsorted(self.round_start_s, self.arrival_s, side="left")]

    @property
    def jct_admission_s(self) -> np.ndarray:
        """JCT on the authors' basis: completion - admission."""
        return self.completion_s - self.admission_s

    @property
    def num_rounds(self) -> int:
        return int(self.round_start_s.size)


#: simulator -> its reference work (heterogeneous clusters), kept as long as the simulator
_TYPED_WORK: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _typed_work(sim) -> np.ndarray:
    """The heterogeneous simulator's reference work, derived once per simulator."""
    work = _TYPED_WORK.get(sim)
    if work is None:
        work = typed_reference_work_s(sim.static, sim.typed)
        work.setflags(write=False)
        _TYPED_WORK[sim] = work
    return work


def simulator_fair_time_s(sim) -> np.ndarray:
    """T_fair per job of a simulator's trace, cluster and table (the env's fair-share reward)."""
    work = _typed_work(sim) if getattr(sim, "typed", None) is not None else sim.static.isolated_time_s
    return fair_time_s(sim.static.arrival_s, sim.static.gang, work, sim.config.gpus)


def mean_active_jobs(arrival_s: np.ndarray, completion_s: np.ndarray) -> np.ndarray:
    """Time-averaged count of active jobs over each job's own lifetime (the contention of the paper's contention-based measure and of the gang-aware one).

    ``n(t) = #{i : a_i <= t < c_i}``; the integral over [a_j, c_j] is the sum of pairwise
    lifetime overlaps, so this is exact (O(N^2); fine up to a few thousand jobs). Where the
    compiled loops are already loaded (:func:`_compiled_overlaps`) the sums are taken there,
    the same floats in the same order as the array expression.
    """
    a, c = arrival_s, completion_s
    overlaps = _compiled_overlaps()
    if overlaps is not None and np.all(np.isfinite(a)) and np.all(np.isfinite(c)):
        total = np.empty(a.size)
        overlaps(np.ascontiguousarray(a, dtype=np.float64), np.ascontiguousarray(c, dtype=np.float64), total)
    else:
        overlap = np.minimum(c[:, None], c[None, :]) - np.maximum(a[:, None], a[None, :])
        total = np.clip(overlap, 0.0, None).sum(axis=1)
    life = c - a
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(life > 0, total / life, 1.0)


def _compiled_overlaps():
    """:func:`shockwave_gym.batch.jit.overlap_row_sums` if this process has already loaded
    the compiled loops (the vector env and the compiled single env do), else None: importing
    numba only for this would cost a process more than it saves."""
    module = sys.modules.get("shockwave_gym.batch.jit")
    if module is None or not module.AVAILABLE:
        return None
    return module.overlap_row_sums


def static_ftf(result: EpisodeResult, jct_s: np.ndarray) -> np.ndarray:
    """The paper's rho = JCT / (isolated time * max(1, N/G)) of the given JCTs."""
    return jct_s / (result.ftf_isolated_time_s * max(1.0, result.num_jobs / result.gpus))


def _contention(result: EpisodeResult) -> np.ndarray:
    """n_j, the time-averaged number of active jobs over each completed job's life (jobs
    still active when a truncated episode stopped count as active until then)."""
    done = result.completed
    arrived = result.arrival_s <= result.end_time_s
    ends = np.where(done, result.completion_s, result.end_time_s)[arrived]
    return mean_active_jobs(result.arrival_s[arrived], ends)[done[arrived]]


def per_job_ftf(result: EpisodeResult) -> tuple[np.ndarray, np.ndarray]:
    """The Shockwave paper's two measures per job: (static-contention rho, contention-based
    rho, the ``*_themis`` keys); NaN for unfinished jobs."""
    n, g = result.num_jobs, result.gpus
    jct = result.jct_s
    rho_static = static_ftf(result, jct)
    done = result.completed
    rho_themis = np.full(n, np.nan)
    if done.any():
        contention = _contention(result)
        rho_themis[done] = jct[done] / (result.ftf_isolated_time_s[done] * np.maximum(1.0, contention / g))
    return rho_static, rho_themis


def per_job_rho(result: EpisodeResult) -> tuple[np.ndarray, np.ndarray]:
    """(fair-share rho = JCT / T_fair, gang-aware contention rho = JCT / (iso * max(1,
    n_j * g_j / G))) per job; NaN for unfinished jobs."""
    done = result.completed
    jct = result.jct_s
    rho = np.full(result.num_jobs, np.nan)
    gang_rho = np.full(result.num_jobs, np.nan)
    if done.any():
        rho[done] = jct[done] / result.fair_time_s[done]
        share = _contention(result) * result.gang[done] / result.gpus
        gang_rho[done] = jct[done] / (result.ftf_isolated_time_s[done] * np.maximum(1.0, share))
    return rho, gang_rho


def rho_summary(rho: np.ndarray, prefix: str, thresholds: tuple[float, ...]) -> dict:
    """``<prefix>_mean``, ``_p95`` (linear interpolation between order statistics), ``_max``
    and ``_over_<t>`` (share of jobs above ``t``) of the finite per-job ``rho``."""
    has = rho.size > 0
    out = {
        f"{prefix}_mean": _finite_or_none(rho.mean()) if has else None,
        f"{prefix}_p95": _finite_or_none(np.percentile(rho, 95)) if has else None,
        f"{prefix}_max": _finite_or_none(rho.max()) if has else None,
    }
    for t in thresholds:
        out[f"{prefix}_over_{str(t).replace('.', '_')}"] = _finite_or_none((rho > t).mean()) if has else None
    return out


def _finite_or_none(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def _round_gangs(result: EpisodeResult) -> np.ndarray:
    """The GPU count of every job of every round, concatenated over the rounds in order."""
    if result.round_gpu_counts:
        return np.concatenate(result.round_gpu_counts)
    return result.gang[np.concatenate(result.round_job_ids)]


def restart_overhead_gpu_s(result: EpisodeResult) -> float:
    """GPU-seconds lost to restarts: over the rounds in order, each round's sum of gang x
    overhead. The same floats as summing every round's array and then the rounds left to
    right; computed in a few array operations because most rounds have no restart or one
    (their sum is that term exactly), so only rounds with several restarts are summed alone."""
    lengths = np.fromiter((o.size for o in result.round_overhead_s), dtype=np.intp, count=len(result.round_overhead_s))
    if lengths.size == 0:
        return 0
    products = _round_gangs(result) * np.concatenate(result.round_overhead_s)
    per_round = np.zeros(lengths.size)
    paid = np.flatnonzero(products)
    if paid.size:
        ends = np.cumsum(lengths)
        round_of = np.searchsorted(ends, paid, side="right")
        counts = np.bincount(round_of, minlength=lengths.size)
        alone = counts[round_of] == 1
        per_round[round_of[alone]] = products[paid[alone]]
        for r in np.flatnonzero(counts > 1).tolist():
            per_round[r] = products[ends[r] - lengths[r]:ends[r]].sum()
    return float(np.add.accumulate(per_round)[-1])  # left to right, as sum() over the rounds


def compute_metrics(result: EpisodeResult, unfair_threshold: float = UNFAIR_THRESHOLD) -> dict:
    """All episode metrics as a flat dict; non-finite values become ``None``.

    Over completed jobs only when the episode was truncated (``completed_jobs`` says how many).
    """
    done = result.completed
    jct = result.jct_s[done]
    rho_static, rho_themis = per_job_ftf(result)
    rho_static, rho_themis = rho_static[done], rho_themis[done]
    rho_fair, rho_gang = (r[done] for r in per_job_rho(result))
    makespan = float(np.nanmax(result.completion_s)) if done.any() else float("nan")
    useful = float((result.gang * result.isolated_time_s)[done].sum())
    busy = float((result.gang * result.run_time_s).sum() if result.gpu_time_s is None else result.gpu_time_s.sum())
    horizon = makespan if done.all() else result.end_time_s
    capacity = result.gpus * horizon if horizon > 0 else float("nan")
    overhead = restart_overhead_gpu_s(result)
    has = jct.size > 0
    jct_admission_all = result.jct_admission_s
    jct_admission = jct_admission_all[done]
    rho_admission = static_ftf(result, jct_admission_all)[done]
    return {
        "num_jobs": result.num_jobs,
        "completed_jobs": int(done.sum()),
        "truncated": bool(not done.all()),
        "gpus": result.gpus,
        "makespan_s": _finite_or_none(makespan),
        "avg_jct_s": _finite_or_none(jct.mean()) if has else None,
        "geomean_jct_s": _finite_or_none(math.exp(portable_math.log(jct).mean())) if has and (jct > 0).all() else None,
        "median_jct_s": _finite_or_none(np.median(jct)) if has else None,
        # the fair-share rho first, then the gang-aware contention rho, then the paper's two
        **rho_summary(rho_fair, "rho", (UNFAIR_THRESHOLD, SEVERE_THRESHOLD)),
        **rho_summary(rho_gang, "gang_ftf", (UNFAIR_THRESHOLD,)),
        "worst_ftf": _finite_or_none(rho_static.max()) if has else None,
        "unfair_fraction": _finite_or_none((rho_static > unfair_threshold).mean()) if has else None,
        "worst_ftf_themis": _finite_or_none(rho_themis.max()) if has else None,
        "unfair_fraction_themis": _finite_or_none((rho_themis > unfair_threshold).mean()) if has else None,
        "utilization": _finite_or_none(useful / capacity),
        "busy_utilization": _finite_or_none(busy / capacity),
        "restart_overhead_gpu_s": overhead,
        "rounds": result.num_rounds,
        # the authors' JCT basis (from admission at a round boundary), static-contention rho
        "avg_jct_admission_s": _finite_or_none(jct_admission.mean()) if has else None,
        "median_jct_admission_s": _finite_or_none(np.median(jct_admission)) if has else None,
        "worst_ftf_admission": _finite_or_none(rho_admission.max()) if has else None,
        "unfair_fraction_admission": _finite_or_none((rho_admission > unfair_threshold).mean()) if has else None,
        **(_per_type_utilization(result, horizon) if result.heterogeneous else {}),
    }


def _per_type_utilization(result: EpisodeResult, horizon: float) -> dict:
    """``cluster`` and, per type ``t``, ``utilization_<t>`` (GPU-seconds of work, i.e. held
    minus restart overhead, on ``t`` / (G_t x horizon)) and ``busy_utilization_<t>`` (held)."""
    num_types = len(result.gpu_types)
    if result.type_gpu_s is not None:
        held, work = result.type_gpu_s
    else:
        work = np.zeros(num_types)
        held = np.zeros(num_types)
        counts = result.round_gpu_counts or tuple(result.gang[ids] for ids in result.round_job_ids)
        for gang, run, overhead, types in zip(counts, result.round_run_s, result.round_overhead_s,
                                              result.round_gpu_types, strict=True):
            np.add.at(held, types, gang * run)
            np.add.at(work, types, gang * (run - overhead))
    out: dict = {"cluster": ",".join(f"{t}={c}" for t, c in zip(result.gpu_types, result.type_gpus, strict=True))}
    for t, name in enumerate(result.gpu_types):
        capacity = result.type_gpus[t] * horizon if horizon > 0 else float("nan")
        out[f"utilization_{name}"] = _finite_or_none(work[t] / capacity)
        out[f"busy_utilization_{name}"] = _finite_or_none(held[t] / capacity)
    return out


def jobs_table(result: EpisodeResult) -> list[dict]:
    """One row per job: arrival, completion, JCT, isolated time, gang, T_fair and the
    fair-share rho, the gang-aware rho, the paper's two rhos, and JCT and static rho from
    admission."""
    rho_static, rho_themis = per_job_ftf(result)
    rho_fair, rho_gang = per_job_rho(result)
    t_fair = result.fair_time_s
    admission = result.admission_s
    jct_admission = result.completion_s - admission
    rho_admission = static_ftf(result, jct_admission)
    rows = []
    for j in range(result.num_jobs):
        rows.append(
            {
                "job_id": j,
                "arrival_s": float(result.arrival_s[j]),
                "completion_s": _finite_or_none(result.completion_s[j]),
                "jct_s": _finite_or_none(result.jct_s[j]),
                "isolated_time_s": float(result.isolated_time_s[j]),
                "gang": int(result.gang[j]),
                "run_time_s": float(result.run_time_s[j]),
                "fair_time_s": _finite_or_none(t_fair[j]),
                "rho": _finite_or_none(rho_fair[j]),
                "gang_ftf": _finite_or_none(rho_gang[j]),
                "ftf": _finite_or_none(rho_static[j]),
                "ftf_themis": _finite_or_none(rho_themis[j]),
                "admission_s": _finite_or_none(admission[j]),
                "jct_admission_s": _finite_or_none(jct_admission[j]),
                "ftf_admission": _finite_or_none(rho_admission[j]),
            }
        )
        if result.heterogeneous:
            rows[-1]["fair_isolated_time_s"] = float(result.ftf_isolated_time_s[j])
    return rows


def timeline_table(result: EpisodeResult) -> list[dict]:
    """One row per round: index, start, end, busy GPUs and the jobs that ran."""
    return [
        {
            "round": k,
            "start_s": float(result.round_start_s[k]),
            "end_s": float(result.round_end_s[k]),
            "gpus_busy": int(result.round_gpus_busy[k]),
            "job_ids": " ".join(str(int(j)) for j in result.round_job_ids[k]),
        }
        for k in range(result.num_rounds)
    ]


def to_csv(rows: list[dict], path: str | Path | None = None) -> str:
    """Write rows as CSV (to ``path`` when given) and return the text."""
    buffer = io.StringIO()
    if rows:
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    text = buffer.getvalue()
    if path is not None:
        from shockwave_gym.files import write_atomic

        write_atomic(path, text)
    return text

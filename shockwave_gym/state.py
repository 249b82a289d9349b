"""Simulator state as plain arrays: job status codes, per-job static arrays, round records.

The simulator (:mod:`shockwave_gym.simulator`) owns the dynamics; this module holds the
containers it works on, so that the read-only view can use them without importing the
simulator. Per-epoch arrays of all jobs are flattened with per-job offsets; a few tables
built from them let the view derive each state's observed arrays with plain gathers
(:meth:`StaticJobArrays.state_rows`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from shockwave_gym.jobs import JobSpec
from shockwave_gym.profile import job_profile
from shockwave_gym.throughput import ThroughputTable

#: Job status codes held in ``Simulator.status``.
PENDING, ACTIVE, DONE = 0, 1, 2

_ZERO, _ONE = np.array(0.0), np.array(1.0)  # 0-d: faster than Python scalars in ufuncs

#: An epoch end reached up to float rounding (1 us of slack) counts as reached, on every GPU
#: type's scale (0-d: numpy combines it with arrays faster than a Python float).
EPOCH_END_SLACK_S = np.array(1e-6)


@dataclass
class RoundRecord:
    """What happened in one round (kept for metrics, rendering and the per-round timeline)."""

    index: int
    start_s: float
    end_s: float
    job_ids: np.ndarray
    run_s: np.ndarray  # wall seconds each job held its GPUs (overhead included)
    overhead_s: np.ndarray
    completed_ids: np.ndarray
    gpus_busy: int
    #: heterogeneous runs only: the type index (into the cluster's types) each job of
    #: ``job_ids`` ran on; ``None`` on the homogeneous path
    gpu_types: np.ndarray | None = None
    #: elastic runs only (:mod:`shockwave_gym.elastic`): the GPU count each job of
    #: ``job_ids`` ran on; ``None`` when every job ran on its gang
    gpu_counts: np.ndarray | None = None


@dataclass
class StaticJobArrays:
    """Per-job facts fixed by the trace, the public reachable batch sizes, and the hidden
    profile (kept apart: the view exposes only what has been observed of it)."""

    arrival_s: np.ndarray
    gang: np.ndarray
    num_epochs: np.ndarray
    initial_batch_size: np.ndarray
    priority: np.ndarray
    reachable_sizes: np.ndarray  # (J, W) public, ascending, 0-padded
    reachable_valid: np.ndarray  # (J, W) bool
    isolated_time_s: np.ndarray  # hidden: the view exposes it only with oracle=True
    epoch_offset: np.ndarray  # (J + 1,) start of each job's epochs in the flat arrays
    epoch_end_global_s: np.ndarray  # flat cumulative epoch ends, + each job's base offset
    epoch_end_within_s: np.ndarray  # flat cumulative epoch ends within each job
    epoch_start_within_s: np.ndarray  # flat epoch starts within each job
    first_epoch_index: np.ndarray  # (J,) flat index of each job's first epoch
    last_epoch_index: np.ndarray  # (J,) flat index of each job's last epoch
    job_base_s: np.ndarray  # (J,) base offset of each job in epoch_end_global_s
    epoch_batch_size: np.ndarray  # flat, hidden future
    epoch_rate: np.ndarray  # flat iterations/s, hidden future
    epoch_duration_s: np.ndarray  # flat, hidden future
    # Tables by "observed row" count_row_base[j] + k, for job j after k completed epochs
    # (k = 0..num_epochs): what the view gathers once per state
    count_row_base: np.ndarray  # (J,) row of each job with 0 epochs completed
    size_counts_by_row: np.ndarray  # (flat epochs + J, W) completed epochs per reachable size
    specs: tuple[JobSpec, ...] = field(repr=False, default=())

    def __post_init__(self):
        # the mean completed-epoch duration by observed row (NaN for k = 0)
        epoch_rows = np.ones(self.size_counts_by_row.shape[0], dtype=bool)  # False: k = 0
        epoch_rows[self.count_row_base] = False
        self.epoch_rows = epoch_rows  # observed rows after at least one completed epoch
        ends = np.zeros(epoch_rows.size)
        ends[epoch_rows] = self.epoch_end_within_s
        completed = np.arange(epoch_rows.size) - np.repeat(self.count_row_base, self.num_epochs + 1)
        self.mean_epoch_s_by_row = ends / np.maximum(completed, 1)
        self.mean_epoch_s_by_row[~epoch_rows] = np.nan
        # per flat epoch, one row of what the view reads at the current epoch
        self.epoch_table = np.stack(
            [self.epoch_duration_s, self.epoch_start_within_s, self.epoch_rate, self.epoch_batch_size.astype(np.float64)],
            axis=1,
        )

    def state_rows(self, pos, work_s, done, run_time_s):
        """What the view derives from the dynamic state (per job): ``pos`` the first epoch
        not completed (flat index), ``work_s`` work done, ``done`` completed, ``run_time_s``.

        Returns ``(rows, epochs_done, batch_size, counts)``: ``rows`` is (7, k) float64 with
        the current epoch's duration, the mean completed-epoch duration, the current
        throughput, (scratch), the share of the current epoch done, the epoch progress and
        the attained service; ``counts`` the observed epochs per reachable size.
        """
        first = self.first_epoch_index
        current = np.minimum(pos, self.last_epoch_index)  # flat index of the current epoch
        epochs_done = pos - first
        np.minimum(epochs_done, self.num_epochs, out=epochs_done)
        observed_row = self.count_row_base + epochs_done
        rows = np.empty((7, pos.size))
        rows[:4] = self.epoch_table[current].T  # duration, start (scratch), rate, batch size
        duration, mean, _, batch, fraction_done, epoch_progress, service = rows
        batch_size = batch.astype(np.int64)
        np.subtract(work_s, mean, out=fraction_done)
        fraction_done /= duration
        np.maximum(fraction_done, _ZERO, out=fraction_done)
        np.minimum(fraction_done, _ONE, out=fraction_done)
        np.putmask(fraction_done, done, _ONE)  # exact, whatever the float rounding
        np.add(current - first, fraction_done, out=epoch_progress)
        self.mean_epoch_s_by_row.take(observed_row, out=mean, mode="clip")  # indices are in range
        np.multiply(run_time_s, self.gang, out=service)
        return rows, epochs_done, batch_size, self.size_counts_by_row[observed_row]

    @property
    def size_counts_through_epoch(self) -> np.ndarray:
        """(flat epochs, W) epochs per reachable size up to and including each epoch: the
        observed rows without each job's zero row (the batched env's epoch bank stores these)."""
        return self.size_counts_by_row[self.epoch_rows]


def build_static_arrays(specs: Sequence[JobSpec], throughputs: ThroughputTable) -> StaticJobArrays:
    """Derive every job's profile (:func:`~shockwave_gym.profile.job_profile`, which checks
    it) and flatten the per-epoch arrays."""
    profiles = [job_profile(spec, throughputs) for spec in specs]
    counts = np.array([p.epoch_durations_s.size for p in profiles], dtype=np.int64)
    offset = np.zeros(len(specs) + 1, dtype=np.int64)
    np.cumsum(counts, out=offset[1:])
    durations = np.concatenate([p.epoch_durations_s for p in profiles]) if profiles else np.zeros(0)
    within = np.concatenate([np.cumsum(p.epoch_durations_s) for p in profiles]) if profiles else np.zeros(0)
    # isolated time = the last cumulative epoch end, so that work == iso lands exactly on it
    iso = within[offset[1:] - 1] if profiles else np.zeros(0)
    base = np.zeros(len(specs), dtype=np.float64)
    if len(specs):
        base[1:] = np.cumsum(iso)[:-1]
    job_of_epoch = np.repeat(np.arange(len(specs)), counts)
    flat_sizes = np.concatenate([p.batch_sizes for p in profiles]) if profiles else np.zeros(0, np.int64)
    reachable, valid = _reachable_matrix([p.reachable_sizes for p in profiles])
    return StaticJobArrays(
        arrival_s=np.array([s.arrival_s for s in specs], dtype=np.float64),
        gang=np.array([s.gang for s in specs], dtype=np.int64),
        num_epochs=counts,
        initial_batch_size=np.array([s.initial_batch_size for s in specs], dtype=np.int64),
        priority=np.array([s.priority for s in specs], dtype=np.float64),
        reachable_sizes=reachable,
        reachable_valid=valid,
        isolated_time_s=iso,
        epoch_offset=offset,
        epoch_end_global_s=within + base[job_of_epoch],
        epoch_end_within_s=within,
        epoch_start_within_s=within - durations,
        first_epoch_index=offset[:-1].copy(),
        last_epoch_index=offset[1:] - 1,
        job_base_s=base,
        epoch_batch_size=flat_sizes,
        epoch_rate=np.concatenate([p.throughputs for p in profiles]) if profiles else np.zeros(0),
        epoch_duration_s=durations,
        count_row_base=offset[:-1] + np.arange(len(specs)),
        size_counts_by_row=_size_counts_by_row(reachable, flat_sizes, job_of_epoch, offset),
        specs=tuple(specs),
    )


def _reachable_matrix(reachable: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:
    width = max((len(r) for r in reachable), default=1)
    sizes = np.zeros((len(reachable), width), dtype=np.int64)
    valid = np.zeros((len(reachable), width), dtype=bool)
    for j, row in enumerate(reachable):
        sizes[j, : len(row)] = row
        valid[j, : len(row)] = True
    return sizes, valid


def _size_counts_by_row(
    reachable: np.ndarray, flat_sizes: np.ndarray, job_of_epoch: np.ndarray, offset: np.ndarray
) -> np.ndarray:
    """(flat epochs + J, W): per job, a zero row, then the epochs at each reachable size up
    to and including each of its epochs, so the observed counts of any state are one gather."""
    # job_profile guarantees every scheduled size is reachable, so each row has one match
    one_hot = (reachable[job_of_epoch] == flat_sizes[:, None]).astype(np.int32)
    cum = np.cumsum(one_hot, axis=0)
    # subtract the running total at each job's start so counts restart per job
    start_totals = np.vstack([np.zeros((1, reachable.shape[1]), np.int32), cum])[offset[:-1]]
    counts = cum - start_totals[job_of_epoch]
    epoch_rows = np.ones(counts.shape[0] + offset.size - 1, dtype=bool)
    epoch_rows[offset[:-1] + np.arange(offset.size - 1)] = False  # each job's k = 0 row
    by_row = np.zeros((epoch_rows.size, counts.shape[1]), dtype=counts.dtype)
    by_row[epoch_rows] = counts
    return by_row

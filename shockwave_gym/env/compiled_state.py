"""The single env's compiled step's state struct (:class:`SingleState`) and its codes: what
:mod:`shockwave_gym.env.compiled_kernels` reads and writes, by name, built in one place
(:class:`shockwave_gym.env.compiled.CompiledStep`). Every array field is its owner's own
object (the trace's tables, the Simulator's per-job arrays, the slot map's), not a copy.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: Decision codes of compiled_kernels.round_step.
PRIORITY, SELECT, ALL_ACTIVE, NOOP, GIVEN = 0, 1, 2, 3, 4
#: Reward term codes (-1 ends the list).
JCT, MAKESPAN, FTF, FTF_EXCESS = 0, 1, 2, 3


class Tables(NamedTuple):
    """One trace's static tables (StaticJobArrays, the predictor's, the per-type rates)."""

    isolated_time_s: np.ndarray
    gang: np.ndarray
    arrival_s: np.ndarray
    job_base_s: np.ndarray
    epoch_end_global_s: np.ndarray
    first_epoch_index: np.ndarray
    last_epoch_index: np.ndarray
    num_epochs: np.ndarray
    epoch_table: np.ndarray
    mean_epoch_s_by_row: np.ndarray
    size_counts_by_row: np.ndarray
    count_row_base: np.ndarray
    initial_batch_size: np.ndarray
    prior: np.ndarray
    duration_at_s: np.ndarray
    type_sizes: np.ndarray
    type_relative: np.ndarray


class Rules(NamedTuple):
    """The round constants, the reward's terms and the observation's constants."""

    round_s: float
    restart_threshold_s: float
    restart_overhead_s: float
    gpus: int
    term_code: np.ndarray
    term_weight: np.ndarray
    jct_normaliser_s: float
    unfair_threshold: float
    scale_in: np.ndarray
    cluster_low: np.ndarray
    cluster_high: np.ndarray
    time_unit_s: float
    log_time: float


class Dynamic(NamedTuple):
    """The Simulator's per-job arrays (its own objects, written in place)."""

    status: np.ndarray
    work_done_s: np.ndarray
    completion_s: np.ndarray
    run_time_s: np.ndarray
    rounds_run: np.ndarray
    last_run_s: np.ndarray
    last_overhead_s: np.ndarray
    ran_last_round: np.ndarray
    epoch_pos: np.ndarray


class Slots(NamedTuple):
    """The slot map's arrays (its own objects) and the queue's buffer."""

    slot_job: np.ndarray
    job_slot: np.ndarray
    queue: np.ndarray


class Outputs(NamedTuple):
    """Scalars out (slots I_* and F_*), raw job features (features, slots), cluster features."""

    iout: np.ndarray
    fout: np.ndarray
    raw: np.ndarray
    cluster: np.ndarray


class SingleState(NamedTuple):
    """Everything :func:`round_step` reads and writes, by name."""

    tables: Tables
    rules: Rules
    sim: Dynamic
    slots: Slots
    out: Outputs

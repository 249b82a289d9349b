"""The state struct the vector env's compiled kernels read and write: one named tuple of the
K clusters' arrays, built in one place (:meth:`ClusterVectorEnv._kernel_state`) from the
owners' own named views (:attr:`BatchSimulator.arrays`, :attr:`BatchSlotMap.arrays`,
:attr:`TraceJobTables.arrays`, the estimates and reward tables below). Every field is the
owner's array itself, not a copy: a kernel writing ``state.sim.work_done_s`` writes the
simulator's. An owner that replaces an array (a wider trace, more round records) builds its
view again, and the env its struct with it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from shockwave_gym.batch.rounds import SimArrays
from shockwave_gym.env.vector.estimates import JobTables
from shockwave_gym.env.vector.slots import SlotArrays


class Estimates(NamedTuple):
    """Per (cluster, job): the derived quantities, predicted remaining time and rho-hat
    (kept between steps: a job's are recomputed only once it ran again), and per cluster the
    number of active jobs."""

    progress: np.ndarray
    remaining: np.ndarray
    rho: np.ndarray
    mean: np.ndarray
    batch: np.ndarray
    rate: np.ndarray
    num_active: np.ndarray
    derived: np.ndarray
    derived_rounds: np.ndarray

    @classmethod
    def zeros(cls, shape: tuple[int, int]) -> Estimates:
        """Nothing derived yet, for (K, jobs) clusters."""
        return cls(np.zeros(shape), np.zeros(shape), np.zeros(shape), np.zeros(shape), np.ones(shape, np.int64),
                   np.zeros(shape), np.zeros(shape[0], np.int64), np.zeros(shape, bool), np.zeros(shape, np.int64))


class RewardTables(NamedTuple):
    """Per cluster, its reward's terms as codes (fused.JCT, ...; -1 ends the list) and
    weights, and its ``jct_normaliser_s``."""

    term_code: np.ndarray
    term_weight: np.ndarray
    jct_normaliser_s: np.ndarray


class KeptFeatures(NamedTuple):
    """The kept version 2 job features per (cluster, slot): the float32 values and, per slot,
    the job they describe (-1 none: zeros, -2 unknown), its rounds run and ran-last flag then;
    ``plan``, the last observation's plan (features.job_rows_v2)."""

    values: np.ndarray
    job: np.ndarray
    rounds: np.ndarray
    ran: np.ndarray
    plan: np.ndarray

    @classmethod
    def zeros(cls, num_clusters: int, slots: int, features: int) -> KeptFeatures:
        shape = (num_clusters, slots)
        return cls(np.zeros((*shape, features), np.float32), np.full(shape, -2, np.int64), np.zeros(shape, np.int64),
                   np.zeros(shape, bool), np.zeros(shape, np.int64))


class ClusterState(NamedTuple):
    """Everything a step's kernels read and write, by name. ``sel`` is scratch (K, jobs)."""

    sim: SimArrays
    slots: SlotArrays
    tables: JobTables
    est: Estimates
    reward: RewardTables
    max_rounds: np.ndarray
    sel: np.ndarray


class StepIO(NamedTuple):
    """One step's inputs (which clusters act or were just reset; the scores or select bits)
    and outputs per cluster (reward, rounds run, repairs; refused actions in ``bad``; a
    cluster that needs more round records in ``pending``)."""

    acting: np.ndarray
    fresh: np.ndarray
    scores: np.ndarray
    wanted: np.ndarray
    reward: np.ndarray
    rounds: np.ndarray
    repairs: np.ndarray
    bad: np.ndarray
    pending: np.ndarray

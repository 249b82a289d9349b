"""The tables and steps around the kernels' features (:mod:`~shockwave_gym.env.vector.jit`,
:mod:`~shockwave_gym.env.vector.fused`): the predictor's per-trace tables, and the job
features' logarithms (numpy's, as the reference takes them) and constants.

The per-trace predictor tables come from
:class:`~shockwave_gym.interface.predictor.RemainingTimePredictor` itself. Sums over reachable
batch sizes are short (< 8 terms), so they add in index order whatever the padding, exactly as
for one cluster.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from shockwave_gym.cluster import TYPE_ORDER
from shockwave_gym.errors import InputError
from shockwave_gym.interface.observation import (
    JOB_FEATURES,
    JOB_FEATURES_V2,
    LOG_SCALE_IN,
    LOG_SCALE_OUT,
    V2_JOB_HIGH,
    V2_JOB_LOW,
    V2_LOG1P_ROWS,
    V2_LOG2_ROWS,
    V2_SCALE_IN,
    V2_SCALE_OUT,
)
from shockwave_gym.interface.predictor import RemainingTimePredictor

_JOB_LOW = np.array([f[1] for f in JOB_FEATURES], np.float32).astype(np.float64)[:, None, None]
_JOB_HIGH = np.array([f[2] for f in JOB_FEATURES], np.float32).astype(np.float64)[:, None, None]
#: numpy sums fewer than 8 terms in index order; more would change the grouping.
_MAX_SIZES = 7


class JobTables(NamedTuple):
    """A :class:`TraceJobTables`' arrays as the compiled kernels read them: job ``j`` of
    cluster ``k`` is row ``row0[k] + j``."""

    prior: np.ndarray
    duration_at_s: np.ndarray
    row0: np.ndarray
    type_sizes: np.ndarray
    type_relative: np.ndarray


class TraceJobTables:
    """The compiled path's per-job tables (the predictor's duration at each reachable size and
    Dirichlet prior, the observation's per-type rates), each trace's stored once however many
    clusters run it: job ``j`` of cluster ``k`` is row ``row0[k] + j``. Rows are copied from
    the per-trace tables (the predictor's, :func:`~shockwave_gym.interface.observation.type_throughput_table`'s)
    and padded (prior and durations 0, sizes -1, rates 0), so every lookup gives the same
    value; clusters sharing a trace share its rows, which keeps them in cache."""

    #: Stored rows tolerated beyond twice the live ones before a rebuild.
    slack_rows = 4096

    def __init__(self, num_clusters: int):
        self.row0 = np.zeros(num_clusters, np.int64)
        self.prior = np.zeros((0, 1))
        self.duration_at_s = np.zeros((0, 1))
        self.type_sizes = np.full((0, 1), -1, np.int64)
        self.type_relative = np.zeros((0, 1, len(TYPE_ORDER)))
        self.size = 0
        self._entries: dict[int, tuple[int, RemainingTimePredictor, tuple | None]] = {}
        self._owners: list[tuple | None] = [None] * num_clusters  # (predictor, type table) per cluster
        self._arrays: JobTables | None = None

    @property
    def arrays(self) -> JobTables:
        """The kernels' view of the tables (the same objects), built again after they grow."""
        if self._arrays is None:
            self._arrays = JobTables(self.prior, self.duration_at_s, self.row0, self.type_sizes, self.type_relative)
        return self._arrays

    def load(self, k: int, predictor: RemainingTimePredictor, type_table: tuple | None) -> None:
        """Point cluster ``k`` at ``predictor``'s (and ``type_table``'s) rows, storing them on
        first sight (dropping the tables no cluster runs any more when they pile up)."""
        if predictor.prior.shape[1] > _MAX_SIZES:
            raise InputError(f"the vector env supports at most {_MAX_SIZES} reachable batch sizes per job, "
                             f"got {predictor.prior.shape[1]}")
        self._owners[k] = (predictor, type_table)
        if id(predictor) not in self._entries:
            live = sum(o[0].prior.shape[0] for o in {id(o[0]): o for o in self._owners if o is not None}.values())
            if self.size + predictor.prior.shape[0] > 2 * live + self.slack_rows:
                self._rebuild()
            if id(predictor) not in self._entries:
                self._entries[id(predictor)] = (self._append(predictor, type_table), predictor, type_table)
        self.row0[k] = self._entries[id(predictor)][0]

    def _append(self, predictor: RemainingTimePredictor, type_table: tuple | None) -> int:
        n, w = predictor.prior.shape
        sizes, relative = type_table if type_table is not None else (np.full((n, 1), -1, np.int64), None)
        width = max(self.prior.shape[1], w)
        type_width = max(self.type_sizes.shape[1], sizes.shape[1])
        start = self.size
        needed = start + n
        if needed > self.prior.shape[0] or width > self.prior.shape[1] or type_width > self.type_sizes.shape[1]:
            capacity = max(needed, 2 * self.prior.shape[0], 256)
            for name, fill, tail in (("prior", 0.0, ()), ("duration_at_s", 0.0, ()), ("type_sizes", -1, ()),
                                     ("type_relative", 0.0, (len(TYPE_ORDER),))):
                old = getattr(self, name)
                grown = np.full((capacity, type_width if name.startswith("type") else width, *tail), fill, old.dtype)
                grown[: self.size, : old.shape[1]] = old[: self.size]
                setattr(self, name, grown)
            self._arrays = None
        self.prior[start:needed] = 0.0
        self.prior[start:needed, :w] = predictor.prior
        self.duration_at_s[start:needed] = 0.0
        self.duration_at_s[start:needed, :w] = predictor.duration_at_s
        self.type_sizes[start:needed] = -1
        self.type_sizes[start:needed, : sizes.shape[1]] = sizes
        self.type_relative[start:needed] = 0.0
        if relative is not None:
            self.type_relative[start:needed, : relative.shape[1]] = relative
        self.size = needed
        return start

    def _rebuild(self) -> None:
        """Store again only the tables some cluster runs, and point every cluster at them."""
        owners = {id(o[0]): o for o in self._owners if o is not None}
        self._entries = {}
        self.size = 0
        for key, (predictor, type_table) in owners.items():
            self._entries[key] = (self._append(predictor, type_table), predictor, type_table)
        for k, owner in enumerate(self._owners):
            if owner is not None:
                self.row0[k] = self._entries[id(owner[0])][0]


def take_logarithms(raw: np.ndarray) -> np.ndarray:
    """numpy's log2 (row 2) and log1p (rows 3-9), in place, on the compiled path's raw
    (features, occupied slots) block: the same vectorised calls as ``job_features``."""
    np.log2(raw[2], out=raw[2])
    np.log1p(raw[3:], out=raw[3:])
    return raw


#: Per-feature constants of the compiled path, as flat arrays.
SCALE_IN = np.ascontiguousarray(LOG_SCALE_IN[:, 0])
SCALE_OUT = np.ascontiguousarray(LOG_SCALE_OUT[:, 0])
JOB_LOW = np.ascontiguousarray(_JOB_LOW[:, 0, 0])
JOB_HIGH = np.ascontiguousarray(_JOB_HIGH[:, 0, 0])


V2_FEATURES = len(JOB_FEATURES_V2)
#: Version 2's per-feature constants of the batched path, as flat arrays.
V2_IN = np.ascontiguousarray(V2_SCALE_IN)
V2_OUT = np.ascontiguousarray(V2_SCALE_OUT)
V2_LOW = np.ascontiguousarray(V2_JOB_LOW)
V2_HIGH = np.ascontiguousarray(V2_JOB_HIGH)


def take_logarithms_v2(raw: np.ndarray) -> np.ndarray:
    """numpy's log2 (rows 2-3) and log1p (rows 4-10), in place, on a C-contiguous
    (features, slots) block: contiguous runs, as ``transform_v2``'s calls (numpy's vectorised
    logarithms give the same bits wherever a value sits in a contiguous run)."""
    np.log2(raw[V2_LOG2_ROWS], out=raw[V2_LOG2_ROWS])
    np.log1p(raw[V2_LOG1P_ROWS], out=raw[V2_LOG1P_ROWS])
    return raw

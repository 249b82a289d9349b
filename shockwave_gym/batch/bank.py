"""The per-epoch arrays of every trace the clusters of a batch run, in one flat store.

Each distinct trace (one :class:`~shockwave_gym.state.StaticJobArrays`) is stored once,
however many clusters run it, at an offset; a job's epochs are found at the trace's offset
plus the job's own flat index. Values are copied unchanged, so every lookup gives exactly
what the single simulator's arrays hold. Traces no longer run by any cluster are dropped
when a new one would not fit otherwise (:meth:`EpochBank.compact`).

A trace on a cluster of several GPU types is stored with its per-type epoch arrays
(:class:`~shockwave_gym.hetero_state.TypedJobArrays`), keyed by those: the same trace on two
clusters of different types is stored twice.
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.cluster import TYPE_ORDER
from shockwave_gym.jobs import GANG_SIZES
from shockwave_gym.state import StaticJobArrays

#: Type columns of :attr:`EpochBank.typed`: every GPU type a cluster may have, or on one
#: type every GPU count of an elastic job's configurations (shockwave_gym.elastic).
MAX_TYPES = max(len(TYPE_ORDER), len(GANG_SIZES))
#: Rows of :attr:`EpochBank.typed`: (TypedJobArrays field) per row.
_TYPED = ("epoch_duration_s", "epoch_start_s", "epoch_end_global_s", "epoch_rate")

#: First column of the size counts in :attr:`EpochBank.packed`.
PACKED_COUNTS = 5
#: The columns before them: (StaticJobArrays field) per column.
_PACKED = ("epoch_duration_s", "epoch_start_within_s", "epoch_rate", "epoch_batch_size", "epoch_end_within_s")


class EpochBank:
    """The flat per-epoch arrays of distinct traces the kernels read: ``end_global`` (each
    epoch's end in the trace's flat time) and ``packed``, one row per epoch (a job's lookups
    share cache lines): duration, start within the job, rate, batch size, end within the job,
    then the size counts through the epoch, ``width`` columns (the widest reachable-size list
    seen; narrower traces padded with zeros); and ``typed``, per epoch the rows of
    ``_TYPED`` by type (duration, start within the job, end in the trace's flat time of that
    type, rate), zeros for a trace of one type."""

    #: Dead epochs :meth:`compact` tolerates even while there is room (tests lower it).
    min_dead_epochs = 1 << 22

    def __init__(self) -> None:
        self.size = 0
        self.width = 1
        self.end_global = np.zeros(0)
        self.packed = np.zeros((0, PACKED_COUNTS + self.width))
        self.typed = np.zeros((0, len(_TYPED), MAX_TYPES))
        self._entries: dict[int, tuple[int, object]] = {}

    def start_of(self, static: StaticJobArrays, typed=None) -> int:
        """Offset of ``static``'s epochs in the flat arrays (stored on first use), with the
        per-type arrays ``typed`` (a TypedJobArrays of it, or None: one type)."""
        source = static if typed is None else typed
        entry = self._entries.get(id(source))
        if entry is not None:
            return entry[0]
        start = self._append(static, typed)
        self._entries[id(source)] = (start, source)
        return start

    def _append(self, static: StaticJobArrays, typed) -> int:
        count = int(static.epoch_duration_s.shape[0])
        counts = static.size_counts_through_epoch
        width = max(self.width, counts.shape[1])
        needed = self.size + count
        if needed > self.end_global.size or width > self.width:
            capacity = max(needed, 2 * self.end_global.size, 1024) if needed > self.end_global.size else self.end_global.size
            end_global = np.zeros(capacity)
            end_global[: self.size] = self.end_global[: self.size]
            packed = np.zeros((capacity, PACKED_COUNTS + width))
            packed[: self.size, : self.packed.shape[1]] = self.packed[: self.size]
            self.end_global, self.packed, self.width = end_global, packed, width
            if capacity > self.typed.shape[0]:
                grown = np.zeros((capacity, len(_TYPED), MAX_TYPES))
                grown[: self.size] = self.typed[: self.size]
                self.typed = grown
        start = self.size
        self.end_global[start:needed] = static.epoch_end_global_s
        rows = self.packed[start:needed]
        for column, name in enumerate(_PACKED):
            rows[:, column] = getattr(static, name)
        rows[:, PACKED_COUNTS:] = 0
        rows[:, PACKED_COUNTS : PACKED_COUNTS + counts.shape[1]] = counts
        typed_rows = self.typed[start:needed]
        typed_rows[:] = 0.0
        if typed is not None:
            num_types = typed.capacity.size
            for row, name in enumerate(_TYPED):
                typed_rows[:, row, :num_types] = getattr(typed, name)
        self.size = needed
        return start

    def compact(self, live: list, incoming=None) -> dict[int, int]:
        """Drop the stored traces not in ``live``, moving the others down in place, when
        ``incoming`` (a trace about to be stored) would not fit otherwise; returns
        {id(source): shift of its offset} (empty when nothing moved). A trace is named by
        its source: the TypedJobArrays it was stored with, else its StaticJobArrays.

        In place: the arrays keep their size, so the bank stops growing once it holds about
        twice the live traces, and no fresh memory is touched in steady state.
        """
        needed = 0 if incoming is None or id(incoming) in self._entries else int(incoming.epoch_duration_s.shape[0])
        keep = {id(s) for s in live}
        dead = sum(int(st.epoch_duration_s.shape[0]) for key, (_, st) in self._entries.items() if key not in keep)
        if dead == 0 or (self.size + needed <= self.end_global.size and dead <= self.min_dead_epochs):
            return {}
        shifts = {}
        entries = sorted(((start, key, st) for key, (start, st) in self._entries.items() if key in keep),
                         key=lambda entry: entry[0])
        self._entries = {}
        write = 0
        stores = [self.end_global, self.packed, self.typed]
        for start, key, static in entries:
            count = int(static.epoch_duration_s.shape[0])
            if start != write:
                for store in stores:
                    store[write : write + count] = store[start : start + count]
                shifts[key] = write - start
            self._entries[key] = (write, static)
            write += count
        self.size = write
        return shifts

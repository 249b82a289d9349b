"""The per-epoch arrays of every trace the clusters of a batch run, in one flat store.

Each distinct trace (one :class:`~shockwave_gym.state.StaticJobArrays`) is stored once,
however many clusters run it, at an offset; a job's epochs are found at the trace's offset
plus the job's own flat index. Values are copied unchanged, so every lookup gives exactly
what the single simulator's arrays hold. Traces no longer run by any cluster are dropped
when a new one would not fit otherwise (:meth:`EpochBank.compact`).
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.state import StaticJobArrays

#: First column of the size counts in :attr:`EpochBank.packed`.
PACKED_COUNTS = 5
#: The columns before them: (StaticJobArrays field) per column.
_PACKED = ("epoch_duration_s", "epoch_start_within_s", "epoch_rate", "epoch_batch_size", "epoch_end_within_s")


class EpochBank:
    """The flat per-epoch arrays of distinct traces the kernels read: ``end_global`` (each
    epoch's end in the trace's flat time) and ``packed``, one row per epoch (a job's lookups
    share cache lines): duration, start within the job, rate, batch size, end within the job,
    then the size counts through the epoch, ``width`` columns (the widest reachable-size list
    seen; narrower traces padded with zeros)."""

    #: Dead epochs :meth:`compact` tolerates even while there is room (tests lower it).
    min_dead_epochs = 1 << 22

    def __init__(self) -> None:
        self.size = 0
        self.width = 1
        self.end_global = np.zeros(0)
        self.packed = np.zeros((0, PACKED_COUNTS + self.width))
        self._entries: dict[int, tuple[int, StaticJobArrays]] = {}

    def start_of(self, static: StaticJobArrays) -> int:
        """Offset of ``static``'s epochs in the flat arrays (stored on first use)."""
        entry = self._entries.get(id(static))
        if entry is not None:
            return entry[0]
        start = self._append(static)
        self._entries[id(static)] = (start, static)
        return start

    def _append(self, static: StaticJobArrays) -> int:
        count = int(static.epoch_duration_s.size)
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
        start = self.size
        self.end_global[start:needed] = static.epoch_end_global_s
        rows = self.packed[start:needed]
        for column, name in enumerate(_PACKED):
            rows[:, column] = getattr(static, name)
        rows[:, PACKED_COUNTS:] = 0
        rows[:, PACKED_COUNTS : PACKED_COUNTS + counts.shape[1]] = counts
        self.size = needed
        return start

    def compact(self, live: list[StaticJobArrays], incoming: StaticJobArrays | None = None) -> dict[int, int]:
        """Drop the stored traces not in ``live``, moving the others down in place, when
        ``incoming`` (a trace about to be stored) would not fit otherwise; returns
        {id(static): shift of its offset} (empty when nothing moved).

        In place: the arrays keep their size, so the bank stops growing once it holds about
        twice the live traces, and no fresh memory is touched in steady state.
        """
        needed = 0 if incoming is None or id(incoming) in self._entries else int(incoming.epoch_duration_s.size)
        keep = {id(s) for s in live}
        dead = sum(int(st.epoch_duration_s.size) for key, (_, st) in self._entries.items() if key not in keep)
        if dead == 0 or (self.size + needed <= self.end_global.size and dead <= self.min_dead_epochs):
            return {}
        shifts = {}
        entries = sorted(((start, key, st) for key, (start, st) in self._entries.items() if key in keep),
                         key=lambda entry: entry[0])
        self._entries = {}
        write = 0
        stores = [self.end_global, self.packed]
        for start, key, static in entries:
            count = int(static.epoch_duration_s.size)
            if start != write:
                for store in stores:
                    store[write : write + count] = store[start : start + count]
                shifts[key] = write - start
            self._entries[key] = (write, static)
            write += count
        self.size = write
        return shifts

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

#: Flat per-epoch arrays copied from each trace: (bank name, StaticJobArrays field, dtype).
_FIELDS = (
    ("end_global", "epoch_end_global_s", np.float64),
    ("end_within", "epoch_end_within_s", np.float64),
    ("start_within", "epoch_start_within_s", np.float64),
    ("duration", "epoch_duration_s", np.float64),
    ("batch_size", "epoch_batch_size", np.int64),
    ("rate", "epoch_rate", np.float64),
)


#: First column of the size counts in :attr:`EpochBank.packed`.
PACKED_COUNTS = 5


class EpochBank:
    """Flat epoch arrays of distinct traces; ``size_counts`` is (epochs, width) int32 with
    ``width`` the widest reachable-size list seen (narrower traces padded with zeros)."""

    #: Dead epochs :meth:`compact` tolerates even while there is room (tests lower it).
    min_dead_epochs = 1 << 22

    def __init__(self) -> None:
        self.size = 0
        self.width = 1
        self.arrays = {name: np.zeros(0, dtype) for name, _, dtype in _FIELDS}
        self.size_counts = np.zeros((0, self.width), np.int32)
        #: The compiled path's copy, one row per epoch (a job's lookups share cache lines):
        #: duration, start within the job, rate, batch size, end within the job, size counts.
        self.packed = np.zeros((0, PACKED_COUNTS + self.width))
        self._entries: dict[int, tuple[int, StaticJobArrays]] = {}

    def __getattr__(self, name: str) -> np.ndarray:
        arrays = self.__dict__.get("arrays")
        if arrays is not None and name in arrays:
            return arrays[name]
        raise AttributeError(name)

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
        width = static.size_counts_by_row.shape[1]
        if width > self.width:
            grown = np.zeros((self.size_counts.shape[0], width), np.int32)
            grown[:, : self.width] = self.size_counts
            packed = np.zeros((self.packed.shape[0], PACKED_COUNTS + width))
            packed[:, : self.packed.shape[1]] = self.packed
            self.size_counts, self.packed, self.width = grown, packed, width
        needed = self.size + count
        if needed > self.size_counts.shape[0]:
            capacity = max(needed, 2 * self.size_counts.shape[0], 1024)
            for name, array in self.arrays.items():
                grown = np.zeros(capacity, array.dtype)
                grown[: self.size] = array[: self.size]
                self.arrays[name] = grown
            grown = np.zeros((capacity, self.width), np.int32)
            grown[: self.size] = self.size_counts[: self.size]
            self.size_counts = grown
            packed = np.zeros((capacity, self.packed.shape[1]))
            packed[: self.size] = self.packed[: self.size]
            self.packed = packed
        start = self.size
        for name, source, _ in _FIELDS:
            self.arrays[name][start:needed] = getattr(static, source)
        self.size_counts[start:needed] = 0
        self.size_counts[start:needed, :width] = static.size_counts_through_epoch
        rows = self.packed[start:needed]
        for column, name in enumerate(("duration", "start_within", "rate", "batch_size", "end_within")):
            rows[:, column] = self.arrays[name][start:needed]
        rows[:, PACKED_COUNTS:] = self.size_counts[start:needed]
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
        if dead == 0 or (self.size + needed <= self.size_counts.shape[0] and dead <= self.min_dead_epochs):
            return {}
        shifts = {}
        entries = sorted(((start, key, st) for key, (start, st) in self._entries.items() if key in keep),
                         key=lambda entry: entry[0])
        self._entries = {}
        write = 0
        stores = [*self.arrays.values(), self.size_counts, self.packed]
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

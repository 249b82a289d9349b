"""The per-epoch arrays of every trace the clusters of a batch run, in one flat store.

Each distinct trace (one :class:`~shockwave_gym.state.StaticJobArrays`) is stored once,
however many clusters run it, at an offset; a job's epochs are found at the trace's offset
plus the job's own flat index. Values are copied unchanged, so every lookup gives exactly
what the single simulator's arrays hold. Traces no longer run by any cluster are dropped
when the dead part outgrows the live part (:meth:`EpochBank.compact`).
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

    #: Dead epochs tolerated before :meth:`compact` rebuilds, however small the live part.
    min_dead_epochs = 1 << 16

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

    @property
    def live_epochs(self) -> int:
        return sum(int(static.epoch_duration_s.size) for _, static in self._entries.values())

    def _append(self, static: StaticJobArrays) -> int:
        count = int(static.epoch_duration_s.size)
        width = static.size_counts_through_epoch.shape[1]
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

    def compact(self, live: list[StaticJobArrays]) -> dict[int, int]:
        """Keep only the stored traces in ``live``; returns {id(static): shift of its offset}.

        Does nothing (returns {}) while the dead epochs are fewer than the live ones.
        """
        keep = {id(s): s for s in live if id(s) in self._entries}
        live_epochs = sum(int(s.epoch_duration_s.size) for s in keep.values())
        if self.size - live_epochs <= max(live_epochs, self.min_dead_epochs):
            return {}
        old = {key: start for key, (start, _) in self._entries.items() if key in keep}
        self.size = 0
        self._entries = {}
        shifts = {}
        for key, static in keep.items():
            start = self._append(static)
            self._entries[key] = (start, static)
            shifts[key] = start - old[key]
        return shifts

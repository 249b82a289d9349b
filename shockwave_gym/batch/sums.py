"""Row sums in the exact order of numpy's 1-D float64 ``sum`` (pairwise summation).

``np.sum`` of a 1-D array of n float64 values adds, for n <= 128, eight interleaved running
sums over the largest multiple of 8 elements, combines them as ((r0 + r1) + (r2 + r3)) +
((r4 + r5) + (r6 + r7)), then adds the rest one by one (for n < 8 only the last step, from
0.0); longer arrays are split in two, recursively. Summing a padded row of a matrix instead
would group the elements differently, and float addition is not associative. This module
reproduces the 1-D order for every row at once, whatever each row's length.
"""

from __future__ import annotations

import numpy as np

#: numpy's block size: a 1-D sum of at most this many elements is not split.
_BLOCK = 128


def pairwise_row_sums(values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """(R,) float64: ``np.sum(values[r, :lengths[r]])`` for each row ``r``, bit for bit.

    ``values`` is (R, L) float64; entries beyond each row's length are ignored.
    """
    rows, width = values.shape
    lengths = np.asarray(lengths, dtype=np.int64)
    out = np.zeros(rows)
    long_rows = np.flatnonzero(lengths > _BLOCK)
    for r in long_rows.tolist():  # rare: traces of more than 128 active jobs
        out[r] = np.sum(values[r, : lengths[r]])
    if width == 0:
        return out
    short = lengths <= _BLOCK
    n = np.where(short, lengths, 0)
    main = n - n % 8  # elements that go through the eight running sums
    blocks = (int(main.max()) // 8) if rows else 0
    acc = np.zeros((rows, 8))
    for b in range(blocks):  # x + 0.0 == x, so rows with fewer blocks are unaffected
        chunk = values[:, 8 * b : 8 * b + 8]
        acc += np.where((8 * b < main)[:, None], chunk, 0.0)
    total = ((acc[:, 0] + acc[:, 1]) + (acc[:, 2] + acc[:, 3])) + ((acc[:, 4] + acc[:, 5]) + (acc[:, 6] + acc[:, 7]))
    padded = np.concatenate([values, np.zeros((rows, 8))], axis=1)
    row_index = np.arange(rows)
    for i in range(7):
        index = main + i
        total += np.where(index < n, padded[row_index, np.minimum(index, width)], 0.0)
    out[short] = total[short]
    return out

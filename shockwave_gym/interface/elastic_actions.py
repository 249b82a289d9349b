"""The three action modes with a GPU count per job, for traces with elastic jobs
(docs/ENV.md, "Elastic jobs"; docs/SEMANTICS.md, "Elastic jobs").

``C = len(view.gpu_counts)`` counts (1, 2, 4, 8); count index ``k`` is ``gpu_counts[k]``. A
slot's *allowed* counts are ``view.allowed_counts(job)`` (a rigid job: its gang). Each mode
returns ``(job ids ascending, configuration columns)`` as the elastic simulator takes them
(on one GPU type the column of count index ``k`` is ``k``), and the number of repairs.

* ``select`` - ``MultiDiscrete([C + 1] * max_jobs)``: entry ``s`` is 0 (do not run the job
  in slot ``s``) or ``k + 1`` (run it on ``gpu_counts[k]`` GPUs). **Repair rule**: entries on
  empty slots or on counts the job may not use are dropped; if the rest needs more GPUs than
  the cluster has, jobs are taken in arrival order, skipping any whose count no longer fits.
  Masks (sb3-contrib's MultiDiscrete layout, ``C + 1`` entries per slot): 0 always allowed,
  ``k + 1`` allowed exactly when the slot holds a job that may use ``gpu_counts[k]``.
* ``priority`` - ``Box(-1, 1, (2 * max_jobs,))``: entries ``0..max_jobs-1`` are scores, the
  rest a count preference per slot. Preference ``u`` asks for count index
  ``min(C - 1, floor((u + 1) / 2 * C))``; the job gets the largest allowed count at or below
  it (its smallest allowed count if none is). Slotted jobs are packed by descending score
  (ties: arrival order), each at the largest allowed count up to its asked one that still
  fits, skipped if none fits; queued jobs then fill what is left, in arrival order, at their
  smallest allowed count. Masks: ``(2 * max_jobs,)``, the slots whose entries matter.
* ``sequential`` - ``Discrete(max_jobs * C + 1)``: action ``s * C + k`` picks the job in slot
  ``s`` on ``gpu_counts[k]`` GPUs; ``max_jobs * C`` ends the round. The mask is exact:
  unpicked slotted jobs at the allowed counts that fit the GPUs still free, and "end round"
  (``idle_allowed``). The round closes by itself when no pick fits. Without ``idle_allowed``
  an illegal action fills the rest of the round in arrival order, each job at its smallest
  allowed count that fits, then closes it; the only forced close is when nothing fits.
"""

from __future__ import annotations

import math

import numpy as np

from shockwave_gym.errors import InvalidActionError
from shockwave_gym.interface.actions import sequential_index
from shockwave_gym.interface.slots import SlotMap
from shockwave_gym.view import ClusterView


def _slot_allowed(view: ClusterView, slots: SlotMap) -> np.ndarray:
    """(max_jobs, C) bool: the counts each slot's job may use (no row for empty slots)."""
    allowed = view.count_allowed.any(axis=1)  # one type: the type axis has one entry
    return np.where((slots.slot_job >= 0)[:, None], allowed[np.maximum(slots.slot_job, 0)], False)


def _fit_in_order(ids: np.ndarray, counts: np.ndarray, gpus: int) -> np.ndarray:
    """bool per entry: taken in the order given while its count fits what is left."""
    taken = np.zeros(ids.size, dtype=bool)
    free = gpus
    for i, c in enumerate(counts.tolist()):
        if c <= free:
            taken[i] = True
            free -= c
    return taken


def _as_columns(ids: np.ndarray, count_index: np.ndarray):
    order = np.argsort(ids, kind="stable")
    return ids[order].astype(np.int64), count_index[order].astype(np.int64)


class _ElasticMode:
    """What every elastic mode holds: the slots, the counts, and each slot's allowed counts
    this decision (:meth:`start_round`, called once the slot map is updated)."""

    def __init__(self, max_jobs: int, num_counts: int):
        self.max_jobs, self.num_counts = max_jobs, num_counts
        self._allowed = np.zeros((max_jobs, num_counts), dtype=bool)

    def start_round(self, view: ClusterView, slots: SlotMap) -> None:
        self._allowed = _slot_allowed(view, slots)


class ElasticSelectMode(_ElasticMode):
    """One count (or none) per slot, with the documented repair rule."""

    name = "select"
    closes_every_step = True

    def space(self):
        from gymnasium import spaces

        return spaces.MultiDiscrete(np.full(self.max_jobs, self.num_counts + 1, dtype=np.int64))

    def place(self, action, view: ClusterView, slots: SlotMap, types=None):
        """(job ids ascending, columns, repairs)."""
        entries = np.asarray(action)
        if entries.shape != (self.max_jobs,) or entries.dtype.kind not in "iu" or \
                entries.min(initial=0) < 0 or entries.max(initial=0) > self.num_counts:
            raise InvalidActionError(f"select action must be {self.max_jobs} integers in 0..{self.num_counts}, "
                                     f"got {entries.tolist()!r}")
        allowed = self._allowed
        wanted = entries > 0
        index = np.maximum(entries - 1, 0)
        ok = wanted & allowed[np.arange(self.max_jobs), index]
        ids, k = slots.slot_job[ok], index[ok]
        order = np.argsort(ids, kind="stable")
        ids, k = ids[order], k[order]
        taken = _fit_in_order(ids, np.asarray(view.gpu_counts)[k], view.gpus)
        repairs = int(np.count_nonzero(wanted)) - int(np.count_nonzero(taken))
        return ids[taken].astype(np.int64), k[taken].astype(np.int64), repairs

    def masks(self, slots) -> np.ndarray:
        out = np.ones((self.max_jobs, self.num_counts + 1), dtype=bool)
        out[:, 1:] = self._allowed
        return out.ravel()


class ElasticPriorityMode(_ElasticMode):
    """Scores and a count preference per slot; packed greedily by score."""

    name = "priority"
    closes_every_step = True

    def space(self):
        from gymnasium import spaces

        return spaces.Box(-1.0, 1.0, shape=(2 * self.max_jobs,), dtype=np.float32)

    def place(self, action, view: ClusterView, slots: SlotMap, types=None):
        values = np.asarray(action)
        if values.shape != (2 * self.max_jobs,) or values.dtype.kind not in "biuf":
            raise InvalidActionError(f"priority action must be {2 * self.max_jobs} numbers, got shape {values.shape}")
        values = values.astype(np.float64)
        by_id = slots.slots_by_job()
        if not math.isfinite(float(np.add.reduce(values[np.concatenate([by_id, by_id + self.max_jobs])]))):
            raise InvalidActionError("priority scores and count preferences must be finite")
        allowed = view.count_allowed.any(axis=1)
        counts = np.asarray(view.gpu_counts)
        asked = np.minimum(self.num_counts - 1, np.floor((np.clip(values[self.max_jobs:], -1, 1) + 1) / 2 * self.num_counts))
        order = slots.jobs_by_id()[(-values[by_id]).argsort(kind="stable")]
        ask = dict(zip(slots.slot_job[by_id].tolist(), asked[by_id].astype(int).tolist(), strict=True))
        free = view.gpus
        ids, picked = [], []
        for j in [*order.tolist(), *slots.queue.tolist()]:
            options = np.flatnonzero(allowed[j])
            top = ask.get(j, int(options[0]))
            below = options[options <= top]
            for k in (below[::-1] if below.size else options[:1]).tolist():
                if counts[k] <= free:
                    ids.append(j)
                    picked.append(k)
                    free -= int(counts[k])
                    break
        return (*_as_columns(np.array(ids, dtype=np.int64), np.array(picked, dtype=np.int64)), 0)

    def masks(self, slots) -> np.ndarray:
        occupied = slots.slot_job >= 0
        return np.concatenate([occupied, occupied])


class ElasticSequentialMode(_ElasticMode):
    """One (slot, count) pick per sub-step; holds the round being built."""

    name = "sequential"
    closes_every_step = False

    def __init__(self, max_jobs: int, num_counts: int, *, idle_allowed: bool = True):
        super().__init__(max_jobs, num_counts)
        self.idle_allowed = bool(idle_allowed)
        self.end_action = max_jobs * num_counts
        self.picked = np.zeros(max_jobs, dtype=bool)
        self.picked_count = np.zeros(max_jobs, dtype=np.int64)
        self.free_gpus = 0
        self._slot_job = np.full(max_jobs, -1, dtype=np.int64)
        self._counts = np.ones(num_counts, dtype=np.int64)

    def space(self):
        from gymnasium import spaces

        return spaces.Discrete(self.end_action + 1)

    def start_round(self, view: ClusterView, slots: SlotMap) -> None:
        super().start_round(view, slots)
        self.picked[:] = False
        self.free_gpus = view.gpus
        self._slot_job = slots.slot_job.copy()
        self._counts = np.asarray(view.gpu_counts, dtype=np.int64)

    def pickable(self) -> np.ndarray:
        """(max_jobs, C) bool: unpicked slotted jobs at allowed counts that fit."""
        return self._allowed & ~self.picked[:, None] & (self._counts <= self.free_gpus)[None, :]

    def pick(self, action) -> tuple[bool, bool]:
        a = sequential_index(action, self.end_action)
        if a == self.end_action and self.idle_allowed:
            return True, False
        if a == self.end_action or not self.pickable()[a // self.num_counts, a % self.num_counts]:
            if not self.idle_allowed:
                self._fill()
            return True, True
        self._take(a // self.num_counts, a % self.num_counts)
        return not self.pickable().any(), False

    def _take(self, slot: int, k: int) -> None:
        self.picked[slot] = True
        self.picked_count[slot] = k
        self.free_gpus -= int(self._counts[k])

    def _fill(self) -> None:
        """Pick every job that still fits, in arrival order, at its smallest allowed count."""
        left = np.flatnonzero((self._slot_job >= 0) & ~self.picked)
        for slot in left[np.argsort(self._slot_job[left], kind="stable")].tolist():
            fits = np.flatnonzero(self.pickable()[slot])
            if fits.size:
                self._take(slot, int(fits[0]))

    def forced_picks(self) -> bool:
        """Whether the round is closed with no choice left (nothing fits; never with
        ``idle_allowed``, where "end round" is a choice)."""
        return not self.idle_allowed and not self.pickable().any()

    def placed(self, slots) -> tuple[np.ndarray, np.ndarray]:
        return _as_columns(self._slot_job[self.picked], self.picked_count[self.picked])

    def masks(self, slots) -> np.ndarray:
        return np.append(self.pickable().ravel(), self.idle_allowed)


ELASTIC_MODES = {"select": ElasticSelectMode, "priority": ElasticPriorityMode, "sequential": ElasticSequentialMode}

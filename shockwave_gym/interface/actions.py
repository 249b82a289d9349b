"""The three action modes: how an action becomes the set of jobs that run this round.

Pure decoding, shared by the env and by agents that replay a policy: nothing here needs
the env. ``mode.space()`` builds the matching Gymnasium space.

* ``select`` - ``MultiBinary(max_jobs)``: bit ``s`` asks to run the job in slot ``s``.
  **Repair rule** (deterministic): bits of empty slots are dropped; if the remaining jobs
  need more GPUs than the cluster has, they are taken in arrival order (ascending job id),
  skipping any whose gang no longer fits, so smaller later jobs backfill. Dropped bits are
  counted. :meth:`SelectMode.masks` gives sb3-contrib's MultiBinary layout, two entries per
  bit ``[bit=0 allowed, bit=1 allowed]``, with empty slots forced to 0. Capacity across jobs
  cannot be expressed per bit; the repair rule handles it.
* ``priority`` - ``Box(-1, 1, (max_jobs,))``: one score per slot. Slotted jobs are packed
  by descending score (ties: arrival order), skipping any whose gang no longer fits, then
  queued jobs fill what is left in arrival order. Work-conserving: when the round starts,
  no waiting job fits in the idle GPUs. Scores of empty slots are ignored.
* ``sequential`` - ``Discrete(max_jobs + 1)``: one job per sub-step; action ``max_jobs``
  ends the round. The mask is exact: unpicked slotted jobs whose gang fits the GPUs still
  free, and "end round". The round also closes by itself when no unpicked job fits. With
  ``idle_allowed`` (the class default, observation version 1's env) "end round" is always
  legal and an infeasible pick (unmasked policies) ends the round; without it (the env's
  default) "end round" is never legal (the round closes by itself once no further job
  fits, so every round is work-conserving over the slotted jobs), and an illegal action
  (an infeasible pick or "end round") fills the rest of the round with the pickable jobs in
  arrival order, then closes it. Either way illegal actions are counted.
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.errors import InvalidActionError
from shockwave_gym.interface.packing import pack_in_order
from shockwave_gym.interface.slots import SlotMap
from shockwave_gym.view import ClusterView

ACTION_MODES = ("select", "priority", "sequential")


def all_finite(values: np.ndarray) -> bool:
    """Whether every value is finite, checked one by one (their sum would overflow for finite
    values near the float range)."""
    return bool(np.isfinite(values).all())


def select_bits(action, max_jobs: int) -> np.ndarray:
    """``action`` as a bool array when it is ``max_jobs`` values of exactly 0 or 1 (a
    ``select`` action); :class:`InvalidActionError` otherwise."""
    bits = np.asarray(action)
    if bits.shape != (max_jobs,):
        raise InvalidActionError(f"select action must have shape ({max_jobs},), got {bits.shape}")
    if bits.dtype == bool:
        return bits
    as_bool = bits.astype(bool) if bits.dtype.kind in "iuf" else None
    # exactly 0 or 1 <=> equal to its truth value (0.5, 2, inf and NaN all differ)
    if as_bool is None or np.count_nonzero(as_bool != bits):
        raise InvalidActionError(
            f"select action must hold only 0 and 1 (bool, integer or float), got {bits.tolist()!r}"
        )
    return as_bool


def sequential_index(action, end_action: int, *, bools: bool = True) -> int:
    """A ``sequential`` action as one integer in ``0..end_action``; :class:`InvalidActionError`
    otherwise (a bool counts as an integer only with ``bools``)."""
    value = np.asarray(action)
    integer = np.issubdtype(value.dtype, np.integer) or (bools and value.dtype == bool)
    if value.shape not in ((), (1,)) or not integer:
        raise InvalidActionError(f"sequential action must be one integer, got {action!r}")
    index = int(value.reshape(()))
    if not 0 <= index <= end_action:
        raise InvalidActionError(f"sequential action must be in 0..{end_action}, got {index}")
    return index


class _SlotMode:
    """What every action mode holds: the number of observation slots."""

    def __init__(self, max_jobs: int):
        self.max_jobs = max_jobs


class SelectMode(_SlotMode):
    """MultiBinary selection with the documented repair rule."""

    name = "select"
    closes_every_step = True
    chooses_sorted = True  # choose() returns ascending ids

    def space(self):
        from gymnasium import spaces  # only the env and learners need spaces

        return spaces.MultiBinary(self.max_jobs)

    def choose(self, action, view: ClusterView, slots: SlotMap) -> tuple[np.ndarray, int]:
        """(job ids to run, number of bits the repair rule dropped)."""
        wanted = select_bits(action, self.max_jobs)
        valid = slots.occupied()
        absent = int(np.count_nonzero(wanted > valid))  # bits set on empty slots
        ids = slots.slot_job[wanted & valid]
        ids.sort()
        chosen = pack_in_order(ids, view.gang, view.gpus)
        return chosen, absent + int(ids.size - chosen.size)

    def masks(self, slots) -> np.ndarray:
        """(2 * max_jobs,) bool: ``[bit=0 allowed, bit=1 allowed]`` per slot."""
        out = np.ones((self.max_jobs, 2), dtype=bool)
        out[:, 1] = slots.slot_job >= 0
        return out.ravel()


class PriorityMode(_SlotMode):
    """Scores per slot; the env packs greedily by score, work-conserving."""

    name = "priority"
    closes_every_step = True
    chooses_sorted = False  # choose() returns ids in packing order

    def space(self):
        from gymnasium import spaces

        return spaces.Box(-1.0, 1.0, shape=(self.max_jobs,), dtype=np.float32)

    def order(self, action, slots: SlotMap) -> np.ndarray:
        """The jobs in the order the round takes them: slotted jobs by descending score (ties
        by arrival), then the queue in arrival order; InvalidActionError for a malformed
        action or a non-finite score of an occupied slot."""
        scores = np.asarray(action)
        if scores.shape != (self.max_jobs,):
            raise InvalidActionError(f"priority action must have shape ({self.max_jobs},), got {scores.shape}")
        if scores.dtype.kind not in "biuf":
            raise InvalidActionError(f"priority scores must be numbers (integer or float), got dtype {scores.dtype}")
        scores = scores.astype(np.float64, copy=False)  # every dtype sorts as its values (no integer wrap)
        by_id = slots.slots_by_job()  # occupied slots, ascending job id
        own = scores[by_id]
        if not all_finite(own):
            raise InvalidActionError("priority scores must be finite")
        # descending score, ties by arrival: a stable sort of the id-ordered scores
        order = slots.jobs_by_id()[(-own).argsort(kind="stable")]
        if slots.queue.size:
            order = np.concatenate([order, slots.queue])
        return order

    def choose(self, action, view: ClusterView, slots: SlotMap) -> tuple[np.ndarray, int]:
        return pack_in_order(self.order(action, slots), view.gang, view.gpus), 0

    def masks(self, slots) -> np.ndarray:
        """(max_jobs,) bool: slots whose score matters (informational; nothing to mask)."""
        return slots.slot_job >= 0


class SequentialMode(_SlotMode):
    """One pick per sub-step; holds the round being built."""

    name = "sequential"
    closes_every_step = False
    chooses_sorted = True  # chosen() returns ascending ids

    def __init__(self, max_jobs: int, *, idle_allowed: bool = True):
        super().__init__(max_jobs)
        self.idle_allowed = bool(idle_allowed)
        self.end_action = max_jobs
        self.picked = np.zeros(max_jobs, dtype=bool)
        self.free_gpus = 0
        self._slot_gang = np.zeros(max_jobs, dtype=np.int64)
        self._valid = np.zeros(max_jobs, dtype=bool)
        self._slot_job = np.full(max_jobs, -1, dtype=np.int64)

    def space(self):
        from gymnasium import spaces

        return spaces.Discrete(self.max_jobs + 1)

    def start_round(self, view: ClusterView, slots: SlotMap) -> None:
        """Forget the previous round's picks; call after the slot map is updated."""
        self.picked[:] = False
        self.free_gpus = view.gpus
        self._valid = slots.slot_job >= 0
        self._slot_job = slots.slot_job.copy()
        self._slot_gang = np.where(self._valid, view.gang[np.maximum(slots.slot_job, 0)], 0)

    def pickable(self) -> np.ndarray:
        """(max_jobs,) bool: unpicked slotted jobs whose gang fits the GPUs still free."""
        return self._valid & ~self.picked & (self._slot_gang <= self.free_gpus)

    def pick(self, action) -> tuple[bool, bool]:
        """Apply one sub-step; returns (round closes now, the pick was infeasible)."""
        slot = sequential_index(action, self.max_jobs)
        if slot == self.end_action and self.idle_allowed:
            return True, False
        if slot == self.end_action or not self.pickable()[slot]:
            if not self.idle_allowed:
                self._fill()
            return True, True
        self._take(slot)
        return not self.pickable().any(), False

    def _take(self, slot: int) -> None:
        self.picked[slot] = True
        self.free_gpus -= int(self._slot_gang[slot])

    def _fill(self) -> None:
        """Pick every job that still fits, in arrival order (ascending job id)."""
        left = np.flatnonzero(self._valid & ~self.picked)
        for slot in left[np.argsort(self._slot_job[left], kind="stable")].tolist():
            if self._slot_gang[slot] <= self.free_gpus:
                self._take(slot)

    def forced_picks(self) -> bool:
        """Without ``idle_allowed``, make the picks no policy could make otherwise: every
        unpicked job when they all fit together, or the only pickable job, repeatedly.
        Returns whether the round is now closed (nothing left fits). With
        ``idle_allowed`` nothing is forced ("end round" is always a choice)."""
        if self.idle_allowed:
            return False
        while True:
            pickable = self.pickable()
            count = int(np.count_nonzero(pickable))
            if count == 0:
                return True
            left = self._valid & ~self.picked
            if int(self._slot_gang[left].sum()) <= self.free_gpus:
                for slot in np.flatnonzero(left).tolist():
                    self._take(slot)
                return True
            if count > 1:
                return False
            self._take(int(np.flatnonzero(pickable)[0]))

    def chosen(self, slots) -> np.ndarray:
        return np.sort(slots.slot_job[self.picked])

    def masks(self, slots) -> np.ndarray:
        """(max_jobs + 1,) bool: exact feasibility; the last entry ("end round") is
        ``idle_allowed``."""
        return np.append(self.pickable(), self.idle_allowed)

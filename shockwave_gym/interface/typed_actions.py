"""The action modes on a heterogeneous cluster: how an action becomes a placement, the set
of jobs that run this round and the GPU type each runs on (a gang runs on GPUs of one type).

On a cluster of one type these modes are not used: :func:`~shockwave_gym.interface.actions.make_action_mode`
returns the homogeneous modes, whose spaces and decoding are unchanged. On T > 1 types:

* ``select`` - ``MultiBinary(max_jobs)``, as on one type: the agent chooses the *set*; the
  types are assigned by the placement rule below, in arrival order (ascending job id). A
  selected job that fits no type any more is dropped (the repair rule), and counted.
* ``priority`` - ``Box(-1, 1, (max_jobs,))``, as on one type: the agent chooses the *order*;
  jobs are placed by descending score (ties: arrival order), then queued jobs in arrival
  order, each by the placement rule. Work-conserving per type: when the round starts, no
  waiting job can run on any type that still has its gang free.
* ``sequential`` - ``Discrete(T * max_jobs + 1)``: the agent chooses the job *and* its type.
  Action ``a < T * max_jobs`` puts the job in slot ``a % max_jobs`` on type
  ``a // max_jobs`` (types in the cluster's order, fastest generation first: v100, p100,
  k80); action ``T * max_jobs`` ends the round. On one type this is the homogeneous layout.
  The mask is exact: entry (type t, slot s) is legal when slot s holds a job not yet picked
  this round, the job can run on t (its model has a measured, positive throughput on t at
  its gang) and t still has its gang free. "End round" is always legal. The round also
  closes by itself when no pick is legal. An infeasible pick ends the round and is counted.

**The placement rule** (select and priority) is the simulator's default rule,
:func:`shockwave_gym.placement.place_in_order` (docs/HETEROGENEOUS.md, "Placement"): in the
order given, each job goes to the fastest type *for that job* (its throughput at its current
batch size; ties: cluster order) among the types it can run on that still have its whole
gang free; a job that fits no type is skipped and later ones may backfill. The modes hand
the simulator the explicit placement they computed, so what runs is what was decoded.
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.interface.actions import PriorityMode, SelectMode, select_bits, sequential_index
from shockwave_gym.interface.slots import SlotMap
from shockwave_gym.placement import place_in_order


class TypeContext:
    """What a placement needs to know of a view, read once per decision (the view's per-type
    API): ``capacity`` (T,) GPUs per type in cluster order, ``runnable`` (N, T) bool and
    ``rates`` (N, T) each job's iterations/s at its current batch size on each type."""

    __slots__ = ("capacity", "runnable", "rates")

    def __init__(self, capacity, runnable: np.ndarray, rates: np.ndarray):
        self.capacity = np.asarray(capacity, dtype=np.int64)
        self.runnable = np.asarray(runnable, dtype=bool)
        self.rates = np.asarray(rates, dtype=np.float64)

    @classmethod
    def of(cls, view) -> TypeContext:
        """The context of ``view``'s current state."""
        return cls(view.type_gpus, view.runnable, view.throughput_by_type)

    def place(self, order: np.ndarray, gang: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The default rule over ``order``: (ids placed, in scan order; their type indices)."""
        placed = place_in_order(order, gang, self.rates, self.runnable, self.capacity)
        return placed.job_ids, placed.gpu_types


class TypedSelectMode(SelectMode):
    """``select`` on several types: the set is the agent's, the types the placement rule's."""

    def __init__(self, max_jobs: int, num_types: int):
        super().__init__(max_jobs)
        self.num_types = num_types

    def place(self, action, view, slots: SlotMap, context: TypeContext) -> tuple[np.ndarray, np.ndarray, int]:
        """(job ids to run, ascending; their type indices; bits the repair rule dropped)."""
        wanted = select_bits(action, self.max_jobs)
        valid = slots.occupied()
        absent = int(np.count_nonzero(wanted > valid))
        ids = slots.slot_job[wanted & valid]
        ids.sort()
        chosen, types = context.place(ids, view.gang)  # arrival order in, so ascending out
        return chosen, types, absent + int(ids.size - chosen.size)


class TypedPriorityMode(PriorityMode):
    """``priority`` on several types: the order is the agent's, the types the placement rule's."""

    def __init__(self, max_jobs: int, num_types: int):
        super().__init__(max_jobs)
        self.num_types = num_types

    def place(self, action, view, slots: SlotMap, context: TypeContext) -> tuple[np.ndarray, np.ndarray, int]:
        chosen, types = context.place(self.order(action, slots), view.gang)
        return chosen, types, 0


class TypedSequentialMode:
    """``sequential`` on several types: one (slot, type) pick per sub-step; holds the round
    being built (``picked`` per slot, ``picked_type`` per slot (-1 unpicked), ``free`` per type)."""

    name = "sequential"
    closes_every_step = False
    chooses_sorted = True

    def __init__(self, max_jobs: int, num_types: int, *, idle_allowed: bool = True):
        self.max_jobs = max_jobs
        self.num_types = num_types
        self.idle_allowed = bool(idle_allowed)
        self.end_action = num_types * max_jobs
        self.picked = np.zeros(max_jobs, dtype=bool)
        self.picked_type = np.full(max_jobs, -1, dtype=np.int64)
        self.free = np.zeros(num_types, dtype=np.int64)
        self._slot_gang = np.zeros(max_jobs, dtype=np.int64)
        self._slot_runnable = np.zeros((num_types, max_jobs), dtype=bool)
        self._slot_job = np.full(max_jobs, -1, dtype=np.int64)
        self._slot_rates = np.zeros((max_jobs, num_types))

    @property
    def free_gpus(self) -> int:
        """GPUs of every type still free in the round being built."""
        return int(self.free.sum())

    def space(self):
        from gymnasium import spaces

        return spaces.Discrete(self.end_action + 1)

    def start_round(self, view, slots: SlotMap, context: TypeContext) -> None:
        """Forget the previous round's picks; call after the slot map is updated."""
        self.picked[:] = False
        self.picked_type[:] = -1
        self.free = context.capacity.copy()
        valid = slots.slot_job >= 0
        job = np.maximum(slots.slot_job, 0)
        self._slot_gang = np.where(valid, view.gang[job], 0)
        self._slot_runnable = (context.runnable[job] & valid[:, None]).T.copy()
        self._slot_job = slots.slot_job.copy()
        self._slot_rates = context.rates[job]

    def pickable(self) -> np.ndarray:
        """(T, max_jobs) bool: (type, slot) picks that are legal now."""
        fits = self._slot_gang[None, :] <= self.free[:, None]
        return self._slot_runnable & ~self.picked[None, :] & fits

    def pick(self, action) -> tuple[bool, bool]:
        """Apply one sub-step; returns (round closes now, the pick was infeasible)."""
        a = sequential_index(action, self.end_action, bools=False)
        if a == self.end_action and self.idle_allowed:
            return True, False
        t, slot = divmod(a, self.max_jobs)
        if a == self.end_action or not self.pickable()[t, slot]:
            if not self.idle_allowed:
                self._fill()
            return True, True
        self._take(slot, t)
        return not self.pickable().any(), False

    def _take(self, slot: int, gpu_type: int) -> None:
        self.picked[slot] = True
        self.picked_type[slot] = gpu_type
        self.free[gpu_type] -= int(self._slot_gang[slot])

    def _fill(self) -> None:
        """Place every unpicked job that still fits, in arrival order, by the default rule
        (its fastest type with room)."""
        left = np.flatnonzero(self._slot_runnable.any(axis=0) & ~self.picked)
        for slot in left[np.argsort(self._slot_job[left], kind="stable")].tolist():
            legal = np.flatnonzero(self._slot_runnable[:, slot] & (self._slot_gang[slot] <= self.free))
            if legal.size:  # fastest first; ties: cluster order
                self._take(slot, int(legal[np.argmax(self._slot_rates[slot, legal])]))

    def forced_picks(self) -> bool:
        """Without ``idle_allowed``, make the picks no policy could make otherwise: the only
        legal (slot, type) pick, repeatedly. Returns whether the round is now closed (no
        legal pick left). With ``idle_allowed`` nothing is forced. (On several types, jobs
        that would all fit together are not forced: their types are still a choice.)"""
        if self.idle_allowed:
            return False
        while True:
            legal = np.flatnonzero(self.pickable().ravel())
            if legal.size == 0:
                return True
            if legal.size > 1:
                return False
            t, slot = divmod(int(legal[0]), self.max_jobs)
            self._take(slot, t)

    def placed(self, slots: SlotMap) -> tuple[np.ndarray, np.ndarray]:
        """(job ids picked, ascending; their type indices)."""
        ids = slots.slot_job[self.picked]
        types = self.picked_type[self.picked]
        order = ids.argsort()
        return ids[order], types[order]

    def masks(self, slots) -> np.ndarray:
        """(T * max_jobs + 1,) bool: exact feasibility, type-major; the last entry ("end
        round") is ``idle_allowed``."""
        return np.append(self.pickable().ravel(), self.idle_allowed)


def unforced_placement(view, slots: SlotMap, context: TypeContext, *, every_slotted: bool = False):
    """The placement of the coming round when no ``priority`` (or, with ``every_slotted``,
    ``select``) action could change it, else ``None``: (ascending ids, type indices).

    That is when every active job fits on its own fastest type at once (per type, the gangs
    of the jobs that prefer it fit its capacity): then the default rule places every job
    there whatever the order (each finds its fastest type with room), and running them all
    is the work-conserving choice. ``select`` also needs every active job slotted.
    """
    if every_slotted and slots.queue.size:
        return None
    ids = view.active_job_ids
    if ids.size == 0:
        return ids, ids
    runnable = context.runnable[ids]
    best = np.argmax(np.where(runnable, context.rates[ids], -np.inf), axis=1)
    demand = np.bincount(best, weights=view.gang[ids], minlength=context.capacity.size)
    if np.any(demand > context.capacity):
        return None
    return np.asarray(ids, dtype=np.int64), best.astype(np.int64)


TYPED_MODES = {"select": TypedSelectMode, "priority": TypedPriorityMode, "sequential": TypedSequentialMode}

"""The three action modes with a GPU configuration per job, for traces with elastic jobs
(docs/ENV.md, "Elastic jobs"; docs/SEMANTICS.md, "Elastic jobs").

``C = len(view.gpu_counts)`` counts (1, 2, 4, 8), ``T`` GPU types (1 on a homogeneous
cluster; the cluster's order on a typed one). A *configuration* is a pair (type ``t``, count
index ``k``), index ``n = t * C + k`` (``gpu_counts[k]`` GPUs of type ``t``), ``N = T * C``
of them: the simulator's configuration column. On one type ``n = k`` and every space, mask
and decoding below is the one-type layout. A slot's *allowed* configurations are
``view.count_allowed`` of its job (a rigid job: its gang, on the types it can run on). Each
mode returns ``(job ids ascending, configuration columns)`` as the elastic simulator takes
them, and the number of repairs. A configuration *fits* when its type still has that many
GPUs free.

* ``select`` - ``MultiDiscrete([N + 1] * max_jobs)``: entry ``s`` is 0 (do not run the job
  in slot ``s``) or ``n + 1`` (run it in configuration ``n``). **Repair rule**: entries on
  empty slots or on configurations the job may not use are dropped; then jobs are taken in
  arrival order, skipping any whose configuration no longer fits. Masks (sb3-contrib's
  MultiDiscrete layout, ``N + 1`` entries per slot): 0 always allowed, ``n + 1`` allowed
  exactly when the slot holds a job that may use configuration ``n``.
* ``priority`` - ``Box(-1, 1, (P * max_jobs,))``, ``P = 2`` on one type, 3 on several:
  entries ``0..max_jobs-1`` are scores, the next ``max_jobs`` a count preference per slot,
  then (``T > 1``) a type preference per slot. Count preference ``u`` asks for count index
  ``min(C - 1, floor((u + 1) / 2 * C))``, type preference ``w`` for type
  ``min(T - 1, floor((w + 1) / 2 * T))``. Slotted jobs are packed by descending score (ties:
  arrival order); each tries its asked type first, then the others in cluster order, and on
  a type takes the largest allowed count at or below the asked one that fits (its smallest
  allowed count there if none is at or below), skipped if none fits on any type. Queued
  jobs then fill what is left, in arrival order, each at its smallest allowed count on the
  first type (cluster order) where that fits. Masks: ``(P * max_jobs,)``, the slots whose
  entries matter.
* ``sequential`` - ``Discrete(max_jobs * N + 1)``: action ``s * N + n`` picks the job in slot
  ``s`` in configuration ``n``; ``max_jobs * N`` ends the round. The mask is exact: unpicked
  slotted jobs in allowed configurations that fit, and "end round" (``idle_allowed``). The
  round closes by itself when no pick fits. Without ``idle_allowed`` an illegal action fills
  the rest of the round in arrival order, each job at its smallest allowed count that fits
  (ties between types: cluster order), then closes it; the only forced close is when
  nothing fits.
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.errors import InvalidActionError
from shockwave_gym.interface.actions import all_finite, sequential_index
from shockwave_gym.interface.slots import SlotMap
from shockwave_gym.view import ClusterView


def _slot_allowed(view: ClusterView, slots: SlotMap) -> np.ndarray:
    """(max_jobs, N) bool: the configurations each slot's job may use (no row for empty slots)."""
    allowed = view.count_allowed.reshape(view.num_jobs, -1)  # (job, type, count) -> (job, t * C + k)
    return np.where((slots.slot_job >= 0)[:, None], allowed[np.maximum(slots.slot_job, 0)], False)


def _fit_in_order(counts: np.ndarray, types: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """bool per entry: taken in the order given while its count fits what its type has left."""
    taken = np.zeros(counts.size, dtype=bool)
    free = capacity.copy()
    for i, (c, t) in enumerate(zip(counts.tolist(), types.tolist(), strict=True)):
        if c <= free[t]:
            taken[i] = True
            free[t] -= c
    return taken


def _as_columns(ids: np.ndarray, columns: np.ndarray):
    order = np.argsort(ids, kind="stable")
    return ids[order].astype(np.int64), columns[order].astype(np.int64)


class _ElasticMode:
    """What every elastic mode holds: the slots, the configurations (``num_types`` types
    times ``num_counts`` counts), and each slot's allowed configurations this decision
    (:meth:`start_round`, called once the slot map is updated)."""

    def __init__(self, max_jobs: int, num_counts: int, num_types: int = 1):
        self.max_jobs, self.num_counts, self.num_types = max_jobs, num_counts, num_types
        self.num_configs = num_types * num_counts
        self._allowed = np.zeros((max_jobs, self.num_configs), dtype=bool)

    def start_round(self, view: ClusterView, slots: SlotMap) -> None:
        self._allowed = _slot_allowed(view, slots)


def _config_arrays(view: ClusterView, num_types: int):
    """(GPUs per configuration, type per configuration, GPUs per type)."""
    counts = np.asarray(view.gpu_counts, dtype=np.int64)
    return np.tile(counts, num_types), np.repeat(np.arange(num_types), counts.size), \
        np.asarray(view.type_gpus, dtype=np.int64)


class ElasticSelectMode(_ElasticMode):
    """One configuration (or none) per slot, with the documented repair rule."""

    name = "select"
    closes_every_step = True

    def space(self):
        from gymnasium import spaces

        return spaces.MultiDiscrete(np.full(self.max_jobs, self.num_configs + 1, dtype=np.int64))

    def checked(self, action) -> np.ndarray:
        """``action`` as an array, or :class:`InvalidActionError` (not ``max_jobs`` integers
        in ``0..num_configs``)."""
        entries = np.asarray(action)
        if entries.shape != (self.max_jobs,) or entries.dtype.kind not in "iu" or \
                entries.min(initial=0) < 0 or entries.max(initial=0) > self.num_configs:
            raise InvalidActionError(f"select action must be {self.max_jobs} integers in 0..{self.num_configs}, "
                                     f"got {entries.tolist()!r}")
        return entries

    def place(self, action, view: ClusterView, slots: SlotMap, types=None):
        """(job ids ascending, columns, repairs)."""
        entries = self.checked(action)
        wanted = entries > 0
        index = np.maximum(entries - 1, 0)
        ok = wanted & self._allowed[np.arange(self.max_jobs), index]
        ids, n = slots.slot_job[ok], index[ok]
        order = np.argsort(ids, kind="stable")
        ids, n = ids[order], n[order]
        gpus, config_type, capacity = _config_arrays(view, self.num_types)
        taken = _fit_in_order(gpus[n], config_type[n], capacity)
        repairs = int(np.count_nonzero(wanted)) - int(np.count_nonzero(taken))
        return ids[taken].astype(np.int64), n[taken].astype(np.int64), repairs

    def masks(self, slots) -> np.ndarray:
        out = np.ones((self.max_jobs, self.num_configs + 1), dtype=bool)
        out[:, 1:] = self._allowed
        return out.ravel()


class ElasticPriorityMode(_ElasticMode):
    """Scores, a count preference and (several types) a type preference per slot; packed
    greedily by score."""

    name = "priority"
    closes_every_step = True

    @property
    def parts(self) -> int:
        """Entries per slot: score, count preference, and a type preference on several types."""
        return 2 if self.num_types == 1 else 3

    def space(self):
        from gymnasium import spaces

        return spaces.Box(-1.0, 1.0, shape=(self.parts * self.max_jobs,), dtype=np.float32)

    def checked(self, action, slots: SlotMap) -> tuple[np.ndarray, np.ndarray]:
        """(``action`` as float64, the occupied slots in job-id order), or
        :class:`InvalidActionError` (not ``parts * max_jobs`` numbers, or an entry of an
        occupied slot not finite)."""
        values = np.asarray(action)
        size = self.parts * self.max_jobs
        if values.shape != (size,) or values.dtype.kind not in "biuf":
            raise InvalidActionError(f"priority action must be {size} numbers, got shape {values.shape}")
        values = values.astype(np.float64)
        by_id = slots.slots_by_job()
        if not all_finite(values[np.concatenate([by_id + p * self.max_jobs for p in range(self.parts)])]):
            raise InvalidActionError("priority scores and count (and type) preferences must be finite")
        return values, by_id

    def _preferences(self, action, slots: SlotMap) -> tuple[np.ndarray, dict]:
        """(slotted job ids by descending score, {job id: (asked count index, asked type)})."""
        values, by_id = self.checked(action, slots)
        m = self.max_jobs

        def asked(u, n):
            return np.minimum(n - 1, np.floor((np.clip(u, -1, 1) + 1) / 2 * n)).astype(int)

        count = asked(values[m:2 * m], self.num_counts)[by_id].tolist()
        gpu_type = asked(values[2 * m:], self.num_types)[by_id].tolist() if self.parts == 3 else [0] * by_id.size
        order = slots.jobs_by_id()[(-values[by_id]).argsort(kind="stable")]
        ask = dict(zip(slots.slot_job[by_id].tolist(), zip(count, gpu_type, strict=True), strict=True))
        return order, ask

    def place(self, action, view: ClusterView, slots: SlotMap, types=None):
        order, ask = self._preferences(action, slots)
        allowed = view.count_allowed
        counts = np.asarray(view.gpu_counts)
        free = np.asarray(view.type_gpus, dtype=np.int64).copy()
        ids, picked = [], []
        for j in [*order.tolist(), *slots.queue.tolist()]:
            top, first = ask.get(j, (-1, 0))  # queued: smallest allowed count, cluster order
            for t in [first, *(t for t in range(self.num_types) if t != first)]:
                options = np.flatnonzero(allowed[j, t])
                below = options[options <= top]
                fits = [k for k in (below[::-1] if below.size else options[:1]).tolist() if counts[k] <= free[t]]
                if fits:
                    ids.append(j)
                    picked.append(t * self.num_counts + fits[0])
                    free[t] -= int(counts[fits[0]])
                    break
        return (*_as_columns(np.array(ids, dtype=np.int64), np.array(picked, dtype=np.int64)), 0)

    def masks(self, slots) -> np.ndarray:
        return np.tile(slots.slot_job >= 0, self.parts)


class ElasticSequentialMode(_ElasticMode):
    """One (slot, configuration) pick per sub-step; holds the round being built (``picked``
    per slot, ``picked_config`` its configuration, ``free`` GPUs per type)."""

    name = "sequential"
    closes_every_step = False

    def __init__(self, max_jobs: int, num_counts: int, num_types: int = 1, *, idle_allowed: bool = True):
        super().__init__(max_jobs, num_counts, num_types)
        self.idle_allowed = bool(idle_allowed)
        self.end_action = max_jobs * self.num_configs
        self.picked = np.zeros(max_jobs, dtype=bool)
        self.picked_config = np.zeros(max_jobs, dtype=np.int64)
        self.free = np.zeros(num_types, dtype=np.int64)
        self._slot_job = np.full(max_jobs, -1, dtype=np.int64)
        self._gpus = np.ones(self.num_configs, dtype=np.int64)
        self._type = np.zeros(self.num_configs, dtype=np.int64)

    @property
    def free_gpus(self) -> int:
        """GPUs of every type still free in the round being built."""
        return int(self.free.sum())

    def space(self):
        from gymnasium import spaces

        return spaces.Discrete(self.end_action + 1)

    def start_round(self, view: ClusterView, slots: SlotMap) -> None:
        super().start_round(view, slots)
        self.picked[:] = False
        self._slot_job = slots.slot_job.copy()
        self._gpus, self._type, capacity = _config_arrays(view, self.num_types)
        self.free = capacity.copy()

    def pickable(self) -> np.ndarray:
        """(max_jobs, N) bool: unpicked slotted jobs in allowed configurations that fit."""
        return self._allowed & ~self.picked[:, None] & (self._gpus <= self.free[self._type])[None, :]

    def pick(self, action) -> tuple[bool, bool]:
        a = sequential_index(action, self.end_action)
        if a == self.end_action and self.idle_allowed:
            return True, False
        if a == self.end_action or not self.pickable()[a // self.num_configs, a % self.num_configs]:
            if not self.idle_allowed:
                self._fill()
            return True, True
        self._take(a // self.num_configs, a % self.num_configs)
        return not self.pickable().any(), False

    def _take(self, slot: int, n: int) -> None:
        self.picked[slot] = True
        self.picked_config[slot] = n
        self.free[self._type[n]] -= int(self._gpus[n])

    def _fill(self) -> None:
        """Pick every job that still fits, in arrival order, at its smallest allowed count
        that fits (ties between types: cluster order)."""
        left = np.flatnonzero((self._slot_job >= 0) & ~self.picked)
        for slot in left[np.argsort(self._slot_job[left], kind="stable")].tolist():
            fits = np.flatnonzero(self.pickable()[slot])
            if fits.size:
                self._take(slot, int(fits[np.lexsort((fits // self.num_counts, fits % self.num_counts))[0]]))

    def forced_picks(self) -> bool:
        """Whether the round is closed with no choice left (nothing fits; never with
        ``idle_allowed``, where "end round" is a choice)."""
        return not self.idle_allowed and not self.pickable().any()

    def placed(self, slots) -> tuple[np.ndarray, np.ndarray]:
        return _as_columns(self._slot_job[self.picked], self.picked_config[self.picked])

    def masks(self, slots) -> np.ndarray:
        return np.append(self.pickable().ravel(), self.idle_allowed)


ELASTIC_MODES = {"select": ElasticSelectMode, "priority": ElasticPriorityMode, "sequential": ElasticSequentialMode}

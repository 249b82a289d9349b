"""Placement on a heterogeneous cluster: which GPU type each selected job runs on.

A gang never spans types. An action on a heterogeneous cluster is either job ids, placed by
the **default rule** (:func:`place_in_order`), or an explicit placement (a
:class:`Placement`, or a ``{job_id: type}`` mapping). The default rule: take the jobs in the
order given and put each on the *fastest* type (by that job's throughput at its current batch
size; ties go to the earlier type in the cluster's order v100, p100, k80) among the types it
can run on that still have room for its whole gang. docs/HETEROGENEOUS.md, "Placement".

Pure numpy over plain arrays: the simulator applies the rule with ``strict=True`` (a job that
fits no type is an error); agents pack with it (through :mod:`shockwave_gym.interface`) so
that what they return is placed exactly as they planned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from shockwave_gym.errors import InvalidActionError


class _JobIdsAction:
    """What both explicit actions share: iterating yields the job ids (so either is also a
    plain selection), and ``len`` counts them."""

    job_ids: np.ndarray

    def __iter__(self):
        return iter(self.job_ids.tolist())

    def __len__(self) -> int:
        return int(self.job_ids.size)


@dataclass(frozen=True)
class Placement(_JobIdsAction):
    """An explicit placement: ``job_ids[i]`` runs on type index ``gpu_types[i]`` (into the
    cluster's :attr:`~shockwave_gym.cluster.ClusterSpec.types`). Iterating yields the job
    ids, so a placement is also a plain selection for code that ignores types."""

    job_ids: np.ndarray
    gpu_types: np.ndarray

    def __post_init__(self):
        ids = np.asarray(self.job_ids, dtype=np.int64).ravel()
        types = np.asarray(self.gpu_types, dtype=np.int64).ravel()
        if ids.shape != types.shape:
            raise InvalidActionError(f"placement: {ids.size} job ids but {types.size} types")
        object.__setattr__(self, "job_ids", ids)
        object.__setattr__(self, "gpu_types", types)

    def as_dict(self, type_names: Sequence[str] | None = None) -> dict[int, int | str]:
        """``{job_id: type index}``, or ``{job_id: type name}`` given the cluster's types."""
        if type_names is None:
            return dict(zip(self.job_ids.tolist(), self.gpu_types.tolist(), strict=True))
        return {j: type_names[t] for j, t in zip(self.job_ids.tolist(), self.gpu_types.tolist(), strict=True)}


@dataclass(frozen=True)
class Allocation(_JobIdsAction):
    """An action giving GPU counts (elastic jobs, :mod:`shockwave_gym.elastic`): ``job_ids[i]`` runs on ``counts[i]`` GPUs, of type index
    ``gpu_types[i]`` (``-1`` or no types: the default rule picks the fastest type with room
    for that count). Iterating yields the job ids, so an allocation is also a selection for
    code that ignores counts."""

    job_ids: np.ndarray
    counts: np.ndarray
    gpu_types: np.ndarray | None = None

    def __post_init__(self):
        ids = np.asarray(self.job_ids, dtype=np.int64).ravel()
        counts = np.asarray(self.counts, dtype=np.int64).ravel()
        types = None if self.gpu_types is None else np.asarray(self.gpu_types, dtype=np.int64).ravel()
        if ids.shape != counts.shape or (types is not None and types.shape != ids.shape):
            raise InvalidActionError(f"allocation: {ids.size} job ids, {counts.size} counts"
                                     + ("" if types is None else f", {types.size} types"))
        object.__setattr__(self, "job_ids", ids)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "gpu_types", types)

    def as_dict(self) -> dict[int, int]:
        """``{job_id: count}``."""
        return dict(zip(self.job_ids.tolist(), self.counts.tolist(), strict=True))


def rigid_action(action, gang: np.ndarray):
    """``action`` on a trace without elastic jobs: an :class:`Allocation` must give every job
    its own gang; it becomes a :class:`Placement` when it names every job's type, else its
    job ids (placed by the default rule). Any other action is returned unchanged."""
    if not isinstance(action, Allocation):
        return action
    ids, counts, types = action.job_ids, action.counts, action.gpu_types
    outside = (ids < 0) | (ids >= gang.size)
    if outside.any():
        raise InvalidActionError(f"job {int(ids[outside][0])} is not a job of this trace")
    wrong = counts != gang[ids]
    if wrong.any():
        j = int(ids[wrong][0])
        raise InvalidActionError(f"job {j} is rigid (gang {int(gang[j])}): an allocation may give it "
                                 f"{int(gang[j])} GPUs, not {int(counts[wrong][0])}")
    if types is None or (types < 0).all():
        return ids
    if (types < 0).any():
        raise InvalidActionError("an allocation on rigid jobs gives every job a type or none")
    return Placement(ids, types)


def place_in_order(
    order: np.ndarray,
    gang: np.ndarray,
    rates: np.ndarray,
    runnable: np.ndarray,
    capacity: np.ndarray,
    *,
    backfill: bool = True,
    holds: np.ndarray | None = None,
    strict: bool = False,
    type_names: Sequence[str] | None = None,
) -> Placement:
    """The default rule over job ids in ``order``.

    ``gang`` (J,), ``rates`` (J, T) iterations/s at each job's current batch size on each type,
    ``runnable`` (J, T), ``capacity`` (T,) GPUs per type; all indexed by job id. Each job goes
    to the fastest runnable type with room for its gang. A job that fits no type is skipped
    (``backfill``: later, smaller jobs may still fit), ends the scan (``backfill=False``), or
    raises :class:`InvalidActionError` (``strict``; the simulator's rule for an action).
    ``holds`` (bool per entry of ``order``) marks jobs that take their GPUs but do not run (the
    Gavel mechanism's unallocated jobs). Returns the placed jobs, in scan order.
    """
    order = np.asarray(order, dtype=np.int64).ravel()
    free = [int(c) for c in np.asarray(capacity).tolist()]
    num_types = len(free)
    gangs = np.asarray(gang)[order].tolist()
    rate_rows = np.asarray(rates, dtype=np.float64)[order].tolist()
    ok_rows = np.asarray(runnable, dtype=bool)[order].tolist()
    held = [False] * order.size if holds is None else np.asarray(holds, dtype=bool).tolist()
    ids: list[int] = []
    types: list[int] = []
    for job_id, size, row, ok, hold in zip(order.tolist(), gangs, rate_rows, ok_rows, held, strict=True):
        best, best_rate = -1, -np.inf
        for t in range(num_types):
            if ok[t] and free[t] >= size and row[t] > best_rate:
                best, best_rate = t, row[t]
        if best < 0:
            if strict:
                names = type_names if type_names is not None else [str(t) for t in range(num_types)]
                room = ", ".join(f"{names[t]}={free[t]}" for t in range(num_types))
                can = ", ".join(names[t] for t in range(num_types) if ok[t]) or "none"
                raise InvalidActionError(
                    f"job {job_id} (gang {size}) fits no GPU type under the default placement: "
                    f"free GPUs after the jobs before it in the order: {room}; it can run on: {can}"
                )
            if not backfill:
                break
            continue
        free[best] -= size
        if not hold:
            ids.append(job_id)
            types.append(best)
    return Placement(np.asarray(ids, dtype=np.int64), np.asarray(types, dtype=np.int64))

"""The heterogeneous round simulator: the round rules of :mod:`shockwave_gym.simulator`
(R1-R5, docs/SEMANTICS.md) on a cluster with a GPU count per type (docs/HETEROGENEOUS.md).

Each round, every selected job runs on ONE type (a gang never spans types), chosen by the
action: job ids are placed by the default rule (:func:`shockwave_gym.placement.place_in_order`,
in the order given), a :class:`~shockwave_gym.placement.Placement` or ``{job_id: type}``
mapping places them explicitly. Progress stays in isolated seconds of reference (V100) work;
on type ``t`` a job runs through its epochs at type-``t`` epoch durations, mapped epoch by
epoch (:mod:`shockwave_gym.hetero_state`). The restart overhead (R3) is paid as on the
homogeneous path, and also when a job moves to another type: a job "ran last round" only if
it ran on the same type.

The round itself is :meth:`Simulator.run_round <shockwave_gym.simulator.Simulator.run_round>`,
written once: this subclass adds the action checks of a typed cluster and implements the
round's GPU-type hooks (placement, the map between reference work and time on a type, "ran
last round on the same type", the types each job ran on), which on a cluster of one type
are the identity. On a V100-only cluster every map is the identity and the float operations
are the homogeneous ones in the same order, so the run is bit-identical to ``Simulator``
with ``SimConfig(gpus=N)``.

:func:`make_simulator` picks the class from the config.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from shockwave_gym.config import SimConfig
from shockwave_gym.errors import InputError, InvalidActionError
from shockwave_gym.hetero_state import TypedJobArrays, build_typed_arrays
from shockwave_gym.jobs import JobSpec
from shockwave_gym.placement import Placement, place_in_order, rigid_action
from shockwave_gym.simulator import ColumnHooks, Simulator
from shockwave_gym.throughput import ThroughputTable, TypedThroughputs


def make_simulator(jobs: Sequence[JobSpec], config: SimConfig, throughputs=None, **kwargs) -> Simulator:
    """:class:`~shockwave_gym.elastic.ElasticSimulator` when a job is elastic; else
    :class:`HeteroSimulator` when ``config`` has a ``cluster``, else the homogeneous
    :class:`~shockwave_gym.simulator.Simulator` (``throughputs`` then a single table)."""
    from shockwave_gym.elastic import ElasticSimulator, is_elastic_trace

    if is_elastic_trace(jobs):
        return ElasticSimulator(jobs, config, throughputs, **kwargs)
    if config.heterogeneous:
        return HeteroSimulator(jobs, config, throughputs, **kwargs)
    if isinstance(throughputs, TypedThroughputs):
        throughputs = throughputs.reference
    return Simulator(jobs, config, throughputs, **kwargs)


class HeteroSimulator(ColumnHooks, Simulator):
    """Round-based simulation on ``config.cluster`` (a :class:`~shockwave_gym.cluster.ClusterSpec`).

    ``throughputs``: a :class:`~shockwave_gym.throughput.TypedThroughputs`, a single table (the
    V100 one; other types built in) or ``None`` (the built-in tables), resolved by
    :meth:`TypedThroughputs.resolve`. ``self.throughputs`` is the reference (V100) table, as on
    the homogeneous path; ``self.typed_throughputs`` the bundle.
    """

    def __init__(
        self,
        jobs: Sequence[JobSpec],
        config: SimConfig,
        throughputs: TypedThroughputs | ThroughputTable | None = None,
        *,
        trace_name: str = "",
        oracle: bool = False,
    ):
        if not config.heterogeneous:
            raise InputError("HeteroSimulator needs SimConfig(cluster=...); use Simulator for SimConfig(gpus=N)")
        cluster = config.cluster
        self.typed_throughputs = TypedThroughputs.resolve(throughputs, cluster.types)
        if len(jobs) == 0:
            raise InputError("a simulation needs at least one job")
        self.cluster = cluster
        self.last_type = np.full(len(jobs), -1, dtype=np.int64)  # type each job ran on last round; -1: none
        self.last_column = self.last_type  # the same array, as the column hooks name it (ColumnHooks)
        super().__init__(jobs, config, self.typed_throughputs.reference, trace_name=trace_name, oracle=oracle)
        self.typed: TypedJobArrays = build_typed_arrays(self.static, cluster, self.typed_throughputs)
        self.column_arrays = self.typed
        fits = self.typed.runnable & (self.static.gang[:, None] <= self.typed.capacity[None, :])
        stuck = np.flatnonzero(~fits.any(axis=1))
        if stuck.size:
            j = int(stuck[0])
            spec = jobs[j]
            can = [t for t, ok in zip(cluster.types, self.typed.runnable[j], strict=True) if ok]
            raise InputError(
                f"job {spec.job_id} ({spec.model}, gang {spec.gang}) can run on no GPU type of cluster {cluster}: "
                f"its throughput tables cover {', '.join(can) or 'no type of the cluster'}, "
                f"and a gang needs that many GPUs of ONE type ({len(stuck)} such job(s))"
            )

    # --- actions --------------------------------------------------------------------------

    def _type_index(self, value, job_id) -> int:
        types = self.cluster.types
        if isinstance(value, str):
            if value not in types:
                raise InvalidActionError(
                    f"job {job_id}: unknown GPU type {value!r}; the cluster has {', '.join(types)}"
                )
            return types.index(value)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= int(value) < len(types):
            raise InvalidActionError(
                f"job {job_id}: GPU type must be a name ({', '.join(types)}) or an index 0..{len(types) - 1}, got {value!r}"
            )
        return int(value)

    def validate_selection(self, job_ids) -> np.ndarray:
        """Job ids, in the order given (the default rule places them in that order)."""
        if isinstance(job_ids, Placement):
            job_ids = job_ids.job_ids
        if job_ids is not None and not isinstance(job_ids, np.ndarray):
            job_ids = np.array(list(job_ids))  # once: a generator is consumed here
        ids = super().validate_selection(job_ids)  # checks ids, activity and total gangs
        if ids.size == 0:
            return ids
        return job_ids.astype(np.int64, copy=False).ravel()  # checked above, order kept

    def validate_placement(self, action) -> tuple[np.ndarray, np.ndarray]:
        """An action as ``(ids ascending, type index per id)``, every rule checked
        (:class:`InvalidActionError` naming the job and type otherwise)."""
        if action is None:
            raise InvalidActionError("an action is required (use [] to idle)")
        order, types = self._requested_placement(action)
        if order.size == 0:
            return order, types
        self._check_types(order, types)
        sort = np.argsort(order, kind="stable")
        return order[sort], types[sort]

    def _requested_placement(self, action) -> tuple[np.ndarray, np.ndarray]:
        """``(job ids, type indices)`` an action asks for, in its order: type names and the
        selection checked, job ids placed by the default rule (an allocation gives each job
        its gang, :func:`rigid_action`)."""
        action = rigid_action(action, self.static.gang)
        if isinstance(action, Mapping):
            pairs = [(j, self._type_index(t, j)) for j, t in action.items()]
            order = np.array([int(j) for j, _ in pairs], dtype=np.int64) if pairs else np.zeros(0, np.int64)
            types = np.array([t for _, t in pairs], dtype=np.int64)
            self.validate_selection(order)
            return order, types
        if isinstance(action, Placement):
            for j, t in zip(action.job_ids.tolist(), action.gpu_types.tolist(), strict=True):
                self._type_index(t, j)
            self.validate_selection(action.job_ids)
            return action.job_ids, action.gpu_types
        order = self.validate_selection(action)
        if order.size == 0:
            return order, order
        placed = self._default_placement(order)
        return placed.job_ids, placed.gpu_types

    def _check_types(self, order: np.ndarray, types: np.ndarray) -> None:
        """Every job runnable on its type, and no type given more GPUs than it has."""
        bad = ~self.typed.runnable[order, types]
        if bad.any():
            j, t = int(order[bad][0]), int(types[bad][0])
            spec = self.static.specs[j]
            raise InvalidActionError(
                f"job {j} ({spec.model}, gang {spec.gang}) cannot run on {self.cluster.types[t]}: that type's "
                f"table lacks a rate for one of its reachable batch sizes {self.view.reachable_batch_sizes(j)}"
            )
        used = np.bincount(types, weights=self.static.gang[order], minlength=self.cluster.num_types)
        over = np.flatnonzero(used > self.typed.capacity)
        if over.size:
            t = int(over[0])
            raise InvalidActionError(
                f"placement needs {int(used[t])} {self.cluster.types[t]} GPUs; the cluster has {int(self.typed.capacity[t])}"
            )

    def _default_placement(self, order: np.ndarray) -> Placement:
        """The default rule over ``order`` (:func:`place_in_order`, strict: a job that fits
        no type raises), at the jobs' current rates."""
        return place_in_order(
            order, self.static.gang, self.view.throughput_by_type, self.typed.runnable, self.typed.capacity,
            strict=True, type_names=self.cluster.types,
        )

    # --- the round's GPU-type hooks (Simulator.run_round) ---------------------------------

    def place_round(self, ids, types):
        """Ascending ids with their types as given; or (``types=None``) ids placed by the
        default rule in the order given, then sorted."""
        ids = np.asarray(ids, dtype=np.int64)
        if types is not None:
            return ids, types
        if ids.size == 0:
            return ids, ids.copy()
        placed = self._default_placement(ids)
        sort = np.argsort(placed.job_ids, kind="stable")
        return placed.job_ids[sort], placed.gpu_types[sort]

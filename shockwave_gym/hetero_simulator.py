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

The homogeneous :class:`~shockwave_gym.simulator.Simulator` is left untouched; this subclass
replaces only the selection check and the round itself. On a V100-only cluster every map is
the identity and the float operations are the homogeneous ones in the same order, so the
run is bit-identical to ``Simulator`` with ``SimConfig(gpus=N)``.

:func:`make_simulator` picks the class from the config.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from shockwave_gym.config import SimConfig
from shockwave_gym.errors import InputError, InvalidActionError
from shockwave_gym.hetero_state import TypedJobArrays, build_typed_arrays
from shockwave_gym.jobs import JobSpec
from shockwave_gym.placement import Placement, place_in_order
from shockwave_gym.simulator import Simulator
from shockwave_gym.state import DONE, RoundRecord
from shockwave_gym.throughput import ThroughputTable, TypedThroughputs


def make_simulator(jobs: Sequence[JobSpec], config: SimConfig, throughputs=None, **kwargs) -> Simulator:
    """:class:`HeteroSimulator` when ``config`` has a ``cluster``, else the homogeneous
    :class:`~shockwave_gym.simulator.Simulator` (``throughputs`` then a single table)."""
    if config.heterogeneous:
        return HeteroSimulator(jobs, config, throughputs, **kwargs)
    if isinstance(throughputs, TypedThroughputs):
        throughputs = throughputs.reference
    return Simulator(jobs, config, throughputs, **kwargs)


class HeteroSimulator(Simulator):
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
        super().__init__(jobs, config, self.typed_throughputs.reference, trace_name=trace_name, oracle=oracle)
        self.typed: TypedJobArrays = build_typed_arrays(self.static, cluster, self.typed_throughputs)
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

    def _reset_dynamic(self) -> None:
        self.last_type = np.full(self.static.arrival_s.size, -1, dtype=np.int64)
        super()._reset_dynamic()

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
        if isinstance(action, Mapping):
            pairs = [(j, self._type_index(t, j)) for j, t in action.items()]
            order = np.array([int(j) for j, _ in pairs], dtype=np.int64) if pairs else np.zeros(0, np.int64)
            types = np.array([t for _, t in pairs], dtype=np.int64)
            self.validate_selection(order)
        elif isinstance(action, Placement):
            order, types = action.job_ids, action.gpu_types
            for j, t in zip(order.tolist(), types.tolist(), strict=True):
                self._type_index(t, j)
            self.validate_selection(order)
        else:
            order = self.validate_selection(action)
            if order.size == 0:
                return order, order
            view = self.view
            placed = place_in_order(
                order, self.static.gang, view.throughput_by_type, self.typed.runnable, self.typed.capacity,
                strict=True, type_names=self.cluster.types,
            )
            order, types = placed.job_ids, placed.gpu_types
        if order.size == 0:
            return order, types
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
        sort = np.argsort(order, kind="stable")
        return order[sort], types[sort]

    def step(self, action) -> RoundRecord:
        """Run one round with ``action`` (job ids placed by the default rule, a
        :class:`Placement` or ``{job_id: type}``), then admit arrivals."""
        if self.done:
            raise InvalidActionError("the episode is over: every job has completed")
        ids, types = self.validate_placement(action)
        return self.run_round(ids, types)

    # --- the round ------------------------------------------------------------------------

    def run_round(self, ids: np.ndarray, types: np.ndarray | None = None) -> RoundRecord:
        """One round for checked ``ids`` on type indices ``types``: ascending ids with their
        types as :meth:`validate_placement` returns them, or (``types=None``) ids as
        :meth:`validate_selection` returns them, placed by the default rule in that order (a
        job that fits no type then raises). Nothing else is checked again."""
        if self._num_done == self.num_jobs:
            raise InvalidActionError("the episode is over: every job has completed")
        ids = np.asarray(ids, dtype=np.int64)
        if types is None:
            if ids.size:
                placed = place_in_order(
                    ids, self.static.gang, self.view.throughput_by_type, self.typed.runnable, self.typed.capacity,
                    strict=True, type_names=self.cluster.types,
                )
                sort = np.argsort(placed.job_ids, kind="stable")
                ids, types = placed.job_ids[sort], placed.gpu_types[sort]
            else:
                types = ids.copy()
        round_s, threshold_s, restart_s = self._round_constants
        iso = self.static.isolated_time_s[ids]
        work = self.work_done_s[ids]
        tau, total = self.typed.to_type_time(self.static, ids, types, work, self.epoch_pos[ids])
        remaining = total - tau
        if self.round_index >= 1:
            # the restart is paid unless the job ran last round ON THE SAME TYPE, or runs too briefly (R3)
            pays = np.minimum(round_s, remaining) > threshold_s
            stayed = self.ran_last_round[ids] & (self.last_type[ids] == types)
            overhead = np.greater(pays, stayed) * restart_s
            finish_offset = overhead + remaining
        else:
            overhead = np.zeros(ids.size)
            finish_offset = 0.0 + remaining
        finishes = finish_offset <= round_s
        num_finishing = int(np.count_nonzero(finishes))
        if ids.size and num_finishing == ids.size:
            round_len = float(finish_offset.max())
        else:
            round_len = self.config.round_s
        run_s = np.minimum(finish_offset, round_len)
        start = self.time_s

        tau += run_s - overhead
        work = self.typed.to_reference_work(self.static, ids, types, tau)
        if num_finishing:
            work[finishes] = iso[finishes]
        self.work_done_s[ids] = work
        self.epoch_pos[ids] = self._epoch_position(self.static.job_base_s[ids], work)
        if num_finishing:
            done_ids = ids[finishes]
            self.completion_s[done_ids] = start + finish_offset[finishes]
            self.status[done_ids] = DONE
            self._num_done += num_finishing
            self._active_cache = None
        else:
            done_ids = ids[:0]
        run_time = self.run_time_s[ids]
        run_time += run_s
        self.run_time_s[ids] = run_time
        rounds_run = self.rounds_run[ids]
        rounds_run += 1
        self.rounds_run[ids] = rounds_run
        self.last_run_s.fill(0.0)
        self.last_run_s[ids] = run_s
        self.last_overhead_s.fill(0.0)
        self.last_overhead_s[ids] = overhead
        self.ran_last_round.fill(False)
        self.ran_last_round[ids] = True
        self.last_type.fill(-1)
        self.last_type[ids] = types

        record = RoundRecord(
            index=self.round_index,
            start_s=start,
            end_s=start + round_len,
            job_ids=ids,
            run_s=run_s,
            overhead_s=overhead,
            completed_ids=done_ids,
            gpus_busy=int(np.add.reduce(self.static.gang[ids])),
            gpu_types=types,
        )
        self.history.append(record)
        self.time_s = start + round_len
        self.round_index += 1
        if not self.done:
            self._admit_and_skip_idle()
        else:
            self._version += 1
        return record


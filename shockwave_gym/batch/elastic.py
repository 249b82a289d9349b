"""The elastic simulator's rounds on the compiled round rules (the homogeneous V100 cluster).

:class:`CompiledElasticSimulator` is :class:`~shockwave_gym.elastic.ElasticSimulator` whose
:meth:`run_round` runs :func:`shockwave_gym.batch.jit.step_columns` (the kernels' round, its
GPU types read as the (type, count) configuration columns) on a one-cluster
:class:`~shockwave_gym.batch.rounds.BatchSimulator` whose per-job arrays are the simulator's
own: the kernel writes them in place, then the round record and the clock are committed
(:meth:`Simulator.commit_round`), so the view, ``result()`` and every public array are those
of the reference, bit for bit. Everything else (actions, checks, the view) is the
reference's. The env takes it for an elastic trace on `gpus=N` V100s (no `cluster=`) when
numba is installed (:func:`elastic_simulator`).
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.batch import jit
from shockwave_gym.batch.rounds import BatchSimulator
from shockwave_gym.elastic import COUNTS, ElasticSimulator
from shockwave_gym.errors import InvalidActionError
from shockwave_gym.state import RoundRecord

#: The simulator's per-job arrays the kernel writes, by the batch simulator's names.
_SHARED = {"status": "status", "work_done_s": "work_done_s", "completion_s": "completion_s",
           "run_time_s": "run_time_s", "rounds_run": "rounds_run", "last_run_s": "last_run_s",
           "last_overhead_s": "last_overhead_s", "ran_last_round": "ran_last_round", "pos": "epoch_pos",
           "last_type": "last_column"}
_COUNTS = np.asarray(COUNTS, dtype=np.int64)


class CompiledElasticSimulator(ElasticSimulator):
    """:class:`ElasticSimulator` with its rounds run by the compiled round rules (one GPU
    type; see the module doc)."""

    _batch = None  # the one-cluster BatchSimulator, loaded on first use
    _owner = None  # the status array the batch shares (a reset replaces it)
    _scratch = None  # (sel, paid, completed)

    def __getstate__(self):
        # the Simulator's state (without its view); numba structs do not pickle: the batch is
        # built again on first use
        return {**super().__getstate__(), "_batch": None, "_owner": None, "_scratch": None}

    def _kernel_state(self):
        """The batch's boxed arrays, sharing the simulator's current per-job arrays."""
        batch = self._batch
        if batch is None:
            batch = self._batch = BatchSimulator(1)
            batch.load(0, self.static, self.config, self.trace_name, typed=self.configs)
            n = self.num_jobs
            self._scratch = (np.zeros((1, n), bool), np.empty(n), np.empty(n, np.int64))
        if self._owner is not self.status:
            batch.share_dynamic({name: getattr(self, own)[None] for name, own in _SHARED.items()})
            self._owner = self.status
        batch.time_s[0], batch.round_index[0] = self.time_s, self.round_index
        batch.next_arrival[0], batch.num_done[0] = self.num_arrived, self.num_done
        return batch.boxed

    def run_round(self, ids: np.ndarray, types: np.ndarray | None = None) -> RoundRecord:
        """:meth:`ElasticSimulator.run_round <shockwave_gym.simulator.Simulator.run_round>`
        on the compiled round rules: the same record and state."""
        if self.num_done == self.num_jobs:
            raise InvalidActionError("the episode is over: every job has completed")
        ids, columns = self.place_round(ids, types)
        boxed = self._kernel_state()
        sel, paid, completed = self._scratch
        start, end, busy, finished = jit.step_columns(boxed, ids, np.asarray(columns, np.int64), _COUNTS,
                                                      self.gpu_time_s, sel, paid, completed)
        record = RoundRecord(self.round_index, start, end, ids, self.last_run_s[ids], self.last_overhead_s[ids],
                             completed[:finished].copy(), int(busy), None,
                             _COUNTS[columns % _COUNTS.size] if columns.size else columns.copy())
        batch = self._batch
        self.commit_round(record, batch.time_s.item(0), batch.next_arrival.item(0), batch.num_done.item(0))
        return record


def elastic_simulator(jobs, config, throughputs, *, trace_name: str = "", compiled: bool = True) -> ElasticSimulator:
    """The simulator of an elastic trace: :class:`CompiledElasticSimulator` on a homogeneous cluster
    when ``compiled`` and numba is installed, else the reference :class:`ElasticSimulator`."""
    one_type = not config.heterogeneous
    cls = CompiledElasticSimulator if compiled and one_type and jit.AVAILABLE else ElasticSimulator
    return cls(jobs, config, throughputs, trace_name=trace_name)

"""The single env's elastic step on compiled kernels (`gpus=N` V100s, numba installed): the
``priority`` and ``select`` count decoders (:func:`~shockwave_gym.env.vector.jit.elastic_priority_one`,
:func:`~shockwave_gym.env.vector.jit.elastic_select_one`) and
the observation's ``elastic`` entry (:func:`elastic_rows`, over
:func:`~shockwave_gym.env.vector.features.elastic_one`), beside the
rounds of :class:`~shockwave_gym.batch.elastic.CompiledElasticSimulator`. The rules are
:mod:`shockwave_gym.interface.elastic_actions`' and :mod:`~shockwave_gym.interface.elastic_features`'
(the reference the env runs with ``_compiled_allowed = False``), bit for bit.
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.batch.elastic import CompiledElasticSimulator, elastic_simulator
from shockwave_gym.env.vector import features
from shockwave_gym.env.vector import jit as vec_jit
from shockwave_gym.interface.elastic_actions import ElasticPriorityMode, ElasticSelectMode
from shockwave_gym.interface.elastic_features import MARGINAL_LIMIT, elastic_features


class CompiledElasticPriorityMode(ElasticPriorityMode):
    """:class:`ElasticPriorityMode` whose packing runs compiled (the same checks first)."""

    def place(self, action, view, slots, types=None):
        values, by_id = self.checked(action, slots)
        allowed = view.count_allowed[:, 0, :]  # one type: the type axis has one entry (no copy per decision)
        counts = np.asarray(view.gpu_counts, dtype=np.int64)
        size = by_id.size + slots.queue.size
        ids, picked = np.empty(size, np.int64), np.empty(size, np.int64)
        taken = vec_jit.elastic_priority_one(values[: self.max_jobs], values[self.max_jobs :], by_id, slots.slot_job,
                                             slots.queue, allowed, counts, view.gpus, ids, picked)
        ids, picked = ids[:taken], picked[:taken]
        order = np.argsort(ids, kind="stable")
        return ids[order], picked[order], 0


class CompiledElasticSelectMode(ElasticSelectMode):
    """:class:`ElasticSelectMode` whose repair rule runs compiled (the same checks first)."""

    def place(self, action, view, slots, types=None):
        entries = self.checked(action)
        by_id = slots.slots_by_job()
        ids, picked = np.empty(by_id.size, np.int64), np.empty(by_id.size, np.int64)
        taken, repairs = vec_jit.elastic_select_one(entries.astype(np.int64, copy=False), by_id, slots.slot_job,
                                                    self._allowed, np.asarray(view.gpu_counts, np.int64), view.gpus,
                                                    ids, picked)
        return ids[:taken], picked[:taken], repairs


def elastic_rows(view, slots) -> np.ndarray:
    """:func:`~shockwave_gym.interface.elastic_features.elastic_features` compiled
    (:func:`~shockwave_gym.env.vector.features.elastic_one`: the same float64 operations per
    entry)."""
    counts = np.asarray(view.gpu_counts, dtype=np.float64)
    out = np.zeros((slots.max_jobs, 2 * counts.size), dtype=np.float32)
    if slots.slot_job.max(initial=-1) >= 0:
        features.elastic_one(slots.slot_job, view.count_allowed[:, 0, :], view.throughput_by_count[:, 0, :],
                             view.current_throughput, counts, MARGINAL_LIMIT, out)
    return out


def elastic_parts(simulator, mode):
    """(action mode, elastic-entry function) of an env whose elastic trace runs on
    ``simulator``: the compiled ones when its rounds are compiled, else the reference's
    (``mode`` itself, or a reference twin of it)."""
    compiled = isinstance(simulator, CompiledElasticSimulator)
    for reference, twin in ((ElasticPriorityMode, CompiledElasticPriorityMode),
                            (ElasticSelectMode, CompiledElasticSelectMode)):
        if isinstance(mode, reference):
            cls = twin if compiled else reference
            if type(mode) is not cls:
                mode = cls(mode.max_jobs, mode.num_counts, mode.num_types)
    return mode, elastic_rows if compiled else elastic_features


def elastic_env_parts(jobs, config, throughputs, mode, *, trace_name: str, compiled: bool):
    """(simulator, action mode, elastic-entry function) of an env on an elastic trace: the
    compiled ones on a homogeneous cluster when ``compiled`` and numba is installed
    (:func:`~shockwave_gym.batch.elastic.elastic_simulator`, :func:`elastic_parts`)."""
    simulator = elastic_simulator(jobs, config, throughputs, trace_name=trace_name, compiled=compiled)
    return (simulator, *elastic_parts(simulator, mode))

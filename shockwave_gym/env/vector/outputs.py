"""What the native vector env hands back each step: the observations of the K clusters
(the kernels' features, version 1 or 2) and their infos, with Gymnasium's per-key masks,
a reset cluster's info merged in and an ended cluster's kept apart (:class:`VectorOutputs`,
a part of :class:`~shockwave_gym.env.vector.ClusterVectorEnv`)."""

from __future__ import annotations

import numpy as np

from shockwave_gym.env.vector import features
from shockwave_gym.env.vector.estimates import (
    JOB_HIGH,
    JOB_LOW,
    SCALE_IN,
    SCALE_OUT,
    V2_FEATURES,
    take_logarithms,
)
from shockwave_gym.env.vector.state import KeptFeatures
from shockwave_gym.interface.observation import V2_CLUSTER_LOW


class VectorOutputs:
    """Observations and infos of :class:`~shockwave_gym.env.vector.ClusterVectorEnv`, from
    its simulator, slot map, action mode and estimates."""

    def _observations(self) -> dict[str, np.ndarray]:
        sim, slots = self.sim, self.slots
        sequential = self.action_mode == "sequential"
        free = np.asarray(self.mode.free_gpus if sequential else sim.gpus, np.int64)
        picked = self.mode.picked.astype(np.int8) if sequential else np.zeros(slots.slot_job.shape, np.int8)
        if self.obs_version == 2:
            jobs, cluster = self._jobs_v2(free)
            return {"jobs": jobs, "job_valid": (slots.slot_job >= 0).view(np.int8), "picked": picked,
                    "cluster": cluster}
        raw = np.empty((10, int(np.count_nonzero(slots.slot_job >= 0))))
        features.slot_raw_features(self._kernel_state(), SCALE_IN, raw)
        jobs = np.empty((self.num_envs, self.max_jobs, 10), np.float32)
        features.scatter_slot_features(slots.slot_job, take_logarithms(raw), SCALE_OUT, JOB_LOW, JOB_HIGH, jobs)
        cluster = np.empty((self.num_envs, 8), np.float32)
        features.cluster_rows(self._kernel_state(), free, self.max_jobs, cluster)
        return {"jobs": jobs, "job_valid": slots.valid.view(np.int8).copy(), "picked": picked, "cluster": cluster}

    def _jobs_v2(self, free) -> tuple[np.ndarray, np.ndarray]:
        """(K, max_jobs, features) float32 version 2 job features, recomputing only the jobs
        that ran since they were computed (features.job_rows_v2), and the cluster features."""
        store = self._features
        if store is None:
            self._features = store = KeptFeatures.zeros(self.num_envs, self.max_jobs, V2_FEATURES)
        cluster = np.empty((self.num_envs, V2_CLUSTER_LOW.size), np.float32)
        full, dynamic = features.job_rows_v2(self._kernel_state(), store, free, cluster)
        features.finish_v2(store, full, dynamic)
        jobs = store.values.copy()
        return jobs, cluster

    def _infos(self, closed: np.ndarray, repairs: np.ndarray, rounds: np.ndarray, elapsed_s: np.ndarray) -> dict:
        sim, slots, k = self.sim, self.slots, self.num_envs
        queued = self._no_queues.copy()
        queue_length = slots.queue_length
        if queue_length.any():
            for i in np.flatnonzero(queue_length).tolist():
                queued[i] = tuple(np.flatnonzero(slots.queued[i]).tolist())
        infos = {
            "round_index": sim.round_index.copy(),
            "time_s": sim.time_s.copy(),
            "num_active": self._est.num_active.copy(),
            "queue_length": queue_length,
            "queued_job_ids": queued,
            "slot_job_ids": slots.slot_job.copy(),
            "round_closed": closed.copy(),
            "action_repairs": np.asarray(repairs, np.int64).copy(),
            "action_repairs_total": self._repairs_total.copy(),
            "rounds_repaired": self._rounds_repaired.copy(),
            "rounds_elapsed": np.asarray(rounds, np.int64).copy(),
            "elapsed_s": np.asarray(elapsed_s, np.float64).copy(),
            "rounds_skipped_total": self._rounds_skipped_total.copy(),
        }
        every = np.ones(k, bool)
        for key in INFO_KEYS:
            infos[key] = every.copy()
        return infos


#: The masks of the per-step info keys (all True: every sub-env reports every key).
INFO_KEYS = tuple(f"_{key}" for key in (
    "round_index", "time_s", "num_active", "queue_length", "queued_job_ids", "slot_job_ids", "round_closed",
    "action_repairs", "action_repairs_total", "rounds_repaired", "rounds_elapsed", "elapsed_s", "rounds_skipped_total"))


def rows_only(info: dict, rows: np.ndarray) -> dict:
    """``info`` as Gymnasium's ``_add_info`` builds it from the clusters in ``rows`` alone:
    other rows zero (None in object arrays), their masks False."""
    out = {}
    for key, value in info.items():
        if key.startswith("_"):
            out[key] = value & rows
        elif isinstance(value, dict):
            out[key] = rows_only(value, rows)
        elif value.dtype == object:
            kept = np.full(value.shape[0], None, dtype=object)
            for i in np.flatnonzero(rows).tolist():
                kept[i] = value[i]
            out[key] = kept
        else:
            out[key] = np.where(rows.reshape(-1, *([1] * (value.ndim - 1))), value, np.zeros((), value.dtype))
    return out


def merge_rows(step_info: dict, reset_info: dict, rows: np.ndarray) -> dict:
    """Each cluster's info: ``reset_info``'s in ``rows`` (reset this step), ``step_info``'s
    elsewhere (keys of ``reset_info``; the ended clusters' metrics are in ``final_info``)."""
    out = {}
    for key, fresh in reset_info.items():
        old = step_info[key]
        if key.startswith("_") or fresh.dtype != object:
            out[key] = np.where(rows.reshape(-1, *([1] * (fresh.ndim - 1))), fresh, old)
        else:
            out[key] = old.copy()
            for i in np.flatnonzero(rows).tolist():
                out[key][i] = fresh[i]
    return out

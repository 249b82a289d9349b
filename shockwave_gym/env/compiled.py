"""The single env's compiled step (numba) for its common configuration: a homogeneous
cluster, observation version 2, the ``priority`` or ``select`` mode, built-in reward terms.

:class:`CompiledStep` builds the state struct of :mod:`shockwave_gym.env.compiled_kernels`
(:class:`~shockwave_gym.env.compiled_state.SingleState`: the trace's tables, the round and
reward constants, the :class:`~shockwave_gym.simulator.Simulator`'s own per-job arrays and the
env's slot map's arrays, by name) in one place, runs
:func:`~shockwave_gym.env.compiled_kernels.round_step` on it, commits the scalars to the
simulator (:meth:`Simulator.commit_round`) and the slot map, and lets numpy apply the
logarithms, scales and clipping (observation.transform_v2's operations), so every value is
computed by the same float64 operations as on the Python path, in the same order, bit for
bit (the kernels' module says how).

Without numba (an optional dependency) :data:`AVAILABLE` is False and the env keeps its
Python path. The view, ``simulator.result()`` and every public array stay exact: the kernel
writes the very arrays the Python path writes.
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.batch import jit as core_jit
from shockwave_gym.env import compiled_state as state
from shockwave_gym.env.compiled_state import (  # noqa: F401  (the step's codes, as ClusterEnv reads them)
    ALL_ACTIVE,
    FTF,
    FTF_EXCESS,
    GIVEN,
    JCT,
    MAKESPAN,
    NOOP,
    PRIORITY,
    SELECT,
)
from shockwave_gym.state import RoundRecord

AVAILABLE = core_jit.AVAILABLE

#: The widest reachable-size row whose sum numpy computes sequentially (pairwise from 8 on).
MAX_SEQUENTIAL_WIDTH = 7


def reward_terms(reward_fn) -> tuple[np.ndarray, np.ndarray] | None:
    """(term codes, weights) of a WeightedReward made only of built-in terms, else None."""
    from shockwave_gym.env.rewards import REWARDS, WeightedReward

    if type(reward_fn) is not WeightedReward:
        return None
    codes = {REWARDS["jct"]: JCT, REWARDS["makespan"]: MAKESPAN, REWARDS["ftf"]: FTF, REWARDS["ftf_excess"]: FTF_EXCESS}
    terms = []
    for _, fn, weight in reward_fn.terms:
        if fn not in codes:
            return None
        terms.append((codes[fn], weight))
    return (np.array([c for c, _ in terms] + [-1], dtype=np.int64),
            np.array([w for _, w in terms] + [0.0], dtype=np.float64))


class CompiledStep:
    """The compiled step for one simulator (one trace) and the env's slot map: holds the
    state struct :func:`~shockwave_gym.env.compiled_kernels.round_step` reads, runs it and
    commits its results."""

    def __init__(self, simulator, slots, reward_fn, terms, jct_normaliser_s: float):
        from shockwave_gym.env import compiled_kernels as kernels

        self.simulator, self.slots, self.reward_fn = simulator, slots, reward_fn
        self.jct_normaliser_s = float(jct_normaliser_s)
        self._reward_terms = list(reward_fn.terms)
        self._kernels = kernels
        self._tables, self._rules = _tables(simulator), _rules(simulator.config, terms, self.jct_normaliser_s)
        obs = _obs()
        out = state.Outputs(np.zeros(10, np.int64), np.zeros(4), np.zeros((len(obs.JOB_FEATURES_V2), slots.max_jobs)),
                              np.zeros(len(obs.CLUSTER_FEATURES_V2), np.float32))
        self._out, self.raw, self.cluster = out, out.raw, out.cluster
        self._queue = np.zeros(simulator.num_jobs, np.int64)
        self._boxed = None  # (SingleState, boxed) while the simulator's and slot map's arrays hold
        self._no_scores = np.zeros(slots.max_jobs)
        self._no_wanted = np.zeros(slots.max_jobs, np.bool_)
        self._call(NOOP, self._no_scores, self._no_wanted)  # loads (or compiles) the kernels now
        self._finish = _finish_constants()
        kernels.finish_features(np.zeros((self.raw.shape[0], 1)), *self._finish)

    def __getstate__(self):
        # the kernels' module and the numba struct do not pickle: both come back on first use
        return {**self.__dict__, "_kernels": None, "_boxed": None}

    def __setstate__(self, state):
        from shockwave_gym.env import compiled_kernels

        self.__dict__.update(state)
        self._kernels = compiled_kernels

    def valid_for(self, simulator, slots, reward_fn, jct_normaliser_s: float) -> bool:
        """Whether this step still serves ``simulator``, ``slots``, ``reward_fn`` and
        ``jct_normaliser_s`` (the ones it was built for, the reward's terms unchanged)."""
        return (simulator is self.simulator and slots is self.slots and reward_fn is self.reward_fn
                and reward_fn.terms == self._reward_terms and jct_normaliser_s == self.jct_normaliser_s)

    def _state(self):
        """The kernels' state struct, built again when the simulator (a reset) or the slot map
        replaced its arrays."""
        sim, slots, kept = self.simulator, self.slots, self._boxed
        if (kept is not None and kept[0].sim.status is sim.status and kept[0].slots.slot_job is slots.slot_job
                and kept[0].slots.job_slot is slots.job_slot):
            return kept[1]
        dynamic = state.Dynamic(sim.status, sim.work_done_s, sim.completion_s, sim.run_time_s, sim.rounds_run,
                            sim.last_run_s, sim.last_overhead_s, sim.ran_last_round, sim.epoch_pos)
        single = state.SingleState(self._tables, self._rules, dynamic,
                                   state.Slots(slots.slot_job, slots.job_slot, self._queue), self._out)
        self._boxed = (single, core_jit.box(single))
        return self._boxed[1]

    def _call(self, code, scores, wanted):
        sim = self.simulator
        return self._kernels.round_step(code, scores, wanted, self._state(), sim.round_index, sim.time_s,
                                        sim.num_arrived, sim.num_done)

    def run(self, code: int, scores=None, wanted=None) -> tuple[float, int] | None:
        """Run one round decided by ``code`` (PRIORITY with ``scores``, SELECT with the bool
        ``wanted`` per slot, GIVEN with the bool ``wanted`` per job, ALL_ACTIVE); commit it.
        ``scores`` and ``wanted`` are fresh C-ordered float64 and bool arrays (so that one
        signature is compiled, once, then loaded from numba's cache). (reward, repairs), or
        None when a score of an occupied slot is not finite (nothing changed)."""
        k = self._kernels
        ids, run_s, overhead, done_ids = self._call(code, self._no_scores if scores is None else scores,
                                                    self._no_wanted if wanted is None else wanted)
        iout = self._out.iout.tolist()
        if iout[k.I_BAD]:
            return None
        start, end, now, reward = self._out.fout.tolist()
        sim = self.simulator
        record = RoundRecord(index=sim.round_index, start_s=start, end_s=end, job_ids=ids, run_s=run_s,
                             overhead_s=overhead, completed_ids=done_ids, gpus_busy=iout[k.I_BUSY])
        sim.commit_round(record, now, iout[k.I_NEXT], iout[k.I_DONE])
        self.slots.seated_elsewhere(sim.view, iout[k.I_NEXT], iout[k.I_ACTIVE],
                                    self._queue[: iout[k.I_QUEUE]].copy(), iout[k.I_DEMAND])
        self.num_active = iout[k.I_ACTIVE]
        return reward, iout[k.I_REPAIRS]

    def job_features(self) -> np.ndarray:
        """The (max_jobs, F) float32 job features of the last round's raw features: numpy's
        logarithms, then transform_v2's scales and clipping (compiled, as numpy does them)."""
        raw = self.raw
        np.log2(raw[2:4], out=raw[2:4])
        logged = raw[4:11]
        np.log1p(logged, out=logged)
        return self._kernels.finish_features(raw, *self._finish)


def _obs():
    from shockwave_gym.interface import observation

    return observation


def _finish_constants() -> tuple:
    obs = _obs()
    return obs.V2_SCALE_OUT, obs.V2_JOB_LOW, obs.V2_JOB_HIGH


def _tables(sim):
    """The trace's static tables of the kernels' state (compiled_state.Tables)."""
    from shockwave_gym.interface.observation import type_throughput_table
    from shockwave_gym.interface.predictor import predictor_for

    st = sim.static
    predictor = predictor_for(sim.view)
    sizes, relative = type_throughput_table(sim.view)
    return state.Tables(st.isolated_time_s, st.gang, st.arrival_s, st.job_base_s, st.epoch_end_global_s, st.first_epoch_index,
                  st.last_epoch_index, st.num_epochs, np.ascontiguousarray(st.epoch_table), st.mean_epoch_s_by_row,
                  st.size_counts_by_row, st.count_row_base, st.initial_batch_size, predictor.prior,
                  predictor.duration_at_s, sizes, relative)


def _rules(config, terms, jct_normaliser_s: float):
    """The round, reward and observation constants of the kernels' state (compiled_state.Rules)."""
    import math

    from shockwave_gym.metrics import UNFAIR_THRESHOLD

    obs = _obs()
    return state.Rules(float(config.round_s), float(config.restart_threshold_s), float(config.restart_overhead_s),
                 int(config.gpus), terms[0], terms[1], jct_normaliser_s, float(UNFAIR_THRESHOLD), obs.V2_SCALE_IN,
                 obs.V2_CLUSTER_LOW, obs.V2_CLUSTER_HIGH, float(obs.TIME_UNIT_S),
                 math.log1p(obs.TIME_SPAN_S / obs.TIME_UNIT_S))

"""The single env's step on the vector env's kernels, at K = 1.

:class:`SingleStep` is the lean driver :class:`~shockwave_gym.env.cluster_env.ClusterEnv`
takes for its common configuration (numba installed, any cluster (a heterogeneous one's
per-type arrays loaded with the trace), the default
information regime, observation version 2, the ``priority`` or ``select`` mode, built-in
reward terms): the state struct of the vector env (:class:`~shockwave_gym.env.vector.state.ClusterState`)
for one cluster, built once per episode, whose per-job arrays are the
:class:`~shockwave_gym.simulator.Simulator`'s own (as (1, jobs) views) and whose slot arrays are
the env's :class:`~shockwave_gym.interface.slots.SlotMap`'s, so the kernels
(:func:`~shockwave_gym.env.vector.fused.advance`, :func:`~shockwave_gym.env.vector.features.job_rows_v2`,
:func:`~shockwave_gym.env.vector.features.scatter_v2`) write them in place. After each round it
commits the round record and the scalars to the simulator (:meth:`Simulator.commit_round`) and
the queue to the slot map, so the view, ``simulator.result()`` and every public array stay
exact for agents. None of the vector env's Python (autoreset, info masks) runs.
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.batch import BatchSimulator
from shockwave_gym.batch import jit as core_jit
from shockwave_gym.env.vector import features, fused
from shockwave_gym.env.vector.estimates import (
    V2_FEATURES,
    TraceJobTables,
)
from shockwave_gym.env.vector.slots import BatchSlotMap
from shockwave_gym.env.vector.state import (
    ClusterState,
    Estimates,
    KeptFeatures,
    RewardTables,
    StepIO,
)
from shockwave_gym.state import DONE, RoundRecord

AVAILABLE = core_jit.AVAILABLE
#: The widest reachable-size list the kernels' predictor sums in numpy's order (< 8 terms).
MAX_SIZES = 7
#: The Simulator's per-job arrays the kernels write, by the batch simulator's names.
_SHARED = {"status": "status", "work_done_s": "work_done_s", "completion_s": "completion_s",
           "run_time_s": "run_time_s", "rounds_run": "rounds_run", "last_run_s": "last_run_s",
           "last_overhead_s": "last_overhead_s", "ran_last_round": "ran_last_round", "pos": "epoch_pos"}


class SingleStep:
    """The kernels' state for one simulator (one trace), the env's slot map and reward."""

    def __init__(self, simulator, slots, reward_fn, jct_normaliser_s: float, max_rounds: int):
        from shockwave_gym.interface.observation import V2_CLUSTER_LOW, type_throughput_table
        from shockwave_gym.interface.predictor import predictor_for

        codes, weights = fused.reward_codes(reward_fn)
        self.simulator, self.slots, self.reward_fn = simulator, slots, reward_fn
        self.jct_normaliser_s = float(jct_normaliser_s)
        self._reward_terms = list(reward_fn.terms)
        self.batch = batch = BatchSimulator(1)
        self._typed = getattr(simulator, "typed", None)  # a HeteroSimulator's per-type arrays
        batch.load(0, simulator.static, simulator.config, simulator.trace_name, typed=self._typed)
        self._tables = TraceJobTables(1)
        self._tables.load(0, predictor_for(simulator.view), type_throughput_table(simulator.view))
        self._slots = BatchSlotMap(1, slots.max_jobs)
        self._slots.widen(simulator.num_jobs)
        self._rewards = RewardTables(np.array([codes], np.int64), np.array([weights]), np.array([self.jct_normaliser_s]))
        self._max_rounds = np.array([max_rounds], np.int64)
        max_jobs = slots.max_jobs
        self._io = StepIO(np.ones(1, bool), np.zeros(1, bool), np.zeros((1, max_jobs)), np.zeros((1, max_jobs), bool),
                          np.zeros(1), np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(1, bool), np.zeros(1, bool))
        self._io_boxed = core_jit.box(self._io)
        self._free = np.array([simulator.config.gpus], np.int64)
        self._cluster = np.zeros((1, V2_CLUSTER_LOW.size), np.float32)
        self._struct = None  # (ClusterState, boxed, KeptFeatures, boxed) over the arrays of _owners
        self._owners = None  # the simulator's status and the slot map's arrays the struct holds
        self._capacity = 0  # round records the struct's arrays hold
        self._version = None  # the simulator's version the kernels' scalars hold
        self.num_active = 0
        self._rows = None  # job_rows_v2's raw rows of the last step

    def __getstate__(self):
        # numba structs do not pickle: they are built again on first use
        return {**self.__dict__, "_io_boxed": None, "_struct": None, "_owners": None, "_version": None, "_rows": None,
                "_capacity": 0}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._io_boxed = core_jit.box(self._io)

    def valid_for(self, simulator, slots, reward_fn, jct_normaliser_s: float) -> bool:
        """Whether this driver still serves ``simulator``, ``slots``, ``reward_fn`` and
        ``jct_normaliser_s`` (the ones it was built for, the reward's terms unchanged)."""
        return (simulator is self.simulator and slots is self.slots and reward_fn is self.reward_fn
                and reward_fn.terms == self._reward_terms and jct_normaliser_s == self.jct_normaliser_s)

    # --- the state struct ------------------------------------------------------------------

    def _state(self):
        """The boxed state struct, built again when the simulator (a reset) or the slot map
        replaced their arrays; the scalars taken again from the simulator and the slot map
        when something else moved it."""
        sim, slots, owners = self.simulator, self.slots, self._owners
        if owners is None or owners[0] is not sim.status or owners[1] is not slots.slot_job or owners[2] is not slots.job_slot:
            self._build()
        if self._version != sim.version:
            self._sync()
        return self._struct[1]

    def _build(self) -> None:
        """The state struct over the simulator's and the slot map's current arrays."""
        sim, slots = self.simulator, self.slots
        shared = {**_SHARED, "last_type": "last_type"} if self._typed is not None else _SHARED
        self.batch.share_dynamic({name: getattr(sim, own)[None] for name, own in shared.items()})
        self._slots.share(slots.slot_job[None], slots.job_slot[None])
        struct = ClusterState(self.batch.arrays, self._slots.arrays, self._tables.arrays,
                              Estimates.zeros((1, sim.num_jobs)), self._rewards, self._max_rounds,
                              np.zeros((1, sim.num_jobs), bool))
        features = KeptFeatures.zeros(1, slots.max_jobs, V2_FEATURES)
        self._struct = (struct, core_jit.box(struct), features, core_jit.box(features))
        self._owners = (sim.status, slots.slot_job, slots.job_slot)
        self._capacity = self.batch.round_start_s.shape[1]
        self._version = None

    def _sync(self) -> None:
        """The scalars, the queue and the estimates' flags from the simulator and slot map."""
        sim, slots, batch, mine = self.simulator, self.slots, self.batch, self._slots
        batch.time_s[0], batch.round_index[0] = sim.time_s, sim.round_index
        batch.next_arrival[0], batch.num_done[0] = sim.num_arrived, sim.num_done
        mine.queued[0] = False
        mine.queued[0, slots.queue] = True
        mine.queue_count[0], mine.demand_gpus[0] = slots.queue.size, slots.demand_gpus
        struct, _, features, _ = self._struct
        struct.est.derived[0] = False
        features.job[0] = -2
        self._version = sim.version

    def _room(self):
        """The boxed state struct with a round record's room for the coming round. A
        simulator reset (new arrays) or a round run elsewhere changes its version: only then
        is the struct checked against the owners' arrays and the scalars taken again."""
        sim = self.simulator
        if self._version != sim.version:
            self._state()
        if sim.round_index >= self._capacity:
            self.batch.reserve_rounds(sim.round_index + 1)
            self._capacity = self.batch.round_start_s.shape[1]
            struct = self._struct[0]._replace(sim=self.batch.arrays)
            self._struct = (struct, core_jit.box(struct), *self._struct[2:])
        return self._struct[1]

    # --- a step ----------------------------------------------------------------------------

    def run(self, values: np.ndarray, select: bool, skip: bool) -> tuple[float, int, int] | None:
        """The agent's round (``values``: the scores, or the select bits, per slot), then
        with ``skip`` the rounds no action could change, each committed to the simulator,
        and the observation's raw rows (:meth:`observation` finishes them). (reward, repairs,
        rounds), or None when a score of an occupied slot is not finite (nothing changed)."""
        io, sim = self._io, self.simulator
        (io.wanted if select else io.scores)[0] = values
        boxed = self._room()
        at = sim.round_index
        mode = fused.SELECT if select else fused.PRIORITY
        advance, advance_rows = fused.kernels(self._typed is not None)
        if skip:
            advance(boxed, self._io_boxed, False, False, mode)
        else:
            full, dynamic, ids, seconds, completed = advance_rows(boxed, self._io_boxed, mode, self._struct[3],
                                                                        self._free, self._cluster)
            self._rows = full, dynamic
        if io.bad[0]:
            io.bad[0] = False
            return None
        if skip:
            return self._skipping(at, mode)
        self._commit(at, ids, seconds[0], seconds[1], completed)
        return self._seat(), io.repairs.item(0) if select else 0, 1

    def _skipping(self, at: int, mode: int) -> tuple[float, int, int]:
        """After the agent's round ``at``: the rounds no action could change, each committed."""
        sim, batch = self.simulator, self.batch
        self._commit(at)
        rounds = 1
        while True:
            boxed = self._room()
            at = sim.round_index
            fused.kernels(self._typed is not None)[0](boxed, self._io_boxed, True, False, mode)
            if batch.round_index[0] == at:
                self._rows = features.job_rows_v2(boxed, self._struct[3], self._free, self._cluster)
                break
            self._commit(at)
            rounds += 1
        return self._seat(), self._io.repairs.item(0) if mode == fused.SELECT else 0, rounds

    def _seat(self) -> float:
        """The kernels' seating to the slot map; the reward."""
        mine = self._slots
        queue = mine.queued[0].nonzero()[0] if mine.queue_count.item(0) else np.zeros(0, np.int64)
        self.num_active = self._struct[0].est.num_active.item(0)
        self.slots.seated_elsewhere(self.simulator.view, self.batch.next_arrival.item(0), self.num_active, queue,
                                    self._slots.demand_gpus.item(0))
        return self._io.reward.item(0)

    def _commit(self, at: int, ids=None, run_s=None, overhead_s=None, completed=None) -> None:
        """Round ``at``'s record (its lists, or read from the simulator's arrays) and the clock
        to the simulator (its per-job arrays are the kernels')."""
        sim, batch = self.simulator, self.batch
        if ids is None:
            ids = sim.ran_last_round.nonzero()[0]
            run_s, overhead_s, completed = sim.last_run_s[ids], sim.last_overhead_s[ids], ids[sim.status[ids] == DONE]
        types = None if self._typed is None else sim.last_type[ids]
        record = RoundRecord(at, batch.round_start_s.item(at), batch.round_end_s.item(at), ids, run_s, overhead_s,
                             completed, batch.round_gpus_busy.item(at), types)
        sim.commit_round(record, batch.time_s.item(0), batch.next_arrival.item(0), batch.num_done.item(0))
        self._version = sim.version  # the kernels made this state: nothing to take again

    def observation(self) -> tuple[np.ndarray, np.ndarray]:
        """(max_jobs, F) float32 job features (a fresh copy) and the cluster features after
        :meth:`run`: the kept features brought up to date from the raw rows it computed
        (features.job_rows_v2), numpy's logarithms, then features.scatter_v2."""
        kept = self._struct[2]
        features.finish_v2(kept, *self._rows)
        return kept.values[0].copy(), self._cluster[0]


def serves(env) -> bool:
    """Whether a :class:`SingleStep` can run ``env``'s steps (its simulator as it is now)."""
    return AVAILABLE and env.simulator.static.reachable_sizes.shape[1] <= MAX_SIZES

"""``ClusterVectorEnv``: K independent clusters stepped in one batched pass.

Registered as every id's ``vector_entry_point``, so::

    envs = gym.make_vec("shockwave_gym/Cluster-v0", num_envs=64, vectorization_mode="vector_entry_point")

Sub-env ``i`` behaves exactly as ``gym.make(id, **kwargs)`` reset with seed ``seed + i``:
same observations, rewards, terminations, truncations (``max_rounds`` and the registered
``max_episode_steps``, as ``TimeLimit`` counts them) and infos, bit for bit. Autoreset
follows Gymnasium 1.x (``autoreset_mode``: next step by default, or same step). Rounds,
observations, masks and rewards are computed for every cluster at once
(:class:`~shockwave_gym.batch.BatchSimulator` and :mod:`shockwave_gym.env.vector`); only a
reset (drawing the trace, building its tables on first sight) works per cluster.
See docs/VECTOR_ENV.md.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from shockwave_gym.batch import BatchSimulator
from shockwave_gym.batch import jit as core_jit
from shockwave_gym.env.cluster_env import ClusterEnv
from shockwave_gym.env.vector import fused, jit, numpy_loops
from shockwave_gym.env.vector.actions import BATCH_MODES, rows_error
from shockwave_gym.env.vector.estimates import (
    BatchPredictor,
    BatchTypeTable,
    TraceJobTables,
    active_mask,
)
from shockwave_gym.env.vector.outputs import VectorOutputs, merge_rows, rows_only
from shockwave_gym.env.vector.prefetch import Prefetcher, prefetchable, trace_tables, want_worker
from shockwave_gym.env.vector.rewards import BatchTransition
from shockwave_gym.env.vector.slots import BatchSlotMap
from shockwave_gym.env.vector.state import (
    ClusterState,
    Estimates,
    RewardTables,
    StepIO,
)
from shockwave_gym.env.vector.templates import (
    EstimateState,
    make_templates,
    reward_tables_of,
    same_table,
    widened,
)
from shockwave_gym.errors import InputError, InvalidActionError
from shockwave_gym.metrics import compute_metrics


class ClusterVectorEnv(VectorOutputs, VectorEnv):
    """K clusters, each configured like :class:`~shockwave_gym.env.cluster_env.ClusterEnv`.

    ``ClusterVectorEnv(num_envs, **kwargs)`` gives every cluster the same arguments;
    :meth:`from_env_kwargs` one argument dict per cluster (traces and GPUs may differ; the
    action mode and ``max_jobs``, hence the spaces, must agree). ``max_episode_steps``
    truncates as ``TimeLimit`` does. Rewards must be built-in terms. ``compiled`` picks the
    numba loops (default when numba is installed) or the pure-numpy path; both give the same
    results bit for bit.
    """

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 1, *, max_episode_steps: int | None = None,
                 autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP, compiled: bool | None = None,
                 prefetch: bool | str = False, **kwargs):
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise InputError(f"num_envs must be a positive integer, got {num_envs!r}")
        self._setup([kwargs] * num_envs, max_episode_steps, autoreset_mode, compiled, prefetch)

    @classmethod
    def from_env_kwargs(cls, env_kwargs: list[dict], *, max_episode_steps: int | None = None,
                        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
                        compiled: bool | None = None, prefetch: bool | str = False) -> ClusterVectorEnv:
        """One cluster per dict of :class:`ClusterEnv` arguments."""
        if not env_kwargs:
            raise InputError("from_env_kwargs needs at least one dict of env arguments")
        self = cls.__new__(cls)
        self._setup(list(env_kwargs), max_episode_steps, autoreset_mode, compiled, prefetch)
        return self

    def _setup(self, env_kwargs: list[dict], max_episode_steps, autoreset_mode, compiled, prefetch=False) -> None:
        if any(kw.get("render_mode") is not None for kw in env_kwargs):
            raise InputError("the vector env does not render; render a single env (gym.make) instead")
        self.templates = make_templates(env_kwargs)
        first = self.templates[0]
        self._rewards, term_code, term_weight = reward_tables_of(self.templates)
        self.num_envs = k = len(self.templates)
        self.action_mode = first.action_mode
        self.max_jobs = first.max_jobs
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, k)
        self.action_space = batch_space(self.single_action_space, k)
        self.autoreset_mode = autoreset_mode if isinstance(autoreset_mode, AutoresetMode) else AutoresetMode(autoreset_mode)
        self.metadata = {**self.metadata, "autoreset_mode": self.autoreset_mode}
        self.render_mode = None
        if max_episode_steps is not None and (isinstance(max_episode_steps, bool) or not isinstance(max_episode_steps, int) or max_episode_steps < 1):
            raise InputError(f"max_episode_steps must be a positive integer, got {max_episode_steps!r}")
        self.max_episode_steps = max_episode_steps
        self.max_rounds = np.array([t.max_rounds for t in self.templates], np.int64)
        self.jct_normaliser_s = np.array([t.jct_normaliser_s for t in self.templates])
        self._reward_tables = RewardTables(term_code, term_weight, self.jct_normaliser_s)
        self.sim = BatchSimulator(k, compiled=compiled)
        self.compiled = self.sim.compiled
        self._loops = jit if self.compiled else numpy_loops
        self.obs_version = first.obs_version
        self.skip_trivial = first.skip_trivial
        # per-cluster tables for the numpy path, per-trace rows for the compiled one
        self.predictor = None if self.compiled else BatchPredictor(k)
        self.type_table = None if self.compiled else BatchTypeTable(k)
        self.job_tables = TraceJobTables(k) if self.compiled else None
        self.slots = BatchSlotMap(k, self.max_jobs, compiled=self.compiled)
        # the compiled path decodes priority and select in fused.advance; these are the numpy rules
        self.mode = BATCH_MODES[self.action_mode](k, self.max_jobs, idle_allowed=first.idle_allowed)
        self._rounds_skipped_total = np.zeros(k, np.int64)
        #: one compiled call per step (env/vector/fused.py): the priority and select modes
        self._fused = self.compiled and self.action_mode in ("priority", "select")
        self._features = None  # the compiled path's kept observation features (KeptFeatures)
        self._np_random = [None] * k
        self._tables: list[tuple | None] = [None] * k  # (trace, simulator, predictor) per cluster
        self._steps = np.zeros(k, np.int64)
        self._repairs_total = np.zeros(k, np.int64)
        self._rounds_repaired = np.zeros(k, np.int64)
        self._autoreset = np.zeros(k, bool)
        self._state = None
        self._kernel_struct: tuple | None = None  # (ClusterState, boxed) of the compiled kernels (_kernel_state)
        self._no_queues = np.empty(k, dtype=object)
        for i in range(k):
            self._no_queues[i] = ()
        self.closed = False
        #: the worker preparing the next episodes of the clusters with a prefetchable source
        #: (env/vector/prefetch.py), or None
        self._prefetcher = None
        self._prefetch_rows = np.array([prefetchable(t.source) for t in self.templates])
        self._announced: dict[int, int] = {}  # cluster -> the seed its stream was started from
        if want_worker(prefetch) and self._prefetch_rows.any():
            self._prefetcher = Prefetcher()

    # --- Gymnasium API ---------------------------------------------------------------------

    def reset(self, *, seed: int | list | None = None, options: dict | None = None):
        k = self.num_envs
        if seed is None:
            seeds = [None] * k
        elif isinstance(seed, int | np.integer) and not isinstance(seed, bool):
            seeds = [int(seed) + i for i in range(k)]
        else:
            seeds = list(seed)
            if len(seeds) != k:
                raise ValueError(f"If seeds are passed as a list the length must match num_envs={k} but got length={len(seeds)}.")
        rows = np.ones(k, bool)
        if options is not None and "reset_mask" in options:
            rows = np.asarray(options["reset_mask"], dtype=bool)
            if rows.shape != (k,):
                raise ValueError(f"`options['reset_mask']` must have shape `({k},)`, got {rows.shape}")
        for i in np.flatnonzero(rows).tolist():
            self._reset_cluster(i, seeds[i])
        self._autoreset &= ~rows
        self._begin_decision(rows)
        self._refresh()
        infos = self._infos(np.zeros(k, bool), np.zeros(k, np.int64), np.zeros(k, np.int64), np.zeros(k))
        if not rows.all():
            infos = {key: value for key, value in infos.items()}
            for key in [key for key in infos if not key.startswith("_")]:
                infos[f"_{key}"] = rows.copy()
        return self._observations(), infos

    def step(self, actions):
        if self._fused:
            return self._finish_step(*self._advance_fused(actions))
        sim = self.sim
        resetting = self._autoreset  # next-step autoreset: these clusters reset and ignore their action
        acting = ~resetting
        mode = self.mode
        actions = mode.check(actions, self.slots, acting)  # a refused action changes nothing
        if resetting.any():
            for i in np.flatnonzero(resetting).tolist():
                self._reset_cluster(i, None)
            self._begin_decision(resetting)
        sel, closes, repairs = mode.choose(actions, self.slots, sim.gang, sim.gpus, acting)
        if self.skip_trivial and self.action_mode == "sequential":
            forced = mode.forced_picks(acting & ~closes)
            if forced.any():
                closes = closes | forced
                sel = mode.selection(self.slots, sim.gang.shape[1], closes)
        closing = acting & closes
        repairs = np.where(closing, repairs, 0)
        start_s = sim.time_s.copy()
        rounds = closing.astype(np.int64)
        rewards = np.where(closing, self._run_rounds(sel, closing, refresh_all=True), 0.0)
        if self.skip_trivial:
            running = closing & ~sim.done & (sim.round_index < self.max_rounds)
            while running.any():
                sel, forced = self._forced_rounds(running)
                if not forced.any():
                    break
                rewards = rewards + np.where(forced, self._run_rounds(sel, forced), 0.0)
                rounds += forced
                running = forced & ~sim.done & (sim.round_index < self.max_rounds)
            self._rounds_skipped_total += np.maximum(rounds - 1, 0)
        return self._finish_step(acting, closing, repairs, rounds, rewards, start_s)

    def _finish_step(self, acting, closing, repairs, rounds, rewards, start_s):
        """Terminations, truncations, infos and autoreset after the rounds of a step."""
        k = self.num_envs
        sim = self.sim
        done = sim.done
        terminated = closing & done
        truncated = closing & ~done & (sim.round_index >= self.max_rounds)
        ended_by_sim = terminated | truncated
        self._steps += acting
        if self.max_episode_steps is not None:
            truncated |= acting & (self._steps >= self.max_episode_steps)
        self._repairs_total += repairs
        self._rounds_repaired += repairs > 0
        infos = self._infos(closing, repairs, rounds, sim.time_s - start_s)
        for i in np.flatnonzero(ended_by_sim).tolist() if ended_by_sim.any() else ():
            metrics = compute_metrics(sim.result(i))
            metrics["restart_overhead_gpu_s"] = float(sim.overhead_gpu_s[i])  # job sets are not kept per round
            infos = self._add_info(infos, {"metrics": {key: (math.nan if v is None else v) for key, v in metrics.items()}}, i)
        ended = terminated | truncated
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            self._autoreset = ended
        elif ended.any():  # same-step autoreset: report the last observation and info, then reset
            obs = self._observations()
            final_obs = np.full(k, None, dtype=object)
            for i in np.flatnonzero(ended).tolist():
                final_obs[i] = {key: value[i] for key, value in obs.items()}
            final_info = rows_only(infos, ended)
            for i in np.flatnonzero(ended).tolist():
                self._reset_cluster(i, None)
            self._begin_decision(ended)
            self._refresh()
            zero = np.zeros(k, np.int64)
            fresh = self._infos(np.zeros(k, bool), zero, zero, np.zeros(k))  # what reset() says
            infos = {"final_obs": final_obs, "_final_obs": ended.copy(), "final_info": final_info,
                     "_final_info": ended.copy(), **merge_rows(infos, fresh, ended)}
        return self._observations(), rewards, terminated, truncated, infos

    def _advance_fused(self, actions):
        """The compiled step of the priority and select modes (fused.advance): the same
        rounds, rewards and seating as the general path below, in one call."""
        k = self.num_envs
        sim, slots, state = self.sim, self.slots, self._state
        resetting = self._autoreset
        fresh = resetting
        acting = ~resetting
        select = self.action_mode == "select"
        # one dtype per mode, whatever the caller's (one compiled signature); refused before
        # any pending autoreset runs (the kernel checks scores itself when none is pending)
        checked = self.mode.check(actions, slots, acting, finite=bool(resetting.any()))
        scores, wanted = (_NO_SCORES, checked) if select else (checked, _NO_WANTED)
        if resetting.any():
            for i in np.flatnonzero(resetting).tolist():
                self._reset_cluster(i, None)
            if state.progress.shape != sim.pos.shape:  # a wider trace: every cluster derives again
                self._new_state()
                fresh = np.ones(k, bool)
        if sim.round_index.max() >= sim.round_start_s.shape[1]:  # the agent's round needs a record
            sim.reserve_rounds(int(sim.round_index.max()) + 1)
        start_s = sim.time_s.copy()
        io = StepIO(acting, fresh, scores, wanted, np.zeros(k), np.zeros(k, np.int64), np.zeros(k, np.int64),
                    np.zeros(k, bool), np.zeros(k, bool))
        resume = False
        while True:
            fused.advance(self._kernel_state(), io, resume, self.skip_trivial, select)
            if io.bad.any():
                raise InvalidActionError(_SELECT_VALUES) if select else rows_error(io.bad, "priority scores must be finite")
            if not io.pending.any():
                break
            sim.reserve_rounds(sim.round_start_s.shape[1] + 1)  # the skipped rounds outgrew the records
            io = io._replace(acting=io.pending, fresh=np.zeros(k, bool), pending=np.zeros(k, bool))
            resume = True
        rewards, rounds, repairs = io.reward, io.rounds, io.repairs
        if self.skip_trivial:
            self._rounds_skipped_total += np.maximum(rounds - 1, 0)
        return acting, acting, repairs, rounds, rewards, start_s

    def _kernel_state(self):
        """The compiled kernels' state struct (state.py's ClusterState, boxed): the owners'
        current array views, built again when one of them changed (a reset that loaded a wider
        trace, more round records, new estimates)."""
        sim, slots, tables, est = self.sim.arrays, self.slots.arrays, self.job_tables.arrays, self._state.est
        kept = self._kernel_struct
        if kept is not None:
            struct, boxed = kept
            if struct.sim is sim and struct.slots is slots and struct.tables is tables and struct.est is est:
                return boxed
        sel = np.zeros(sim.pos.shape, bool)
        struct = ClusterState(sim, slots, tables, est, self._reward_tables, self.max_rounds, sel)
        self._kernel_struct = (struct, core_jit.box(struct))
        return self._kernel_struct[1]

    def _run_rounds(self, sel: np.ndarray, rows: np.ndarray, *, refresh_all: bool = False) -> np.ndarray:
        """Run one round of ``sel`` in ``rows``, refresh (every cluster with ``refresh_all``:
        some may just have been reset), start their next decisions; the rewards of every
        cluster (meaningful in ``rows``)."""
        sim, state = self.sim, self._state
        state = EstimateState(state.progress, state.active, state.num_active, state.remaining, state.rho, state.extra)
        start_s = sim.time_s.copy()
        active_before = state.active
        if active_before.shape != sim.status.shape:  # an autoreset this step loaded a wider trace
            active_before = widened(active_before, sim.status.shape[1])
        if rows.any():
            sim.step(sel & rows[:, None], rows)
        self._refresh(None if refresh_all else rows)
        new = self._state
        transition = BatchTransition(
            sim=sim, start_s=start_s, end_s=sim.time_s, active_before=active_before, active=new.active,
            rho_hat=new.rho, max_jobs=self.max_jobs, jct_normaliser_s=self.jct_normaliser_s, compiled=self.compiled,
            rows=rows,
        )
        rewards = self._rewards[0][0](transition)
        for reward, reward_rows in self._rewards[1:]:
            rewards = np.where(reward_rows, reward(transition), rewards)
        self._begin_decision(rows)
        return rewards

    def _forced_rounds(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(job sets, rows) of the rounds no action could change (ClusterEnv._forced_round)."""
        sim, slots = self.sim, self.slots
        if self.action_mode == "sequential":
            forced = self.mode.forced_picks(rows)
            return self.mode.selection(slots, sim.gang.shape[1], forced), forced
        forced = rows & (slots.demand_gpus <= sim.gpus)
        if self.action_mode == "select":
            forced &= slots.queue_length == 0
        return active_mask(sim), forced

    def action_masks(self) -> np.ndarray:
        """(K, mask length) bool: each cluster's ``ClusterEnv.action_masks()``."""
        if self._state is None:
            raise gym.error.ResetNeeded("call reset() before action_masks()")
        return self.mode.masks(self.slots)

    def announce_seeds(self, seeds: list[int | None]) -> None:
        """The seeds of the next ``reset(seed=...)``, known ahead (SB3 sets them with
        ``VecEnv.seed`` long before its first reset): with a prefetching worker, it starts
        preparing those episodes now. A reset with other seeds, or none, ignores this."""
        if self._prefetcher is None:
            return
        if len(seeds) != self.num_envs:
            raise ValueError(f"announce_seeds needs {self.num_envs} seeds, got {len(seeds)}")
        for i, seed in enumerate(seeds):
            if seed is None or not self._prefetch_rows[i]:
                continue
            rng, _ = seeding.np_random(int(seed))
            template = self.templates[i]
            self._prefetcher.start(i, rng, template.source, template.sim_config, template.throughputs,
                                   self.obs_version)
            self._announced[i] = int(seed)

    def close_extras(self, **kwargs) -> None:
        self._state = None
        if self._prefetcher is not None:
            self._prefetcher.close()
            self._prefetcher = None

    # --- per-cluster resets ----------------------------------------------------------------

    def _reset_cluster(self, i: int, seed: int | None) -> None:
        template = self.templates[i]
        fresh_rng = seed is not None or self._np_random[i] is None
        if fresh_rng:
            self._np_random[i], _ = seeding.np_random(seed)
        rng, prefetcher, tables = self._np_random[i], self._prefetcher, None
        announced = self._announced.pop(i, None)  # a stream started from this seed's fresh RNG
        streaming = announced == seed if seed is not None else (not fresh_rng and announced is None)
        if prefetcher is not None and self._prefetch_rows[i] and streaming and prefetcher.active(i):
            # drawn ahead by the worker from this RNG's state; adopt the state it left
            trace, tables, state = prefetcher.take(i)
            rng.bit_generator.state = state
        else:
            trace = template.source.sample(rng)
            if prefetcher is not None and self._prefetch_rows[i]:  # the worker goes on from here
                prefetcher.start(i, rng, template.source, template.sim_config, template.throughputs,
                                 self.obs_version)
        old = self._tables[i]
        if old is not None and old[0] is trace:
            self.sim.restart(i)
        else:
            if tables is None:
                tables = self._tables_for(trace, template)
            self._tables[i] = tables
            _, simulator, predictor, type_table = tables
            self.sim.load(i, simulator.static, simulator.config, trace.name)
            self.slots.widen(self.sim.width)
            if self.compiled:
                self.job_tables.load(i, predictor, type_table)
            else:
                self.predictor.load(i, predictor, self.sim.width, self.sim.bank.width)
                if type_table is not None:
                    self.type_table.load(i, type_table)
        self.slots.reset(i)
        if self._state is not None and self._state.derived is not None:
            self._state.derived[i] = False
        if self._features is not None:
            self._features.job[i] = -2
        self._steps[i] = 0
        self._repairs_total[i] = 0
        self._rounds_repaired[i] = 0
        self._rounds_skipped_total[i] = 0

    def _tables_for(self, trace, template: ClusterEnv) -> tuple:
        for tables in self._tables:  # clusters running the same trace share its tables
            if (tables is not None and tables[0] is trace and tables[1].config == template.sim_config
                    and same_table(tables[1].throughputs, template.throughputs)):
                return tables
        return trace_tables(trace, template.sim_config, template.throughputs, self.obs_version)

    # --- batched state ---------------------------------------------------------------------

    def _refresh(self, rows: np.ndarray | None = None) -> None:
        """Derived arrays, predictions and rho-hat of the current state: of the clusters in
        ``rows`` (all with None), the others keeping theirs (their state has not changed).
        The compiled path updates its arrays in place and recomputes only what changed
        (jit.derive_one); the numpy path recomputes every cluster in fresh arrays."""
        sim = self.sim
        shape = sim.pos.shape
        old = self._state
        if self.compiled:
            if old is None or old.progress.shape != shape:
                old = self._new_state()
                rows = None
            if rows is None:
                rows = np.ones(self.num_envs, bool)
            jit.derive_rows(rows, self._kernel_state())
            old.active = active_mask(sim)
            return
        est = Estimates.zeros(shape)  # fresh arrays: the numpy path keeps no state between steps
        numpy_loops.derive_rows(sim.arrays, self.predictor.prior, self.predictor.duration_at_s, est)
        self._state = EstimateState(est.progress, active_mask(sim), est.num_active, est.remaining, est.rho,
                             (est.mean, est.batch, est.rate))
        self._state.est = est

    def _new_state(self) -> EstimateState:
        """The compiled path's state arrays (nothing derived yet), installed as the state."""
        est = Estimates.zeros(self.sim.pos.shape)
        self._state = state = EstimateState(est.progress, None, est.num_active, est.remaining, est.rho,
                                     (est.mean, est.batch, est.rate))
        state.est, state.derived = est, est.derived
        return state

    def _begin_decision(self, rows: np.ndarray) -> None:
        """Seat jobs and start building the rounds of ``rows`` (as ClusterEnv._begin_decision)."""
        if rows.any():
            self.slots.update(self.sim, rows)
            self.mode.start_round(self.slots, self.sim.gang, self.sim.gpus, rows)


_SELECT_VALUES = "select actions must hold only 0 and 1 (bool, integer or float)"
_NO_SCORES = np.zeros((1, 1))
_NO_WANTED = np.zeros((1, 1), bool)

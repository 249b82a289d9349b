"""``ClusterVectorEnv``: K independent clusters stepped in one batched pass.

Registered as every id's ``vector_entry_point``, so::

    envs = gym.make_vec("shockwave_gym/Cluster-v0", num_envs=64, vectorization_mode="vector_entry_point")

Sub-env ``i`` behaves exactly as ``gym.make(id, **kwargs)`` reset with seed ``seed + i``:
same observations, rewards, terminations, truncations (``max_rounds`` and the registered
``max_episode_steps``, as ``TimeLimit`` counts them) and infos, bit for bit. Autoreset
follows Gymnasium 1.x (``autoreset_mode``: next step by default, or same step). Rounds,
observations, masks and rewards are computed for every cluster at once by the compiled
kernels (:mod:`shockwave_gym.env.vector.fused`, over :class:`~shockwave_gym.batch.BatchSimulator`'s
arrays); only a reset (drawing the trace, building its tables on first sight) works per
cluster. It needs numba: without it, ``gym.make_vec`` gives K single envs instead
(:mod:`~shockwave_gym.env.vector.fallback`).
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
from shockwave_gym.env.vector import fused, jit
from shockwave_gym.env.vector.actions import BATCH_MODES, rows_error
from shockwave_gym.env.vector.estimates import TraceJobTables
from shockwave_gym.env.vector.outputs import VectorOutputs, merge_rows, rows_only
from shockwave_gym.env.vector.prefetch import Prefetcher, prefetchable, trace_tables, want_worker
from shockwave_gym.env.vector.slots import BatchSlotMap
from shockwave_gym.env.vector.state import (
    ClusterState,
    Estimates,
    RewardTables,
    StepIO,
)
from shockwave_gym.env.vector.templates import (
    make_templates,
    reward_tables_of,
    same_table,
)
from shockwave_gym.errors import InputError, InvalidActionError
from shockwave_gym.metrics import compute_metrics


class ClusterVectorEnv(VectorOutputs, VectorEnv):
    """K clusters, each configured like :class:`~shockwave_gym.env.cluster_env.ClusterEnv`.

    ``ClusterVectorEnv(num_envs, **kwargs)`` gives every cluster the same arguments;
    :meth:`from_env_kwargs` one argument dict per cluster (traces and GPUs may differ; the
    action mode and ``max_jobs``, hence the spaces, must agree). ``max_episode_steps``
    truncates as ``TimeLimit`` does. Rewards must be built-in terms. Needs numba.
    """

    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 1, *, max_episode_steps: int | None = None,
                 autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP, prefetch: bool | str = False,
                 **kwargs):
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise InputError(f"num_envs must be a positive integer, got {num_envs!r}")
        self._setup([kwargs] * num_envs, max_episode_steps, autoreset_mode, prefetch)

    @classmethod
    def from_env_kwargs(cls, env_kwargs: list[dict], *, max_episode_steps: int | None = None,
                        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
                        prefetch: bool | str = False) -> ClusterVectorEnv:
        """One cluster per dict of :class:`ClusterEnv` arguments."""
        if not env_kwargs:
            raise InputError("from_env_kwargs needs at least one dict of env arguments")
        self = cls.__new__(cls)
        self._setup(list(env_kwargs), max_episode_steps, autoreset_mode, prefetch)
        return self

    def _setup(self, env_kwargs: list[dict], max_episode_steps, autoreset_mode, prefetch=False) -> None:
        if any(kw.get("render_mode") is not None for kw in env_kwargs):
            raise InputError("the vector env does not render; render a single env (gym.make) instead")
        if not core_jit.AVAILABLE:
            raise InputError("the native vector env runs compiled kernels, which need numba (pip install numba); "
                             "gym.make_vec gives K single envs without it")
        self.templates = make_templates(env_kwargs)
        first = self.templates[0]
        term_code, term_weight = reward_tables_of(self.templates)
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
        self.sim = BatchSimulator(k)
        self.obs_version = first.obs_version
        self.skip_trivial = first.skip_trivial
        self.job_tables = TraceJobTables(k)  # per-trace rows of the predictor's and the type rates' tables
        self.slots = BatchSlotMap(k, self.max_jobs)
        # the action's checks and masks (and the sequential mode's picks); the kernels decode
        # priority and select
        self.mode = BATCH_MODES[self.action_mode](k, self.max_jobs, idle_allowed=first.idle_allowed)
        self._rounds_skipped_total = np.zeros(k, np.int64)
        #: one compiled call per step (env/vector/fused.py): the priority and select modes
        self._fused = self.action_mode in ("priority", "select")
        # the kernel variant: typed clusters (a template with GPU types) or one type only
        self._advance = fused.kernels(any(t.cluster is not None for t in self.templates))[0]
        self._features = None  # the kept observation features (KeptFeatures)
        self._np_random = [None] * k
        self._tables: list[tuple | None] = [None] * k  # (trace, simulator, predictor) per cluster
        self._steps = np.zeros(k, np.int64)
        self._repairs_total = np.zeros(k, np.int64)
        self._rounds_repaired = np.zeros(k, np.int64)
        self._autoreset = np.zeros(k, bool)
        self._est: Estimates | None = None  # the kernels' estimates (state.py), after the first reset
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
        if self._est is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        if self._fused:
            return self._finish_step(*self._advance_fused(actions))
        sim = self.sim
        resetting = self._autoreset  # next-step autoreset: these clusters reset and ignore their action
        acting = ~resetting
        mode = self.mode
        actions = mode.check(actions, self.slots, acting)  # a refused action changes nothing
        fresh = self._reset_rows(resetting)
        sel, closes, repairs = mode.choose(actions, self.slots, sim.gang, sim.gpus, acting)
        if self.skip_trivial:
            forced = mode.forced_picks(acting & ~closes)
            if forced.any():
                closes = closes | forced
                sel = mode.selection(self.slots, sim.gang.shape[1], closes)
        closing = acting & closes
        repairs = np.where(closing, repairs, 0)
        start_s = sim.time_s.copy()
        rounds = closing.astype(np.int64)
        rewards = self._run_given(sel, closing, fresh)
        if resetting.any():  # their first decision, once the kernels seated their jobs
            mode.start_round(self.slots, sim.gang, sim.gpus, resetting)
        if self.skip_trivial:
            running = closing & ~sim.done & (sim.round_index < self.max_rounds)
            while running.any():
                forced = mode.forced_picks(running)
                if not forced.any():
                    break
                rewards = rewards + self._run_given(mode.selection(self.slots, sim.gang.shape[1], forced), forced)
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
        """The step of the priority and select modes: the kernels decode, run the rounds,
        pay the rewards and seat jobs (fused.advance), in one call."""
        k = self.num_envs
        sim, slots = self.sim, self.slots
        resetting = self._autoreset
        acting = ~resetting
        select = self.action_mode == "select"
        # one dtype per mode, whatever the caller's (one compiled signature); refused before
        # any pending autoreset runs (the kernel checks scores itself when none is pending)
        checked = self.mode.check(actions, slots, acting, finite=bool(resetting.any()))
        scores, wanted = (_NO_SCORES, checked) if select else (checked, _NO_WANTED)
        fresh = self._reset_rows(resetting)
        self._reserve_rounds()
        start_s = sim.time_s.copy()
        io = StepIO(acting, fresh, scores, wanted, np.zeros(k), np.zeros(k, np.int64), np.zeros(k, np.int64),
                    np.zeros(k, bool), np.zeros(k, bool))
        resume = False
        advance = self._advance
        while True:
            advance(self._kernel_state(), io, resume, self.skip_trivial, fused.SELECT if select else fused.PRIORITY)
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

    def _reset_rows(self, rows: np.ndarray) -> np.ndarray:
        """Reset the clusters in ``rows`` (a pending autoreset); the clusters the kernels must
        derive and seat afresh: ``rows``, or every one when a wider trace came in."""
        if not rows.any():
            return rows
        for i in np.flatnonzero(rows).tolist():
            self._reset_cluster(i, None)
        if self._est.progress.shape != self.sim.pos.shape:  # a wider trace: every cluster derives again
            self._est = Estimates.zeros(self.sim.pos.shape)
            return np.ones(self.num_envs, bool)
        return rows

    def _reserve_rounds(self) -> None:
        """Room for every cluster's next round record."""
        sim = self.sim
        if sim.round_index.max() >= sim.round_start_s.shape[1]:
            sim.reserve_rounds(int(sim.round_index.max()) + 1)

    def _run_given(self, sel: np.ndarray, rows: np.ndarray, fresh: np.ndarray | None = None) -> np.ndarray:
        """The rounds of the job sets ``sel`` in ``rows`` (fused.advance, GIVEN), the clusters
        in ``fresh`` derived and seated; the next decisions of ``rows`` begun (the caller begins
        those of a reset cluster). The rewards (0 outside ``rows``)."""
        k = self.num_envs
        fresh = np.zeros(k, bool) if fresh is None else fresh
        if not (rows.any() or fresh.any()):
            return np.zeros(k)
        self._reserve_rounds()
        boxed = self._kernel_state()
        self._kernel_struct[0].sel[rows] = sel[rows]
        io = StepIO(rows, fresh & ~rows, _NO_SCORES, _NO_WANTED, np.zeros(k), np.zeros(k, np.int64),
                    np.zeros(k, np.int64), np.zeros(k, bool), np.zeros(k, bool))
        self._advance(boxed, io, False, False, fused.GIVEN)
        self.mode.start_round(self.slots, self.sim.gang, self.sim.gpus, rows)
        return io.reward

    def _kernel_state(self):
        """The compiled kernels' state struct (state.py's ClusterState, boxed): the owners'
        current array views, built again when one of them changed (a reset that loaded a wider
        trace, more round records, new estimates)."""
        sim, slots, tables, est = self.sim.arrays, self.slots.arrays, self.job_tables.arrays, self._est
        kept = self._kernel_struct
        if kept is not None:
            struct, boxed = kept
            if struct.sim is sim and struct.slots is slots and struct.tables is tables and struct.est is est:
                return boxed
        sel = np.zeros(sim.pos.shape, bool)
        struct = ClusterState(sim, slots, tables, est, self._reward_tables, self.max_rounds, sel)
        self._kernel_struct = (struct, core_jit.box(struct))
        return self._kernel_struct[1]

    def action_masks(self) -> np.ndarray:
        """(K, mask length) bool: each cluster's ``ClusterEnv.action_masks()``."""
        if self._est is None:
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
            self._prefetcher.start(i, rng, template.source, template.sim_config, _throughputs_of(template),
                                   self.obs_version)
            self._announced[i] = int(seed)

    def close_extras(self, **kwargs) -> None:
        self._est = None
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
                prefetcher.start(i, rng, template.source, template.sim_config, _throughputs_of(template),
                                 self.obs_version)
        old = self._tables[i]
        if old is not None and old[0] is trace:
            self.sim.restart(i)
        else:
            if tables is None:
                tables = self._tables_for(trace, template)
            self._tables[i] = tables
            _, simulator, predictor, type_table = tables
            self.sim.load(i, simulator.static, simulator.config, trace.name, typed=getattr(simulator, "typed", None))
            self.slots.widen(self.sim.width)
            self.job_tables.load(i, predictor, type_table)
        self.slots.reset(i)
        if self._est is not None:
            self._est.derived[i] = False
        if self._features is not None:
            self._features.job[i] = -2
        self._steps[i] = 0
        self._repairs_total[i] = 0
        self._rounds_repaired[i] = 0
        self._rounds_skipped_total[i] = 0

    def _tables_for(self, trace, template: ClusterEnv) -> tuple:
        for tables in self._tables:  # clusters running the same trace share its tables
            if (tables is not None and tables[0] is trace and tables[1].config == template.sim_config
                    and same_table(tables[1].throughputs, template.throughputs)
                    and getattr(tables[1], "typed_throughputs", None) is getattr(template, "typed_throughputs", None)):
                return tables
        return trace_tables(trace, template.sim_config, _throughputs_of(template), self.obs_version)

    # --- batched state ---------------------------------------------------------------------

    def _refresh(self) -> None:
        """Every cluster's estimates of the current state (jit.derive_rows), in fresh arrays
        when the jobs' width changed."""
        if self._est is None or self._est.progress.shape != self.sim.pos.shape:
            self._est = Estimates.zeros(self.sim.pos.shape)
        jit.derive_rows(np.ones(self.num_envs, bool), self._kernel_state())

    def _begin_decision(self, rows: np.ndarray) -> None:
        """Seat jobs and start building the rounds of ``rows`` (as ClusterEnv._begin_decision)."""
        if rows.any():
            self.slots.update(self.sim, rows)
            self.mode.start_round(self.slots, self.sim.gang, self.sim.gpus, rows)


def _throughputs_of(template: ClusterEnv):
    """The tables ``template``'s simulator is built with: its TypedThroughputs on a
    heterogeneous cluster, else its table."""
    return template.typed_throughputs if template.cluster is not None else template.throughputs


_SELECT_VALUES = "select actions must hold only 0 and 1 (bool, integer or float)"
_NO_SCORES = np.zeros((1, 1))
_NO_WANTED = np.zeros((1, 1), bool)

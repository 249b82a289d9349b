"""The Gymnasium environment: a GPU cluster scheduling dynamically adapting training jobs."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from pathlib import Path

import gymnasium as gym
import numpy as np

from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.config import SimConfig, require_positive_int, round_options
from shockwave_gym.elastic import is_elastic_trace
from shockwave_gym.env.options import (
    check_observation_regime,
    flag,
    make_source,
    parse_cluster,
    regime_for_episode,
    resolve_cluster,
    resolve_gpus,
    resolve_regime,
    resolve_reward,
)
from shockwave_gym.env.render import ansi_table
from shockwave_gym.env.rewards import RoundTransition, make_reward, uses_fair_time
from shockwave_gym.errors import InputError, InvalidActionError
from shockwave_gym.gantt import gantt_rgb
from shockwave_gym.interface.actions import all_finite, select_bits
from shockwave_gym.interface.elastic_features import elastic_features
from shockwave_gym.interface.ftf import ftf_estimate
from shockwave_gym.interface.modes import make_action_mode
from shockwave_gym.interface.observation import (
    DEFAULT_OBSERVATION_VERSION,
    check_version,
    cluster_features_for,
    job_features_for,
    observation_space,
)
from shockwave_gym.interface.slots import SlotMap
from shockwave_gym.interface.typed_actions import TypeContext, unforced_placement
from shockwave_gym.metrics import compute_metrics, simulator_fair_time_s
from shockwave_gym.regimes import Regime, apply_regime
from shockwave_gym.simulator import Simulator
from shockwave_gym.tasks import Task
from shockwave_gym.throughput import ThroughputTable, TypedThroughputs
from shockwave_gym.traces import Trace, TraceSource

#: Largest default number of observation slots; longer traces queue the overflow.
MAX_JOBS_CAP = 128


class ClusterEnv(gym.Env):
    """
    ## Description

    A GPU cluster (V100s, or a mix of GPU types: see Heterogeneous clusters) runs ML
    training jobs in rounds of 120 s, as in the Shockwave paper (Zheng et al., NSDI '23)
    and its authors' trace-driven simulator. Jobs arrive over
    time, each asking for a fixed *gang* of 1, 2, 4 or 8 GPUs, and adapt their batch size as
    they train (Accordion or GNS), so their speed changes in ways a scheduler cannot see in
    advance. At every round boundary the agent decides which jobs run; a job that did not
    run in the previous round pays a 20 s restart. The round rules (R1-R5) are the core
    simulator's (`shockwave_gym.simulator`); the environment only turns actions into job
    sets and simulator states into observations and rewards.

    ## Action Space

    Chosen with ``action_mode``:

    | mode | space | meaning |
    |------|-------|---------|
    | `priority` (default) | `Box(-1, 1, (max_jobs,), float32)` | a score per slot; jobs are packed by descending score (ties: arrival order), skipping jobs whose gang no longer fits, then queued jobs fill the rest in arrival order. Work-conserving; nothing to mask (`action_masks()` returns the occupied slots). |
    | `select` | `MultiBinary(max_jobs)` | bit s runs the job in slot s. Repair rule: bits of empty slots are dropped; over capacity, the selected jobs are taken in arrival order, skipping those that no longer fit. Dropped bits are counted in `info`. `action_masks()` gives sb3-contrib's layout, `[bit=0 allowed, bit=1 allowed]` per slot (length 2 * max_jobs), empty slots forced to 0. |
    | `sequential` | `Discrete(max_jobs + 1)` | one job per sub-step; action `max_jobs` ends the round. The round also ends when no unpicked job fits. `action_masks()` (length max_jobs + 1) is exact: unpicked jobs whose gang fits the free GPUs, and "end round", legal only with `idle_allowed=True`. By default (`idle_allowed=False`) rounds are work-conserving over the slotted jobs: a round closes once no further job fits, and an illegal action (an infeasible pick, or "end round") fills the round with the jobs that still fit in arrival order, then closes it. With `idle_allowed=True` (v1 behaviour) "end round" is always legal and an infeasible pick ends the round. Illegal actions are counted in `info`. |

    **Skipping rounds without a decision** (`skip_trivial=True`, off by default for
    `gym.make`, on in training): a step runs the agent's round, then every following round
    that no action could change, inside the same step, and returns at the next real
    decision. No decision means: `priority`, every active job fits; `select`, every active
    job has a slot and fits (the skipped round runs them all, the work-conserving choice);
    `sequential` (work-conserving), the picks are forced (every unpicked job fits, or only
    one is pickable; the env makes them, also mid-round). The step's reward is the sum of
    the rewards of the rounds it ran (the `jct` identity holds exactly), and
    `info["rounds_elapsed"]` / `info["elapsed_s"]` say how many rounds and simulated seconds
    the step covered, so a learner can discount by `gamma ** rounds_elapsed` (per round) or
    `gamma ** (elapsed_s / round_s)` (per simulated time) instead of per env step; in
    `sequential` mode sub-steps that do not close a round have `rounds_elapsed = 0` and
    `elapsed_s = 0`, so discounting per round does not shrink the horizon by the number of
    picks. `reset()` never skips.

    ## Observation Space

    A `Dict` with fixed size: `max_jobs` slots, padded with zeros. An active job keeps its slot
    until it completes; jobs that find no free slot wait in an arrival-ordered queue, and
    when a slotted job completes, the oldest queued job takes its slot at the next decision
    (backfilling). The queue is summarised by the `queued_jobs` cluster feature; its ids are
    in `info["queued_job_ids"]`; `priority` mode runs queued jobs in arrival order after the
    slotted ones. No feature is derived from a job's isolated time or hidden batch-size
    schedule.

    Three layouts, chosen with `obs_version` (saved policies record the layout's
    `observation_signature(version)` and refuse another). Version 2, the default, is
    scale-free: counts are relative to the cluster's GPUs (not to `max_jobs`), the gang is
    given both absolutely and relative to the GPUs, times share one logarithmic scale that
    resolves a minute to a day, and v1's constant or duplicate features are gone
    (`free_gpus`, constant outside sequential mode, is now per type; `round_index`
    duplicated `time`; `gpus` was constant in training). Per-type features (GPU types
    v100, p100, k80, in `shockwave_gym.cluster.TYPE_ORDER`) let one layout serve
    heterogeneous clusters; on a homogeneous cluster `free_v100` is the free fraction and
    the other two are 0. Version 1 is kept, unchanged, for the weights trained on it
    (`agents/pretrained`). Version 3 is version 2 with each job's length belief; it is the
    one layout that works in every information regime (versions 1 and 2 divide progress by
    the trace's epochs: see Information regimes).

    | key | shape | dtype | bounds | content |
    |-----|-------|-------|--------|---------|
    | `jobs` | (max_jobs, 14) | float32 | per column, below | per-job features of version 2 (v1: 10) and version 3 (v3: 17) |
    | `job_valid` | (max_jobs,) | int8 | {0, 1} | 1 where the slot holds a job |
    | `picked` | (max_jobs,) | int8 | {0, 1} | sequential mode: picked for the round being built (else 0) |
    | `cluster` | (8,) | float32 | per entry, below | cluster features of version 2 (v1: 8) and version 3 (v3: 12) |

    Version 2 `jobs` columns (signature `a3f29482f1f6014f`):

    | # | feature | bounds | definition |
    |---|---------|--------|------------|
    | 0 | `gang_share` | [0, 1] | gang size / cluster GPUs |
    | 1 | `epoch_progress` | [0, 1] | epochs done (with the current epoch's share) / total epochs |
    | 2 | `gang` | [0, 2] | log2(gang size) / 3 (1 GPU: 0, 8 GPUs: 1) |
    | 3 | `batch_size_growth` | [-2, 2] | log2(current batch size / initial batch size) / 4 |
    | 4 | `throughput` | [0, 2] | log10(1 + samples/s at the current batch size) / 4 |
    | 5 | `mean_epoch_duration` | [0, 2] | T(observed mean epoch duration); the current epoch's before the first completes |
    | 6 | `predicted_remaining` | [0, 2] | T(core predictor's remaining run time) |
    | 7 | `age` | [0, 2] | T(time since arrival) |
    | 8 | `attained_service` | [0, 2] | T(GPU-seconds received) |
    | 9 | `ran_last_round` | [0, 1] | 1 if the job ran in the previous round (no restart cost) |
    | 10 | `ftf_estimate` | [0, 4] | log2(1 + rho-hat), rho-hat = (age + c R) / (c (W + R)): R predicted remaining, W observed work done, c = max(1, active jobs / GPUs) |
    | 11 | `throughput_v100` | [0, 4] | built-in V100 table's rate at the current batch size / built-in V100 rate (1, or 0 if the table has no rate) |
    | 12 | `throughput_p100` | [0, 4] | built-in P100 table's rate at the current batch size / built-in V100 rate (0: P100 cannot run it) |
    | 13 | `throughput_k80` | [0, 4] | built-in K80 table's rate at the current batch size / built-in V100 rate (0: K80 cannot run it) |

    T(s) = log1p(s / 60 s) / log1p(86400 / 60): a minute reads 0.10, ten minutes 0.33, an
    hour 0.56, three hours 0.71, a day 1.

    Version 2 `cluster` entries:

    | # | feature | bounds | definition |
    |---|---------|--------|------------|
    | 0 | `free_v100` | [0, 1] | V100 GPUs not yet allocated in this decision / cluster GPUs |
    | 1 | `free_p100` | [0, 1] | P100 GPUs not yet allocated in this decision / cluster GPUs |
    | 2 | `free_k80` | [0, 1] | K80 GPUs not yet allocated in this decision / cluster GPUs |
    | 3 | `busy_last_round` | [0, 1] | GPUs held by the jobs that ran in the previous round / GPUs |
    | 4 | `active_jobs` | [0, 6] | log2(1 + active (arrived, unfinished) jobs / GPUs), queued included |
    | 5 | `queued_jobs` | [0, 6] | log2(1 + active jobs without a slot / GPUs) |
    | 6 | `demand` | [0, 6] | log2(1 + sum of active jobs' gangs / GPUs) |
    | 7 | `time` | [0, 3] | T(simulated time) |

    The free capacity per type comes from one function of the view,
    `shockwave_gym.interface.observation.free_capacity_by_type(view, free_gpus)`.

    Version 3 `jobs` columns (`obs_version=3`, signature `6191a4db26144aa5`;
    `shockwave_gym.interface.length_features`): version 2's columns 0-13, in order and with
    the same definitions but two, then the length belief. The belief is
    `shockwave_gym.interface.lengths`' (docs/SEMANTICS.md, "Information regimes"): a
    discrete law over the epochs `T` the job runs, from public facts only; `k` is its
    completed epochs.

    | # | feature | bounds | definition |
    |---|---------|--------|------------|
    | 0 | `gang_share` | [0, 1] | as in version 2 |
    | 1 | `epoch_progress` | [0, 1] | epochs done (with the current epoch's share) / believed total epochs: the trace's epochs in the `exact` regime (the column equals version 2's), else E[T given T > k] (`believed_total_epochs`) |
    | 2 | `gang` | [0, 2] | as in version 2 |
    | 3 | `batch_size_growth` | [-2, 2] | as in version 2 |
    | 4 | `throughput` | [0, 2] | as in version 2 |
    | 5 | `mean_epoch_duration` | [0, 2] | as in version 2 |
    | 6 | `predicted_remaining` | [0, 2] | T(core predictor's remaining run time): the expected remaining time under the regime's belief (in `exact`, version 2's) |
    | 7 | `age` | [0, 2] | as in version 2 |
    | 8 | `attained_service` | [0, 2] | as in version 2 |
    | 9 | `ran_last_round` | [0, 1] | as in version 2 |
    | 10 | `ftf_estimate` | [0, 4] | as in version 2 (its R is column 6's) |
    | 11 | `throughput_v100` | [0, 4] | as in version 2 |
    | 12 | `throughput_p100` | [0, 4] | as in version 2 |
    | 13 | `throughput_k80` | [0, 4] | as in version 2 |
    | 14 | `remaining_std` | [0, 2] | T(standard deviation of T - k - 1 given T > k, times the predictor's expected epoch duration): the belief's spread of the remaining run time; 0 when the length is known and no job ends early |
    | 15 | `remaining_cv` | [0, 4] | that standard deviation (in epochs) / the expected remaining epochs (the current epoch's rest included) |
    | 16 | `end_hazard` | [0, 1] | P(T = k + 1 given T > k): the probability the current epoch is the job's last |

    A job that has outlived every point of its belief is taken to need k more epochs with a
    standard deviation of k (`PAST_BELIEF_CV` = 1) and an `end_hazard` of 0. Finished jobs
    read 0 in columns 14-16.

    Version 3 `cluster` entries: version 2's 0-7, then the regime's public facts.

    | # | feature | bounds | definition |
    |---|---------|--------|------------|
    | 0 | `free_v100` | [0, 1] | as in version 2 |
    | 1 | `free_p100` | [0, 1] | as in version 2 |
    | 2 | `free_k80` | [0, 1] | as in version 2 |
    | 3 | `busy_last_round` | [0, 1] | as in version 2 |
    | 4 | `active_jobs` | [0, 6] | as in version 2 |
    | 5 | `queued_jobs` | [0, 6] | as in version 2 |
    | 6 | `demand` | [0, 6] | as in version 2 |
    | 7 | `time` | [0, 3] | as in version 2 |
    | 8 | `length_exact` | [0, 1] | 1 in the `exact` regime, else 0 |
    | 9 | `length_estimate` | [0, 1] | 1 in the `estimate` regime, else 0 |
    | 10 | `length_unknown` | [0, 1] | 1 in the `unknown` regime, else 0 |
    | 11 | `early_share` | [0, 1] | the regime's public share of jobs that end early (`view.length_model.early_share`) |

    Later layouts (the elastic-jobs version) extend version 3 the same way: version 3's
    columns first, new ones appended.

    Version 1 `jobs` columns (`obs_version=1`, signature `5954812550e21bd5`):

    | # | feature | bounds | definition |
    |---|---------|--------|------------|
    | 0 | `gang` | [0, 1] | gang size / cluster GPUs |
    | 1 | `epoch_progress` | [0, 1] | epochs done (with the current epoch's share) / total epochs |
    | 2 | `batch_size_growth` | [-2, 2] | log2(current batch size / initial batch size) / 4 |
    | 3 | `throughput` | [0, 2] | log10(1 + samples/s at the current batch size) / 6 |
    | 4 | `mean_epoch_duration` | [0, 4] | log1p(observed mean epoch duration / round length) / 4 (current epoch's duration before the first epoch completes) |
    | 5 | `predicted_remaining` | [0, 4] | log1p(core predictor's remaining run time / 1 h) / 3 |
    | 6 | `age` | [0, 4] | log1p(time since arrival / 1 h) / 3 |
    | 7 | `attained_service` | [0, 4] | log1p(GPU-seconds received / 1 h) / 3 |
    | 8 | `ran_last_round` | [0, 1] | 1 if the job ran in the previous round (no restart cost) |
    | 9 | `ftf_estimate` | [0, 4] | log2(1 + rho-hat), as in version 2 |

    Version 1 `cluster` entries:

    | # | feature | bounds | definition |
    |---|---------|--------|------------|
    | 0 | `free_gpus` | [0, 1] | GPUs not yet allocated in this decision / GPUs (1 except mid-round in sequential mode) |
    | 1 | `busy_last_round` | [0, 1] | GPUs held by the jobs that ran in the previous round / GPUs |
    | 2 | `active_jobs` | [0, 8] | active (arrived, unfinished) jobs / max_jobs, queued included |
    | 3 | `queued_jobs` | [0, 8] | active jobs without a slot / max_jobs |
    | 4 | `demand` | [0, 16] | sum of active jobs' gangs / GPUs |
    | 5 | `time` | [0, 4] | log1p(simulated time / 1 h) / 3 |
    | 6 | `round_index` | [0, 4] | log1p(rounds run x round length / 1 h) / 3 |
    | 7 | `gpus` | [0, 2] | log2(GPUs) / 8 |

    Values beyond a bound are clipped. `shockwave_gym.interface.observation.build_observation(view,
    slots, version=...)` builds the same observation from a `ClusterView`, outside the
    environment (its `version` defaults to 1; pass the version of the policy you feed, 2 or 3 for
    the shipped ones, `policy.json`'s `obs_version`).

    ## Rewards

    Chosen with ``reward``: a name, a `{name or callable: weight}` dict, or a callable
    `f(RoundTransition) -> float`. Rewards arrive when a round closes (sequential sub-steps
    that do not close a round give 0; a step that skips rounds gives the sum of their
    rewards). Built-in terms, for the interval from this decision to the next one (idle
    jumps to the next arrival included):

    - `jct`: -(integral of the number of arrived, unfinished jobs, queued ones included) /
      `jct_normaliser_s` (default `round_s * GPUs`: a round with one job per GPU costs 1,
      whatever `max_jobs` is). For an episode that is not truncated, the rewards sum to
      exactly -(total JCT) / `jct_normaliser_s`.
    - `makespan`: -(interval length) / `round_s`.
    - `ftf`: -1 for each job that completed in the interval unfairly, rho_j > 1.05 (the
      metrics' threshold), with rho_j = JCT_j / (W_j x max(1, n_j / GPUs)) the contention-based
      measure of the Shockwave paper's code (`worst_ftf_themis`, `unfair_fraction_themis`;
      gang-blind): W_j the job's work done (its isolated run time, as it completed), n_j the
      mean number of active jobs over its lifetime. The rewards sum to -(number of unfair
      jobs) = -N x `unfair_fraction_themis`.
    - `ftf_excess`: -max(0, rho_j - 1) for each job that completed in the interval. The
      rewards sum to -sum_j max(0, rho_j - 1), the excess unfairness, which the worst jobs
      dominate (it follows `worst_ftf_themis`); it ranks random play above FIFO on the
      bundled traces (random makes many jobs a little late, FIFO a few very late), where
      `ftf` ranks FIFO first.
    - `fair_share`: the dense fair-share term, -sum_j (time j was active under the policy -
      time j was active in the fair-share reference) / T_fair_j over the interval (the
      reference's time after the episode's end is paid on its last interval). The rewards of an
      episode that is not truncated sum to exactly -sum_j (rho_j - 1), rho_j = JCT_j / T_fair_j
      the metrics' `rho_*` (docs/METRICS.md). Not batched by the native vector env:
      `gym.make_vec` gives K single envs instead (see Information regimes).

    **Tasks.** `task=` (a name of `shockwave_gym.tasks.TASKS` or a `Task`) sets the reward to
    the task's fixed weights (`get_task(task).reward`): `jct` (`{"jct": 1.0}`), `fairness`
    (`{"fair_share": 1.0}`), `balanced` (`jct` 1, `fair_share` 1.8, `makespan` 2.1;
    docs/TASKS.md). Giving `task=` and a `reward=` other than the default is an error. For an
    episode that is not truncated the return is exactly minus the task's cost,
    `return = -task.cost(metrics, first_arrival_s=..., round_s=...)` (up to float summation
    order), with the default `jct_normaliser_s`; the harness's normalised score is then
    `score = (cost_FIFO + return) / (cost_FIFO - cost_reference)` on the same trace.

    Default: the declared default task, `shockwave_gym.tasks.DEFAULT_TASK` = `jct`, that is
    `{"jct": 1.0}`: per episode, -(sum of JCT) / (round_s x GPUs). Weighted mixes are
    dicts, e.g. `{"jct": 1.0, "ftf": 4.0,
    "ftf_excess": 1.0}` for a fairness-weighted objective: the return is the weighted sum of
    the terms' returns above. Removed: `nsw` (its increments of sum log(max(0.01,
    progress)) telescope over an episode to the same constant for every policy) and v1's
    dense `ftf` (the projected rho-hat of waiting jobs, which ranked a random policy above
    the fairer FIFO).

    ## Starting State

    `reset(seed=...)` takes the episode's trace from the trace source (a fixed trace, or a
    freshly generated one drawn from the environment's `np_random`), starts the clock at 0
    and admits the jobs that have arrived; if none has, time jumps to the first arrival.
    Everything after that is deterministic.

    ## Episode End

    - `terminated`: every job of the trace has completed. The final `info["metrics"]` holds
      the core's metrics (makespan_s, avg_jct_s, geomean_jct_s, rho_mean, rho_p95, rho_max,
      rho_over_1_05, rho_over_1_25, gang_ftf_*, worst_ftf, unfair_fraction,
      worst_ftf_themis, unfair_fraction_themis, utilization, rounds, ...; missing values are
      NaN). The fair-share rho comes first: rho_j = JCT_j / T_fair_j, T_fair_j the job's time
      in the policy-independent fluid equal-share reference (each active job holds min(g_j,
      lam) GPUs, water-filled to min(G, sum g)). `gang_ftf_*` is the gang-aware contention
      measure, JCT_j / (isolated time_j x max(1, n_j g_j / G)) (Gavel's isolated share).
      `worst_ftf` / `unfair_fraction` (static contention max(1, N/G), N the jobs of the whole
      trace) and `worst_ftf_themis` / `unfair_fraction_themis` (N replaced by the mean number
      of active jobs over each job's life) are the Shockwave paper's two measures; both leave
      out the gang, so no schedule can make every multi-GPU job fair by them. docs/METRICS.md
      has the metric card.
    - `truncated`: `max_rounds` rounds have run (default 100,000), or the registered
      `max_episode_steps` is reached. `max_episode_steps` counts env steps: rounds in the
      `select` and `priority` modes, sub-steps in `sequential` mode. Episodes truncated
      by `max_rounds` also carry `info["metrics"]`, over the completed jobs; after a
      `TimeLimit` truncation, `env.unwrapped.simulator.result()` gives the same.

    `info` at every step: `round_index`, `time_s`, `num_active`, `queue_length`,
    `queued_job_ids` (tuple), `slot_job_ids` (job id per slot, -1 empty), `round_closed`,
    `action_repairs` (bits dropped by the select repair rule, or 1 for an illegal
    sequential action), `action_repairs_total`, `rounds_repaired`, `rounds_elapsed` (rounds
    run by this step: 0 for a sequential sub-step that does not close a round, more than 1
    when it skipped rounds), `elapsed_s` (simulated seconds the step covered),
    `rounds_skipped_total` (rounds run without a decision so far in the episode).

    ## Information regimes

    `regime=` decides what the agent may know of each job's length (docs/SEMANTICS.md,
    "Information regimes"): a `shockwave_gym.regimes.Regime`, or a name, `"exact"` (the
    default, the paper's setting), `"estimate"` (a user's estimate under the published
    error model) or `"unknown"` (only the duration prior), with `early_endings=` (a share
    in [0, 1) of jobs that end before their nominal length, or `"logged"`; only with a name).
    At every reset the env runs the trace's jobs as the regime gives them
    (`shockwave_gym.regimes.apply_regime`, as `run_episode` does), and the simulator's view
    hides what the regime hides. The regime's seed: a fixed trace (a bundled name, a path, a
    `Trace`) uses the `Regime`'s own seed (0 for a name), so every episode is the same; a
    source that may draw another trace per reset (generated, suite) draws the regime's seed
    from the env's `np_random` right after the trace, so each reset seed gives one episode.
    The default regime draws nothing and leaves every observation, reward and the compiled
    step bit-identical.

    - Observation: versions 1 and 2 read each job's length (their `epoch_progress` and
      `predicted_remaining`), so with `"estimate"` or `"unknown"` they are refused; use
      `obs_version=3`, which works in every regime (in `exact` too). Early endings alone
      (`regime="exact", early_endings=0.2`) keep the length public: every version works, and
      progress is against the nominal epochs (a job that ends early completes before its
      progress reaches 1).
    - Nothing public tells the hidden true length or end: not the observation, the masks nor
      `info` (tests/test_env_regimes.py runs two traces that differ only there and compares).
    - A regime other than the default always takes the Python step (the compiled step
      reads the simulator's true epochs).
    - `gym.make_vec` returns the fallback `SyncClusterVectorEnv` (K single envs, sub-env i
      seeded `seed + i`) for a regime other than the default, for `obs_version=3` and for a
      reward with the `fair_share` term (the `fairness` and `balanced` tasks); the native
      vector env batches the rest.

    ## Heterogeneous clusters

    `cluster="v100=8,p100=8,k80=8"` (a string or a `ClusterSpec`; any of v100, p100, k80)
    runs the episode on the core's heterogeneous simulator (docs/HETEROGENEOUS.md): a gang
    runs on GPUs of one type, its epochs take that type's durations, and a job that changes
    type pays the restart. `gpus` is then the cluster's total (another value is an error);
    `throughputs` may be a `TypedThroughputs`, a single (V100) table with the other types
    built in, or a path. A V100-only `cluster` (`"v100=12"`) is the homogeneous path,
    exactly `gpus=12`. Registered: `shockwave_gym/Hetero-v0` (Generated-v0's traces on
    `v100=8,p100=8,k80=8`) and the suite `shockwave_gym/Suite-hetero-mixed-v0`
    (docs/SUITES.md); `cluster=` also works on every other id.

    Types are indexed in the cluster's order (v100, p100, k80: newest generation first;
    which type is fastest depends on the job, e.g. the built-in tables run some models
    faster on a P100), T = the number of types. How each mode chooses the type:

    | mode | space | who chooses the type |
    |------|-------|----------------------|
    | `priority` | `Box(-1, 1, (max_jobs,))`, unchanged | the agent orders the jobs; in that order (then the queue) each job is placed by the **placement rule**: the fastest type *for that job* (its throughput at its current batch size; ties: cluster order) among the types it can run on that still have its whole gang free; a job that fits nowhere is skipped. Work-conserving per type. |
    | `select` | `MultiBinary(max_jobs)`, unchanged | the agent chooses the set; its jobs are placed by the placement rule in arrival order; a selected job that fits no type is dropped (repair rule, counted in `info`). Mask as on one type. |
    | `sequential` | `Discrete(T * max_jobs + 1)` | the agent: action `t * max_jobs + s` runs the job in slot `s` on type `t`; `T * max_jobs` ends the round (on one type: the homogeneous layout). `action_masks()` (length T * max_jobs + 1, type-major) is exact: (t, s) is legal when slot s holds a job not picked yet this round, the job can run on t (`view.runnable`) and t still has its gang free; "end round" is legal only with `idle_allowed=True`. Without it (the default) rounds are work-conserving: a round closes once no pick is legal, and an illegal action fills the rest of the round with the jobs that still fit, in arrival order, each by the placement rule. With it an infeasible pick ends the round. Illegal actions are counted. |

    The placement rule is the simulator's default rule (`shockwave_gym.placement.place_in_order`);
    the env hands the simulator the explicit placement it decoded, and every placement an
    unmasked action builds is one the simulator accepts (tested, as is that every masked
    pick is one it rejects). `env.simulator.history[-1].gpu_types` gives the type of each job
    of the last round; `view.last_type` the type each job ran on. The placement rule ignores
    restarts: it may move a job to a faster type that just freed up, paying the restart;
    `sequential` is the mode that can keep a job where it ran.

    `skip_trivial` on several types skips a round only when no action could change it:
    `priority` / `select` when every active job fits on its own fastest type at once (then
    any order places every job there; `select` also needs every active job slotted);
    `sequential` only for picks that are the single legal one (jobs that would all fit
    together still choose their types, so they are not forced).

    Observation (version 2, same layout as on one type): per slot, `throughput_v100`,
    `throughput_p100`, `throughput_k80` are the job's rate on each type at its current batch
    size over the V100 rate. For the cluster's types they are the simulator's own rates
    (`view.throughput_by_type`), 0 where the job may not be placed on the type
    (`view.runnable`: some batch size it can reach has no rate there), so they agree with the
    masks; types the cluster lacks keep the built-in tables' values. The cluster features
    `free_v100`, `free_p100`, `free_k80` are each type's GPUs not yet allocated in this
    decision over the cluster's GPUs (`free_capacity_by_type`; a type the cluster lacks reads
    0), per type mid-round in `sequential` mode. Observation version 1 has no per-type
    features (its `free_gpus` sums the types). `ran_last_round` says whether a job ran last
    round, not on which type (a move to another type pays the restart all the same).

    Vector env: the native `ClusterVectorEnv` batches heterogeneous clusters in the `priority`
    and `select` modes (typed placement, the map between V100 work and time on a type and
    the restart on a move of type run in its compiled kernels; the single env's compiled
    step runs them too). For `sequential` on a heterogeneous cluster `gym.make_vec` (every
    id's `vector_entry_point`) returns `SyncClusterVectorEnv`: K single envs stepped in turn
    in Gymnasium's `SyncVectorEnv` (same `action_masks()` and `max_episode_steps` as the
    native env, same trajectories as K separate envs seeded `seed + i`), as fast as K single
    envs.

    ## Elastic jobs

    When the trace source holds elastic jobs (docs/SEMANTICS.md, "Elastic jobs"; a bundled
    elastic trace, a trace file with `"gangs"` lines, or a generated source with
    `elastic_share > 0`), every action mode gives each job a GPU *configuration*: a count, and
    on a heterogeneous cluster (`cluster=`) a GPU type with it. `C = 4` counts (1, 2, 4, 8;
    index `k`), `T` types (1 without `cluster=`; else the cluster's, in its order), `N = T * C`
    configurations, configuration `n = t * C + k` (`gpu_counts[k]` GPUs of type `t`). On one
    type `n = k`: every space, mask and observation below is then the one-type layout. A
    job's allowed configurations are `view.count_allowed[job]` (`(T, C)`): an elastic job's
    declared counts where the type's table has a positive rate at that count for every batch
    size it can reach and the type has that many GPUs; a rigid job keeps its gang and chooses
    the type. A configuration *fits* when its type still has that many GPUs free. The rules
    are `shockwave_gym/interface/elastic_actions.py`'s:

    | mode | space | meaning | masks (`action_masks()`) |
    |---|---|---|---|
    | `select` | `MultiDiscrete([N + 1] * max_jobs)` | per slot 0 (do not run) or `n + 1` (run in configuration `n`); entries on empty slots or disallowed configurations are dropped, then jobs are taken in arrival order while their configuration fits | sb3-contrib's MultiDiscrete layout, `N + 1` per slot: 0 always, `n + 1` exactly when the job may use configuration `n` |
    | `priority` | `Box(-1, 1, (P * max_jobs,))`, `P = 2` on one type, 3 on several | scores, a count preference `u` per slot asking for count index `min(C - 1, floor((u + 1) / 2 * C))`, and on several types a type preference `w` per slot asking for type `min(T - 1, floor((w + 1) / 2 * T))`; packed by descending score, each job trying its asked type first, then the others in cluster order, at the largest allowed count up to its asked one that fits (its smallest allowed count on the type if none is at or below it); queued jobs fill the rest in arrival order, each at its smallest allowed count on the first type (cluster order) where it fits | the slots whose entries matter (`P * max_jobs`) |
    | `sequential` | `Discrete(max_jobs * N + 1)` | `s * N + n` picks slot `s` in configuration `n`; the last action ends the round; an illegal action (without `idle_allowed`) fills the round in arrival order, each job at its smallest allowed count that fits (ties between types: cluster order) | exact: unpicked jobs in allowed configurations that fit, and "end round" with `idle_allowed` |

    The observation gains an `elastic` entry, `(max_jobs, 2 N)` float32, in every version
    (the versions' own entries are unchanged): per slot the allowed configurations (0/1, index
    `n`) and, at each allowed configuration, the speedup it adds per added GPU over the next
    smaller allowed count of the same type (speedup: the type's table rate at the job's
    current batch size over the job's reference rate, its gang on the V100 table, so one scale
    serves every type; negative where a larger count is slower; clipped to ±8). The per-type
    free capacity of a decision is version 2's `free_<type>` cluster features. `skip_trivial`
    skips no round in `select` and `priority` (a configuration is always a choice), and in
    `sequential` only closes a round in which nothing fits. With numba, on `gpus=N` V100s (no
    `cluster=`), the single env runs an elastic trace's rounds on the compiled round rules
    (`shockwave_gym/batch/elastic.py`), decodes `priority` and `select` counts and builds the
    `elastic` entry compiled (`shockwave_gym/env/vector/elastic.py`), in every mode and
    observation version; the `sequential` picks, the job features and the rewards stay on its
    Python path, the results the same bit for bit. With `cluster=` (even of one type) the
    single env runs elastic traces on its Python path. The native vector env does not batch elastic traces:
    the vector entry point hands them to the fallback of K single envs (sub-env i seeded
    `seed + i`), on one type and on several. Registered: `shockwave_gym/Elastic-v0`
    (elastic-120, 32 GPUs) and `shockwave_gym/Elastic-Hetero-v0` (elastic-120 on
    `v100=16,p100=8,k80=8`: the same 32 GPUs, each type large enough for an 8-GPU
    configuration, T = 3, N = 12).

    ## Arguments

    ```python
    import gymnasium as gym
    import shockwave_gym  # registers the ids

    env = gym.make("shockwave_gym/Cluster-v0", action_mode="select", reward="jct")
    ```

    | argument | default | meaning |
    |----------|---------|---------|
    | `trace` | `"canonical-analogue-120"` | bundled trace name, trace file path, `Trace`, or `TraceSource` |
    | `gpus` | bundled trace's size | cluster GPUs (required for non-bundled traces) |
    | `action_mode` | `"priority"` | `"priority"`, `"select"` or `"sequential"` |
    | `reward` | `"default"` (the `jct` task's `{"jct": 1.0}`) | reward name, weights dict or callable |
    | `max_jobs` | min(trace jobs, 128) | observation slots |
    | `max_rounds` | 100000 | truncation limit in rounds (default from `SimConfig`) |
    | `throughputs` | built-in V100 table | `ThroughputTable` or path to a Gavel JSON / our CSV |
    | `round_s`, `restart_overhead_s`, `restart_min_run_share` | 120, 20, 115/120 | round length and restart rule (R2, R3; `None` or omitted: `SimConfig`'s defaults, `shockwave_gym.config`) |
    | `jct_normaliser_s` | `round_s * gpus` | divisor of the `jct` reward |
    | `render_mode` | `None` | `"ansi"` (text table) or `"rgb_array"` (Gantt chart) |
    | `obs_version` | `2` | observation layout: 2 (scale-free, per-type), 3 (version 2 with length beliefs; every regime) or 1 (the shipped weights') |
    | `skip_trivial` | `False` | run rounds without a decision inside the step (see Action Space) |
    | `idle_allowed` | `False` | sequential mode: "end round" always legal (v1 behaviour) |
    | `cluster` | `None` (`gpus` V100s) | GPUs per type, `"v100=8,p100=8,k80=8"` or a `ClusterSpec` (see Heterogeneous clusters) |
    | `regime` | `None` (`"exact"`) | information regime: a `Regime`, `"exact"`, `"estimate"` or `"unknown"` (see Information regimes) |
    | `early_endings` | `None` (no early endings) | with a regime name: share in [0, 1) of jobs ending early, or `"logged"` |
    | `task` | `None` | scored task whose weights are the reward (`jct`, `fairness`, `balanced`; see Rewards); excludes `reward` |

    Registered ids: `shockwave_gym/Cluster-v0` (canonical-analogue-120, 32 GPUs),
    `shockwave_gym/Teaching-v0` (teaching-12, 4 GPUs), `shockwave_gym/Generated-v0` (a new
    generated trace at every reset: 20-40 jobs on 12 GPUs, 15-60 arrivals/h, 0.2-2 h jobs),
    `shockwave_gym/Hetero-v0` (the same generated traces on `v100=8,p100=8,k80=8`),
    `shockwave_gym/Elastic-v0` (elastic-120, 32 GPUs, count actions: see Elastic jobs),
    `shockwave_gym/Elastic-Hetero-v0` (elastic-120 on `v100=16,p100=8,k80=8`, (type, count)
    actions).

    ## Version History

    - v0: initial release.
    - v0, observation version 2 (issue 14): scale-free, per-type observation (v1 kept as
      `obs_version=1`); `jct` divided by `round_s * GPUs` instead of `round_s * max_jobs`;
      `ftf` / `ftf_excess` paid on completion from the metric's rho; `nsw` removed; `skip_trivial`;
      work-conserving `sequential` mode by default (`idle_allowed`); `rounds_elapsed`,
      `elapsed_s`, `rounds_skipped_total` in `info`.
    - v0, heterogeneous clusters (issue 15): `cluster=`, `Hetero-v0`, typed `sequential`
      actions, per-type placement in `priority` / `select`.
    - v0, information regimes and tasks (issue 34): `regime=`, `early_endings=`, `task=`;
      observation version 3; the default reward is the `jct` task (was `{"jct": 1.0, "ftf":
      1.0}`; CHANGELOG.md).
    - v0, elastic jobs (issue 37): `Elastic-v0`; on elastic trace sources, count actions in
      every mode and the observation's `elastic` entry.
    - v0, elastic jobs on typed clusters (issue 37): `Elastic-Hetero-v0`; `cluster=` with an
      elastic source (was an `InputError`) gives (type, count) actions and a type axis in the
      `elastic` entry; one-type spaces unchanged.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    _type_context = None  # (simulator, its version, TypeContext) behind _types
    _elastic_entry = staticmethod(elastic_features)  # the observation's elastic entry (env/vector/elastic.py)

    def __init__(
        self,
        trace: str | Path | Trace | TraceSource = "canonical-analogue-120",
        gpus: int | None = None,
        action_mode: str = "priority",
        reward: str | Mapping | Callable | None = "default",
        max_jobs: int | None = None,
        max_rounds: int | None = None,
        throughputs: ThroughputTable | str | Path | None = None,
        round_s: float | None = None,
        restart_overhead_s: float | None = None,
        restart_min_run_share: float | None = None,
        jct_normaliser_s: float | None = None,
        render_mode: str | None = None,
        *,
        obs_version: int = DEFAULT_OBSERVATION_VERSION,
        skip_trivial: bool = False,
        idle_allowed: bool = False,
        cluster: str | ClusterSpec | None = None,
        regime: Regime | str | None = None,
        early_endings: float | str | None = None,
        task: str | Task | None = None,
    ):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise InputError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self._resolve_cluster(trace, gpus, throughputs, cluster)
        self.source = make_source(trace, self.throughputs, self.gpus)
        rounds = round_options(round_s=round_s, restart_overhead_s=restart_overhead_s,
                               restart_min_run_share=restart_min_run_share, max_rounds=max_rounds)
        self.sim_config = SimConfig(self.gpus, cluster=self.cluster, **rounds)  # None: SimConfig's default
        if max_jobs is None:
            max_jobs = min(self.source.max_num_jobs, MAX_JOBS_CAP)
        self.max_jobs = require_positive_int(max_jobs, "max_jobs")
        self.max_rounds = self.sim_config.max_rounds
        if jct_normaliser_s is None:
            jct_normaliser_s = self.sim_config.round_s * self.gpus
        if not math.isfinite(jct_normaliser_s) or jct_normaliser_s <= 0:
            raise InputError(f"jct_normaliser_s must be a finite number > 0, got {jct_normaliser_s!r}")
        self.jct_normaliser_s = float(jct_normaliser_s)
        self.reward_fn = make_reward(resolve_reward(reward, task))
        self.action_mode = action_mode
        self.obs_version = check_version(obs_version)
        #: the information regime (docs/ENV.md, "Information regimes"); the hook a suite's
        #: regime comes in by
        self.regime = check_observation_regime(self.obs_version, resolve_regime(regime, early_endings))
        self.skip_trivial = flag(skip_trivial, "skip_trivial")
        self.idle_allowed = flag(idle_allowed, "idle_allowed")
        self._set_spaces()
        self.render_mode = render_mode
        self.slots = SlotMap(self.max_jobs)
        self.simulator: Simulator | None = None
        self.trace: Trace | None = None
        self.episode_regime: Regime | None = None  # the regime of the current episode (its seed)
        self._last_record = None
        self._metrics: dict | None = None
        self._compiled = None  # the compiled step of the common configuration (env/vector/single.py)
        self._compiled_allowed = True  # False: always the Python path (tests compare the two)
        self._compiled_refused: tuple | None = None  # (simulator, reward_fn) it cannot serve
        self._cluster_features: np.ndarray | None = None  # the compiled step's, else None

    def _set_spaces(self) -> None:
        """The action mode and both spaces (elastic: the mode and the ``elastic`` entry over
        the cluster's types; docs/ENV.md, "Elastic jobs")."""
        self._mode = make_action_mode(self.action_mode, self.max_jobs, idle_allowed=self.idle_allowed,
                                      cluster=self.cluster, elastic=self._elastic)
        self.action_space = self._mode.space()
        self.observation_space = observation_space(self.max_jobs, self.obs_version, elastic=self._elastic,
                                                   elastic_types=1 if self.cluster is None else self.cluster.num_types)

    @functools.cached_property
    def _elastic(self) -> bool:
        """The source has elastic jobs: count actions and observations (docs/ENV.md, "Elastic jobs")."""
        return self.source.elastic

    def _resolve_cluster(self, trace, gpus, throughputs, cluster) -> None:
        """Set ``cluster`` (None: ``gpus`` V100s, the homogeneous path), ``gpus``,
        ``throughputs`` (the V100 table: a trace's iterations are V100 work) and, on a
        heterogeneous cluster, ``typed_throughputs``."""
        if isinstance(throughputs, str | Path):
            throughputs = ThroughputTable.load(throughputs)
        spec = parse_cluster(cluster)
        if spec is not None:
            if gpus is not None and require_positive_int(gpus, "gpus") != spec.total:
                raise InputError(f"gpus={gpus} disagrees with cluster {spec} ({spec.total} GPUs)")
            gpus = spec.total
        self.cluster = resolve_cluster(spec)
        if self.cluster is None:
            self.throughputs = throughputs if throughputs is not None else ThroughputTable.builtin_v100()
            self.gpus = resolve_gpus(trace, gpus)
        else:
            self.gpus = self.cluster.total
            self.typed_throughputs = TypedThroughputs.resolve(throughputs, self.cluster.types)
            self.throughputs = self.typed_throughputs.reference

    # --- Gymnasium API ---------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        trace = self.source.sample(self.np_random)
        regime = regime_for_episode(self.regime, self.source, self.np_random, trace)
        if self.simulator is not None and trace is self.trace and regime == self.episode_regime:
            self.simulator.reset()  # same jobs: the feature buffer's static tables still hold
        else:  # the simulator rejects jobs wider than the cluster with an InputError
            self.simulator = self._new_simulator(trace, regime)
            self.trace = trace
            self.episode_regime = regime
            self._features = job_features_for(self.simulator.view, self.obs_version)
            self._compiled = None
        self.slots.reset(trace.num_jobs)
        self._last_record = None
        self._metrics = None
        self._repairs_total = 0
        self._rounds_repaired = 0
        self._rounds_skipped_total = 0
        self._rho_hat = ftf_estimate(self.simulator.view)
        self._begin_decision()
        self._compiled_step()  # a new trace's compiled step is built here, not in the first step
        return self._observation(), self._info(round_closed=False, repairs=0)

    def step(self, action):
        sim = self.simulator
        if sim is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        if self._metrics is not None:
            raise InvalidActionError("the episode has ended; call reset()")
        compiled = self._compiled_step()
        if compiled is not None:
            return self._compiled_env_step(compiled, action)
        mode = self._mode
        typed = self.cluster is not None or self._elastic  # modes that return (ids, types or columns)
        types = None
        if mode.closes_every_step:
            if typed:  # the elastic modes read no TypeContext
                job_ids, types, repairs = mode.place(action, sim.view, self.slots, None if self._elastic else self._types)
            else:
                job_ids, repairs = mode.choose(action, sim.view, self.slots)
        else:
            closes, infeasible = mode.pick(action)
            repairs = int(infeasible)
            if not closes and self.skip_trivial:
                closes = mode.forced_picks()
            if not closes:
                return self._observation(), 0.0, False, False, self._info(round_closed=False, repairs=0)
            if typed:
                job_ids, types = mode.placed(self.slots)
            else:
                job_ids = mode.chosen(self.slots)
        if repairs:
            self._repairs_total += repairs
            self._rounds_repaired += 1
        # the action modes only ever choose active, slotted jobs that fit: skip re-checking
        if typed:  # the placement the mode decoded, as the simulator takes it: ascending ids
            order = job_ids.argsort(kind="stable")
            job_ids, types = job_ids[order], types[order]
        elif not mode.chooses_sorted:
            job_ids = job_ids.copy()
            job_ids.sort()
        start_s = sim.time_s
        reward = self._run_round(job_ids, types)
        rounds = 1
        while self.skip_trivial and not sim.done and sim.round_index < self.max_rounds:
            forced = self._forced_round()
            if forced is None:
                break
            reward += self._run_round(*forced) if typed else self._run_round(forced)
            rounds += 1
        self._rounds_skipped_total += rounds - 1
        terminated = sim.done
        truncated = not terminated and sim.round_index >= self.max_rounds
        info = self._info(round_closed=True, repairs=repairs, rounds=rounds, elapsed_s=sim.time_s - start_s)
        if terminated or truncated:
            self._metrics = {k: (math.nan if v is None else v) for k, v in compute_metrics(sim.result()).items()}
            info["metrics"] = dict(self._metrics)
        return self._observation(), reward, terminated, truncated, info

    def _compiled_step(self):
        """The compiled step (:class:`shockwave_gym.env.vector.single.SingleStep`: the vector
        env's kernels at K = 1) when this env can take it: numba installed, the default information regime, observation version 2, the ``priority`` or
        ``select`` mode, built-in reward terms, a trace whose jobs reach fewer than 8 batch
        sizes, and none of the step's helpers overridden by a subclass. Else None (the
        Python path, same results)."""
        if not self._compiled_allowed:
            return None
        compiled = self._compiled
        if compiled is not None:
            if compiled.valid_for(self.simulator, self.slots, self.reward_fn, self.jct_normaliser_s):
                return compiled
            self._compiled = None
        refused = self._compiled_refused
        if refused is not None and refused[0] is self.simulator and refused[1] is self.reward_fn:
            return None
        if not self._compiled_eligible():
            self._compiled_refused = (self.simulator, self.reward_fn)
            return None
        from shockwave_gym.env.vector.single import SingleStep

        self._compiled = SingleStep(self.simulator, self.slots, self.reward_fn, self.jct_normaliser_s, self.max_rounds)
        return self._compiled

    def _compiled_eligible(self) -> bool:
        if self.obs_version != 2 or self.action_mode not in ("priority", "select"):
            return False
        if not self.regime.is_default:  # the compiled kernels read the simulator's true epochs
            return False
        cls = type(self)
        for name in ("_run_round", "_begin_decision", "_observation", "_forced_round", "_info"):
            if getattr(cls, name) is not getattr(ClusterEnv, name):
                return False
        from shockwave_gym.hetero_simulator import HeteroSimulator

        if type(self.simulator) is not (Simulator if self.cluster is None else HeteroSimulator):
            return False
        from shockwave_gym.env.vector import fused, single

        return single.serves(self) and fused.reward_codes(self.reward_fn) is not None

    def _compiled_env_step(self, compiled, action):
        """step() on the compiled path: the same checks, rounds, rewards, observation and
        info as the Python path, bit for bit."""
        sim = self.simulator
        start_s = sim.time_s
        select = self.action_mode == "select"
        if not select:
            values = np.asarray(action)
            if values.shape != (self.max_jobs,):
                raise InvalidActionError(f"priority action must have shape ({self.max_jobs},), got {values.shape}")
            if values.dtype.kind not in "biuf":
                raise InvalidActionError(f"priority scores must be numbers (integer or float), got dtype {values.dtype}")
            if values.dtype == np.float64 and not all_finite(values[self.slots.slots_by_job()]):
                raise InvalidActionError("priority scores must be finite")
        else:
            values = select_bits(action, self.max_jobs)
        result = compiled.run(values, select, self.skip_trivial)
        if result is None:
            raise InvalidActionError("priority scores must be finite")
        reward, repairs, rounds = result
        if repairs:
            self._repairs_total += repairs
            self._rounds_repaired += 1
        self._last_record = sim.history[-1]
        self._rounds_skipped_total += rounds - 1
        self._slot_features, self._cluster_features = compiled.observation()
        self._job_valid = (self.slots.slot_job >= 0).view(np.int8)  # slots.valid_int8(), fresh
        terminated = sim.done
        truncated = not terminated and sim.round_index >= self.max_rounds
        info = self._info(round_closed=True, repairs=repairs, rounds=rounds, elapsed_s=sim.time_s - start_s,
                          num_active=compiled.num_active)
        if terminated or truncated:
            self._metrics = {k: (math.nan if v is None else v) for k, v in compute_metrics(sim.result()).items()}
            info["metrics"] = dict(self._metrics)
        return self._observation(), reward, terminated, truncated, info

    def _run_round(self, job_ids: np.ndarray, types: np.ndarray | None = None) -> float:
        """Run one round of ``job_ids`` (ascending; on a heterogeneous cluster on type
        indices ``types``), start the next decision; its reward."""
        sim = self.simulator
        view = sim.view
        start_s = sim.time_s
        active_before = view.active_job_ids
        progress_before = view.epoch_progress
        record = sim.run_round(job_ids) if types is None else sim.run_round(job_ids, types)
        self._last_record = record
        self._rho_hat = ftf_estimate(view)
        transition = RoundTransition(
            view=view, record=record, start_s=start_s, end_s=sim.time_s, active_before=active_before,
            epoch_progress_before=progress_before, max_jobs=self.max_jobs,
            jct_normaliser_s=self.jct_normaliser_s, rho_hat=self._rho_hat,
            fair_time_s=simulator_fair_time_s(sim) if uses_fair_time(self.reward_fn) else None)
        reward = self.reward_fn(transition)
        self._begin_decision()
        return reward

    def _forced_round(self) -> np.ndarray | None:
        """The job set of the coming round when no action could change it (ascending ids),
        else None. ``priority``: every active job fits; ``select``: every active job has a
        slot and fits (the skipped round runs them all, the work-conserving choice);
        ``sequential`` without ``idle_allowed``: the forced picks close the round."""
        slots, view = self.slots, self.simulator.view
        if self._elastic and self.action_mode != "sequential":
            return None  # a count is always a choice (docs/ENV.md, "Elastic jobs")
        if self.cluster is not None or self._elastic:  # (ids, types or columns), docs "Heterogeneous clusters"
            if self.action_mode == "sequential":
                return self._mode.placed(slots) if self._mode.forced_picks() else None
            return unforced_placement(view, slots, self._types, every_slotted=self.action_mode == "select")
        if self.action_mode == "sequential":
            return self._mode.chosen(slots) if self._mode.forced_picks() else None
        if slots.demand_gpus > view.gpus or (self.action_mode == "select" and slots.queue.size):
            return None
        return view.active_job_ids

    def render(self):
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'rgb_array'")
            return None
        if self.simulator is None:
            raise gym.error.ResetNeeded("call reset() before render()")
        if self.render_mode == "ansi":
            picked = self._mode.picked if self.action_mode == "sequential" else None
            picked_types = getattr(self._mode, "picked_type", None)
            return ansi_table(
                self.simulator.view, self.slots, last_round=self._last_record, metrics=self._metrics, picked=picked,
                picked_types=picked_types,
            )
        return gantt_rgb(self.simulator.result())

    def action_masks(self) -> np.ndarray:
        """Legal actions for sb3-contrib's MaskablePPO (layout per mode: see Action Space)."""
        if self.simulator is None:
            raise gym.error.ResetNeeded("call reset() before action_masks()")
        return self._mode.masks(self.slots)

    # --- helpers ---------------------------------------------------------------------------

    @property
    def view(self):
        """The simulator's read-only :class:`~shockwave_gym.view.ClusterView`."""
        if self.simulator is None:
            raise gym.error.ResetNeeded("call reset() first")
        return self.simulator.view

    def _begin_decision(self) -> None:
        """Seat jobs and build the round's per-slot features (``_rho_hat`` must be current)."""
        view = self.simulator.view
        slots = self.slots
        slots.update(view)
        self._features.fill(view, self._rho_hat)
        self._slot_features = self._features.slot_features(slots)
        self._job_valid = slots.valid_int8()
        self._cluster_features = None
        sequential = self.action_mode == "sequential"
        if self._elastic or (sequential and self.cluster is None):  # every elastic mode reads its configurations
            self._mode.start_round(view, self.slots)
        elif sequential:
            self._mode.start_round(view, self.slots, self._types)

    @property
    def _types(self) -> TypeContext | None:
        """The decision's TypeContext on a heterogeneous cluster (None on one type), of the
        simulator's current state (the compiled step does not build it: read on demand)."""
        if self.cluster is None:
            return None
        sim, cached = self.simulator, self._type_context
        if cached is None or cached[0] is not sim or cached[1] != sim.version:
            cached = self._type_context = (sim, sim.version, TypeContext.of(sim.view))
        return cached[2]

    def _new_simulator(self, trace: Trace, regime: Regime) -> Simulator:
        """The simulator of ``trace``'s jobs as ``regime`` runs them (the jobs themselves in
        the default regime)."""
        jobs = apply_regime(trace.jobs, regime)
        if self._elastic or is_elastic_trace(jobs):  # an elastic source: its mode even on a rigid-only draw
            from shockwave_gym.env.vector.elastic import elastic_env_parts

            tables = self.typed_throughputs if self.cluster is not None else self.throughputs
            sim, self._mode, self._elastic_entry = elastic_env_parts(
                jobs, self.sim_config, tables, self._mode, trace_name=trace.name, compiled=self._compiled_allowed)
            return sim
        if self.cluster is None:
            return Simulator(jobs, self.sim_config, self.throughputs, trace_name=trace.name)
        from shockwave_gym.hetero_simulator import HeteroSimulator

        return HeteroSimulator(jobs, self.sim_config, self.typed_throughputs, trace_name=trace.name)

    def _observation(self) -> dict[str, np.ndarray]:
        # Same layout and values as observation.build_observation(view, slots, ...); the
        # per-slot features are built once per round and copied for sequential sub-steps.
        mode = self._mode
        sequential = self.action_mode == "sequential"
        return {
            "jobs": self._slot_features.copy() if sequential else self._slot_features,
            "job_valid": self._job_valid.copy() if sequential else self._job_valid,
            "picked": mode.picked.astype(np.int8) if sequential else np.zeros(self.max_jobs, np.int8),
            "cluster": cluster_features_for(self.simulator.view, self.slots, self._free_for_observation(),
                                            self.obs_version)
            if self._cluster_features is None else self._cluster_features.copy(),
            **({"elastic": self._elastic_entry(self.simulator.view, self.slots)} if self._elastic else {}),
        }

    def _free_for_observation(self):
        """GPUs not yet allocated in this decision: None (all) outside sequential mode; per
        type on a heterogeneous cluster with observation version 2 or 3 (its free_<type>)."""
        if self.action_mode != "sequential":
            return None
        if self.cluster is not None and self.obs_version >= 2:
            return self._mode.free.copy()
        return self._mode.free_gpus

    def _info(self, *, round_closed: bool, repairs: int, rounds: int = 0, elapsed_s: float = 0.0,
              num_active: int | None = None) -> dict:
        sim = self.simulator
        queue = self.slots.queue
        return {
            "round_index": sim.round_index,
            "time_s": sim.time_s,
            "num_active": int(sim.view.num_active) if num_active is None else num_active,
            "queue_length": int(queue.size),
            "queued_job_ids": tuple(queue.tolist()),
            "slot_job_ids": self.slots.slot_job.copy(),
            "round_closed": round_closed,
            "action_repairs": repairs,
            "action_repairs_total": self._repairs_total,
            "rounds_repaired": self._rounds_repaired,
            "rounds_elapsed": rounds,
            "elapsed_s": elapsed_s,
            "rounds_skipped_total": self._rounds_skipped_total,
        }

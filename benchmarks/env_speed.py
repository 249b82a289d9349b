"""Environment speed: steps/s with random valid actions on ``shockwave_gym/Cluster-v0``
(canonical-analogue-120, 32 GPUs) for each action mode, as a ratio to ``CartPole-v1``
measured in the same run; then the native vector env (``gym.make_vec(...,
vectorization_mode="vector_entry_point")``) at K = 1, 8, 64 and 256 clusters, in aggregate
env steps/s (K x batched steps / CPU second).

    .venv/bin/python benchmarks/env_speed.py [--steps 3000] [--repeats 3] [--vec-k 1 8 64 256]
        [--hetero-k 64] [--hetero-cluster v100=12,p100=12,k80=12]

Both envs come from ``gym.make`` (same standard wrappers). Random actions are drawn from a
seeded numpy generator in the loop (``select``/``sequential`` read ``action_masks()`` each
step, as a masked agent would); episodes reset when they end. Measurements of all envs are
interleaved and each keeps its best repeat, so load from other processes hits them alike.
Prints one JSON object. Targets: >= 0.1x CartPole for the single env (issue 3) and >= 1x
CartPole in aggregate for the vector env at K = 64 (issue 13), ``priority`` and ``select``.
With ``--hetero-k``, also the vector env on a heterogeneous cluster (``--hetero-cluster``)
at those K, ``priority`` and ``select`` (target: >= 0.5x CartPole at K = 64, issue 32).

``--elastic`` measures ``shockwave_gym/Elastic-v0`` (elastic-120, 32 GPUs, count actions)
instead: the single env and ``gym.make_vec(..., vectorization_mode="vector_entry_point")`` at
the ``--vec-k`` K, each mode, in steps/s; ``--elastic-path reference`` runs them on the
reference path (``_compiled_allowed = False``: the plain ElasticSimulator and the interface's
rules), the default on the compiled kernels where the env takes them.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import gymnasium as gym
import numpy as np

import shockwave_gym  # noqa: F401  (registers the ids)
from shockwave_gym.env.vector.vector_env import ClusterVectorEnv
from shockwave_gym.interface.predictor import predicted_remaining_s

ENV_ID = "shockwave_gym/Cluster-v0"
MODES = ("priority", "select", "sequential")
TARGET_RATIO = 0.1
VECTOR_TARGET_RATIO = 1.0
VECTOR_TARGET_K = 64
VECTOR_MODES = ("priority", "select", "sequential")
HETERO_TARGET_RATIO = 0.5
HETERO_MODES = ("priority", "select")
ELASTIC_ID = "shockwave_gym/Elastic-v0"


def _cartpole(steps: int) -> tuple[float, int]:
    env = gym.make("CartPole-v1")
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    start = time.process_time()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(int(rng.integers(2)))
        if terminated or truncated:
            env.reset()
    return steps / (time.process_time() - start), steps


def _cluster(mode: str, steps: int) -> tuple[float, int, list]:
    """(steps/s, rounds run, job sets run per episode) over ``steps`` env steps with random
    valid actions."""
    env = gym.make(ENV_ID, action_mode=mode)
    unwrapped = env.unwrapped
    max_jobs = unwrapped.max_jobs
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    rounds = 0
    episodes = []
    start = time.process_time()
    for _ in range(steps):
        if mode == "priority":
            action = rng.random(max_jobs, dtype=np.float32) * 2 - 1
        elif mode == "select":
            action = (rng.random(max_jobs) < 0.5).view(np.int8) & unwrapped.action_masks()[1::2]
        else:
            legal = np.flatnonzero(unwrapped.action_masks())
            action = int(legal[rng.integers(legal.size)])
        _, _, terminated, truncated, info = env.step(action)
        rounds += info["round_closed"]
        if terminated or truncated:
            episodes.append([r.job_ids for r in unwrapped.simulator.history])
            env.reset()
    elapsed = time.process_time() - start
    episodes.append([r.job_ids for r in unwrapped.simulator.history])
    return steps / elapsed, rounds, episodes


def _vector(mode: str, k: int, batched_steps: int, **kwargs) -> float:
    """Aggregate env steps/s of the native vector env with K clusters, random valid actions
    (``kwargs``: more env arguments, e.g. ``cluster=``)."""
    envs = gym.make_vec(ENV_ID, num_envs=k, vectorization_mode="vector_entry_point", action_mode=mode, **kwargs)
    max_jobs = envs.max_jobs if hasattr(envs, "max_jobs") else envs.envs[0].unwrapped.max_jobs  # the fallback's
    rng = np.random.default_rng(0)
    envs.reset(seed=0)
    start = time.process_time()
    for _ in range(batched_steps):
        if mode == "priority":
            actions = rng.random((k, max_jobs), dtype=np.float32) * 2 - 1
        elif mode == "select":
            actions = (rng.random((k, max_jobs)) < 0.5).view(np.int8) & envs.action_masks()[:, 1::2]
        else:
            masks = envs.action_masks()
            # a uniform legal pick per row: the argmax of random keys over the legal entries
            actions = np.argmax(np.where(masks, rng.random(masks.shape), -1.0), axis=1)
        envs.step(actions)
    elapsed = time.process_time() - start
    envs.close()
    return k * batched_steps / elapsed


def _core_only(episodes: list) -> float:
    """Rounds/s of the core alone replaying the same job sets: ``Simulator.step`` plus the
    view's derived arrays (which the observation needs), nothing of the env."""
    sim = gym.make(ENV_ID).unwrapped
    sim.reset(seed=0)
    sim = sim.simulator
    rounds = sum(len(e) for e in episodes)
    start = time.process_time()
    for choices in episodes:
        sim.reset()
        for job_ids in choices:
            sim.step(job_ids)
            predicted_remaining_s(sim.view)  # forces the per-state derived arrays
    return rounds / (time.process_time() - start)


def _elastic_action(mode: str, rng, masks, max_jobs: int, k: int | None = None):
    """A random valid elastic action (one cluster, or ``k`` rows): priority scores and count
    preferences, a legal count or none per slot (select), a legal pick (sequential)."""
    lead = () if k is None else (k,)
    if mode == "priority":
        return rng.random((*lead, 2 * max_jobs), dtype=np.float32) * 2 - 1
    if mode == "select":
        legal = masks.reshape(*lead, max_jobs, -1)
        return np.argmax(np.where(legal, rng.random(legal.shape), -1.0), axis=-1)
    if k is None:
        legal = np.flatnonzero(masks)
        return int(legal[rng.integers(legal.size)])
    return np.argmax(np.where(masks, rng.random(masks.shape), -1.0), axis=1)


def _elastic(mode: str, k: int | None, steps: int, reference: bool) -> float:
    """Env steps/s (CPU) of the elastic env: the single env (``k`` None) or the vector entry
    point with ``k`` clusters, random valid actions; ``reference``: the reference path."""
    if k is None:
        envs = gym.make(ELASTIC_ID, action_mode=mode)
        units = [envs.unwrapped]
    else:
        envs = gym.make_vec(ELASTIC_ID, num_envs=k, vectorization_mode="vector_entry_point", action_mode=mode)
        units = [env.unwrapped for env in envs.envs] if hasattr(envs, "envs") else []
    for unit in units:
        unit._compiled_allowed = not reference
    max_jobs = units[0].max_jobs if units else envs.max_jobs
    rng = np.random.default_rng(0)
    envs.reset(seed=0)
    start = time.process_time()
    for _ in range(steps):
        masks = envs.unwrapped.action_masks() if k is None else envs.action_masks()
        _, _, terminated, truncated, _ = envs.step(_elastic_action(mode, rng, masks, max_jobs, k))
        if k is None and (terminated or truncated):
            envs.reset()
    elapsed = time.process_time() - start
    envs.close()
    return (1 if k is None else k) * steps / elapsed


def _elastic_report(args) -> dict:
    """Best-of-repeats steps/s of the elastic env per mode: single env and vector entry point."""
    reference = args.elastic_path == "reference"
    best: dict = {}
    for _ in range(args.repeats):
        for mode in MODES:
            for k in (None, *args.vec_k):
                steps = args.steps if k is None else max(30, min(args.steps, 20_000 // k))
                key = mode, "single" if k is None else f"K={k}"
                best[key] = max(best.get(key, 0.0), _elastic(mode, k, steps, reference))
    return {
        "benchmark": "env_speed --elastic",
        "env_id": ELASTIC_ID,
        "path": args.elastic_path,
        "clock": "process CPU time",
        "what": "env steps/s (the vector entry point: K x batched steps / CPU s), random valid actions",
        "modes": {mode: {where: round(rate) for (m, where), rate in best.items() if m == mode} for mode in MODES},
        "steps_per_measurement": args.steps,
        "repeats": args.repeats,
        "python": platform.python_version(),
    }


def _hetero_report(best: dict, cartpole: float, cluster: str) -> dict:
    """The heterogeneous vector env's rows: aggregate steps/s and ratio to CartPole."""
    ks = sorted({k for _, k in best})
    return {
        "cluster": cluster,
        "what": "gym.make_vec(vector_entry_point, cluster=...), aggregate env steps/s = K x batched steps / CPU s",
        "target": f">= {HETERO_TARGET_RATIO}x CartPole at K={VECTOR_TARGET_K} for priority and select",
        "modes": {mode: {str(k): {"steps_per_s": round(best[mode, k]), "ratio_to_cartpole": round(best[mode, k] / cartpole, 4)}
                         for k in ks} for mode in HETERO_MODES},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--vec-k", type=int, nargs="+", default=[1, 8, 64, 256])
    parser.add_argument("--hetero-k", type=int, nargs="*", default=[])
    parser.add_argument("--hetero-cluster", default="v100=12,p100=12,k80=12")
    parser.add_argument("--elastic", action="store_true", help="measure the elastic env instead (see the doc)")
    parser.add_argument("--elastic-path", choices=("compiled", "reference"), default="compiled")
    args = parser.parse_args()
    if args.elastic:
        print(json.dumps(_elastic_report(args)))
        return
    vector_best = {(mode, k): 0.0 for mode in VECTOR_MODES for k in args.vec_k}
    hetero_best = {(mode, k): 0.0 for mode in HETERO_MODES for k in args.hetero_k}
    compiled = isinstance(gym.make_vec(ENV_ID, num_envs=1, vectorization_mode="vector_entry_point",
                                       trace="teaching-12"), ClusterVectorEnv)

    best = {"CartPole-v1": 0.0, "core": 0.0, **{mode: 0.0 for mode in MODES}}
    rounds_per_step = {}
    for _ in range(args.repeats):
        best["CartPole-v1"] = max(best["CartPole-v1"], _cartpole(20 * args.steps)[0])
        for mode in MODES:
            rate, rounds, episodes = _cluster(mode, args.steps)
            best[mode] = max(best[mode], rate)
            rounds_per_step[mode] = rounds / args.steps
            if mode == "priority":
                best["core"] = max(best["core"], _core_only(episodes))
        for mode, k in vector_best:
            batched = max(30, min(args.steps, 20_000 // k))
            vector_best[mode, k] = max(vector_best[mode, k], _vector(mode, k, batched))
        for mode, k in hetero_best:
            batched = max(30, min(args.steps, 20_000 // k))
            hetero_best[mode, k] = max(hetero_best[mode, k], _vector(mode, k, batched, cluster=args.hetero_cluster))
    cartpole = best["CartPole-v1"]
    modes = {
        mode: {
            "steps_per_s": round(best[mode]),
            "ratio_to_cartpole": round(best[mode] / cartpole, 4),
            "rounds_per_s": round(best[mode] * rounds_per_step[mode]),
            "meets_target": bool(mode == "sequential" or best[mode] / cartpole >= TARGET_RATIO),
        }
        for mode in MODES
    }
    print(json.dumps({
        "benchmark": "env_speed",
        "env_id": ENV_ID,
        "baseline": "CartPole-v1 via gym.make, random actions, measured in this run",
        "clock": "process CPU time",
        "baseline_steps_per_s": round(cartpole),
        "target_ratio": TARGET_RATIO,
        "target_applies_to": ["priority", "select"],
        "modes": modes,
        "core_only": {
            "rounds_per_s": round(best["core"]),
            "ratio_to_cartpole": round(best["core"] / cartpole, 4),
            "what": "Simulator.step + the view's derived arrays (numpy), replaying the priority run's job "
                    "sets: what a round costs agents; the env's compiled step (env/vector/single.py) bypasses it",
        },
        "vector": {
            "what": "native vector env, aggregate env steps/s = K x batched steps / CPU s (random valid actions)",
            "target": f">= {VECTOR_TARGET_RATIO}x CartPole at K={VECTOR_TARGET_K} for priority and select",
            "modes": {
                mode: {
                    str(k): {
                        "steps_per_s": round(vector_best[mode, k]),
                        "ratio_to_cartpole": round(vector_best[mode, k] / cartpole, 4),
                        "speedup_over_single_env": round(vector_best[mode, k] / best[mode], 2),
                    }
                    for k in args.vec_k
                }
                for mode in VECTOR_MODES
            },
            "compiled": compiled if compiled else "numba missing: the rows above are K single envs (the fallback)",
            "meets_target": {
                mode: bool(vector_best.get((mode, VECTOR_TARGET_K), 0.0) / cartpole >= VECTOR_TARGET_RATIO)
                for mode in ("priority", "select")
            } if VECTOR_TARGET_K in args.vec_k else None,
        },
        "hetero_vector": _hetero_report(hetero_best, cartpole, args.hetero_cluster) if hetero_best else None,
        "note": "sequential steps are sub-steps (one pick each); rounds_per_s counts closed rounds",
        "steps_per_measurement": args.steps,
        "repeats": args.repeats,
        "python": platform.python_version(),
        "gymnasium": gym.__version__,
    }))


if __name__ == "__main__":
    main()

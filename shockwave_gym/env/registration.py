"""Every Gymnasium id of the package, registered in one place.

Importing :mod:`shockwave_gym` calls :func:`register_envs` when gymnasium is installed (the
simulator core never needs it), so after ``pip install``::

    import gymnasium as gym
    import shockwave_gym                                   # registers the ids
    env = gym.make("shockwave_gym/Cluster-v0")

    env = gym.make("shockwave_gym:shockwave_gym/Cluster-v0")   # or let gym import it

Keyword arguments of ``gym.make`` override the registered ones (``trace``, ``gpus``,
``reward`` or ``task``, ``regime``, ``action_mode``, ``max_jobs``, ...; see :class:`ClusterEnv`).
``regime=`` (a :class:`~shockwave_gym.regimes.Regime` or a name) works on every id,
the suites' included.
"""

from __future__ import annotations

import gymnasium as gym

ENTRY_POINT = "shockwave_gym.env.cluster_env:ClusterEnv"
#: ``Generated-v0`` builds its trace source at make time (see :func:`make_generated`), so
#: registering imports nothing but gymnasium.
GENERATED_ENTRY_POINT = "shockwave_gym.env.registration:make_generated"
#: The native vector env (K clusters in one batched pass) behind ``gym.make_vec``.
#: Dispatches to ``ClusterVectorEnv``, or to its fallback (env/vector/fallback.py) for what
#: it does not batch (heterogeneous clusters, regimes, observation version 3, ``fair_share``).
VECTOR_ENTRY_POINT = "shockwave_gym.env.vector.fallback:make_vector_env"
GENERATED_VECTOR_ENTRY_POINT = "shockwave_gym.env.registration:make_generated_vec"

#: The generated-trace source of ``Generated-v0``: 20-40 jobs per episode, 15-60
#: arrivals per hour on 12 GPUs (the canonical 90/h on 32 GPUs is ~34/h on 12), and jobs of
#: 0.2-2 h in isolation, so an episode lasts tens to a few hundred rounds.
GENERATED_SOURCE_ARGS = {
    "config": {"num_jobs": 40, "seed": 0, "max_duration_h": 2.0, "name": "generated"},
    "num_jobs_range": (20, 40),
    "arrival_rate_range_per_hour": (15.0, 60.0),
}


def generated_source():
    """A fresh instance of ``Generated-v0``'s trace source."""
    from shockwave_gym.traces import GeneratedTraceSource, GeneratorConfig

    args = GENERATED_SOURCE_ARGS
    return GeneratedTraceSource(
        GeneratorConfig(**args["config"]),
        num_jobs_range=args["num_jobs_range"],
        arrival_rate_range_per_hour=args["arrival_rate_range_per_hour"],
    )


#: The typed cluster of ``Elastic-Hetero-v0``: elastic-120's 32 GPUs as 16 V100s, 8 P100s
#: and 8 K80s (each type can hold an 8-GPU configuration).
ELASTIC_HETERO_CLUSTER = "v100=16,p100=8,k80=8"

#: id -> (registered kwargs, max_episode_steps). max_episode_steps counts env steps
#: (sub-steps in sequential mode), so it is set far above any sensible episode.
ENV_IDS: dict[str, tuple[dict, int]] = {
    "shockwave_gym/Cluster-v0": ({"trace": "canonical-analogue-120"}, 100_000),
    "shockwave_gym/Teaching-v0": ({"trace": "teaching-12"}, 10_000),
    "shockwave_gym/Generated-v0": ({"trace": None, "gpus": 12}, 50_000),
    # Generated-v0's traces on a mixed cluster (docs/ENV.md, "Heterogeneous clusters")
    "shockwave_gym/Hetero-v0": ({"trace": None, "cluster": "v100=8,p100=8,k80=8"}, 50_000),
    # elastic jobs: a GPU count per job in every action mode (docs/ENV.md, "Elastic jobs")
    "shockwave_gym/Elastic-v0": ({"trace": "elastic-120"}, 100_000),
    # the same jobs on a typed cluster of the same 32 GPUs: a (type, count) per job
    # (docs/ENV.md, "Elastic jobs"); half V100s, so every 8-GPU configuration has a V100 home
    "shockwave_gym/Elastic-Hetero-v0": ({"trace": "elastic-120", "cluster": ELASTIC_HETERO_CLUSTER}, 100_000),
}


def make_generated(**kwargs):
    """``Generated-v0``'s entry point: a :class:`ClusterEnv` on a fresh generated source
    (unless ``trace`` is given)."""
    from shockwave_gym.env.cluster_env import ClusterEnv

    if kwargs.get("trace") is None:
        kwargs["trace"] = generated_source()
    return ClusterEnv(**kwargs)


def make_generated_vec(num_envs: int = 1, **kwargs):
    """``Generated-v0``'s vector entry point: :class:`ClusterVectorEnv` on one generated
    source shared by every cluster (a source holds no state: each cluster draws from its own
    RNG)."""
    from shockwave_gym.env.vector.fallback import make_vector_env, needs_fallback

    if needs_fallback(kwargs):  # K single envs, each with its own source
        return make_vector_env(num_envs, env_factory=make_generated, **kwargs)
    if kwargs.get("trace") is None:
        kwargs["trace"] = generated_source()
    return make_vector_env(num_envs, **kwargs)


def register_envs() -> None:
    """Register every id in :data:`ENV_IDS` (idempotent)."""
    for env_id, (kwargs, max_steps) in ENV_IDS.items():
        if env_id in gym.registry:
            continue
        generated = kwargs.get("trace", "") is None  # Generated-v0, Hetero-v0
        gym.register(
            id=env_id,
            entry_point=GENERATED_ENTRY_POINT if generated else ENTRY_POINT,
            vector_entry_point=GENERATED_VECTOR_ENTRY_POINT if generated else VECTOR_ENTRY_POINT,
            kwargs=kwargs,
            max_episode_steps=max_steps,
        )
    register_suite_envs()


# --- Task suites (docs/SUITES.md) --------------------------------------------------------
#: ``Suite-<name>-v<version>`` ids: one per suite of :mod:`shockwave_gym.traces.suites`.
SUITE_ENTRY_POINT = "shockwave_gym.env.registration:make_suite"
SUITE_VECTOR_ENTRY_POINT = "shockwave_gym.env.registration:make_suite_vec"
SUITE_MAX_EPISODE_STEPS = 100_000


def _suite_kwargs(suite: str, split: str, train_levels: int | None, kwargs: dict, index: int = 0) -> dict:
    from shockwave_gym.errors import InputError
    from shockwave_gym.traces.suites import SuiteTraceSource, split_entries, suite_regime

    if kwargs.get("trace") is not None:
        raise InputError(f"Suite-{suite}: the suite decides the trace; do not pass trace=")
    start = 0 if split == "train" else index % len(split_entries([suite], split))
    source = SuiteTraceSource(suite, split, train_levels=train_levels, start=start)
    if kwargs.get("gpus") not in (None, source.gpus):
        raise InputError(f"Suite-{suite}: the suite's cluster has {source.gpus} GPUs, got gpus={kwargs['gpus']!r}")
    if not source.suite.exact and kwargs.get("regime") is None and kwargs.get("early_endings") is None:
        # the suite's own regime, seeded per trace by the source (the leaderboard's episodes)
        kwargs = {**kwargs, "regime": suite_regime(source.suite, 0), "obs_version": kwargs.get("obs_version", 3)}
    spec = source.suite.cluster_spec
    if spec.types != ("v100",):  # a heterogeneous suite (docs/ENV.md, "Heterogeneous clusters")
        return {**kwargs, "trace": source, "gpus": source.gpus, "cluster": source.suite.cluster_spec}
    return {**kwargs, "trace": source, "gpus": source.gpus}


def make_suite(suite: str, split: str = "train", train_levels: int | None = None, **kwargs):
    """A suite's entry point: a :class:`ClusterEnv` on the suite's cluster, its trace from
    ``split`` (``"train"``: a fresh train seed per reset; ``"validation"`` / ``"test"``: the
    fixed list in order, one trace per reset)."""
    from shockwave_gym.env.cluster_env import ClusterEnv

    return ClusterEnv(**_suite_kwargs(suite, split, train_levels, kwargs))


def make_suite_vec(num_envs: int = 1, suite: str = "", split: str = "train", train_levels: int | None = None, **kwargs):
    """A suite's vector entry point: :class:`ClusterVectorEnv`, every cluster on the suite's
    cluster size; each cluster gets its own trace source, and on a fixed split cluster ``i``
    starts at the list's ``i``-th trace (so K clusters cover K different traces at once)."""
    from shockwave_gym.env.vector.fallback import make_vector_env, needs_fallback
    from shockwave_gym.env.vector.vector_env import ClusterVectorEnv

    vector_args = {key: kwargs.pop(key) for key in ("max_episode_steps", "autoreset_mode", "compiled") if key in kwargs}
    env_kwargs = [_suite_kwargs(suite, split, train_levels, kwargs, i) for i in range(num_envs)]
    if needs_fallback(env_kwargs[0]):  # heterogeneous, a regime, ...: the fallback, one source per env
        vector_args.pop("compiled", None)
        # env_kwargs[0] (the suite's source, regime, cluster) so that make_vector_env takes the
        # fallback too; the factory builds each env from the suite itself
        return make_vector_env(num_envs, env_factory=lambda **_: make_suite(suite, split, train_levels, **kwargs),
                               **env_kwargs[0], **vector_args)
    return ClusterVectorEnv.from_env_kwargs(env_kwargs, **vector_args)


def register_suite_envs() -> None:
    """Register ``shockwave_gym/Suite-<name>-v<version>`` for every suite (idempotent)."""
    from shockwave_gym.traces.suites import SUITES

    for suite in SUITES:
        if suite.env_id in gym.registry:
            continue
        gym.register(
            id=suite.env_id, entry_point=SUITE_ENTRY_POINT, vector_entry_point=SUITE_VECTOR_ENTRY_POINT,
            kwargs={"suite": suite.name, "split": "train"}, max_episode_steps=SUITE_MAX_EPISODE_STEPS,
        )

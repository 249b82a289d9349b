"""What a training run trains and validates on: task suites, or a generated workload.

* **Suites** (the default of ``shockwave-gym train``): the training clusters draw fresh
  traces from the suites' **train** split (seeds >= 2**32), one cluster per suite at least
  (an env's cluster size is fixed, so each suite gets its own clusters; with ``envs`` above
  the suite count, the suites take the clusters in turn). Checkpoints are selected on the
  suites' **validation** split (the first ``val_traces`` traces of each suite, on its own
  cluster size). The test split is never read.
* **A generated workload** (:class:`~shockwave_gym.training.workload.Workload`): one
  cluster size, random load and mix per episode; validation on held-out generated traces
  (seeds below 2**32).

``in-distribution`` names the suites flagged ``in_distribution`` (the ones the shipped
policies are trained for); ``all`` names every suite. A heterogeneous suite's clusters and
validation traces run on its cluster (``cluster=``). A regime suite (an information regime
other than exact, or early endings) trains and validates in its regime: its clusters get the
suite's ``regime=`` (each training trace in the regime its suite gives it) and each validation
trace its own regime (:attr:`TaskSet.val_regimes`). Observation versions 1 and 2 read each
job's length, so a suite whose regime hides lengths needs ``obs_version=3``. An elastic suite
(``elastic_share > 0``: the env gives each job a GPU count, docs/SEMANTICS.md "Elastic jobs")
has count actions and the observation's ``elastic`` entry, so a run's suites are all elastic
or all rigid (:attr:`TaskSet.elastic`). Behaviour cloning (``count_actions=False``) records
and runs the rigid slot policy, which schedules every job at its reference gang, so there
elastic and rigid suites mix.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from shockwave_gym.errors import InputError


@dataclass
class TaskSet:
    """Training env arguments (one dict per cluster), validation traces and their cluster
    sizes, and the observation slots every one of them fits in."""

    env_kwargs: list[dict]
    val_traces: list
    val_gpus: list[int]
    max_jobs: int
    description: str
    #: per validation trace, its heterogeneous cluster (None: ``val_gpus`` V100s)
    val_clusters: list | None = None
    #: per validation trace, its information regime (None: exact lengths, no early endings)
    val_regimes: list | None = None
    #: the suites have elastic jobs (count actions, the ``elastic`` observation entry)
    elastic: bool = False

    @property
    def num_envs(self) -> int:
        return len(self.env_kwargs)

    @property
    def val_sizes(self) -> list:
        """Per validation trace, what to run it on: its cluster spec when heterogeneous, else
        its GPU count (:func:`~shockwave_gym.training.evaluation.evaluate_agent`'s ``gpus``)."""
        clusters = self.val_clusters or [None] * len(self.val_gpus)
        return [gpus if spec is None else spec for gpus, spec in zip(self.val_gpus, clusters, strict=True)]


def resolve_suite_names(names, obs_version: int = 2) -> list:
    """Suite objects for a comma list / sequence of names, ``in-distribution`` or ``all``;
    a suite whose regime hides job lengths is refused unless ``obs_version`` is 3."""
    from shockwave_gym.env.options import LENGTH_READING_VERSIONS
    from shockwave_gym.traces.suites import SUITES, resolve_suites

    if isinstance(names, str) and names.strip() == "in-distribution":
        return [suite for suite in SUITES if suite.in_distribution]
    if not isinstance(names, str):
        names = list(names)
        if names == ["in-distribution"]:
            return [suite for suite in SUITES if suite.in_distribution]
    suites = resolve_suites(names)
    twice = sorted(name for name, count in Counter(s.name for s in suites).items() if count > 1)
    if twice:
        raise InputError(f"--suites: {', '.join(twice)} given twice (each suite trains and validates once)")
    hidden = [f"{s.name} ({s.regime})" for s in suites if s.regime != "exact"]
    if hidden and obs_version in LENGTH_READING_VERSIONS:
        raise InputError(f"cannot train on {', '.join(hidden)} with observation version {obs_version}: it reads "
                         "each job's length, which those regimes hide; pass --obs-version 3")
    return suites


def suite_tasks(names, *, envs: int | None, val_traces: int, max_jobs: int | None = None,
                obs_version: int = 2, count_actions: bool = True) -> TaskSet:
    """Train on the suites' train split (``envs`` clusters, default one per suite), validate
    on the first ``val_traces`` validation traces of each suite, each in its suite's regime.
    ``count_actions=False``: the policy never chooses GPU counts (the rigid head), so elastic
    suites may sit beside rigid ones and the set is not :attr:`TaskSet.elastic`."""
    from shockwave_gym.regimes import Regime
    from shockwave_gym.traces.suites import SuiteTraceSource, entry_trace, split_entries

    suites = resolve_suite_names(names, obs_version)
    count = len(suites) if envs is None else int(envs)
    if count < len(suites):
        raise InputError(f"--envs {count}: training on {len(suites)} suites needs at least one cluster per suite")
    if isinstance(val_traces, bool) or not isinstance(val_traces, int) or val_traces < 1:
        raise InputError(f"val_traces must be an integer >= 1, got {val_traces!r}")
    sources = [SuiteTraceSource(suite, "train") for suite in suites]
    elastic = [source.suite.name for source in sources if source.elastic] if count_actions else []
    if elastic and len(elastic) < len(suites):
        raise InputError(f"cannot train on elastic suites ({', '.join(elastic)}) beside rigid ones in one run: "
                         "their actions and observations differ; train them apart")
    env_kwargs = []
    for i in range(count):
        suite = suites[i % len(suites)]
        cluster = {"cluster": suite.cluster_spec} if suite.heterogeneous else {}
        # the suite's regime: each trace the source gives runs in the regime its suite seeds it
        regime = {} if suite.exact else {"regime": Regime(suite.regime, suite.early_endings)}
        env_kwargs.append({"trace": sources[i % len(suites)], "gpus": suite.gpus, **cluster, **regime})
    traces, gpus, clusters, regimes = [], [], [], []
    for suite in suites:
        entries = split_entries([suite], "validation")
        if val_traces > len(entries):
            raise InputError(f"--val-traces {val_traces}: suite {suite.name} has {len(entries)} validation traces")
        for entry in entries[:val_traces]:
            traces.append(entry_trace(entry))
            gpus.append(suite.gpus)
            clusters.append(suite.cluster_spec if suite.heterogeneous else None)
            regimes.append(entry.regime)
    needed = max([suite.max_num_jobs for suite in suites] + [trace.num_jobs for trace in traces])
    slots = needed if max_jobs is None else int(max_jobs)
    description = ", ".join(f"{s.name} ({s.gpus} GPUs, {s.load})" for s in suites)
    return TaskSet(env_kwargs, traces, gpus, slots, f"suites {description}", clusters,
                   regimes if any(r is not None for r in regimes) else None, elastic=bool(elastic))


def workload_tasks(workload, *, envs: int, eval_seeds, max_jobs: int | None = None) -> TaskSet:
    """Train on fresh traces of a generated workload, validate on held-out generated traces."""
    from shockwave_gym.training.workload import TrainingTraceSource, eval_rates, held_out_traces

    traces = held_out_traces(eval_seeds, num_jobs=workload.max_num_jobs, arrival_rates_per_hour=eval_rates(workload),
                             max_duration_h=workload.max_duration_h)
    source = TrainingTraceSource(workload)
    env_kwargs = [{"trace": source, "gpus": workload.gpus} for _ in range(int(envs))]
    lo, hi = workload.num_jobs_range
    return TaskSet(env_kwargs, traces, [workload.gpus] * len(traces),
                   workload.max_num_jobs if max_jobs is None else int(max_jobs),
                   f"generated traces, {workload.gpus} GPUs, {lo}-{hi} jobs per episode")

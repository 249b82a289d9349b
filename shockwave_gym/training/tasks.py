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
validation traces run on its cluster (``cluster=``). A suite in an information regime other
than exact is refused: the learned policies read job lengths, which those regimes hide.
"""

from __future__ import annotations

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

    @property
    def num_envs(self) -> int:
        return len(self.env_kwargs)

    @property
    def val_sizes(self) -> list:
        """Per validation trace, what to run it on: its cluster spec when heterogeneous, else
        its GPU count (:func:`~shockwave_gym.training.evaluation.evaluate_agent`'s ``gpus``)."""
        clusters = self.val_clusters or [None] * len(self.val_gpus)
        return [gpus if spec is None else spec for gpus, spec in zip(self.val_gpus, clusters, strict=True)]


def resolve_suite_names(names) -> list:
    """Suite objects for a comma list / sequence of names, ``in-distribution`` or ``all``."""
    from shockwave_gym.traces.suites import SUITES, resolve_suites

    if isinstance(names, str) and names.strip() == "in-distribution":
        return [suite for suite in SUITES if suite.in_distribution]
    if not isinstance(names, str):
        names = list(names)
        if names == ["in-distribution"]:
            return [suite for suite in SUITES if suite.in_distribution]
    suites = resolve_suites(names)
    regimes = [f"{s.name} ({s.regime}{', early endings' if s.early_endings else ''})" for s in suites if not s.exact]
    if regimes:
        raise InputError(f"cannot train on {', '.join(regimes)}: learned policies need exact job lengths; "
                         "name suites in the exact regime")
    return suites


def suite_tasks(names, *, envs: int | None, val_traces: int, max_jobs: int | None = None) -> TaskSet:
    """Train on the suites' train split (``envs`` clusters, default one per suite), validate
    on the first ``val_traces`` validation traces of each suite."""
    from shockwave_gym.traces.suites import SuiteTraceSource, entry_trace, split_entries

    suites = resolve_suite_names(names)
    count = len(suites) if envs is None else int(envs)
    if count < len(suites):
        raise InputError(f"--envs {count}: training on {len(suites)} suites needs at least one cluster per suite")
    if isinstance(val_traces, bool) or not isinstance(val_traces, int) or val_traces < 1:
        raise InputError(f"val_traces must be an integer >= 1, got {val_traces!r}")
    sources = [SuiteTraceSource(suite, "train") for suite in suites]
    env_kwargs = []
    for i in range(count):
        suite = suites[i % len(suites)]
        cluster = {"cluster": suite.cluster_spec} if suite.heterogeneous else {}
        env_kwargs.append({"trace": sources[i % len(suites)], "gpus": suite.gpus, **cluster})
    traces, gpus, clusters = [], [], []
    for suite in suites:
        for entry in split_entries([suite], "validation")[:val_traces]:
            traces.append(entry_trace(entry))
            gpus.append(suite.gpus)
            clusters.append(suite.cluster_spec if suite.heterogeneous else None)
    needed = max([suite.max_num_jobs for suite in suites] + [trace.num_jobs for trace in traces])
    slots = needed if max_jobs is None else int(max_jobs)
    description = ", ".join(f"{s.name} ({s.gpus} GPUs, {s.load})" for s in suites)
    return TaskSet(env_kwargs, traces, gpus, slots, f"suites {description}", clusters)


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

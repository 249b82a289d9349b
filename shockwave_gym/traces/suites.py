"""Task suites: named, versioned workload distributions with disjoint train / validation /
test seeds (docs/SUITES.md).

A :class:`Suite` (:mod:`~.suite_spec`, re-exported here) is one generator config (:class:`~shockwave_gym.traces.GeneratorConfig`
without its seed) on one cluster (a :class:`~shockwave_gym.cluster.ClusterSpec` string, so a
suite can describe a heterogeneous cluster). Its traces differ only by seed, and the seed
decides the split:

* **test**: ``TEST_TRACES_PER_SUITE`` seeds in ``[0, 2**31)``; a fixed, published list that
  regenerates byte for byte (``tests/test_suites.py`` pins their hashes). A suite may put
  bundled traces first (the ``canonical`` suite's first test trace is the authors'
  ``authors-canonical-120``).
* **validation**: ``VALIDATION_TRACES_PER_SUITE`` seeds in ``[2**31, 2**32)``, for choosing
  checkpoints.
* **train**: fresh seeds in ``[2**32, 2**63)`` drawn from the env's RNG at each reset (the
  range :data:`shockwave_gym.training.workload.TRAIN_SEED_MIN` reserves for training), or,
  with ``train_levels=N``, the first ``N`` of a fixed list of derived train seeds
  (Procgen-style level sets).

The ranges never overlap, so no train trace can be a validation or test trace. Fixed seeds
are derived from ``sha256("shockwave-gym/suite/<name>/v<version>/<split>/<index>")``; a
suite's version is part of its env id (``shockwave_gym/Suite-<name>-v<version>``) and of
every derived seed, so changing a suite means a new version with new seeds.

Example::

    from shockwave_gym.traces.suites import get_suite, split_traces

    suite = get_suite("small-nominal")
    suite.gpus, suite.config(seed=0).arrival_rate_per_hour
    traces = split_traces("small-nominal", "test")     # [(trace, gpus), ...]
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.errors import InputError
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces.generator import (
    SINGLE_GPU_MODELS,
    GeneratorConfig,
    bucket_bounds,
    templates,
)
from shockwave_gym.traces.sources import TraceSource
from shockwave_gym.traces.suite_spec import (
    SEED_RANGES,
    SPLITS,
    TEST_TRACES_PER_SUITE,
    VALIDATION_TRACES_PER_SUITE,
    Suite,
    check_split,
    derive_seed,
)
from shockwave_gym.traces.types import Trace


def regime_seed(suite: str | Suite, key: int | str) -> int:
    """The regime seed of one trace of ``suite``: a hash of its base suite
    (:attr:`Suite.trace_base`), version and the trace's generator seed (or bundled name),
    mapped into ``[0, 2**32)``. Every variant of a base suite draws the same per-job facts
    for the same trace (the estimates do not depend on the early-ending share either)."""
    suite = get_suite(suite)
    if isinstance(key, bool) or not isinstance(key, int | str):
        raise InputError(f"suite {suite.name}: a trace's regime seed needs its generator seed or bundled name, got {key!r}")
    text = f"shockwave-gym/suite/{suite.trace_base}/v{suite.version}/regime/{key}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") % 2**32


def suite_regime(suite: str | Suite, seed: int | str):
    """The :class:`~shockwave_gym.regimes.Regime` that ``suite``'s trace of generator seed
    ``seed`` (any split's, train included; or a bundled trace's name) runs in; ``None`` for a
    suite in the paper's setting (exact lengths, no early endings). Its duration prior is the
    suite's generator distribution; its seed is :func:`regime_seed`."""
    from shockwave_gym.regimes import DurationPrior, Regime

    suite = get_suite(suite)
    if suite.exact:
        return None
    prior = DurationPrior.from_generator(suite.config(seed=0))
    return Regime(suite.regime, suite.early_endings, regime_seed(suite, seed), prior=prior)


# -- load: offered GPU-hours per hour relative to the cluster ----------------------------

def expected_gang(config: GeneratorConfig, throughputs: ThroughputTable | None = None) -> float:
    """Mean gang size of the generator's jobs (single-GPU models always use one GPU)."""
    table = ThroughputTable.builtin_v100() if throughputs is None else throughputs
    choices = templates(table)
    single = sum(model in SINGLE_GPU_MODELS for model, _ in choices) / len(choices)
    mixed = sum(gang * p for gang, p in config.gang_mix.items())
    return single + (1.0 - single) * mixed


def expected_duration_h(config: GeneratorConfig) -> float:
    """Mean isolated duration of the generator's jobs, in hours."""
    candidates = np.linspace(config.min_duration_h, config.max_duration_h, config.num_durations)
    total = 0.0
    for p, (lo, hi) in zip(config.bucket_probs, bucket_bounds(config.num_durations), strict=True):
        if p > 0:
            total += p * float(candidates[lo:hi].mean())
    return total


def offered_load(config: GeneratorConfig, gpus: int) -> float:
    """Arrival rate x mean gang x mean isolated hours / GPUs: the share of the cluster the
    arriving work would occupy in steady state (1.0 = exactly full; above 1 the queue grows
    while jobs keep arriving)."""
    return config.arrival_rate_per_hour * expected_gang(config) * expected_duration_h(config) / gpus


#: Load levels and the offered-load interval each must fall in (checked by a test).
LOAD_LEVELS: dict[str, tuple[float, float]] = {
    "light": (0.0, 0.9),
    "nominal": (0.9, 2.0),
    "overloaded": (2.0, math.inf),
}

_SHORT = {"max_duration_h": 2.0}
_HEAVY_GANGS = {1: 0.25, 2: 0.35, 4: 0.25, 8: 0.15}

#: The suites, in report order. Version 0. Arrival rates are written out (not computed) so
#: the published configs are plain numbers; ``offered_load`` gives the load they mean.
SUITES: tuple[Suite, ...] = (
    Suite("small-light", "v100=12", "light", in_distribution=True,
          stresses="idle capacity: few jobs wait, so packing and restarts matter more than ordering",
          generator={"num_jobs": 40, "arrival_rate_per_hour": 10.0, **_SHORT}),
    Suite("small-nominal", "v100=12", "nominal", in_distribution=True,
          stresses="the shipped policies' training distribution (12 GPUs, short jobs, steady queue)",
          generator={"num_jobs": 40, "arrival_rate_per_hour": 20.0, **_SHORT}),
    Suite("small-overloaded", "v100=12", "overloaded", in_distribution=True,
          stresses="a growing queue on a small cluster: ordering decides JCT and fairness",
          generator={"num_jobs": 60, "arrival_rate_per_hour": 60.0, **_SHORT}),
    Suite("canonical", "v100=32", "overloaded", bundled_test=("authors-canonical-120",),
          stresses="the paper's canonical setting (120 jobs arriving at 90/h on 32 GPUs, jobs up to 5 h): "
                   "a burst far above capacity, then a long drain",
          generator={"num_jobs": 120, "arrival_rate_per_hour": 90.0}),
    Suite("medium-nominal", "v100=32", "nominal",
          stresses="transfer to a 32-GPU cluster at nominal load",
          generator={"num_jobs": 80, "arrival_rate_per_hour": 50.0, **_SHORT}),
    Suite("large-nominal", "v100=128", "nominal",
          stresses="transfer to a 128-GPU cluster: many concurrent jobs, large decisions per round",
          generator={"num_jobs": 200, "arrival_rate_per_hour": 200.0, **_SHORT}),
    Suite("gang-heavy", "v100=32", "overloaded",
          stresses="large gangs (40% of jobs need 4 or 8 GPUs): fragmentation and starvation of big jobs",
          generator={"num_jobs": 80, "arrival_rate_per_hour": 50.0, "gang_mix": _HEAVY_GANGS, **_SHORT}),
    Suite("long-jobs", "v100=16", "overloaded",
          stresses="heavy-tailed job lengths (up to 8 h, 30% of jobs over 2.5 h): short jobs stuck behind long ones",
          generator={"num_jobs": 40, "arrival_rate_per_hour": 12.0, "max_duration_h": 8.0,
                     "bucket_probs": (0.4, 0.3, 0.2, 0.1)}),
    Suite("static-only", "v100=16", "nominal",
          stresses="no batch-size adaptation (every job static): the predictor's dynamic-adaptation advantage vanishes",
          generator={"num_jobs": 40, "arrival_rate_per_hour": 22.0,
                     "mode_mix": {"static": 1.0, "accordion": 0.0, "gns": 0.0}, **_SHORT}),
    # heterogeneous (issue 15): the offered load counts every GPU as a V100, so the load on
    # the cluster's V100-equivalent capacity (P100 ~0.6, K80 ~0.2 of a V100) is higher
    Suite("hetero-mixed", "v100=8,p100=8,k80=8", "nominal",
          stresses="three GPU generations in one cluster: which jobs get the fast V100s, and when a move "
                   "between types (a restart) pays off",
          generator={"num_jobs": 40, "arrival_rate_per_hour": 30.0, **_SHORT}),
    # elastic jobs (issue 37): medium-nominal's jobs, half declared elastic (counts 1-8)
    Suite("elastic-nominal", "v100=32", "nominal",
          stresses="the scheduler also chooses GPU counts (half the jobs elastic): speedups that flatten or "
                   "reverse with more GPUs, and restarts on every change of count",
          generator={"num_jobs": 80, "arrival_rate_per_hour": 50.0, "elastic_share": 0.5, **_SHORT}),
)


def _variant(base: Suite, regime: str, stresses: str, early_endings: float = 0.0) -> Suite:
    """``base``'s traces, byte for byte, in another information regime: named
    ``<base>-<regime>`` (``-early`` with early endings)."""
    name = f"{base.name}-{regime}" + ("-early" if early_endings else "")
    return Suite(name, base.cluster, base.load, stresses=stresses, generator=base.generator,
                 version=base.version, bundled_test=base.bundled_test, regime=regime,
                 early_endings=early_endings, traces_of=base.name)


_BASE = {suite.name: suite for suite in SUITES}
#: Regime suites (issue 34): base suites' traces with lengths estimated or unknown, crossed with
#: cluster size, load, gang mix and heterogeneity. Version 0. Policies that read lengths
#: (observation versions 1 and 2: `ppo`, `ppo-fair`, `ppo-elastic`) cannot run them; the
#: per-task policies and `shockwave-distilled` (version 3) can.
SUITES += (
    _variant(_BASE["canonical"], "estimate",
             "the paper's setting with user estimates instead of lengths (off by up to 10x): "
             "does shortest-first survive overestimates?"),
    _variant(_BASE["canonical"], "unknown",
             "the paper's setting with no lengths at all: ordering from the duration prior and "
             "observed progress alone"),
    _variant(_BASE["small-overloaded"], "unknown",
             "a growing queue on a small cluster with unknown lengths: attained service and the prior "
             "decide the order"),
    _variant(_BASE["gang-heavy"], "estimate",
             "large gangs under overestimated lengths: packing 4- and 8-GPU jobs without knowing "
             "how long they hold the GPUs"),
    _variant(_BASE["medium-nominal"], "unknown",
             "unknown lengths and 20% of jobs ending early (killed, converged, failed) at an unannounced "
             "epoch: progress says little about when a job ends", early_endings=0.2),
    _variant(_BASE["hetero-mixed"], "unknown",
             "three GPU generations with unknown lengths: which jobs get the fast V100s when nobody "
             "knows which jobs are short"),
)


def _check_variants(suites: tuple[Suite, ...]) -> None:
    """Every suite name unique; a variant's base exists, is not itself a variant, and has its
    cluster, generator, version and bundled traces."""
    by_name: dict[str, Suite] = {}
    for suite in suites:
        if suite.name in by_name:
            raise InputError(f"suite {suite.name!r} is defined twice")
        by_name[suite.name] = suite
    for suite in suites:
        if suite.traces_of is None:
            continue
        base = by_name.get(suite.traces_of)
        if base is None or base.traces_of is not None:
            raise InputError(f"suite {suite.name}: traces_of {suite.traces_of!r} is not a base suite")
        if (base.cluster, dict(base.generator), base.version, base.bundled_test) != (
                suite.cluster, dict(suite.generator), suite.version, suite.bundled_test):
            raise InputError(f"suite {suite.name}: a variant of {base.name} needs its cluster, generator, "
                             "version and bundled traces")


_check_variants(SUITES)


def suite_names() -> list[str]:
    return [suite.name for suite in SUITES]


def get_suite(name: str | Suite) -> Suite:
    """The suite called ``name`` (a :class:`Suite` passes through)."""
    if isinstance(name, Suite):
        return name
    for suite in SUITES:
        if suite.name == name:
            return suite
    raise InputError(f"unknown suite {name!r}; suites: {', '.join(suite_names())}")


def resolve_suites(names: str | Iterable[str | Suite] | None) -> list[Suite]:
    """``None`` / ``"all"`` -> every suite, heterogeneous and regime suites included; else a
    comma list or sequence of names. A caller that runs the traces must run each on its
    entry's cluster and regime (:attr:`SplitEntry.cluster`, :attr:`SplitEntry.regime`);
    :func:`split_traces`, which gives only a GPU count, refuses the suites that need more."""
    if names is None or names == "all":
        return list(SUITES)
    items = names.split(",") if isinstance(names, str) else list(names)
    suites = [get_suite(item.strip() if isinstance(item, str) else item) for item in items if item != ""]
    if not suites:
        raise InputError("no suites given")
    return suites


@dataclass(frozen=True)
class SplitEntry:
    """One fixed trace of a split: a generated seed, or a bundled trace (``seed=None``)."""

    suite: str
    split: str
    index: int
    seed: int | None
    bundled: str | None = None

    @property
    def trace_name(self) -> str:
        """A bundled trace's own name in its own suite; else ``<suite>-<split>-<index>`` (a
        regime variant names even its bundled traces so: names are unique across suites)."""
        if self.bundled is not None and get_suite(self.suite).traces_of is None:
            return self.bundled
        return f"{self.suite}-{self.split}-{self.index}"

    @property
    def cluster(self) -> ClusterSpec:
        """The suite's cluster, which the trace must run on."""
        return get_suite(self.suite).cluster_spec

    @property
    def regime(self):
        """The :class:`~shockwave_gym.regimes.Regime` the trace runs in (:func:`suite_regime`),
        seeded from the trace's generator seed or bundled name; ``None`` in the paper's
        setting."""
        return suite_regime(self.suite, self.seed if self.bundled is None else self.bundled)


def split_entries(suites: str | Iterable[str | Suite] | None = None, split: str = "test") -> list[SplitEntry]:
    """The published list of (suite, seed) of a fixed split, in report order: each suite's
    bundled test traces first, then its derived seeds."""
    if check_split(split) == "train":
        raise InputError("the train split is not a fixed list (fresh seeds per episode)")
    entries = []
    for suite in resolve_suites(suites):
        bundled = suite.bundled_test if split == "test" else ()
        entries += [SplitEntry(suite.name, split, i, None, name) for i, name in enumerate(bundled)]
        entries += [SplitEntry(suite.name, split, len(bundled) + i, seed)
                    for i, seed in enumerate(suite.seeds(split))]
    return entries


def entry_trace(entry: SplitEntry, throughputs: ThroughputTable | None = None) -> Trace:
    """The trace of one split entry (a bundled one is loaded and checked on the suite's cluster)."""
    suite = get_suite(entry.suite)
    if entry.bundled is not None:
        from shockwave_gym.traces.loader import load_trace

        trace = load_trace(entry.bundled, throughputs, gpus=suite.gpus)
        return trace if trace.name == entry.trace_name else dataclasses.replace(trace, name=entry.trace_name)
    return suite.trace(entry.split, entry.seed, entry.index)


def split_traces(suites: str | Iterable[str | Suite] | None = None, split: str = "test") -> list[tuple[Trace, int]]:
    """Every trace of a fixed split with its cluster size: ``[(trace, gpus), ...]``. Only for
    homogeneous suites in the paper's setting: a GPU count would drop a heterogeneous
    cluster's types or a regime suite's regime, so those raise :class:`InputError` (take
    :func:`split_entries` and each entry's :attr:`~SplitEntry.cluster` and
    :attr:`~SplitEntry.regime`)."""
    chosen = resolve_suites(suites)
    needs = [s.name for s in chosen if s.heterogeneous or not s.exact]
    if needs:
        raise InputError(f"split_traces gives only a GPU count, but suites {', '.join(needs)} need their cluster "
                         "or regime: use split_entries() with entry.cluster and entry.regime")
    return [(entry_trace(entry), get_suite(entry.suite).gpus) for entry in split_entries(chosen, split)]


def serialize_trace(trace: Trace) -> bytes:
    """The trace in the package's JSON-lines format (what ``save_trace`` writes): the bytes
    the reproducibility test hashes."""
    from shockwave_gym.traces.jsonl import format_line

    return "".join(format_line(job) + "\n" for job in trace.jobs).encode()


def split_digest(suites: str | Iterable[str | Suite] | None = None, split: str = "test") -> str:
    """SHA-256 over a fixed split: each trace's name and cluster size, then its
    :func:`serialize_trace` bytes, in :func:`split_entries` order."""
    digest = hashlib.sha256()
    for entry in split_entries(suites, split):
        trace = entry_trace(entry)
        digest.update(f"{trace.name}\t{get_suite(entry.suite).gpus}\n".encode())
        digest.update(serialize_trace(trace))
    return digest.hexdigest()


def regime_facts(trace: Trace, regime) -> bytes:
    """The per-job facts ``regime`` draws for ``trace``, one line per job: job id, the
    estimated iterations (0 outside ``estimate``) and the epochs after which the job ends
    early (0: it runs to its nominal length). Empty for ``None``: the bytes the pinned regime
    hashes cover."""
    if regime is None:
        return b""
    from shockwave_gym.regimes import apply_regime

    return "".join(f"{job.job_id}\t{job.estimated_iterations}\t{job.end_epochs}\n"
                   for job in apply_regime(trace.jobs, regime)).encode()


def regime_digest(suites: str | Iterable[str | Suite] | None = None, split: str = "test") -> str:
    """SHA-256 over the regime draws of a fixed split: each trace's name and regime
    (:meth:`~shockwave_gym.regimes.Regime.describe`), then its :func:`regime_facts`."""
    digest = hashlib.sha256()
    for entry in split_entries(suites, split):
        regime = entry.regime
        digest.update(f"{entry.trace_name}\t{'exact' if regime is None else regime.describe()}\n".encode())
        digest.update(regime_facts(entry_trace(entry), regime))
    return digest.hexdigest()


# -- trace sources for environments ------------------------------------------------------

class SuiteTraceSource(TraceSource):
    """A suite's traces for an environment.

    ``split="train"``: a fresh train seed from the env's RNG at every reset (with
    ``train_levels=N``, one of the suite's first ``N`` fixed train seeds, picked by the
    RNG). ``"validation"`` / ``"test"``: the split's fixed list in order, one per reset,
    starting again after the last (``start`` picks the first); the position is the source's
    only state, so ``reset()`` always advances whatever the seed.
    """

    def __init__(self, suite: str | Suite, split: str = "train", *, train_levels: int | None = None,
                 start: int = 0, throughputs: ThroughputTable | None = None):
        self.suite = get_suite(suite)
        self.split = check_split(split)
        if train_levels is not None and (split != "train" or isinstance(train_levels, bool)
                                         or not isinstance(train_levels, int) or train_levels < 1):
            raise InputError(f"train_levels must be an integer >= 1 and needs split='train', got {train_levels!r}")
        self.train_levels = train_levels
        self.throughputs = throughputs
        self._levels = self.suite.seeds("train", train_levels) if train_levels else None
        self._entries = split_entries([self.suite], split) if split != "train" else []
        if split != "train" and not 0 <= start < len(self._entries):
            raise InputError(f"start must be in [0, {len(self._entries)}), got {start!r}")
        self._next = start
        self._cache: dict[int, Trace] = {}

    @property
    def gpus(self) -> int:
        return self.suite.gpus

    @property
    def elastic(self) -> bool:
        return self.suite.elastic

    @property
    def cluster(self) -> str:
        return self.suite.cluster

    def sample(self, rng: np.random.Generator) -> Trace:
        if self.split == "train":
            lo, hi = SEED_RANGES["train"]
            if self._levels is None:
                return self.suite.trace("train", int(rng.integers(lo, hi)))
            index = int(rng.integers(len(self._levels)))
            return self.suite.trace("train", self._levels[index], index)
        position = self._next
        self._next = (self._next + 1) % len(self._entries)
        if position not in self._cache:
            self._cache[position] = entry_trace(self._entries[position], self.throughputs)
        return self._cache[position]

    def regime_of(self, trace: Trace):
        """The :class:`~shockwave_gym.regimes.Regime` a trace this source gave runs in
        (:func:`suite_regime`; ``None`` in the paper's setting), found from its name."""
        if self.suite.exact:
            return None
        for entry in self._entries:
            if entry.trace_name == trace.name:
                return entry.regime
        prefix = f"{self.suite.name}-train-"
        if self.split == "train" and trace.name.startswith(prefix):
            rest = trace.name[len(prefix):]
            if rest.startswith("s") and rest[1:].isdigit():  # a fresh seed: <suite>-train-s<seed>
                return suite_regime(self.suite, int(rest[1:]))
            if rest.isdigit() and self._levels is not None and int(rest) < len(self._levels):
                return suite_regime(self.suite, self._levels[int(rest)])
        raise InputError(f"trace {trace.name!r} is not one of {self!r}'s traces")

    @property
    def max_num_jobs(self) -> int:
        sizes = [self.suite.max_num_jobs]
        sizes += [entry_trace(e).num_jobs for e in self._entries if e.bundled is not None]
        return max(sizes)

    def __repr__(self) -> str:
        return f"SuiteTraceSource({self.suite.name!r}, split={self.split!r})"


@dataclass(frozen=True)
class SuiteTask:
    """One episode's task drawn from a :class:`MultiSuiteSource`."""

    suite: Suite
    trace: Trace
    #: the information regime the trace runs in (None: the paper's setting)
    regime: object = None

    @property
    def gpus(self) -> int:
        return self.suite.gpus

    @property
    def cluster(self) -> ClusterSpec | None:
        """The heterogeneous cluster the trace must run on; None: ``gpus`` V100s."""
        return self.suite.cluster_spec if self.suite.heterogeneous else None


class MultiSuiteSource:
    """Many suites (cluster sizes, loads, mixes) in one training run.

    :meth:`sample_task` picks a suite (uniformly, or by ``weights``) from the caller's RNG,
    then a trace of that suite's ``split``; the task carries the cluster size, since an env
    built for one cluster cannot take another's trace. :meth:`sources` gives one
    :class:`SuiteTraceSource` per suite, and :meth:`env_kwargs` the env arguments of one
    vector-env cluster (or one env) per suite::

        from shockwave_gym.env.vector.vector_env import ClusterVectorEnv

        mix = MultiSuiteSource("small-nominal,medium-nominal,large-nominal")
        vec = ClusterVectorEnv.from_env_kwargs(mix.env_kwargs(copies=2, max_jobs=64))  # 12, 32, 128 GPUs
    """

    def __init__(self, suites: str | Iterable[str | Suite] | None = None, split: str = "train",
                 weights: Iterable[float] | None = None, *, train_levels: int | None = None):
        self.suites = resolve_suites(suites)
        self.split = check_split(split)
        self._sources = [SuiteTraceSource(s, split, train_levels=train_levels) for s in self.suites]
        if weights is None:
            probs = np.full(len(self.suites), 1.0 / len(self.suites))
        else:
            probs = np.asarray(list(weights), dtype=np.float64)
            if probs.shape != (len(self.suites),) or not np.all(np.isfinite(probs)) or np.any(probs < 0) or probs.sum() <= 0:
                raise InputError(f"weights: need {len(self.suites)} finite numbers >= 0 with a positive sum, got {weights!r}")
            probs = probs / probs.sum()
        self.probs = probs

    def sources(self) -> list[SuiteTraceSource]:
        return list(self._sources)

    def env_kwargs(self, copies: int = 1, **kwargs) -> list[dict]:
        """:class:`~shockwave_gym.env.cluster_env.ClusterEnv` arguments, ``copies`` clusters per
        suite, each on its suite's cluster with its own source: for
        ``ClusterVectorEnv.from_env_kwargs`` (clusters of different sizes in one batch; give a
        common ``max_jobs``) or one env per suite. ``kwargs`` go to every env."""
        if isinstance(copies, bool) or not isinstance(copies, int) or copies < 1:
            raise InputError(f"copies must be an integer >= 1, got {copies!r}")
        regimes = [suite.name for suite in self.suites if not suite.exact]
        if regimes:
            raise InputError(f"suites {', '.join(regimes)} run in an information regime, which these env "
                             "arguments cannot carry; name suites with exact lengths")
        train_levels = self._sources[0].train_levels
        out = []
        for suite in self.suites:
            size = 1 if self.split == "train" else len(split_entries([suite], self.split))
            cluster = {"cluster": suite.cluster_spec} if suite.heterogeneous else {}
            out += [{**kwargs, "gpus": suite.gpus, **cluster,
                     "trace": SuiteTraceSource(suite, self.split, train_levels=train_levels, start=copy % size)}
                    for copy in range(copies)]  # on a fixed split, copy k starts at trace k
        return out

    def sample_task(self, rng: np.random.Generator) -> SuiteTask:
        index = int(rng.choice(len(self._sources), p=self.probs))
        source = self._sources[index]
        trace = source.sample(rng)
        return SuiteTask(self.suites[index], trace, source.regime_of(trace))

    @property
    def max_num_jobs(self) -> int:
        return max(source.max_num_jobs for source in self._sources)

    @property
    def gpu_sizes(self) -> list[int]:
        return sorted({suite.gpus for suite in self.suites})

    def __repr__(self) -> str:
        return f"MultiSuiteSource({[s.name for s in self.suites]!r}, split={self.split!r})"


def suite_table() -> list[dict]:
    """One row per suite: name, cluster, load, offered load, generator config, stresses."""
    rows = []
    for suite in SUITES:
        config = suite.config(seed=0)
        settings = {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.name not in ("seed", "name")}
        rows.append({
            "suite": suite.name, "env_id": suite.env_id, "cluster": suite.cluster, "gpus": suite.gpus,
            "load": suite.load, "offered_load": offered_load(config, suite.gpus),
            "generator": settings, "stresses": suite.stresses,
        })
    return rows


def suites_markdown() -> str:
    """The generated part of docs/SUITES.md: every suite's settings, and the fixed splits'
    seeds (a test checks the doc holds exactly this text)."""
    lines = ["| suite | env id | cluster | load | offered load | generator config (besides the defaults) | stresses |",
             "|---|---|---|---|---|---|---|"]
    for row in suite_table():
        suite = get_suite(row["suite"])
        if suite.traces_of is not None:
            continue
        settings = ", ".join(f"`{key}={value!r}`" for key, value in suite.generator.items())
        lines.append(f"| `{suite.name}` | `{suite.env_id}` | `{suite.cluster}` | {suite.load} | "
                     f"{row['offered_load']:.2f} | {settings} | {suite.stresses} |")
    lines += ["", "**Regime suites**: a base suite's traces, byte for byte (same seeds and bundled traces, "
              "their own trace names), in another information regime:", "",
              "| suite | env id | traces of | cluster | load | regime | early endings | stresses |",
              "|---|---|---|---|---|---|---|---|"]
    for suite in SUITES:
        if suite.traces_of is not None:
            lines.append(f"| `{suite.name}` | `{suite.env_id}` | `{suite.traces_of}` | `{suite.cluster}` | "
                         f"{suite.load} | `{suite.regime}` | {suite.early_endings:g} | {suite.stresses} |")
    for split in ("test", "validation"):
        lines += ["", f"**{split} split** ({split}-seed range `[{SEED_RANGES[split][0]}, {SEED_RANGES[split][1]})`):", "",
                  "| suite | trace names | seeds |", "|---|---|---|"]
        for suite in SUITES:
            entries = split_entries([suite], split)
            names = ", ".join(f"`{e.trace_name}`" for e in entries)
            seeds = ", ".join(f"bundled `{e.bundled}`" if e.seed is None else str(e.seed) for e in entries)
            if suite.traces_of is not None:
                seeds = f"`{suite.traces_of}`'s: {seeds}"
            lines.append(f"| `{suite.name}` | {names} | {seeds} |")
    return "\n".join(lines) + "\n"


__all__ = [
    "LOAD_LEVELS", "SEED_RANGES", "SPLITS", "SUITES", "TEST_TRACES_PER_SUITE", "VALIDATION_TRACES_PER_SUITE",
    "MultiSuiteSource", "SplitEntry", "Suite", "SuiteTask", "SuiteTraceSource", "derive_seed", "entry_trace", "get_suite", "offered_load", "regime_digest",
    "regime_facts", "regime_seed", "resolve_suites", "serialize_trace", "split_digest", "split_entries",
    "split_traces", "suite_names", "suite_regime", "suite_table", "suites_markdown",
]

"""One task suite's definition (:class:`Suite`), the splits' seed ranges and the derived
seeds (docs/SUITES.md); the suites themselves and their splits are in
:mod:`shockwave_gym.traces.suites`, which re-exports these names."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.errors import InputError
from shockwave_gym.traces.generator import GeneratorConfig, generate_trace
from shockwave_gym.traces.types import Trace

SPLITS = ("train", "validation", "test")
#: Seed range of each split, ``[lo, hi)``. Disjoint by construction.
SEED_RANGES: dict[str, tuple[int, int]] = {
    "test": (0, 2**31),
    "validation": (2**31, 2**32),
    "train": (2**32, 2**63),
}
TEST_TRACES_PER_SUITE = 5
VALIDATION_TRACES_PER_SUITE = 5


@dataclass(frozen=True)
class Suite:
    """One workload distribution: a cluster and the generator settings of its traces.

    ``generator`` holds :class:`GeneratorConfig` fields except ``seed`` and ``name``.
    ``load`` is the intended load level (``light`` / ``nominal`` / ``overloaded``; see
    :func:`offered_load`), ``stresses`` says in one sentence what the suite tests, and
    ``bundled_test`` names bundled traces that open its test split.

    ``regime`` (one of :data:`~shockwave_gym.regimes.KNOWLEDGE_REGIMES`) and
    ``early_endings`` (a share in [0, 1)) are the information regime its traces run in
    (docs/SEMANTICS.md, "Information regimes"); each trace's regime draws are seeded from the
    trace (:func:`suite_regime`). ``traces_of`` names a base suite whose trace seeds (and
    bundled traces) this suite reuses: a regime variant plays the base suite's jobs byte for
    byte, under its own trace names, so a comparison with the base is paired on identical
    traces. A variant must have the base's cluster, generator and bundled traces.
    """

    name: str
    cluster: str
    load: str
    stresses: str
    generator: Mapping[str, object]
    version: int = 0
    bundled_test: tuple[str, ...] = ()
    in_distribution: bool = False
    regime: str = "exact"
    early_endings: float = 0.0
    traces_of: str | None = None
    #: whether the leaderboard runs it by default (a new suite joins at the next full run)
    leaderboard: bool = True
    cluster_spec: ClusterSpec = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        from shockwave_gym.regimes import KNOWLEDGE_REGIMES

        object.__setattr__(self, "cluster_spec", ClusterSpec.parse(self.cluster, where=f"suite {self.name}: cluster"))
        bad = {"seed", "name"} & set(self.generator)
        if bad:
            raise InputError(f"suite {self.name}: generator must not set {sorted(bad)} (the split decides them)")
        if self.regime not in KNOWLEDGE_REGIMES:
            raise InputError(f"suite {self.name}: regime must be one of {', '.join(KNOWLEDGE_REGIMES)}, "
                             f"got {self.regime!r}")
        share = self.early_endings
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0.0 <= share < 1.0:
            raise InputError(f"suite {self.name}: early_endings must be a share in [0, 1), got {share!r}")
        if self.traces_of == self.name:
            raise InputError(f"suite {self.name}: traces_of names the suite itself")
        self.config(seed=0)  # every generator setting checked once, at definition

    @property
    def exact(self) -> bool:
        """Whether its traces run in the paper's setting: exact lengths, no early endings."""
        return self.regime == "exact" and self.early_endings == 0.0

    @property
    def elastic(self) -> bool:
        """Whether some of its jobs are elastic (``elastic_share > 0``): the scheduler also
        chooses their GPU counts."""
        return float(self.generator.get("elastic_share", 0.0)) > 0

    @property
    def trace_base(self) -> str:
        """The suite whose seeds name this suite's traces (``traces_of``, else itself)."""
        return self.traces_of if self.traces_of is not None else self.name

    @property
    def gpus(self) -> int:
        """Total GPUs of the suite's cluster."""
        return self.cluster_spec.total

    @property
    def heterogeneous(self) -> bool:
        """Whether the cluster is anything but V100s only: its traces must run with
        ``cluster=`` (``ClusterEnv(cluster=suite.cluster_spec)``, ``SimConfig(cluster=...)``),
        not on ``gpus`` V100s."""
        return self.cluster_spec != ClusterSpec.homogeneous(self.gpus)

    @property
    def env_id(self) -> str:
        return f"shockwave_gym/Suite-{self.name}-v{self.version}"

    @property
    def max_num_jobs(self) -> int:
        return int(self.generator["num_jobs"])

    def config(self, seed: int, name: str | None = None) -> GeneratorConfig:
        """The generator config of this suite's trace with ``seed``."""
        return GeneratorConfig(seed=seed, name=name, **dict(self.generator))

    def seeds(self, split: str, count: int | None = None) -> list[int]:
        """The first ``count`` fixed seeds of ``split`` (default: the split's published
        count; ``train`` needs ``count``). Bundled test traces have no seed and are not
        counted here."""
        check_split(split)
        if count is None:
            if split == "train":
                raise InputError("the train split has no fixed size: give count= (or use fresh seeds)")
            count = TEST_TRACES_PER_SUITE - len(self.bundled_test) if split == "test" else VALIDATION_TRACES_PER_SUITE
        return [derive_seed(self.trace_base, self.version, split, index) for index in range(count)]

    def trace(self, split: str, seed: int, index: int | None = None) -> Trace:
        """The generated trace of ``seed`` (which must lie in ``split``'s range), named
        ``<suite>-<split>-<index>`` for a fixed seed, ``<suite>-train-s<seed>`` otherwise."""
        check_split(split)
        lo, hi = SEED_RANGES[split]
        if isinstance(seed, bool) or not isinstance(seed, int) or not lo <= seed < hi:
            raise InputError(f"suite {self.name}: {split} seeds lie in [{lo}, {hi}), got {seed!r}")
        name = f"{self.name}-{split}-{index}" if index is not None else f"{self.name}-{split}-s{seed}"
        return generate_trace(self.config(seed, name))


def check_split(split: str) -> str:
    if split not in SPLITS:
        raise InputError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    return split


def derive_seed(suite: str, version: int, split: str, index: int) -> int:
    """The ``index``-th fixed seed of ``split`` for a suite: a hash of the four, mapped into
    the split's range (:data:`SEED_RANGES`)."""
    lo, hi = SEED_RANGES[check_split(split)]
    digest = hashlib.sha256(f"shockwave-gym/suite/{suite}/v{version}/{split}/{index}".encode()).digest()
    return lo + int.from_bytes(digest[:8], "big") % (hi - lo)

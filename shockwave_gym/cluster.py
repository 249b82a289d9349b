"""What a cluster is made of: a GPU count per GPU type.

A homogeneous cluster of ``N`` V100s (``--gpus N``) is ``ClusterSpec.homogeneous(N)``; a mixed
one is written ``v100=12,p100=12,k80=12`` (``ClusterSpec.parse``). Types are kept in one
canonical order, fastest generation first (:data:`TYPE_ORDER`), whatever order the user wrote
them in, so two specs with the same counts are equal and index their types alike. A type with
zero GPUs is dropped.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from shockwave_gym.ascii_numbers import parse_int
from shockwave_gym.errors import InputError

#: The GPU types the package has built-in throughput tables for, fastest first. A
#: heterogeneous cluster's types are always listed in this order.
TYPE_ORDER: tuple[str, ...] = ("v100", "p100", "k80")
#: The type of a homogeneous ``--gpus N`` cluster.
DEFAULT_TYPE = "v100"
#: Most GPUs a cluster may have, of one type or in all (docs/ENV.md): far beyond any cluster
#: the simulator is meant for, far below where counts overflow its arrays.
MAX_GPUS = 100_000


@dataclass(frozen=True)
class ClusterSpec:
    """GPU counts per type, in :data:`TYPE_ORDER`. Build it with :meth:`homogeneous`,
    :meth:`parse` or :meth:`from_counts`; the constructor checks but does not reorder."""

    types: tuple[str, ...]
    counts: tuple[int, ...]

    def __post_init__(self):
        types, counts = tuple(self.types), tuple(self.counts)
        if not types:
            raise InputError("a cluster needs at least one GPU type")
        if len(types) != len(counts):
            raise InputError(f"cluster: {len(types)} types but {len(counts)} counts")
        unknown = [t for t in types if t not in TYPE_ORDER]
        if unknown:
            raise InputError(
                f"cluster: unknown GPU type {unknown[0]!r} (known: {', '.join(TYPE_ORDER)})"
            )
        if len(set(types)) != len(types):
            raise InputError(f"cluster: a GPU type is listed twice in {types}")
        if list(types) != sorted(types, key=TYPE_ORDER.index):
            raise InputError(
                f"cluster: types must be in the order {', '.join(TYPE_ORDER)}; "
                "use ClusterSpec.from_counts to sort them"
            )
        for name, count in zip(types, counts, strict=True):
            if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 1:
                raise InputError(f"cluster: {name} needs a positive whole GPU count, got {count!r}")
            if count > MAX_GPUS:
                raise InputError(f"cluster: {name} count {count} is over the limit of {MAX_GPUS:,} GPUs")
        if sum(int(c) for c in counts) > MAX_GPUS:
            raise InputError(f"cluster: {sum(int(c) for c in counts):,} GPUs in all, over the limit of {MAX_GPUS:,}")
        object.__setattr__(self, "types", types)
        object.__setattr__(self, "counts", tuple(int(c) for c in counts))

    # --- builders ----------------------------------------------------------------------------

    @classmethod
    def homogeneous(cls, gpus: int, gpu_type: str = DEFAULT_TYPE) -> ClusterSpec:
        return cls((gpu_type,), (gpus,))

    @classmethod
    def from_counts(cls, counts: dict[str, int]) -> ClusterSpec:
        """From ``{type: count}`` in any order; zero counts are dropped."""
        for name in counts:
            if name not in TYPE_ORDER:
                raise InputError(
                    f"cluster: unknown GPU type {name!r} (known: {', '.join(TYPE_ORDER)})"
                )
        for name, count in counts.items():
            if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 0:
                raise InputError(f"cluster: {name} needs a whole GPU count >= 0, got {count!r}")
        kept = [(t, int(counts[t])) for t in TYPE_ORDER if counts.get(t, 0) > 0]
        if not kept:
            raise InputError("cluster: every GPU count is zero")
        return cls(tuple(t for t, _ in kept), tuple(c for _, c in kept))

    @classmethod
    def parse(cls, text: str, *, where: str = "--cluster") -> ClusterSpec:
        """``"v100=12,p100=12,k80=12"`` (any order; spaces allowed). Errors name ``where``."""
        counts: dict[str, int] = {}
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"{where}: expected TYPE=COUNT[,TYPE=COUNT...], got {text!r}")
        for part in text.split(","):
            name, sep, value = part.strip().partition("=")
            name = name.strip().lower()
            if not sep or not name:
                raise InputError(f"{where}: expected TYPE=COUNT, got {part.strip()!r}")
            if name in counts:
                raise InputError(f"{where}: GPU type {name!r} given twice")
            try:
                count = parse_int(value)  # ASCII digits only: "v100=٤" is refused
            except ValueError:
                raise InputError(
                    f"{where}: {name} count must be a whole number in ASCII digits, got {value.strip()!r}"
                ) from None
            counts[name] = count
        try:
            return cls.from_counts(counts)
        except InputError as err:
            raise InputError(f"{where}: {err}") from None

    # --- queries -------------------------------------------------------------------------------

    @property
    def total(self) -> int:
        """GPUs of every type."""
        return sum(self.counts)

    @property
    def num_types(self) -> int:
        return len(self.types)

    @property
    def is_homogeneous(self) -> bool:
        return len(self.types) == 1

    def count(self, gpu_type: str) -> int:
        """GPUs of ``gpu_type`` (0 when the cluster has none)."""
        return dict(zip(self.types, self.counts, strict=True)).get(gpu_type, 0)

    def index(self, gpu_type: str) -> int:
        """Position of ``gpu_type`` in :attr:`types`."""
        if gpu_type not in self.types:
            raise InputError(f"the cluster has no {gpu_type!r} GPUs (it has {self})")
        return self.types.index(gpu_type)

    def __str__(self) -> str:
        return ",".join(f"{t}={c}" for t, c in zip(self.types, self.counts, strict=True))

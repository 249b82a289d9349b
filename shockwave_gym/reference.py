"""The Shockwave authors' published figures on their canonical trace, bundled as data.

``data/authors_canonical_results.json`` holds, for each policy the authors ran (under our
agent name), their simulator's makespan, average and geometric-mean JCT, worst FTF, unfair
fraction, utilization and the per-job JCT and FTF lists, on the bundled trace
``authors-canonical-120`` with 32 V100s; and, under ``measured_wall``, wall times measured by
running their code, each with its provenance. ``scripts/bundle_reference_data.py`` rebuilds it
(the maintainers' tool); nothing here reads anything outside the package.

Example::

    from shockwave_gym.reference import authors_canonical

    ref = authors_canonical()
    ref.policy("gavel").makespan_s         # 33207.7
    ref.measured_wall["shockwave_highs_s"].wall_s

Per-job lists are in trace-file order, which is also our job-id order on that trace. Every
field is checked on reading: a damaged file raises :class:`ReferenceDataError` naming the
file and the field.
"""

from __future__ import annotations

import functools
import json
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import MappingProxyType

from shockwave_gym.errors import InputError

FORMAT = "shockwave-gym authors-reference 1"
#: The bundled file, relative to the ``shockwave_gym`` package.
BUNDLED_FILE = "data/authors_canonical_results.json"
_SUMMARY_FIELDS = ("makespan_s", "avg_jct_s", "geomean_jct_s", "worst_ftf", "unfair_fraction", "utilization")


class ReferenceDataError(InputError):
    """A reference-results file is missing, not JSON, or a field has the wrong shape."""


@dataclass(frozen=True)
class PolicyFigures:
    """One policy's figures from the authors' simulator (times in seconds)."""

    agent: str
    authors_key: str
    legend: str
    makespan_s: float
    avg_jct_s: float
    geomean_jct_s: float
    worst_ftf: float
    #: share of jobs with ftf > 1.05, from 0 to 1 (the authors publish a percentage)
    unfair_fraction: float
    #: useful GPU-seconds / (GPUs x makespan)
    utilization: float
    #: per job, trace-file order
    jct_s: tuple[float, ...]
    #: per job, trace-file order: the static-contention finish-time fairness
    ftf: tuple[float, ...]

    def summary(self) -> dict[str, float]:
        """The scalar figures under our metric names (as in ``compute_metrics``)."""
        return {name: getattr(self, name) for name in _SUMMARY_FIELDS}


@dataclass(frozen=True)
class MeasuredWall:
    """A wall time measured by running the authors' code, and how it was measured."""

    wall_s: float
    provenance: str


@dataclass(frozen=True)
class AuthorsReference:
    """The whole reference file."""

    trace: str
    gpus: int
    gpu_type: str
    round_s: float
    source: str
    #: by our agent name (``gavel``, ``themis``, ``allox``, ``ossp``, ``mst``,
    #: ``gandiva_fair``, ``shockwave``)
    policies: Mapping[str, PolicyFigures]
    measured_wall: Mapping[str, MeasuredWall]
    file: str

    def policy(self, agent: str) -> PolicyFigures:
        """The figures of ``agent`` (our name); :class:`ReferenceDataError` when absent."""
        try:
            return self.policies[agent]
        except KeyError:
            raise ReferenceDataError(
                f"{self.file}: no figures for agent {agent!r} (have: {', '.join(self.policies)})"
            ) from None

    @property
    def num_jobs(self) -> int:
        return len(next(iter(self.policies.values())).jct_s)


class _Reader:
    """Typed access to one JSON object, with errors naming the file and the field path."""

    def __init__(self, file: str, data, where: str = ""):
        self.file, self.data, self.where = file, data, where
        if not isinstance(data, dict):
            self.fail(f"must be an object, got {type(data).__name__}")

    def fail(self, message: str, key: str | None = None):
        field = ".".join(part for part in (self.where, key) if part) or "top level"
        raise ReferenceDataError(f"{self.file}: {field}: {message}")

    def get(self, key: str):
        if key not in self.data:
            self.fail("missing", key)
        return self.data[key]

    def text(self, key: str) -> str:
        value = self.get(key)
        if not isinstance(value, str) or not value:
            self.fail(f"must be a non-empty string, got {value!r}", key)
        return value

    def number(self, key: str, *, low: float = 0.0, high: float = math.inf) -> float:
        value = self.get(key)
        if not _is_number(value) or not low <= value <= high:
            self.fail(f"must be a finite number in [{low:g}, {high:g}], got {value!r}", key)
        return float(value)

    def numbers(self, key: str) -> tuple[float, ...]:
        value = self.get(key)
        if not isinstance(value, list) or not value:
            self.fail("must be a non-empty list of numbers", key)
        for index, item in enumerate(value):
            if not _is_number(item) or item < 0:
                self.fail(f"item {index} must be a finite number >= 0, got {item!r}", key)
        return tuple(float(item) for item in value)

    def child(self, key: str) -> _Reader:
        return _Reader(self.file, self.get(key), ".".join(p for p in (self.where, key) if p))


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _policy(reader: _Reader, agent: str) -> PolicyFigures:
    figures = PolicyFigures(
        agent=agent,
        authors_key=reader.text("authors_key"),
        legend=reader.text("legend"),
        makespan_s=reader.number("makespan_s"),
        avg_jct_s=reader.number("avg_jct_s"),
        geomean_jct_s=reader.number("geomean_jct_s"),
        worst_ftf=reader.number("worst_ftf"),
        unfair_fraction=reader.number("unfair_fraction", high=1.0),
        utilization=reader.number("utilization", high=1.0),
        jct_s=reader.numbers("jct_s"),
        ftf=reader.numbers("ftf"),
    )
    if len(figures.ftf) != len(figures.jct_s):
        reader.fail(f"has {len(figures.ftf)} items but jct_s has {len(figures.jct_s)}", "ftf")
    # the summaries are rounded from the lists: a disagreement means a damaged file
    if abs(sum(figures.jct_s) / len(figures.jct_s) - figures.avg_jct_s) > 0.1:
        reader.fail("does not match the mean of jct_s", "avg_jct_s")
    if abs(max(figures.ftf) - figures.worst_ftf) > 1e-3:
        reader.fail("does not match the largest ftf", "worst_ftf")
    return figures


def parse_reference(text: str, file: str) -> AuthorsReference:
    """Check and read the text of a reference file; ``file`` names it in errors."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReferenceDataError(f"{file}: line {exc.lineno}: not valid JSON: {exc.msg}") from None
    top = _Reader(file, data)
    if top.get("format") != FORMAT:
        top.fail(f"must be {FORMAT!r}, got {top.get('format')!r}", "format")
    policies_reader = top.child("policies")
    policies = {agent: _policy(policies_reader.child(agent), agent) for agent in policies_reader.data}
    if not policies:
        policies_reader.fail("must hold at least one policy")
    lengths = {len(p.jct_s) for p in policies.values()}
    if len(lengths) != 1:
        policies_reader.fail(f"per-job lists differ in length between policies: {sorted(lengths)}")
    walls = top.child("measured_wall")
    measured = {}
    for key in walls.data:
        entry = walls.child(key)
        measured[key] = MeasuredWall(entry.number("wall_s"), entry.text("provenance"))
    gpus = top.number("gpus", low=1)
    if gpus != int(gpus):
        top.fail(f"must be an integer, got {gpus!r}", "gpus")
    return AuthorsReference(
        trace=top.text("trace"),
        gpus=int(gpus),
        gpu_type=top.text("gpu_type"),
        round_s=top.number("round_s"),
        source=top.text("source"),
        policies=MappingProxyType(policies),
        measured_wall=MappingProxyType(measured),
        file=file,
    )


def load_reference(path: str | Path) -> AuthorsReference:
    """Read a reference file from disk (the bundled one: :func:`authors_canonical`)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ReferenceDataError(f"{path}: cannot read: {exc}") from None
    return parse_reference(text, str(path))


@functools.cache
def authors_canonical() -> AuthorsReference:
    """The bundled figures of the authors' simulator on ``authors-canonical-120``."""
    resource = resources.files("shockwave_gym").joinpath(BUNDLED_FILE)
    try:
        text = resource.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ReferenceDataError(f"{resource}: cannot read the bundled reference figures: {exc}") from None
    return parse_reference(text, str(resource))

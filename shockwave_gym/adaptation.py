"""Dynamic adaptation modes: the batch size a job uses in each epoch.

Three built-in modes follow docs/SEMANTICS.md, "Adaptation modes" (``static``, ``accordion``, ``gns``). A user can add a
mode without touching the simulator::

    from shockwave_gym.adaptation import register_mode

    def warmup_then_double(spec, epoch):
        return spec.initial_batch_size * (2 if epoch >= 5 else 1)

    register_mode("warmup", warmup_then_double,
                  reachable=lambda spec: (spec.initial_batch_size, 2 * spec.initial_batch_size))

A mode gives two things: the batch size of every epoch (the hidden schedule the simulator
runs) and the set of batch sizes the mode can *reach* (public knowledge a scheduler may use,
e.g. as the support of the remaining-runtime predictor's Dirichlet prior).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from shockwave_gym.jobs import MAX_BATCH_SIZE, JobSpec

BatchSizeFn = Callable[[JobSpec, int], int]
ReachableFn = Callable[[JobSpec], tuple[int, ...]]

#: Share of a job's first epochs that the authors' profile forces into Accordion's
#: critical regime (docs/SEMANTICS.md: "the 30% rule").
ACCORDION_CRITICAL_SHARE = 0.3


@dataclass(frozen=True)
class AdaptationMode:
    """A named rule for per-epoch batch sizes.

    ``schedule_fn`` (vectorised, returns one size per epoch) takes precedence over the
    per-epoch ``batch_size_fn`` when both are given.
    """

    name: str
    batch_size_fn: BatchSizeFn | None = None
    schedule_fn: Callable[[JobSpec], np.ndarray] | None = None
    reachable_fn: ReachableFn | None = None

    def schedule(self, spec: JobSpec) -> np.ndarray:
        if self.schedule_fn is not None:
            return np.asarray(self.schedule_fn(spec), dtype=np.int64)
        if self.batch_size_fn is None:
            raise ValueError(f"adaptation mode {self.name!r} defines no batch-size rule")
        return np.fromiter(
            (int(self.batch_size_fn(spec, e)) for e in range(spec.num_epochs)),
            dtype=np.int64,
            count=spec.num_epochs,
        )

    def reachable(self, spec: JobSpec) -> tuple[int, ...]:
        """Batch sizes this mode can ever give ``spec``, ascending."""
        if self.reachable_fn is not None:
            return tuple(sorted({int(b) for b in self.reachable_fn(spec)}))
        return tuple(int(b) for b in np.unique(self.schedule(spec)))


_MODES: dict[str, AdaptationMode] = {}


def register_mode(
    name: str,
    batch_size: BatchSizeFn | None = None,
    *,
    schedule: Callable[[JobSpec], np.ndarray] | None = None,
    reachable: ReachableFn | None = None,
    overwrite: bool = False,
) -> AdaptationMode:
    """Register an adaptation mode under ``name`` (the trace's mode column)."""
    if not name or any(ch.isspace() for ch in name):
        raise ValueError(f"mode name must be a non-empty word, got {name!r}")
    if name in _MODES and not overwrite:
        raise ValueError(f"adaptation mode {name!r} is already registered")
    if batch_size is None and schedule is None:
        raise ValueError("register_mode needs a batch_size(spec, epoch) or schedule(spec) rule")
    mode = AdaptationMode(name, batch_size, schedule, reachable)
    _MODES[name] = mode
    return mode


def get_mode(name: str) -> AdaptationMode:
    try:
        return _MODES[name]
    except KeyError:
        raise KeyError(
            f"unknown adaptation mode {name!r}; registered: {', '.join(sorted(_MODES))}"
        ) from None


def registered_modes() -> tuple[str, ...]:
    return tuple(sorted(_MODES))


# --- static ------------------------------------------------------------------------------


def _static_schedule(spec: JobSpec) -> np.ndarray:
    return np.full(spec.num_epochs, spec.initial_batch_size, dtype=np.int64)


# --- accordion ---------------------------------------------------------------------------


def accordion_critical(spec: JobSpec) -> np.ndarray:
    """Boolean per epoch: True where Accordion keeps the initial (small) batch size."""
    epochs = np.arange(spec.num_epochs)
    model, b0 = spec.model, spec.initial_batch_size
    if model == "ResNet-18":
        first = 20 if b0 == 256 else 10
        critical = (epochs < first) | ((epochs >= 150) & (epochs < 160)) | (
            (epochs >= 250) & (epochs < 260)
        )
    elif model == "ResNet-50":
        critical = (epochs % 30) < 10
    elif model == "LM":
        critical = epochs < 10
    elif model == "Recommendation":
        first = {512: 30, 1024: 30, 2048: 40}.get(b0, 10)
        critical = (epochs < first) | ((epochs >= 60) & (epochs < 70)) | (
            (epochs >= 80) & (epochs < 90)
        )
    else:  # Transformer never changes
        return np.ones(spec.num_epochs, dtype=bool)
    return critical | (epochs < ACCORDION_CRITICAL_SHARE * spec.num_epochs)


def _accordion_schedule(spec: JobSpec) -> np.ndarray:
    high = max(MAX_BATCH_SIZE[spec.model], spec.initial_batch_size)
    return np.where(accordion_critical(spec), spec.initial_batch_size, high).astype(np.int64)


def _accordion_reachable(spec: JobSpec) -> tuple[int, ...]:
    if spec.model == "Transformer":
        return (spec.initial_batch_size,)
    return tuple(sorted({spec.initial_batch_size, max(MAX_BATCH_SIZE[spec.model],
                                                      spec.initial_batch_size)}))


# --- gns ---------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def gns_change_points() -> dict[tuple[str, int, int], tuple[tuple[int, int], ...]]:
    """GNS change points by (model, initial batch size, gang): ((epoch, new size), ...)."""
    text = resources.files("shockwave_gym").joinpath("data/gns_schedules.json").read_text()
    table = json.loads(text)["schedules"]
    out = {}
    for key, points in table.items():
        model, b0, gang = key.split("|")
        out[(model, int(b0), int(gang))] = tuple((int(e), int(b)) for e, b in points)
    return out


def _gns_schedule(spec: JobSpec) -> np.ndarray:
    sizes = np.full(spec.num_epochs, spec.initial_batch_size, dtype=np.int64)
    for epoch, size in gns_change_points().get((spec.model, spec.initial_batch_size, spec.gang), ()):
        sizes[epoch:] = size
    return sizes


def _gns_reachable(spec: JobSpec) -> tuple[int, ...]:
    points = gns_change_points().get((spec.model, spec.initial_batch_size, spec.gang), ())
    return tuple(sorted({spec.initial_batch_size, *(b for _, b in points)}))


register_mode("static", schedule=_static_schedule, reachable=lambda s: (s.initial_batch_size,))
register_mode("accordion", schedule=_accordion_schedule, reachable=_accordion_reachable)
register_mode("gns", schedule=_gns_schedule, reachable=_gns_reachable)

"""From a logged job to trace jobs: the mapping rules (docs/TRACES.md, "Real cluster traces").

* **Gang.** A GPU count of 1, 2, 4 or 8 is the gang. 3, 5, 6 and 7 round *up* to the next
  gang (flag ``rounded-up``). Above 8, under ``split`` (the default) the job becomes
  ``gpus // 8`` jobs of 8 GPUs plus one job for the remainder (rounded up as above), each
  with the whole run time (flag ``split``): the same GPU-seconds and the same length. Under
  ``stretch`` it becomes one job of 8 GPUs whose run time is multiplied by ``gpus / 8``
  (flag ``stretched``): the same GPU-seconds, longer. Nothing is rounded down.
* **Model.** A (model, initial batch size) template the throughput table runs at the gang
  (the generator's templates; Recommendation only on one GPU), chosen by a seeded hash:
  ``sha256(f"{seed}:{job id}")``. Every part of a split job gets its job's template.
* **Length.** Static mode; whole epochs (an epoch lasts ``(dataset / b) / rate(model, b,
  gang)`` s in isolation): ``epochs = max(1, round(nominal / epoch))``, so the isolated
  time is the nominal length to within half an epoch; a job shorter than half an epoch is
  lengthened to one (flag ``one-epoch``).
* **Status.** A completed job's nominal length is its logged run time. A job that ended
  early (killed, failed, cancelled, timeout, node_fail) keeps its logged run time as
  ``logged_run_s`` (the hidden truth) and gets the nominal length ``logged / u``, with
  ``u`` in [0.1, 0.9) from the same hash: the log says when it stopped, not how long it
  would have run, so it is taken to have stopped at a uniformly drawn 10-90% of its length.
  Its epochs are at least enough for the isolated time to exceed ``logged_run_s``.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from shockwave_gym.jobs import DATASET_SIZES, GANG_SIZES
from shockwave_gym.profile import MAX_EPOCHS
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces.generator import templates
from shockwave_gym.traces.importers.records import FieldError, LoggedJob

LARGE_RULES = ("split", "stretch")
MAX_GANG = GANG_SIZES[-1]
#: Range of the fraction of its nominal length at which an early-ended job stopped.
EARLY_FRACTION = (0.1, 0.9)


@dataclass(frozen=True, slots=True)
class Template:
    model: str
    batch_size: int
    gang: int
    iterations_per_epoch: int
    epoch_s: float


@dataclass(frozen=True, slots=True)
class MappedJob:
    """One trace job from a logged job: ``template`` indexes :attr:`JobMapper.templates`."""

    source_id: str
    template: int
    epochs: int
    isolated_s: float
    logged_run_s: float  # -1 when the job completed
    logged_work: float  # this part's share of the logged GPU-seconds


def round_up_gang(gpus: int) -> int:
    """The smallest gang size >= ``gpus`` (``gpus`` from 1 to 8)."""
    return next(size for size in GANG_SIZES if size >= gpus)


def gang_parts(gpus: int, large: str = "split") -> tuple[list[int], float, tuple[str, ...]]:
    """The gangs a job of ``gpus`` GPUs becomes, the factor on its run time, and its flags."""
    if gpus < 1:
        raise ValueError(f"a job needs at least one GPU, got {gpus}")
    if gpus in GANG_SIZES:
        return [gpus], 1.0, ()
    if gpus < MAX_GANG:
        return [round_up_gang(gpus)], 1.0, ("rounded-up",)
    if large == "stretch":
        return [MAX_GANG], gpus / MAX_GANG, ("stretched",)
    if large != "split":
        raise ValueError(f"unknown rule for jobs above {MAX_GANG} GPUs: {large!r}")
    parts = [MAX_GANG] * (gpus // MAX_GANG)
    flags: tuple[str, ...] = ("split",)
    if gpus % MAX_GANG:
        parts.append(round_up_gang(gpus % MAX_GANG))
        if gpus % MAX_GANG not in GANG_SIZES:
            flags += ("rounded-up",)
    return parts, 1.0, flags


def job_hash(seed: int, source_id: str) -> tuple[int, float]:
    """A template draw (a 64-bit integer) and a fraction in [0, 1) for ``source_id``."""
    digest = hashlib.sha256(f"{seed}:{source_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big"), int.from_bytes(digest[8:16], "big") / 2.0**64


class JobMapper:
    """Maps :class:`LoggedJob` objects to :class:`MappedJob` parts (rules in the module doc)."""

    def __init__(self, table: ThroughputTable, seed: int, large: str = "split"):
        if large not in LARGE_RULES:
            raise ValueError(f"unknown rule for jobs above {MAX_GANG} GPUs: {large!r}")
        self.seed, self.large = seed, large
        self.templates: list[Template] = []
        self.by_gang: dict[int, list[int]] = {}
        for gang in GANG_SIZES:
            indices = []
            for model, batch_size in templates(table):
                if (model == "Recommendation" and gang > 1) or not table.has(model, batch_size, gang):
                    continue
                rate = table.rate(model, batch_size, gang)
                if rate <= 0:
                    continue
                dataset = DATASET_SIZES[model]
                indices.append(len(self.templates))
                self.templates.append(Template(
                    model, batch_size, gang, math.ceil(dataset / batch_size), (dataset / batch_size) / rate,
                ))
            self.by_gang[gang] = indices

    def map(self, job: LoggedJob) -> tuple[list[MappedJob], tuple[str, ...]]:
        """The trace jobs of ``job`` and the flags its mapping raised; raises
        :class:`FieldError` when no template fits or the job needs too many epochs."""
        gangs, factor, flags = gang_parts(job.gang_gpus, self.large)
        draw, fraction = job_hash(self.seed, job.source_id)
        early = job.status != "completed"
        logged_run = job.run_s * factor
        nominal = logged_run / (EARLY_FRACTION[0] + (EARLY_FRACTION[1] - EARLY_FRACTION[0]) * fraction) if early else logged_run
        parts = []
        for k, gang in enumerate(gangs):
            choices = self.by_gang[gang]
            if not choices:
                raise FieldError("gpus", f"the throughput table runs no template at a gang of {gang}")
            index = choices[draw % len(choices)]
            epoch_s = self.templates[index].epoch_s
            epochs = max(1, round(nominal / epoch_s))
            if early:
                epochs = max(epochs, math.floor(logged_run / epoch_s) + 1)
            if nominal < epoch_s / 2 and "one-epoch" not in flags:
                flags += ("one-epoch",)
            if epochs > MAX_EPOCHS:
                raise FieldError("duration", f"a run of {nominal:.0f} s needs {epochs} epochs; at most {MAX_EPOCHS}")
            source_id = job.source_id if len(gangs) == 1 else f"{job.source_id}#{k + 1}"
            parts.append(MappedJob(
                source_id, index, epochs, epochs * epoch_s, max(0.001, round(logged_run, 3)) if early else -1.0,
                job.gpus * job.run_s / len(gangs),
            ))
        return parts, flags

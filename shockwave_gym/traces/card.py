"""Trace cards: what a trace holds, in a few figures (``shockwave-gym describe-trace``).

A card gives the job count, the arrival span and rate, the gang and model mixes, quantiles
of the isolated run time (each job alone on its gang, from
:func:`~shockwave_gym.profile.job_profile`), the statuses of imported jobs and the share
that ended early, and the offered load (docs/TRACES.md, "Offered load"): the work
``sum_j gang_j * iso_j`` over the arrival span, as busy GPUs and, given a cluster size,
as a load.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from shockwave_gym.profile import job_profile
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces.load import offered_load_of_work
from shockwave_gym.traces.types import Trace

QUANTILES = (0.1, 0.5, 0.9, 0.99)


def trace_card(trace: Trace, gpus: int | None = None, throughputs: ThroughputTable | None = None) -> dict[str, Any]:
    """The card of ``trace`` as a JSON-ready dict (figures rounded for display)."""
    table = ThroughputTable.builtin_v100() if throughputs is None else throughputs
    jobs = trace.jobs
    iso = np.array([job_profile(job, table).isolated_time_s for job in jobs])
    work = float(sum(job.gang * t for job, t in zip(jobs, iso, strict=True)))
    span = jobs[-1].arrival_s - jobs[0].arrival_s
    statuses = Counter(job.origin.status for job in jobs if job.origin is not None and job.origin.status)
    early = sum(n for status, n in statuses.items() if status != "completed")
    card: dict[str, Any] = {
        "name": trace.name,
        "jobs": len(jobs),
        "arrival_span_s": round(span, 3),
        "arrivals_per_hour": round((len(jobs) - 1) * 3600 / span, 3) if span > 0 else None,
        "gang_mix": {str(g): n for g, n in sorted(Counter(job.gang for job in jobs).items())},
        "model_mix": dict(sorted(Counter(job.model for job in jobs).items())),
        "isolated_s": {
            **{f"p{round(q * 100)}": round(float(np.quantile(iso, q)), 1) for q in QUANTILES},
            "max": round(float(iso.max()), 1),
        },
        "work_gpu_s": round(work, 1),
        "statuses": dict(sorted(statuses.items())),
        "early_end_share": round(early / len(jobs), 4) if statuses else None,
        "busy_gpus": round(work / span, 3) if span > 0 else None,
    }
    if gpus is not None:
        card["gpus"] = gpus
        card["offered_load"] = round(offered_load_of_work(work, span, gpus), 4) if span > 0 else None
    return card


def format_card(card: dict[str, Any]) -> str:
    """The card as a few lines of text."""

    def mix(values: dict) -> str:
        return ", ".join(f"{key}: {n}" for key, n in values.items())

    rate = "-" if card["arrivals_per_hour"] is None else f"{card['arrivals_per_hour']:g}/h"
    iso = card["isolated_s"]
    lines = [
        f"trace {card['name']}: {card['jobs']} jobs over {card['arrival_span_s']:g} s ({rate})",
        f"gangs: {mix(card['gang_mix'])}",
        f"models: {mix(card['model_mix'])}",
        "isolated time (s): " + ", ".join(f"{key} {value:g}" for key, value in iso.items()),
    ]
    if card["statuses"]:
        lines.append(f"statuses: {mix(card['statuses'])}; ended early: {card['early_end_share']:.1%}")
    else:
        lines.append("statuses: none recorded (every job runs to its length)")
    busy = "-" if card["busy_gpus"] is None else f"{card['busy_gpus']:g} busy GPUs"
    load = ""
    if "gpus" in card:
        value = "-" if card["offered_load"] is None else f"{card['offered_load']:g}"
        load = f"; offered load on {card['gpus']} GPUs: {value}"
    lines.append(f"work: {card['work_gpu_s']:,.0f} GPU-s = {busy}{load}")
    return "\n".join(lines)

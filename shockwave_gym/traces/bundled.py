"""Traces shipped with the package, and how a trace name resolves to a file.

The bundled traces live in the repository's ``traces/`` directory, installed as the data
package ``shockwave_gym.bundled_traces``. All but one were made by our generator with the
command in :data:`BUNDLED_RECIPES` (also listed in ``traces/README.md``); a test regenerates
them byte for byte. Scale traces keep the canonical load per GPU: the arrival rate grows with
the cluster (90 jobs/h for 32 GPUs, 180 for 64, 360 for 128, 720 for 256).

The exception is :data:`AUTHORS_TRACES`: ``authors-canonical-120`` is the Shockwave authors'
own canonical trace (their data, MIT licence, see NOTICE), kept in their TSV format with its
bytes unchanged. It has no generator recipe; ``scripts/bundle_reference_data.py`` (the
maintainers' tool) copies it from the authors' files.
"""

from __future__ import annotations

import difflib
import shlex
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from shockwave_gym.errors import InputError, TraceError
from shockwave_gym.traces.named import suite_of_trace_name

#: Cluster size (GPUs) each bundled trace is meant for.
BUNDLED_GPUS: dict[str, int] = {
    "authors-canonical-120": 32,
    "canonical-analogue-120": 32,
    "teaching-12": 4,
    "scale-220": 64,
    "scale-460": 128,
    "scale-900": 256,
    "hetero-120": 36,
    "elastic-120": 32,
}

#: Bundled traces meant for a heterogeneous cluster: name -> cluster spec (``--cluster`` text).
#: Such a trace travels with its cluster here: ``run``/``compare`` use it when neither
#: ``--gpus`` nor ``--cluster`` is given (its :data:`BUNDLED_GPUS` entry is the spec's total,
#: so code that only knows sizes still gets the right GPU count).
BUNDLED_CLUSTERS: dict[str, str] = {
    "hetero-120": "v100=12,p100=12,k80=12",
}

#: Bundled traces that hold elastic jobs (docs/SEMANTICS.md, "Elastic jobs"): the native
#: vector env refuses them without loading them, and the fallback runs them.
ELASTIC_BUNDLED: frozenset[str] = frozenset({"elastic-120"})

#: Bundled traces that are the authors' data, not ours: name -> where it comes from.
AUTHORS_TRACES: dict[str, str] = {
    "authors-canonical-120": (
        "the Shockwave authors' canonical_120jobs.trace from github.com/uw-mad-dash/shockwave "
        "(MIT licence), bytes unchanged"
    ),
}

#: ``shockwave-gym generate-trace`` arguments that regenerate each bundled trace we generated
#: (followed by ``--out traces/<name>.jsonl``); the traces in :data:`AUTHORS_TRACES` have none.
BUNDLED_RECIPES: dict[str, tuple[str, ...]] = {
    "canonical-analogue-120": (
        "--jobs", "120", "--seed", "120", "--arrival-rate-per-hour", "90",
        "--name", "canonical-analogue-120",
    ),
    "teaching-12": (
        "--jobs", "12", "--seed", "12", "--arrival-rate-per-hour", "90",
        "--gang-mix", "1:0.6,2:0.3,4:0.1", "--min-duration-h", "0.1",
        "--max-duration-h", "1", "--name", "teaching-12",
    ),
    "scale-220": (
        "--jobs", "220", "--seed", "220", "--arrival-rate-per-hour", "180",
        "--name", "scale-220",
    ),
    "scale-460": (
        "--jobs", "460", "--seed", "460", "--arrival-rate-per-hour", "360",
        "--name", "scale-460",
    ),
    "scale-900": (
        "--jobs", "900", "--seed", "900", "--arrival-rate-per-hour", "720",
        "--name", "scale-900",
    ),
    "hetero-120": (
        "--jobs", "120", "--seed", "1200", "--cluster", "v100=12,p100=12,k80=12",
        "--arrival-rate-per-gpu-hour", "2.8125", "--name", "hetero-120",
    ),
    "elastic-120": (
        "--jobs", "120", "--seed", "120", "--arrival-rate-per-hour", "90", "--elastic-share", "0.5",
        "--name", "elastic-120",
    ),
}

_SUFFIXES = (".jsonl", ".trace", ".tsv")


def bundled_command(name: str) -> str:
    """How bundled trace ``name`` is remade, from the repository root.

    For a trace we generated, the ``shockwave-gym generate-trace`` command that rewrites it
    byte for byte. For the authors' data, a line saying so and naming the maintainers' tool
    that copies it (it is not ours to regenerate).
    """
    if name in AUTHORS_TRACES:
        return (
            f"not generated, the authors' data: {AUTHORS_TRACES[name]}; maintainers re-copy it "
            "with python scripts/bundle_reference_data.py"
        )
    args = (*BUNDLED_RECIPES[name], "--out", f"traces/{name}.jsonl")
    return "shockwave-gym generate-trace " + shlex.join(args)


def _bundle_dir() -> Traversable | None:
    try:
        return resources.files("shockwave_gym.bundled_traces")
    except ModuleNotFoundError:
        # A source checkout that was never installed: use the repository's traces/.
        checkout = Path(__file__).resolve().parents[2] / "traces"
        return checkout if (checkout / "__init__.py").is_file() else None


def bundled_traces() -> dict[str, Traversable]:
    """Bundled trace name (file stem) -> readable resource, sorted by name."""
    directory = _bundle_dir()
    if directory is None:
        return {}
    found = {}
    for entry in directory.iterdir():
        suffix = next((s for s in _SUFFIXES if entry.name.endswith(s)), None)
        if suffix is not None and entry.is_file():
            found[entry.name[: -len(suffix)]] = entry
    return dict(sorted(found.items()))


def resolve_trace_path(name_or_path: str | Path | Traversable) -> Path | Traversable:
    """An existing trace file, else the bundled trace of that name.

    Raises :class:`~shockwave_gym.errors.TraceError` naming the argument when it is
    neither.
    """
    if isinstance(name_or_path, Traversable) and not isinstance(name_or_path, (str, Path)):
        return name_or_path
    path = Path(name_or_path)
    if path.is_file():
        return path
    bundled = bundled_traces()
    if str(name_or_path) in bundled:
        return bundled[str(name_or_path)]
    raise TraceError(str(name_or_path), _not_found(str(name_or_path), path, bundled))


def _not_found(name: str, path: Path, bundled: dict) -> str:
    """Why ``name`` is neither a file nor a bundled trace, with the closest bundled names."""
    what = "a directory" if path.is_dir() else "no such file"
    close = difflib.get_close_matches(name, list(bundled), n=2, cutoff=0.6)
    hint = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
    return (f"{what}, and not a bundled trace ({hint}bundled: {', '.join(bundled) or 'none'}) "
            "or a suite trace such as small-nominal-test-0 (docs/SUITES.md)")


def resolve_gpus(trace_arg, gpus: int | None) -> int:
    """The cluster size for ``trace_arg``: ``gpus`` when given, else the bundled trace's.

    ``trace_arg`` is a bundled name or a path (anything else with a ``name`` is looked up by
    that name). A trace that is neither a file nor a bundled name is reported as such
    (:class:`~shockwave_gym.errors.TraceError`, with the closest bundled names) before any
    complaint about ``gpus``; a file without ``gpus`` is an
    :class:`~shockwave_gym.errors.InputError`.
    """
    if gpus is not None:
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
            raise InputError(f"--gpus must be a positive integer, got {gpus!r}")
        return gpus
    name = trace_arg if isinstance(trace_arg, str | Path) else getattr(trace_arg, "name", None)
    if isinstance(name, str) and name in BUNDLED_GPUS:
        return BUNDLED_GPUS[name]
    suite = _suite_of(trace_arg)
    if suite is not None:
        return suite.gpus
    if isinstance(trace_arg, str | Path):
        resolve_trace_path(trace_arg)  # a typo is "no such file", not "gpus is required"
    raise InputError(
        f"--gpus is required for {str(name)!r} (only bundled traces have a default: "
        f"{', '.join(BUNDLED_GPUS)})"
    )


def resolve_cluster(trace_arg, gpus: int | None, cluster: str | None):
    """``(gpus, ClusterSpec or None)`` for ``trace_arg``, from ``--gpus`` and ``--cluster``.

    ``--cluster`` given: that spec (heterogeneous path); with ``--gpus`` too, the two must
    agree on the GPU count. Only ``--gpus``: the homogeneous V100 cluster (``None``). Neither:
    a bundled heterogeneous trace's own cluster (:data:`BUNDLED_CLUSTERS`), else
    :func:`resolve_gpus`'s rule.
    """
    from shockwave_gym.cluster import ClusterSpec

    if cluster is not None:
        spec = cluster if isinstance(cluster, ClusterSpec) else ClusterSpec.parse(cluster)
        if gpus is not None:
            resolve_gpus(trace_arg, gpus)  # same checks of --gpus itself
            if gpus != spec.total:
                raise InputError(
                    f"--gpus {gpus} and --cluster {spec} ({spec.total} GPUs) disagree; give one of them"
                )
        return spec.total, spec
    if gpus is None:
        name = trace_arg if isinstance(trace_arg, str | Path) else getattr(trace_arg, "name", None)
        if isinstance(name, str) and name in BUNDLED_CLUSTERS:
            spec = ClusterSpec.parse(BUNDLED_CLUSTERS[name], where=f"bundled cluster of {name}")
            return spec.total, spec
        suite = _suite_of(trace_arg)
        if suite is not None and suite.heterogeneous:
            return suite.gpus, suite.cluster_spec
    return resolve_gpus(trace_arg, gpus), None


def _suite_of(trace_arg):
    """The suite of a suite trace name (``small-nominal-test-0``) that is not a file, else None."""
    if not isinstance(trace_arg, str) or Path(trace_arg).is_file():
        return None
    return suite_of_trace_name(trace_arg)

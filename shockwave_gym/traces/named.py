"""Trace names that are neither files nor bundled traces: the suites' trace names.

The loader (:func:`~.loader.load_trace`) and the cluster rules (:mod:`.bundled`) sit below
the suites (which generate their traces through the loader's sources), so they reach the
suites' names through this hook instead of importing them: :mod:`.suite_names` registers its
two look-ups here when the ``shockwave_gym.traces`` package is imported, which happens before
any of its modules is used.
"""

from __future__ import annotations

from collections.abc import Callable

_TRACE_BY_NAME: Callable | None = None
_SUITE_OF_NAME: Callable | None = None


def register_suite_names(trace_by_name: Callable, suite_of_name: Callable) -> None:
    """Install the look-ups: ``trace_by_name(name) -> Trace | None`` and
    ``suite_of_name(name) -> Suite | None``."""
    global _TRACE_BY_NAME, _SUITE_OF_NAME
    _TRACE_BY_NAME, _SUITE_OF_NAME = trace_by_name, suite_of_name


def suite_trace_by_name(name: str):
    """The generated trace a suite calls ``name``, or ``None``."""
    return None if _TRACE_BY_NAME is None else _TRACE_BY_NAME(name)


def suite_of_trace_name(name: str):
    """The suite whose trace is called ``name``, or ``None``."""
    return None if _SUITE_OF_NAME is None else _SUITE_OF_NAME(name)

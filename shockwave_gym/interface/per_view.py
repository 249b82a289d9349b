"""Facts built once per view: a decorator that keeps a builder's result as long as the view."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import TypeVar

from shockwave_gym.view import ClusterView

T = TypeVar("T")


def once_per_view(build: Callable[[ClusterView], T]) -> Callable[[ClusterView], T]:
    """``build(view)`` on the first call for ``view``, its result on every later call (kept
    in a weak mapping, so it goes with the view)."""
    cache: weakref.WeakKeyDictionary[ClusterView, T] = weakref.WeakKeyDictionary()

    @functools.wraps(build)
    def get(view: ClusterView) -> T:
        value = cache.get(view)
        if value is None:
            value = cache[view] = build(view)
        return value

    return get

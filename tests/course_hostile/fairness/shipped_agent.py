"""Shortcut: a shipped fair scheduler, made through the registry by a name built at run time."""
import importlib

_make = getattr(importlib.import_module("shockwave_agents"), "make_" + "agent")


class MyAgent:
    def __new__(cls):
        return _make("the" + "mis")

"""Agent specs as a user types them: ``NAME`` or ``LABEL=KIND[:opt=value,...]``.

``LABEL`` is the name results are reported under, ``KIND`` a registered agent, a policy kind
(``maskable_ppo``, ``bc``, ``imitation``, ``cem``, ``policy``: a trained policy, ``path`` required) or a
``package.module:factory`` path, and the options are comma-separated ``key=value`` pairs
(values are JSON, or else bare words taken as strings)::

    ppo                                   -> label ppo, agent ppo
    mine=ppo:path=runs/x                  -> label mine, agent ppo, {"path": "runs/x"}
    mppo=maskable_ppo:path=runs/y,max_jobs=64
    maskable_ppo:path=runs/y              -> label maskable_ppo
    noisy=shockwave:noise=0.2
    mine=mypkg.agents:make:beta=0.5       -> label mine, factory mypkg.agents:make, {"beta": 0.5}

A value cannot contain a comma; pass such a value with ``--agent-opt LABEL:key=value``.
"""

from __future__ import annotations

import json
import re

from shockwave_gym.errors import InputError

#: What a label may contain (it names rows, CSV cells and Gantt choices).
LABEL_PATTERN = re.compile(r"[A-Za-z0-9_.+-]+")


def is_labelled(text: str) -> bool:
    """``text`` has the ``LABEL=KIND...`` form (or ``KIND:opt=value``)."""
    return "=" in text


def parse_options(text: str, spec: str) -> dict:
    """``"a=1,b=x"`` -> ``{"a": 1, "b": "x"}``."""
    options: dict = {}
    if not text:
        return options
    for pair in text.split(","):
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InputError(f"agent spec {spec!r}: options must be KEY=VALUE pairs separated by commas, got {pair!r}")
        if key in options:
            raise InputError(f"agent spec {spec!r}: option {key!r} given twice")
        options[key] = option_value(raw)
    return options


def option_value(raw: str):
    """An option's value: JSON (``1``, ``0.5``, ``true``, ``"x"``, ``[1, 2]``), else the bare
    word as a string."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def _split_kind(rest: str) -> tuple[str, str]:
    """``KIND[:options]`` -> (kind, options text); a ``module:factory`` kind keeps its colon."""
    head, sep, tail = rest.partition(":")
    if not sep:
        return head, ""
    from shockwave_agents import registry

    if registry.is_known(head) or registry.registered_factory(head) is not None:
        return head, tail  # a registered name: everything after its colon is options
    before_equals = tail.partition("=")[0]
    if "=" not in tail:
        return rest, ""  # module:factory
    if ":" in before_equals:  # module:factory:options
        factory, _, options = tail.partition(":")
        return f"{head}:{factory}", options
    return head, tail


def parse_agent_spec(text: str) -> tuple[str, str, dict]:
    """(label, kind, options) of one spec (see the module docstring)."""
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"agent spec: expected NAME or LABEL=KIND[:opt=value,...], got {text!r}")
    text = text.strip()
    label = None
    left, sep, right = text.partition("=")
    if sep and ":" not in left:
        label, rest = left.strip(), right.strip()
        if not label:
            raise InputError(f"agent spec {text!r}: empty label before '='")
    else:
        rest = text
    kind, options_text = _split_kind(rest)
    if not kind or kind.startswith(":") or kind.endswith(":"):
        raise InputError(f"agent spec {text!r}: no agent kind (expected LABEL=KIND[:opt=value,...])")
    if label is None:
        label = kind.rpartition(":")[2] if ":" in kind else kind
    if not LABEL_PATTERN.fullmatch(label):
        raise InputError(f"agent spec {text!r}: label {label!r} may contain only letters, digits and _ . + -")
    return label, kind, parse_options(options_text, text)

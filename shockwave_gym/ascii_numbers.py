"""The one rule for numbers written as text (command-line flags, TSV fields, cluster specs,
model names' batch sizes): ASCII digits only.

Python's ``int()`` and ``float()`` also read other scripts' digits (``int("٤") == 4``,
``float("３２") == 32.0``) and underscores (``float("1_0") == 10.0``); a trace or flag that
relies on that is almost certainly a mistake, and other tools would read it differently.
These parse only ``[+-]digits`` and ``[+-]digits[.digits][e[+-]digits]`` (and ``inf`` /
``nan``, which the callers' range checks then refuse with a clearer message), and raise
``ValueError`` with a readable message otherwise.
"""

from __future__ import annotations

import re

#: Longest number text converted at all (longer ones are refused unread).
MAX_NUMBER_CHARS = 40

INT_TEXT = re.compile(r"[+-]?[0-9]+")
FLOAT_TEXT = re.compile(r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf(?:inity)?|nan)",
                        re.IGNORECASE)


def parse_int(text: str) -> int:
    """``text`` (surrounding spaces allowed) as an int, ASCII digits only."""
    stripped = text.strip()
    if len(stripped) > MAX_NUMBER_CHARS:
        raise ValueError(f"a number of {len(stripped)} characters is out of range (at most {MAX_NUMBER_CHARS})")
    if not INT_TEXT.fullmatch(stripped):
        raise ValueError(f"expected a whole number in ASCII digits, got {text!r}")
    return int(stripped)


def parse_float(text: str) -> float:
    """``text`` (surrounding spaces allowed) as a float, ASCII digits only."""
    stripped = text.strip()
    if len(stripped) > MAX_NUMBER_CHARS:
        raise ValueError(f"a number of {len(stripped)} characters is out of range (at most {MAX_NUMBER_CHARS})")
    if not FLOAT_TEXT.fullmatch(stripped):
        raise ValueError(f"expected a number in ASCII digits, got {text!r}")
    return float(stripped)

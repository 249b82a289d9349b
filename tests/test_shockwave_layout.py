"""The Shockwave package stays readable: no module over 400 lines, no function over 60."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "agents" / "shockwave"
MODULES = sorted(PACKAGE.glob("*.py"))
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 400, 60


def function_lengths(source: str) -> dict[str, int]:
    """Lines of every function and method, decorators included, by qualified-ish name."""
    lengths = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            lengths[f"{node.name}:{node.lineno}"] = node.end_lineno - first + 1
    return lengths


def test_the_package_is_where_the_test_looks():
    assert len(MODULES) >= 10 and (PACKAGE / "planner.py") in MODULES


def test_the_measure_counts_a_long_function():
    body = "\n".join(f"    x{i} = {i}" for i in range(61))
    assert function_lengths(f"@decorator\ndef f():\n{body}\n") == {"f:2": 63}


@pytest.mark.parametrize("path", MODULES, ids=[p.name for p in MODULES])
def test_module_and_function_sizes(path):
    source = path.read_text(encoding="utf-8")
    assert len(source.splitlines()) <= MAX_MODULE_LINES
    too_long = {name: n for name, n in function_lengths(source).items() if n > MAX_FUNCTION_LINES}
    assert not too_long, f"{path.name}: functions over {MAX_FUNCTION_LINES} lines: {too_long}"

"""Code sizes and private imports over ``shockwave_gym/`` and ``agents/`` (issue 32).

Limits, each checked on every ``.py`` file of both packages:

- no function with more than :data:`MAX_PARAMETERS` parameters;
- no function over :data:`MAX_FUNCTION_LINES` lines of code;
- no module over :data:`MAX_MODULE_LINES` lines of code;
- no module imports a private name (``from x import _y``) from another module of
  ``shockwave_gym`` or ``shockwave_agents``.

How things are counted (:func:`code_lines`, :func:`function_sizes`):

- A *line of code* is a physical line holding at least one token that is not a comment and
  not a docstring (the string opening a module, class or function body). Blank lines,
  comment-only lines and docstring lines are not code; every line of any other string,
  multi-line ones included, is.
- A function's lines run from its first decorator to its last line. A function defined inside
  another (at any depth) is measured on its own, and its lines (decorators included) are taken
  out of every function around it: each line of code belongs to exactly one function, the
  innermost one holding it. Lambdas and class bodies inside a function belong to that function
  (a method of such a class is a function like any other). Numba kernels and their helpers
  are functions like any other.
- A module's lines of code are all of its lines of code, functions included.
- Parameters: positional-only, positional-or-keyword and keyword-only ones, plus one each for
  ``*args`` and ``**kwargs``; a leading ``self`` or ``cls`` is not counted.

Exemptions, each an explicit list below and checked not to be stale:

- :data:`ENTRY_POINTS`: public entry points whose parameters past the limit are keyword-only
  options named in their docstring (in a code span: ``name`` or ``name=value``; the class's
  docstring counts for its ``__init__``), for the parameter count only;
  :func:`test_entry_point_exemptions_still_qualify` checks that each one needs the exemption
  and qualifies for it.

The Shockwave package (``agents/shockwave/``) keeps its older, stricter measure on top:
physical lines (blank, comment and docstring lines included) against the same limits.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Import name -> source folder of each package checked.
PACKAGES = {"shockwave_gym": ROOT / "shockwave_gym", "shockwave_agents": ROOT / "agents"}
MAX_PARAMETERS, MAX_FUNCTION_LINES, MAX_MODULE_LINES = 12, 60, 400

#: TEMPORARY (issue 32): files being rewritten concurrently on other branches, exempt from
#: every check in this module until those branches merge; the list is then removed. A
#: trailing "/" exempts a whole folder.
#: Public entry points exempt from the parameter limit (only): every parameter past
#: :data:`MAX_PARAMETERS` is a keyword-only option documented in the docstring. Path ->
#: qualified names. (The vector env constructors take 6 parameters or fewer: no exemption.)
ENTRY_POINTS = {
    # What gym.make calls: 12 parameters by position, the rest keyword-only.
    "shockwave_gym/env/cluster_env.py": ("ClusterEnv.__init__",),
    "shockwave_gym/harness/api.py": ("evaluate",),
}

#: Folders measured in physical lines as well, against the same limits (their stricter,
#: older rule).
PHYSICAL_LINE_FOLDERS = ("agents/shockwave/",)

_NOT_CODE = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
             tokenize.ENCODING, tokenize.ENDMARKER}
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


# -- the measure ---------------------------------------------------------------------------

@dataclass(frozen=True)
class FunctionSize:
    """One function: where it starts, its qualified name, lines of code and parameters."""

    line: int
    name: str
    code_lines: int
    parameters: int


def _docstring_starts(tree: ast.Module) -> set[tuple[int, int]]:
    """(line, column) of every docstring: the string opening a module, class or function."""
    starts = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, *_FUNCTIONS)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                starts.add((first.lineno, first.col_offset))
    return starts


def code_lines(source: str, tree: ast.Module | None = None) -> set[int]:
    """Numbers of the lines of code of ``source`` (see the module docstring)."""
    docstrings = _docstring_starts(tree if tree is not None else ast.parse(source))
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in _NOT_CODE or (token.type == tokenize.STRING and token.start in docstrings):
            continue
        lines.update(range(token.start[0], token.end[0] + 1))
    return lines


def _span(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[int]:
    first = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
    return set(range(first, node.end_lineno + 1))


def parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Parameters of ``node``: ``*args`` and ``**kwargs`` one each, a leading self/cls none."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    count = len(positional) + len(args.kwonlyargs) + (args.vararg is not None) + (args.kwarg is not None)
    return count - (bool(positional) and positional[0].arg in ("self", "cls"))


def _functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function under ``tree`` with its qualified name (``Class.method``, ``outer.inner``)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            name = f"{prefix}{node.name}"
            if isinstance(node, _FUNCTIONS):
                yield name, node
            yield from _functions(node, name + ".")
        else:
            yield from _functions(node, prefix)


def function_sizes(source: str) -> list[FunctionSize]:
    """Every function of ``source``: its own lines of code (nested functions taken out) and
    its parameters."""
    tree = ast.parse(source)
    lines = code_lines(source, tree)
    sizes = []
    for name, node in _functions(tree):
        own = _span(node)
        for inner in ast.walk(node):
            if inner is not node and isinstance(inner, _FUNCTIONS):
                own -= _span(inner)
        sizes.append(FunctionSize(node.lineno, name, len(own & lines), parameter_count(node)))
    return sizes


def private_imports(source: str, module: str, is_package: bool = False) -> list[tuple[int, str, str]]:
    """``(line, module, name)`` of every private name ``source`` (the module ``module``)
    imports from a module of :data:`PACKAGES`: a name with one leading underscore (dunders
    are public), by absolute or relative import."""
    found = []
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            origin = f"{base}.{node.module}" if node.module else base
        else:
            origin = node.module or ""
        if origin.partition(".")[0] not in PACKAGES:
            continue
        for alias in node.names:
            if alias.name.startswith("_") and not alias.name.startswith("__"):
                found.append((node.lineno, origin, alias.name))
    return found


# -- the files -----------------------------------------------------------------------------

def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _module_name(path: Path) -> str:
    for name, folder in PACKAGES.items():
        if folder in path.parents:
            parts = [name, *path.relative_to(folder).with_suffix("").parts]
            return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    raise AssertionError(path)


ALL_FILES = sorted(path for folder in PACKAGES.values() for path in folder.rglob("*.py"))
CHECKED = ALL_FILES


def _exempt_from_parameters(relative: str, name: str) -> bool:
    return name in ENTRY_POINTS.get(relative, ())


def test_the_files_are_where_the_test_looks():
    relatives = {_relative(path) for path in ALL_FILES}
    assert {"shockwave_gym/view.py", "agents/base.py", "shockwave_gym/harness/api.py",
            "agents/shockwave/planner.py"} <= relatives
    assert len(CHECKED) > 150
    for relative in ENTRY_POINTS:
        assert relative in relatives, relative


@pytest.mark.parametrize("path", CHECKED, ids=[_relative(p) for p in CHECKED])
def test_module_function_and_parameter_sizes(path):
    relative = _relative(path)
    source = path.read_text(encoding="utf-8")
    problems = []
    module_lines = len(code_lines(source))
    if module_lines > MAX_MODULE_LINES:
        problems.append(f"module: {module_lines} lines of code (limit {MAX_MODULE_LINES})")
    for size in function_sizes(source):
        if size.code_lines > MAX_FUNCTION_LINES:
            problems.append(f"{size.name} (line {size.line}): {size.code_lines} lines of code "
                            f"(limit {MAX_FUNCTION_LINES})")
        if size.parameters > MAX_PARAMETERS and not _exempt_from_parameters(relative, size.name):
            problems.append(f"{size.name} (line {size.line}): {size.parameters} parameters "
                            f"(limit {MAX_PARAMETERS})")
    assert not problems, f"{relative}:\n  " + "\n  ".join(problems)


def _entry_point_problems(source: str, name: str) -> list[str]:
    """Why ``name`` in ``source`` does not qualify for, or does not need, the entry-point
    exemption (empty: it qualifies and needs it)."""
    tree = ast.parse(source)
    found = dict(_functions(tree))
    if name not in found:
        return [f"{name}: not found"]
    node = found[name]
    documented = ast.get_docstring(node) or ""
    if name.endswith(".__init__"):  # a class documents its constructor's options
        owner = name.rsplit(".", 2)[-2]
        cls = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == owner)
        documented += "\n" + (ast.get_docstring(cls) or "")
    problems = []
    if parameter_count(node) <= MAX_PARAMETERS:
        problems.append(f"{name}: {parameter_count(node)} parameters, within the limit: drop the exemption")
    args = node.args
    positional = len(args.posonlyargs) + len(args.args) + (args.vararg is not None)
    if args.args and args.args[0].arg in ("self", "cls"):
        positional -= 1
    if positional > MAX_PARAMETERS:
        problems.append(f"{name}: {positional} parameters can be passed by position (at most "
                        f"{MAX_PARAMETERS}; the rest must be keyword-only)")
    undocumented = [a.arg for a in args.kwonlyargs if not re.search(rf"`{re.escape(a.arg)}\b", documented)]
    if undocumented:
        problems.append(f"{name}: keyword-only options not named in its docstring: {undocumented}")
    return problems


ENTRY_POINT_CASES = [(relative, name) for relative, names in ENTRY_POINTS.items() for name in names]


@pytest.mark.parametrize("relative, name", ENTRY_POINT_CASES, ids=[f"{r}:{n}" for r, n in ENTRY_POINT_CASES])
def test_entry_point_exemptions_still_qualify(relative, name):
    problems = _entry_point_problems((ROOT / relative).read_text(encoding="utf-8"), name)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", CHECKED, ids=[_relative(p) for p in CHECKED])
def test_no_private_name_imported_from_another_module(path):
    found = private_imports(path.read_text(encoding="utf-8"), _module_name(path), path.name == "__init__.py")
    assert not found, f"{_relative(path)} imports private names: " + ", ".join(
        f"{name} from {module} (line {line})" for line, module, name in found)


STRICT = [path for path in CHECKED if _relative(path).startswith(PHYSICAL_LINE_FOLDERS)]


@pytest.mark.parametrize("path", STRICT, ids=[_relative(p) for p in STRICT])
def test_physical_line_limits_where_stricter(path):
    source = path.read_text(encoding="utf-8")
    assert len(source.splitlines()) <= MAX_MODULE_LINES
    too_long = {f"{name}:{node.lineno}": len(_span(node)) for name, node in _functions(ast.parse(source))
                if len(_span(node)) > MAX_FUNCTION_LINES}
    assert not too_long, f"{_relative(path)}: functions over {MAX_FUNCTION_LINES} physical lines: {too_long}"


# -- the measure catches what it should ----------------------------------------------------

def _body(count: int, indent: str = "    ") -> str:
    return "\n".join(f"{indent}x{i} = {i}" for i in range(count))


def test_code_lines_leave_out_blanks_comments_and_docstrings_only():
    source = (
        '"""Module docstring,\n\nover three lines."""\n'
        "\n"
        "# a comment\n"
        "@decorator\n"
        "def f(a,\n"
        "      b):  # a trailing comment does not make the line less code\n"
        '    """Docstring."""\n'
        "\n"
        "    # comment\n"
        '    text = """a string\n'
        '    that is not a docstring"""\n'
        "    return a\n"
    )
    assert code_lines(source) == {6, 7, 8, 12, 13, 14}
    assert function_sizes(source) == [FunctionSize(7, "f", 6, 2)]


def test_a_long_function_is_caught_and_only_its_code_counts():
    padding = "\n".join(["    # a comment", "", '    """not the docstring: code"""'])
    exactly = f'def f():\n    """Doc\n    string."""\n{_body(59)}\n\n    # c\n\n'
    over = f"def g():\n{_body(59)}\n{padding}\n"
    sizes = {s.name: s.code_lines for s in function_sizes(exactly + over)}
    assert sizes == {"f": 60, "g": 61}
    assert [s.name for s in function_sizes(exactly + over) if s.code_lines > MAX_FUNCTION_LINES] == ["g"]


def test_nested_functions_are_measured_on_their_own_and_counted_once():
    source = (
        "class C:\n"
        "    def outer(self):\n"
        f"{_body(30, '        ')}\n"
        "        @decorator\n"
        "        def inner():\n"
        f"{_body(40, '            ')}\n"
        "        handler = lambda: (\n"
        "            1)\n"
        "        return inner\n"
    )
    sizes = {s.name: s.code_lines for s in function_sizes(source)}
    assert sizes == {"C.outer": 1 + 30 + 3, "C.outer.inner": 2 + 40}
    assert sum(sizes.values()) == len(code_lines(source)) - 1  # every line once; "class C:" is no function's


def test_too_many_parameters_are_caught():
    def count(signature: str) -> int:
        (size,) = function_sizes(f"def f({signature}):\n    pass\n")
        return size.parameters

    thirteen = ", ".join(f"p{i}" for i in range(13))
    assert count(thirteen) == 13
    assert count("self, " + ", ".join(f"p{i}" for i in range(12))) == 12  # self is free
    assert count("a, /, b, *args, c, d=1, **kwargs") == 6  # *args and **kwargs one each
    assert count("x, self") == 2  # only a leading self is free
    flagged = [s for s in function_sizes(f"def f({thirteen}):\n    pass\n") if s.parameters > MAX_PARAMETERS]
    assert [s.name for s in flagged] == ["f"]


def test_a_long_module_is_caught():
    source = '"""Doc."""\n' + "\n".join(f"x{i} = {i}  # c\n" for i in range(MAX_MODULE_LINES + 1))
    assert len(code_lines(source)) == MAX_MODULE_LINES + 1


def test_the_entry_point_rule_needs_keyword_only_documented_options():
    many = ", ".join(f"p{i}" for i in range(12))
    good = f'def run({many}, *, extra=None, other=1):\n    """Options: `extra` and `other`."""\n'
    assert _entry_point_problems(good, "run") == []
    positional = f'def run({many}, extra=None):\n    """`extra`."""\n'
    assert "keyword-only" in _entry_point_problems(positional, "run")[0]
    undocumented = f'def run({many}, *, extra=None, other=1):\n    """Only `extra`."""\n'
    assert _entry_point_problems(undocumented, "run") == [
        "run: keyword-only options not named in its docstring: ['other']"]
    small = 'def run(a, *, extra=None):\n    """`extra`."""\n'
    assert "drop the exemption" in _entry_point_problems(small, "run")[0]
    method = (f'class Env:\n    """Arguments: `extra`."""\n\n'
              f"    def __init__(self, {many}, *, extra=None):\n        pass\n")
    assert _entry_point_problems(method, "Env.__init__") == []


def test_private_imports_are_caught():
    source = (
        "from shockwave_gym.interface.actions import SelectMode, _select_bits\n"
        "from . import _sibling, public\n"
        "from ..view import _read_only\n"
        "from shockwave_gym._version import __version__\n"
        "from numpy import _private_of_another_project\n"
        "def f():\n"
        "    from shockwave_agents.gavel.mechanism import _multi_type\n"
    )
    assert private_imports(source, "shockwave_gym.interface.typed_actions") == [
        (1, "shockwave_gym.interface.actions", "_select_bits"),
        (2, "shockwave_gym.interface", "_sibling"),
        (3, "shockwave_gym.view", "_read_only"),
        (7, "shockwave_agents.gavel.mechanism", "_multi_type"),
    ]
    assert private_imports("from .jit import _kernel\n", "shockwave_gym.batch", is_package=True) == [
        (1, "shockwave_gym.batch.jit", "_kernel")]

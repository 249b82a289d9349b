"""What a submission may not reach in the grading child: denied modules and denied operations.

Two guards, both installed by :mod:`shockwave_gym.course.child` before the submission runs and
armed just before its code starts:

* :class:`ImportGuard`, a meta-path finder: every denied module (the course's grading code for
  every lab, and each lab's answer, e.g. the remaining-time predictor in lab 1) loads as a
  stand-in whose every use raises :class:`RefusedAccess` and is recorded. It stops imports by
  name, plain, concatenated, through ``importlib`` or ``type(x).__module__``;
* :func:`install_audit_hook`, a ``sys.addaudithook`` hook (which Python code cannot remove): it
  refuses opening the denied modules' files, the course's sources and the kit by path,
  writing or changing files outside the submission's scratch directory, reading another
  process's ``/proc`` entries, starting processes, signalling other processes, network
  connections, ``ctypes`` and the ``gc`` walks over every object; and refuses importing a
  denied module once the finder is gone.

Both record what they refused; the grader breaks the "own work" rule on any record. They
are not a sandbox (docs/COURSE.md, "Limits").
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
import types


class RefusedAccess(RuntimeError):
    """A submission used something the grader does not give a submission of this lab."""


class _Refusal:
    """Stands for a name of a refused module: using it records the use and raises."""

    def __init__(self, name: str, guard: ImportGuard):
        self._name, self._guard = name, guard

    def __call__(self, *args, **kwargs):
        return self._guard.refuse(self._name)

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Refusal(f"{self._name}.{attr}", self._guard)


class _RefusedModule(types.ModuleType):
    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Refusal(f"{self.__name__}.{name}", self.__dict__["_guard"])


class ImportGuard(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """A meta-path finder that loads every ``denied`` module (and its submodules) as a stand-in.

    Until :attr:`armed`, a stand-in's functions return ``None`` (the package's own imports
    call a few at import time); armed, every use raises :class:`RefusedAccess` and is listed
    in :attr:`refused`. It stops imports by name (plain, concatenated, ``importlib``,
    ``type(x).__module__``); it does not stop code that removes it from ``sys.meta_path`` or
    reads the package's files from disk (docs/COURSE.md, "Limits").
    """

    def __init__(self, denied: tuple[str, ...]):
        self.denied, self.armed, self.refused = tuple(denied), False, []

    def denies(self, name: str) -> bool:
        return any(name == prefix or name.startswith(prefix + ".") for prefix in self.denied)

    def find_spec(self, fullname, path=None, target=None):
        if not self.denies(fullname):
            return None
        if self.armed:
            self.refused.append(f"import {fullname}")
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        module = _RefusedModule(spec.name)
        module.__dict__["_guard"] = self
        module.__path__ = []
        return module

    def exec_module(self, module) -> None:
        return None

    def refuse(self, name: str):
        if not self.armed:
            return None
        self.refused.append(name)
        raise RefusedAccess(f"{name} is not available to a submission of this lab")


#: Audit events that start or signal processes, load native code or open connections.
_SPAWN = ("os.exec", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.system", "subprocess.Popen",
          "pty.spawn", "os.startfile")
_CHANGE = ("os.rename", "os.remove", "os.rmdir", "os.mkdir", "os.truncate", "os.chmod", "os.chown", "os.utime",
           "os.link", "os.symlink", "shutil.rmtree", "shutil.move", "shutil.copyfile", "shutil.copytree",
           "shutil.make_archive", "shutil.unpack_archive")
#: Events refused outright: connections, raising the child's own limits, and walking the
#: interpreter's objects (the way to the hook's own state).
_REFUSED_EVENTS = frozenset({"socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
                             "resource.setrlimit", "resource.prlimit", "gc.get_objects", "gc.get_referrers",
                             "gc.get_referents", "sys._current_frames"})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _audit_hook(refused: list, modules: tuple, finder, scratch: str, denied: tuple, allowed: frozenset, own_pid: int):
    """The audit hook, made once: every name it uses (these arguments, the builtins, the
    event lists) is bound here, in its closure, so that neither the module's globals nor the
    builtins a submission may replace afterwards change what it refuses (nor does changing
    the finder's ``denied``: ``modules`` is a copy). The closure is reachable only through
    the hook, which Python code cannot get back from ``sys.addaudithook`` (and the ``gc``
    walks over every object are refused)."""
    system, realpath, fsdecode, path_like = sys, os.path.realpath, os.fsdecode, (str, bytes, os.PathLike)
    is_a, any_of, length, to_int, to_str, truth, as_tuple = isinstance, any, len, int, str, bool, tuple
    spawn, change, refused_events, write_flags = _SPAWN, _CHANGE, _REFUSED_EVENTS, _WRITE_FLAGS
    permission_error, import_error, bad_path = PermissionError, ImportError, (TypeError, ValueError)

    def path_refusal(event: str, args: tuple, given) -> str | None:
        """What ``event`` does with the path ``given`` that a submission may not, or None."""
        try:
            path = realpath(fsdecode(given))
        except bad_path:
            return None
        in_scratch = path == scratch or path.startswith(scratch + "/") or path == "/dev/null"
        if path not in allowed and any_of(path == d or path.startswith(d + "/") or path.startswith(d + ".")
                                          for d in denied):
            return f"open {given}"
        if path.startswith("/proc/") and path.split("/")[2].isdigit() and to_int(path.split("/")[2]) != own_pid:
            return f"open {given}"
        if event != "open" and not in_scratch:
            return f"{event} {given}"
        if event == "open" and not in_scratch:
            mode, flags = args[1], (args[2] if length(args) > 2 else 0)
            writes = any_of(c in mode for c in "wax+") if is_a(mode, to_str) else truth((flags or 0) & write_flags)
            return f"writing {given}" if writes else None
        return None

    def denies(name: str) -> bool:
        return any_of(name == prefix or name.startswith(prefix + ".") for prefix in modules)

    def hook(event: str, args: tuple) -> None:
        what, exc, paths = None, permission_error, ()
        if event == "open":
            paths = (args[0],)
        elif event.startswith(change):
            paths = as_tuple(arg for arg in args if is_a(arg, path_like))
        elif event.startswith(spawn) or event.startswith("ctypes.") or event in refused_events:
            what = event
        elif event in ("os.kill", "os.killpg", "signal.pthread_kill"):
            if event != "os.kill" or args[0] not in (0, own_pid):
                what = event
        elif event == "import" and denies(to_str(args[0])) and (not system.meta_path or system.meta_path[0] is not finder):
            what, exc = f"import {args[0]}", import_error
        for given in paths:
            if is_a(given, path_like):
                what = path_refusal(event, args, given)
                if what is not None:
                    break
        if what is not None:
            refused.append(what)
            raise exc(f"{what}: not available to a submission")

    return hook


def install_audit_hook(guard: ImportGuard, scratch: str, denied_paths, allowed_paths=()) -> None:
    """Install the audit hook of the grading child (see the module docstring), on from now on.

    ``denied_paths`` are refused with everything under them (``allowed_paths`` excepted);
    ``scratch`` is the only directory the submission may write or change. The hook holds
    immutable values only (the list of refused uses aside) and cannot be removed; the uses it
    refuses are appended to ``guard.refused``. Install it last, just before the submission runs.
    """
    sys.addaudithook(_audit_hook(
        guard.refused, tuple(guard.denied), guard, os.path.realpath(scratch),
        tuple(os.path.realpath(p).rstrip("/") for p in denied_paths),
        frozenset(os.path.realpath(p) for p in allowed_paths), os.getpid(),
    ))

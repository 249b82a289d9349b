"""What a submission may not reach in the grading child: denied modules and denied operations.

Two guards, both installed by :mod:`shockwave_gym.course.child` before the submission runs and
armed just before its code starts:

* :class:`ImportGuard`, a meta-path finder: every denied module (the course's grading code for
  every lab, and each lab's answer, e.g. the remaining-time predictor in lab 1) loads as a
  stand-in whose every use raises :class:`RefusedAccess` and is recorded. It stops imports by
  name, plain, concatenated, through ``importlib`` or ``type(x).__module__``;
* :class:`AuditGuard`, a ``sys.addaudithook`` hook (which Python code cannot remove): it
  refuses opening the denied modules' files, the course's sources and the kit by path,
  writing or changing files outside the submission's scratch directory, reading another
  process's ``/proc`` entries, starting processes, signalling other processes, network
  connections and ``ctypes``; and refuses importing a denied module once the finder is gone.

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
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


class AuditGuard:
    """The audit hook of the grading child (see the module docstring); ``denied_paths`` are
    real paths refused with everything under them, ``allowed_paths`` exceptions to them,
    ``scratch`` the only directory the submission may write or change."""

    def __init__(self, guard: ImportGuard, scratch: str, denied_paths, allowed_paths=()):
        self.guard, self.scratch = guard, os.path.realpath(scratch)
        self.denied = tuple(os.path.realpath(p) for p in denied_paths)
        self.allowed = tuple(os.path.realpath(p) for p in allowed_paths)

    def install(self) -> None:
        sys.addaudithook(self)

    def _refuse(self, what: str, exc: type[BaseException] = PermissionError):
        self.guard.refused.append(what)
        raise exc(f"{what}: not available to a submission")

    @staticmethod
    def _real(path) -> str | None:
        if isinstance(path, int) or path is None:
            return None
        try:
            return os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return None

    def _readable(self, real: str) -> bool:
        if real in self.allowed:
            return True
        if any(real == d or real.startswith(d.rstrip("/") + "/") or real.startswith(d + ".") for d in self.denied):
            return False
        if real.startswith("/proc/"):
            pid = real.split("/")[2]
            return not pid.isdigit() or int(pid) == os.getpid()
        return True

    def _in_scratch(self, real: str) -> bool:
        return real == self.scratch or real.startswith(self.scratch + "/") or real == "/dev/null"

    def __call__(self, event: str, args: tuple) -> None:
        if not self.guard.armed:
            return
        if event == "open":
            real = self._real(args[0])
            if real is None:
                return
            if not self._readable(real):
                self._refuse(f"open {args[0]}")
            mode, flags = args[1], args[2] if len(args) > 2 else 0
            writes = any(c in mode for c in "wax+") if isinstance(mode, str) else bool((flags or 0) & _WRITE_FLAGS)
            if writes and not self._in_scratch(real):
                self._refuse(f"writing {args[0]}")
        elif event.startswith(_SPAWN):
            self._refuse(event)
        elif event in ("os.kill", "os.killpg", "signal.pthread_kill"):
            if event != "os.kill" or args[0] not in (0, os.getpid()):
                self._refuse(event)
        elif event.startswith("ctypes.") or event in ("socket.connect", "socket.bind", "socket.sendto",
                                                      "socket.getaddrinfo", "sys.remote_exec"):
            self._refuse(event)
        elif event.startswith(_CHANGE):
            for arg in args:
                real = self._real(arg) if isinstance(arg, (str, bytes, os.PathLike)) else None
                if real is not None and not self._in_scratch(real):
                    self._refuse(f"{event} {arg}")
        elif event == "import" and self.guard.denies(str(args[0])) and (not sys.meta_path
                                                                       or sys.meta_path[0] is not self.guard):
            self._refuse(f"import {args[0]}", ImportError)

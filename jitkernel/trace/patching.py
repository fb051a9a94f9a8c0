"""Module attributes replaced while any trace is active (numpy.random and random by
random_guard.py, numpy's creation functions by creation.py): patched when the first active
trace starts, restored when the last one ends, counted process-wide under a lock."""
from __future__ import annotations

import os
import threading
from typing import Any, Callable, Iterable

# (module, name, replacement) for every attribute to patch, decided when the first trace starts.
Targets = Callable[[], Iterable[tuple[Any, str, Any]]]


class ModulePatches:
    """One set of patches; `install()` / `uninstall()` pair up around every trace."""

    def __init__(self, targets: Targets) -> None:
        self._targets = targets
        self._lock = threading.Lock()
        self._installed = 0
        self._saved: list[tuple[Any, str, Any]] = []
        _ALL.append(self)

    def install(self) -> None:
        with self._lock:
            self._installed += 1
            if self._installed == 1:
                for module, name, replacement in self._targets():
                    self._saved.append((module, name, getattr(module, name)))
                    setattr(module, name, replacement)

    def prepare(self) -> None:
        """Build the targets now (their sources cache them), so that the first trace does not
        pay for it (jitkernel/startup.py)."""
        for _ in self._targets():
            pass

    def uninstall(self) -> None:
        with self._lock:
            self._installed -= 1
            if self._installed == 0:
                while self._saved:
                    module, name, value = self._saved.pop()
                    setattr(module, name, value)


_ALL: list[ModulePatches] = []


def prepare_all() -> None:
    """`prepare()` every patch set: the process's one-time start-up of tracing."""
    for patches in list(_ALL):
        patches.prepare()


def _new_locks_in_child() -> None:
    """A forked child has only the forking thread: a lock another thread held at the fork (while
    it started or ended a trace) would never be released there. The replacements stay harmless:
    they call the originals unless this thread traces."""
    for patches in _ALL:
        patches._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_locks_in_child)

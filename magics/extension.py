"""Loading and unloading the IPython extension (`%load_ext jitkernel`)."""
from __future__ import annotations

from typing import Any

from jitkernel import profiler
from jitkernel import events

from .bench import JitBenchMagics
from .cell import JitCellMagics
from .cellwarnings import CellWarningFormat
from .diagnostics import Diagnostics
from .line import JitLineMagics
from .progress import CompileProgress
from .registry import Registry

MAGIC_CLASSES = (JitCellMagics, JitLineMagics, JitBenchMagics)


class Extension:
    """The extension's state in one shell: the %%jit registry, the event subscriber for the
    diagnostics line and --show, and whether it started the profiler session."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.registry = Registry()
        self.diagnostics = Diagnostics(self.registry)
        self.progress = CompileProgress(shell)  # compile progress lines in a notebook (progress.py)
        self.warning_format = CellWarningFormat()  # warnings name `Cell In[2], line 3` (cellwarnings.py)
        self._unsubscribe = None
        self._unsubscribe_progress = None
        self._started_profiler = False

    def load(self) -> None:
        for cls in MAGIC_CLASSES:
            self.shell.register_magics(cls(self.shell, self))
        self._unsubscribe = events.subscribe(self.diagnostics)
        self._unsubscribe_progress = events.subscribe(self.progress)
        self.warning_format.install()
        self._started_profiler = not profiler.session().running
        profiler.start()

    def unload(self) -> None:
        manager = self.shell.magics_manager
        for cls in MAGIC_CLASSES:  # IPython has no unregister API
            manager.registry.pop(cls.__name__, None)
            for kind, names in cls.magics.items():
                for name in names:
                    manager.magics[kind].pop(name, None)
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._unsubscribe_progress is not None:
            self._unsubscribe_progress()
            self._unsubscribe_progress = None
        self.warning_format.uninstall()
        if self._started_profiler:
            profiler.stop()
        self.registry.clear()


_LOADED: dict[int, Extension] = {}


def load(shell: Any) -> None:
    """Register the magics, subscribe the diagnostics and start the profiler session."""
    if id(shell) in _LOADED:
        return
    ext = Extension(shell)
    ext.load()
    _LOADED[id(shell)] = ext


def unload(shell: Any) -> None:
    """Remove the magics and the subscriptions (the profile collected so far is kept)."""
    ext = _LOADED.pop(id(shell), None)
    if ext is not None:
        ext.unload()


def extension_for(shell: Any) -> Extension | None:
    """The loaded extension of `shell`, if any."""
    return _LOADED.get(id(shell))

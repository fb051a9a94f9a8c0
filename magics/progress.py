"""Compile progress in a notebook (docs/magics.md, "Compile progress"): while an nvcc or host
compiler run of a program lasts longer than `jk.config.compile_progress_after` seconds (1 s by
default), the cell shows one line, `compiling <program> with nvcc: 2.5 s`, updated in place
about twice a second, and replaced at the end by `compiled <program> with nvcc in 3.1 s` (or
`... failed after 3.1 s`). Shorter compiles show nothing.

The engine only publishes `events.CompileProgressEvent` (start and end, jitkernel/compile_progress.py);
this subscriber draws. The wait and the updates run on a helper thread, because the compile
blocks the cell's thread; the updates run in the cell's context (ipykernel routes a display to
its cell through it). Only shells with a rich display (a Jupyter kernel) show anything: a
terminal IPython or a plain script prints nothing new. `CompileProgress.notebook` overrides the
detection (tests).
"""
from __future__ import annotations

import contextvars
import threading
from typing import Any

import jitkernel as jk
from jitkernel import events

TICK_S = 0.5  # seconds between two updates of the elapsed time


class CompileProgress:
    """The event subscriber of one shell: one progress line per running compile."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.notebook: bool | None = None  # None: detected from the shell (a Jupyter kernel)
        self._running: dict[tuple, _Line] = {}

    def shows_progress(self) -> bool:
        if self.notebook is not None:
            return self.notebook
        return type(self.shell).__name__ == "ZMQInteractiveShell" or getattr(self.shell, "kernel", None) is not None

    def __call__(self, event: events.Event) -> None:
        if event.__class__ is not events.CompileProgressEvent:
            return
        key = (event.function, event.start, event.tool)
        if event.phase == "start":
            after = jk.config.compile_progress_after
            if after is not None and self.shows_progress():
                self._running[key] = _Line(event, float(after))
        else:
            line = self._running.pop(key, None)
            if line is not None:
                line.finish(event)


class _Line:
    """One compile's progress line: shown by a helper thread after `after` seconds."""

    def __init__(self, start: events.CompileProgressEvent, after: float) -> None:
        self.start = start
        self.handle: Any = None
        self.done = threading.Event()
        self.context = contextvars.copy_context()  # the cell's (ipykernel's output routing)
        self.thread = threading.Thread(target=self.context.run, args=(self._tick, after), daemon=True,
                                       name=f"jitkernel-progress-{start.function}")
        self.thread.start()

    def _text(self, elapsed: float) -> str:
        return f"compiling {self.start.function} with {self.start.tool}: {elapsed:.1f} s"

    def _tick(self, after: float) -> None:
        from IPython.display import display
        if self.done.wait(after):
            return  # finished before the threshold: nothing shown
        self.handle = display({"text/plain": self._text(events.clock() - self.start.start)}, raw=True,
                              display_id=True)
        while not self.done.wait(TICK_S):
            self.handle.update({"text/plain": self._text(events.clock() - self.start.start)}, raw=True)

    def finish(self, end: events.CompileProgressEvent) -> None:
        self.done.set()
        self.thread.join()
        if self.handle is None:
            return
        what = f"compiled {end.function} with {end.tool} in" if end.ok else \
            f"compiling {end.function} with {end.tool} failed after"
        self.handle.update({"text/plain": f"{what} {end.duration:.1f} s"}, raw=True)

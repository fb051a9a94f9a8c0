"""Progress of external compiler runs: `compiling(name, backend, tool)` wraps one nvcc or host
compiler run and publishes a `CompileProgressEvent` when it starts and when it ends (also when it
fails), while anyone listens. The engine draws nothing: a front end subscribes and shows progress
(the IPython extension: magics/progress.py, docs/magics.md "Compile progress").

>>> from jitkernel import events
>>> seen = []
>>> stop = events.subscribe(seen.append)
>>> with compiling("f", "cuda", "nvcc"):
...     pass
>>> stop(); [(e.phase, e.tool, e.ok) for e in seen]
[('start', 'nvcc', True), ('end', 'nvcc', True)]
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from . import events


@contextlib.contextmanager
def compiling(name: str, backend: str, tool: str) -> Iterator[None]:
    """Publish the start and the end of one compiler run of program `name` (no cost when nobody
    listens: one truthiness check)."""
    if not events.SUBSCRIBERS:
        yield
        return
    t0 = events.clock()
    events.publish(events.CompileProgressEvent(name, t0, 0.0, phase="start", backend=backend, tool=tool))
    ok = False
    try:
        yield
        ok = True
    finally:
        events.publish(events.CompileProgressEvent(name, t0, events.clock() - t0, phase="end", backend=backend,
                                                   tool=tool, ok=ok))

"""The process's one-time start-up, measured once and apart from any function's trace.

The first trace of a process used to pay for work done once per process: building the
replacements trace/patching.py installs while a trace runs (the support table's list of NumPy
functions refused inside a jitted function, numpy.random's and `random`'s guards, NumPy's creation
functions). That landed in the first traced function's "trace ms": 64.8 ms against 0.53 ms for
an identical second function. `ensure_started()` does that work before the first trace's clock
starts and publishes it as one `StartupEvent` (function "start-up"), which the profiler shows
as its own row.

>>> from jitkernel import startup
>>> startup.ensure_started(); startup.seconds() is not None
True
"""
from __future__ import annotations

import threading

from . import events

STARTUP = "start-up"  # the function name of the StartupEvent: its own row in a profile
_seconds: float | None = None
_lock = threading.Lock()


def seconds() -> float | None:
    """How long this process's start-up took (None until the first trace)."""
    return _seconds


def _warm_source_reading() -> None:
    """autograph reads each function's source with `inspect.getsourcelines`, whose first call
    compiles inspect's regular expressions (several ms): do it on a function of this module."""
    import inspect
    inspect.getsourcelines(seconds)


def ensure_started(first_function: str = "") -> None:
    """Do the one-time work of tracing now, unless done already; the first call publishes a
    `StartupEvent` (`first_function`: the function whose trace triggered it)."""
    global _seconds
    if _seconds is not None:
        return
    with _lock:
        if _seconds is not None:
            return
        t0 = events.clock()
        from .trace import patching  # importing trace registers every patch set
        patching.prepare_all()
        _warm_source_reading()
        from .trace import container_arguments  # noqa: F401  (imported by the first trace otherwise)
        _seconds = events.clock() - t0
    if events.SUBSCRIBERS:
        events.publish(events.StartupEvent(STARTUP, t0, _seconds, first_function=first_function))

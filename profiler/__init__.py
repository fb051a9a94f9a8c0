"""Profiler for jitted functions, fed by `jitkernel.events`.

One session collector per process starts when the IPython extension loads, or on the first
`start()` / `report()`. It records every engine event (trace, optimise, fuse, codegen,
compile, cache, recompile, run) from then on.

>>> import numpy as np, jitkernel as jk, jitkernel.profiler as profiler
>>> _ = profiler.start(); profiler.reset()
>>> f = jk.jit(lambda x: np.sin(x).sum(), backend="interpret")
>>> _ = f(np.zeros(8)); _ = f(np.zeros(8))
>>> r = profiler.report()
>>> st = r["<lambda>"]; (st.calls, st.compiles, st.cache_hits)
(2, 1, 1)
>>> sorted({rec["phase"] for rec in r.records()})
['cache', 'optimize', 'run', 'trace']
"""
from __future__ import annotations

# Run from the repository root, this folder is importable as the top-level `profiler` too: a second copy with a session of its own, which records none of the engine's events.
# The documented name is jitkernel.profiler (pyproject.toml's package-dir), so the folder's own name fails.
if __name__ != "jitkernel.profiler":
    raise ImportError(f"{__name__!r} is the repository's profiler/ folder imported by its folder name; "
                      "import jitkernel.profiler instead (the installed package)", name=__name__)

from typing import Any, Iterable

from jitkernel import events

from .bench_plot import bench_plot
from .collector import Collector, Selector, Snapshot
from .report import PLOT_KINDS, Report
from .stats import CallRecord, FunctionStats

__all__ = ["bench_plot", "start", "stop", "reset", "report", "session", "Collector", "Report", "Snapshot",
           "FunctionStats", "CallRecord", "PLOT_KINDS", "function_name", "function_selector"]

_SESSION: Collector | None = None


def session() -> Collector:
    """The process-wide collector (created, not started, on first use)."""
    global _SESSION
    if _SESSION is None:
        _SESSION = Collector()
    return _SESSION


def start() -> Collector:
    """Start the session collector (idempotent) and return it."""
    c = session()
    c.start()
    return c


def stop() -> None:
    """Stop collecting; what was collected stays available to `report()`."""
    if _SESSION is not None:
        _SESSION.stop()


def reset() -> None:
    """Forget everything the session collected (it keeps running if it was)."""
    session().reset()


def function_name(fn: Any) -> str:
    """The name events use for `fn`: a string as is, else its `__name__` (a Jitted or a function)."""
    if isinstance(fn, str):
        return fn
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str):
        raise TypeError(f"expected a jitted function or a function name, got {type(fn).__name__}")
    return name


def function_selector(fn: Any) -> Selector:
    """What `report(fn)` selects: a jitted function object by its identity ((name,
    function_id): not another function of the same name), a name or function by its name."""
    fid = getattr(fn, "function_id", None)
    if isinstance(fid, int) and not isinstance(fn, str):
        return (function_name(fn), fid)
    return function_name(fn)


def report(fn: Any = None, *, since: float | None = None, title: str = "jitkernel profile") -> Report:
    """The profile of `fn` (a jitted function, a name, or a list of them; all when None),
    counting only work that started at or after `since` (an `events.clock()` value). A name
    selects every function of that name (shown apart: `step`, `step (2)`); a jitted function
    only itself.

    Starts the session collector if it was not running (the report is then empty)."""
    c = start()
    _pull_worker_events()
    selectors: Iterable[Selector] | None
    if fn is None:
        selectors = None
    elif isinstance(fn, (list, tuple, set, frozenset)):
        selectors = [function_selector(f) for f in fn]
    else:
        selectors = [function_selector(fn)]
    return Report(c.snapshot(selectors, since), title=title)


def _pull_worker_events() -> None:
    """Fetch what Dask workers recorded for jitted functions (only once a Dask graph was built
    while profiling: jitkernel/distributed/profile.py is then imported)."""
    import sys
    remote = sys.modules.get("jitkernel.distributed.profile")
    if remote is not None:
        remote.pull()


def clock() -> float:
    """The engine's clock (for `report(since=...)`)."""
    return events.clock()

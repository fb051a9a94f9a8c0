"""The event collector: subscribes to `jitkernel.events` and keeps what it hears.

The subscriber runs inside every jitted call (the engine publishes a `RunEvent` and a memory
`CacheEvent` per call while anyone listens), so it only appends the event to a list. Warm
calls would make that list grow by two objects per call; every `compact_every` events the list
is compacted: warm runs and memory cache hits become (start, duration) pairs in `array('d')`
columns (16 bytes a call instead of two event objects), everything else is kept as is.

Functions are keyed by (name, function_id): two function objects with the same name (a `%%jit`
cell run again) are profiled apart. The engine's lead events carry the id; the backends' events
(fuse, codegen, compile, disk cache) do not, and get the id of the latest memory-cache miss of
that name before them, which is the call that compiled (the pipeline runs synchronously in that
call). Two same-named functions compiling at the same moment on two threads could be mixed up.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from itertools import islice
from typing import Iterable, Union

from jitkernel import events

_RUN = events.RunEvent
_CACHE = events.CacheEvent
_STARTUP = events.StartupEvent

FunctionKey = tuple[str, int]  # (name, function_id): one jitted function object
Selector = Union[str, FunctionKey]  # a name (every function of that name) or one key


def key_of(e: events.Event) -> FunctionKey:
    """The function object an event belongs to."""
    return (e.function, e.function_id)


@dataclass
class WarmColumns:
    """Compacted warm calls of one function: run starts and durations, memory-hit starts."""

    run_starts: array = field(default_factory=lambda: array("d"))
    run_durations: array = field(default_factory=lambda: array("d"))
    hit_starts: array = field(default_factory=lambda: array("d"))

    def copy(self, since: float | None = None) -> "WarmColumns":
        """A copy, keeping only entries that started at or after `since`."""
        if since is None:
            return WarmColumns(array("d", self.run_starts), array("d", self.run_durations),
                               array("d", self.hit_starts))
        keep = [i for i, s in enumerate(self.run_starts) if s >= since]
        return WarmColumns(array("d", (self.run_starts[i] for i in keep)),
                           array("d", (self.run_durations[i] for i in keep)),
                           array("d", (s for s in self.hit_starts if s >= since)))


@dataclass
class Snapshot:
    """A consistent copy of what a collector holds: `t0` (the clock at start/reset), the events
    in publication order and the compacted warm calls per function."""

    t0: float
    events: list[events.Event]
    warm: dict[FunctionKey, WarmColumns]

    def functions(self) -> list[FunctionKey]:
        """Function keys in order of first appearance (the process's start-up is no function)."""
        seen: dict[FunctionKey, None] = {}
        for e in self.events:
            if e.__class__ is not _STARTUP:
                seen.setdefault(key_of(e), None)
        for key in self.warm:
            seen.setdefault(key, None)
        return list(seen)

    def startup(self) -> float | None:
        """Seconds of the process's one-time start-up (jitkernel/startup.py) if it happened in
        this snapshot's window, else None."""
        found = [e.duration for e in self.events if e.__class__ is _STARTUP]
        return sum(found) if found else None

    def labels(self) -> dict[FunctionKey, str]:
        """The name each function is shown under: its name, and `name (2)`, `name (3)`, ... for
        later function objects of the same name, in order of first appearance."""
        count: dict[str, int] = {}
        out = {}
        for key in self.functions():
            n = count[key[0]] = count.get(key[0], 0) + 1
            out[key] = key[0] if n == 1 else f"{key[0]} ({n})"
        return out


class Collector:
    """Collects engine events while started. `snapshot()` copies them for a report."""

    def __init__(self, compact_every: int = 1_000) -> None:
        self.compact_every = compact_every
        self.t0 = events.clock()
        self._events: list[events.Event] = []
        self._warm: dict[FunctionKey, WarmColumns] = {}
        self._unsubscribe = None
        self._attributed = 0  # events before this index in _events have their function_id
        self._last_id: dict[str, int] = {}  # name -> function_id of its latest memory-cache miss

    # -- subscription ------------------------------------------------------------------
    @property
    def running(self) -> bool:
        """Whether the collector is subscribed to the engine's events."""
        return self._on_event in events.SUBSCRIBERS

    def start(self) -> None:
        """Subscribe (idempotent; also after someone cleared `events.SUBSCRIBERS`)."""
        if not self.running:
            self._unsubscribe = events.subscribe(self._on_event)

    def stop(self) -> None:
        """Unsubscribe (idempotent); what was collected is kept."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def reset(self) -> None:
        """Forget everything collected so far and restart the clock."""
        self._events.clear()
        self._warm.clear()
        self._attributed = 0
        self.t0 = events.clock()

    def _on_event(self, event: events.Event) -> None:
        if type(event) is events.CompileProgressEvent:
            return  # a front end's progress signal; the finished compile is its CompileEvent
        buf = self._events
        buf.append(event)
        if len(buf) >= self.compact_every:
            self.compact()

    # -- storage -----------------------------------------------------------------------
    def _attribute(self) -> None:
        """Give events published without a function_id the id of the call they belong to: the
        latest memory-cache miss of that name (warm calls of a namesake on another thread, which
        carry their own id, do not change it)."""
        buf, last = self._events, self._last_id
        end = len(buf)
        for e in islice(buf, self._attributed, end):
            if e.function_id:
                if e.__class__ is _CACHE and not e.hit and e.level == "memory":
                    last[e.function] = e.function_id
            else:
                fid = last.get(e.function)
                if fid is not None:
                    e.function_id = fid
        self._attributed = end

    def compact(self) -> None:
        """Move warm runs and memory cache hits out of the event list into columns."""
        self._attribute()
        buf = self._events
        kept: list[events.Event] = []
        runs: list[events.RunEvent] = []
        hits: list[events.CacheEvent] = []
        keep, run, hit = kept.append, runs.append, hits.append
        for e in buf:
            cls = e.__class__
            if cls is _RUN:
                run(e) if not e.first else keep(e)
            elif cls is _CACHE and e.hit and e.level == "memory":
                hit(e)
            else:
                keep(e)
        buf[:] = kept
        self._attributed = len(kept)
        for fn, group in _by_function(runs).items():
            cols = self._warm.get(fn) or self._warm.setdefault(fn, WarmColumns())
            cols.run_starts.extend([e.start for e in group])
            cols.run_durations.extend([e.duration for e in group])
        for fn, group in _by_function(hits).items():
            cols = self._warm.get(fn) or self._warm.setdefault(fn, WarmColumns())
            cols.hit_starts.extend([e.start for e in group])

    def __len__(self) -> int:
        """Events held (compacted warm calls count two each)."""
        return len(self._events) + sum(len(c.run_starts) + len(c.hit_starts) for c in self._warm.values())

    def snapshot(self, functions: Iterable[Selector] | None = None, since: float | None = None) -> Snapshot:
        """Copy the events of `functions` (all when None; each a name, meaning every function of
        that name, or a (name, function_id) key) that started at or after `since` (an
        `events.clock()` value; all when None)."""
        self._attribute()
        wanted = None if functions is None else set(functions)

        def selected(key: FunctionKey) -> bool:
            return wanted is None or key in wanted or key[0] in wanted

        evs = [e for e in list(self._events)
               if selected(key_of(e)) and (since is None or _begin(e) >= since)]
        warm = {k: v.copy(since) for k, v in list(self._warm.items()) if selected(k)}
        warm = {k: v for k, v in warm.items() if len(v.run_starts) or len(v.hit_starts)}
        return Snapshot(self.t0, evs, warm)


def _by_function(evs: list[events.Event]) -> dict[FunctionKey, list[events.Event]]:
    keys = {key_of(e) for e in evs}
    if len(keys) <= 1:
        if not keys:
            return {}
        return {keys.pop(): evs}
    out: dict[FunctionKey, list[events.Event]] = {k: [] for k in keys}
    for e in evs:
        out[key_of(e)].append(e)
    return out


def _begin(e: events.Event) -> float:
    """When the work an event describes began (a RecompileEvent is published at its end)."""
    return e.start - e.duration if isinstance(e, events.RecompileEvent) else e.start

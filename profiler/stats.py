"""Per-function statistics and per-call breakdowns computed from a collector snapshot.

How each number is measured is documented in docs/profiling.md; in short:
- a *call* is one `RunEvent` (the engine publishes one per call of a jitted function);
- *trace* sums `TraceEvent`s; *compile* sums `OptimizeEvent`, `FuseEvent`, `CodegenEvent` and
  `CompileEvent` (optimise + fuse + LLVM codegen + LLVM optimisation/link);
- *first run* sums the `RunEvent(first=True)` durations (one per compiled signature);
- *warm median* is the median of the `RunEvent(first=False)` durations;
- a memory-cache miss ends one of three ways: a *compile* (the pipeline produced machine code;
  *disk hits* counts those that took it from the persistent cache), a *shape-generic* reuse (a
  new size of a dynamic dimension ran on existing machine code: trace and fusion only, no LLVM,
  so neither a compile nor a cache hit), or a *failure* (`CompileFailedEvent`: the trace or the
  compile raised; listed in `failures`, never counted as a compile).
- device phases (backend "cuda" and its emulator): *kernels* sums `KernelEvent`s (CUDA-event
  times of each launch), *transfers* sums `TransferEvent`s (host<->device copies, with bytes).
  Per call, a device event belongs to the call whose run it falls in; a device->host copy after
  a call (converting its result) belongs to the latest call before it.
"""
from __future__ import annotations

import bisect
import statistics
from dataclasses import dataclass, field
from typing import Any

from jitkernel import events

from .collector import FunctionKey, Snapshot, key_of

COMPILE_EVENTS = (events.OptimizeEvent, events.FuseEvent, events.CodegenEvent, events.CompileEvent)


@dataclass
class CallRecord:
    """One call of a jitted function: what it spent in each phase (seconds)."""

    function: str
    start: float  # events.clock() value when the call's first event was published
    trace: float = 0.0
    compile: float = 0.0
    run: float = 0.0
    first: bool = False
    signature: str = ""
    reasons: list[str] = field(default_factory=list)  # recompilation reasons, if it recompiled
    disk_hit: bool = False
    shape_generic: bool = False  # a new size that ran on existing machine code (no compile)
    kernels: float = 0.0  # device kernel time of the call (KernelEvents)
    transfers: float = 0.0  # host<->device copies of the call (TransferEvents)


@dataclass
class Failure:
    """A memory-cache miss whose trace (`stage="trace"`) or compile (`stage="compile"`) raised."""

    start: float
    stage: str
    error: str
    signature: str = ""


@dataclass
class FunctionStats:
    """Totals for one jitted function object (times in seconds). `function` is the label it is
    shown under (`step`, or `step (2)` for a second function named `step`), `name` its name."""

    function: str
    calls: int = 0
    cache_hits: int = 0
    disk_hits: int = 0
    shape_generic: int = 0
    compiles: int = 0
    failed: int = 0
    recompiles: int = 0
    trace: float = 0.0
    compile: float = 0.0
    first_run: float = 0.0
    warm_runs: int = 0
    warm_median: float | None = None
    graph_ops: int | None = None  # of the most recent compile
    kernels: int | None = None
    library_calls: int | None = None
    bytes_unfused: int | None = None
    bytes_fused: int | None = None
    groups: list[dict[str, Any]] = field(default_factory=list)
    recompilations: list[tuple[float, list[str], str]] = field(default_factory=list)  # (start, reasons, signature)
    failures: list[Failure] = field(default_factory=list)
    name: str = ""
    function_id: int = 0
    device: str | None = None  # the device its kernels ran on (backend "cuda", its emulator)
    kernel_launches: int = 0
    kernel_time: float = 0.0
    h2d_bytes: int = 0
    h2d_time: float = 0.0
    d2h_bytes: int = 0
    d2h_time: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """Plain values, times in milliseconds (for tables and JSON)."""
        ms = lambda s: None if s is None else s * 1e3  # noqa: E731
        return {"function": self.function, "calls": self.calls, "cache_hits": self.cache_hits,
                "disk_hits": self.disk_hits, "shape_generic": self.shape_generic, "compiles": self.compiles,
                "failed": self.failed, "recompiles": self.recompiles,
                "trace_ms": ms(self.trace), "compile_ms": ms(self.compile), "first_run_ms": ms(self.first_run),
                "warm_runs": self.warm_runs, "warm_median_ms": ms(self.warm_median),
                "graph_ops": self.graph_ops, "kernels": self.kernels, "library_calls": self.library_calls,
                "bytes_unfused": self.bytes_unfused, "bytes_fused": self.bytes_fused,
                "device": self.device, "kernel_launches": self.kernel_launches, "kernel_ms": ms(self.kernel_time),
                "h2d_bytes": self.h2d_bytes, "h2d_ms": ms(self.h2d_time), "d2h_bytes": self.d2h_bytes,
                "d2h_ms": ms(self.d2h_time)}


def function_stats(snap: Snapshot) -> list[FunctionStats]:
    """One `FunctionStats` per function object in the snapshot, in order of first appearance."""
    table = {key: FunctionStats(label, name=key[0], function_id=key[1]) for key, label in snap.labels().items()}
    warm_durations: dict[FunctionKey, list[float]] = {key: [] for key in table}
    misses = dict.fromkeys(table, 0)
    traced = dict.fromkeys(table, False)  # whether the current miss got past its trace
    for e in snap.events:
        key = key_of(e)
        st = table.get(key)
        if st is None:
            continue  # the process's start-up (a StartupEvent) belongs to no function
        cls = e.__class__
        if cls is events.RunEvent:
            st.calls += 1
            if e.first:
                st.first_run += e.duration
            else:
                warm_durations[key].append(e.duration)
        elif cls is events.CacheEvent:
            if e.level == "memory":
                if e.hit:
                    st.cache_hits += 1
                else:
                    misses[key] += 1
                    traced[key] = False
            elif e.level == "disk" and e.hit:
                st.disk_hits += 1
            elif e.level == "dynamic" and e.hit:
                st.shape_generic += 1
        elif cls is events.CompileFailedEvent:
            st.failures.append(Failure(e.start, "compile" if traced[key] else "trace", e.error, e.signature))
        elif cls is events.TraceEvent:
            traced[key] = True
            st.trace += e.duration
        elif isinstance(e, COMPILE_EVENTS):
            st.compile += e.duration
            if cls is events.FuseEvent:
                st.graph_ops, st.kernels, st.library_calls = e.graph_ops, e.kernels, e.library_calls
                st.groups = [dict(g) for g in e.groups]
                st.bytes_unfused = getattr(e, "bytes_unfused", None) or None
                st.bytes_fused = sum(g.get("bytes_read", 0) + g.get("bytes_written", 0) for g in e.groups)
        elif cls is events.RecompileEvent:
            st.recompiles += 1
            st.recompilations.append((e.start - e.duration, list(e.reasons), e.signature))
        elif cls is events.KernelEvent:
            st.device = e.device
            st.kernel_launches += 1
            st.kernel_time += e.duration
        elif cls is events.TransferEvent:
            st.device = st.device or e.device
            if e.direction == "host->device":
                st.h2d_bytes += e.nbytes
                st.h2d_time += e.duration
            else:
                st.d2h_bytes += e.nbytes
                st.d2h_time += e.duration
    for key, cols in snap.warm.items():
        st = table[key]
        st.calls += len(cols.run_durations)
        st.cache_hits += len(cols.hit_starts)
        warm_durations[key].extend(cols.run_durations)
    for key, durations in warm_durations.items():
        st = table[key]
        st.warm_runs = len(durations)
        st.warm_median = statistics.median(durations) if durations else None
        st.failed = len(st.failures)
        # A miss the snapshot saw begin is a compile unless it failed or reused machine code.
        st.compiles = max(0, misses[key] - st.failed - st.shape_generic)
    return list(table.values())


def call_records(snap: Snapshot, function: FunctionKey) -> list[CallRecord]:
    """The calls of `function` (a (name, function_id) key) in time order, each with its
    trace/compile/run split.

    A call that compiled is the run of events from its memory-cache miss to its first run;
    warm calls come from `RunEvent(first=False)` (or the compacted columns); a miss that
    failed is no call."""
    calls: list[CallRecord] = []
    pending: CallRecord | None = None
    label = snap.labels().get(function, function[0])
    device: list[events.Event] = []
    for e in snap.events:
        if key_of(e) != function:
            continue
        cls = e.__class__
        if cls is events.KernelEvent or cls is events.TransferEvent:
            device.append(e)
            continue
        if cls is events.CompileFailedEvent:
            pending = None
            continue
        if cls is events.CacheEvent:
            if e.level == "memory" and not e.hit:
                pending = CallRecord(label, e.start, signature=e.signature)
            elif e.level == "disk" and e.hit and pending is not None:
                pending.disk_hit = True
            elif e.level == "dynamic" and e.hit and pending is not None:
                pending.shape_generic = True
        elif cls is events.TraceEvent:
            if pending is None:  # collector started mid-call
                pending = CallRecord(label, e.start, signature=e.signature)
            pending.trace += e.duration
        elif isinstance(e, COMPILE_EVENTS) and pending is not None:
            pending.compile += e.duration
        elif cls is events.RecompileEvent and pending is not None:
            pending.reasons = list(e.reasons)
        elif cls is events.RunEvent:
            if e.first and pending is not None:
                pending.run, pending.first = e.duration, True
                calls.append(pending)
                pending = None
            else:
                calls.append(CallRecord(label, e.start, run=e.duration, first=e.first))
    cols = snap.warm.get(function)
    if cols is not None:
        calls.extend(CallRecord(label, s, run=d) for s, d in zip(cols.run_starts, cols.run_durations))
        calls.sort(key=lambda c: c.start)
    _attach_device_events(calls, device)
    return calls


def _attach_device_events(calls: list[CallRecord], device: list[events.Event]) -> None:
    """Add each device event to the call it belongs to (module docstring): the latest call that
    started before it (a compiling call starts at its cache miss, before its launches)."""
    if not calls or not device:
        return
    starts = [c.start for c in calls]
    for e in device:
        i = bisect.bisect_right(starts, e.start) - 1
        if i < 0:
            continue  # before the first recorded call (the collector started mid-call)
        if e.__class__ is events.KernelEvent:
            calls[i].kernels += e.duration
        else:
            calls[i].transfers += e.duration

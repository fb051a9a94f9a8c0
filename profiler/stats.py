"""Per-function statistics and per-call breakdowns computed from a collector snapshot.

How each number is measured is documented in docs/profiling.md; in short:
- a *call* is one `RunEvent` (the engine publishes one per call of a jitted function);
- *trace* sums `TraceEvent`s; *compile* sums `OptimizeEvent`, `FuseEvent`, `CodegenEvent` and
  `CompileEvent` (optimise + fuse + LLVM codegen + LLVM optimisation/link);
- *first run* sums the `RunEvent(first=True)` durations (one per compiled signature);
- *warm median* is the median of the `RunEvent(first=False)` durations;
- *compiles* counts memory-cache misses (each runs the pipeline), *disk hits* how many of those
  took their machine code from the persistent cache, *dynamic hits* how many reused the
  shape-generic machine code of a dynamic dimension (trace and fusion only, no LLVM).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from jitkernel import events

from .collector import Snapshot

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


@dataclass
class FunctionStats:
    """Totals for one jitted function (times in seconds)."""

    function: str
    calls: int = 0
    cache_hits: int = 0
    disk_hits: int = 0
    dynamic_hits: int = 0
    compiles: int = 0
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

    def as_dict(self) -> dict[str, Any]:
        """Plain values, times in milliseconds (for tables and JSON)."""
        ms = lambda s: None if s is None else s * 1e3  # noqa: E731
        return {"function": self.function, "calls": self.calls, "cache_hits": self.cache_hits,
                "disk_hits": self.disk_hits, "dynamic_hits": self.dynamic_hits, "compiles": self.compiles, "recompiles": self.recompiles,
                "trace_ms": ms(self.trace), "compile_ms": ms(self.compile), "first_run_ms": ms(self.first_run),
                "warm_runs": self.warm_runs, "warm_median_ms": ms(self.warm_median),
                "graph_ops": self.graph_ops, "kernels": self.kernels, "library_calls": self.library_calls,
                "bytes_unfused": self.bytes_unfused, "bytes_fused": self.bytes_fused}


def function_stats(snap: Snapshot) -> list[FunctionStats]:
    """One `FunctionStats` per function in the snapshot, in order of first appearance."""
    table = {name: FunctionStats(name) for name in snap.functions()}
    warm_durations: dict[str, list[float]] = {name: [] for name in table}
    for e in snap.events:
        st = table[e.function]
        cls = e.__class__
        if cls is events.RunEvent:
            st.calls += 1
            if e.first:
                st.first_run += e.duration
            else:
                warm_durations[e.function].append(e.duration)
        elif cls is events.CacheEvent:
            if e.level == "memory":
                if e.hit:
                    st.cache_hits += 1
                else:
                    st.compiles += 1
            elif e.level == "disk" and e.hit:
                st.disk_hits += 1
            elif e.level == "dynamic" and e.hit:
                st.dynamic_hits += 1
        elif cls is events.TraceEvent:
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
    for name, cols in snap.warm.items():
        st = table[name]
        st.calls += len(cols.run_durations)
        st.cache_hits += len(cols.hit_starts)
        warm_durations[name].extend(cols.run_durations)
    for name, durations in warm_durations.items():
        table[name].warm_runs = len(durations)
        table[name].warm_median = statistics.median(durations) if durations else None
    return list(table.values())


def call_records(snap: Snapshot, function: str) -> list[CallRecord]:
    """The calls of `function` in time order, each with its trace/compile/run split.

    A call that compiled is the run of events from its memory-cache miss to its first run;
    warm calls come from `RunEvent(first=False)` (or the compacted columns)."""
    calls: list[CallRecord] = []
    pending: CallRecord | None = None
    for e in snap.events:
        if e.function != function:
            continue
        cls = e.__class__
        if cls is events.CacheEvent:
            if e.level == "memory" and not e.hit:
                pending = CallRecord(function, e.start, signature=e.signature)
            elif e.level == "disk" and e.hit and pending is not None:
                pending.disk_hit = True
        elif cls is events.TraceEvent:
            if pending is None:  # collector started mid-call
                pending = CallRecord(function, e.start, signature=e.signature)
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
                calls.append(CallRecord(function, e.start, run=e.duration, first=e.first))
    cols = snap.warm.get(function)
    if cols is not None:
        calls.extend(CallRecord(function, s, run=d) for s, d in zip(cols.run_starts, cols.run_durations))
        calls.sort(key=lambda c: c.start)
    return calls

"""Flat records (plain dicts) and the Chrome trace export built from them."""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from jitkernel import events

from .collector import Snapshot, key_of

PHASES = {
    events.TraceEvent: "trace", events.OptimizeEvent: "optimize", events.FuseEvent: "fuse",
    events.CodegenEvent: "codegen", events.CompileEvent: "compile", events.CacheEvent: "cache",
    events.RecompileEvent: "recompile", events.RunEvent: "run", events.CompileFailedEvent: "failed",
    # Dask moving blocks between workers; "transfer" is a host<->device copy (TransferEvent)
    events.WorkerTransferEvent: "worker transfer",
    events.StartupEvent: "start-up",  # the process's one-time start-up: its own row, function "start-up"
    # debug_nans found a NaN or an infinity made inside a call (a marker on the timeline)
    events.DebugNansEvent: "debug nans",
}
_BASE_FIELDS = {"function", "start", "duration", "function_id"}


def phase_name(event: events.Event) -> str:
    """`trace`, `optimize`, `fuse`, `codegen`, `compile`, `cache`, `recompile`, `run`, `failed`,
    `start-up` (other
    event classes: their lower-cased name without `Event`)."""
    name = PHASES.get(type(event))
    return name if name is not None else type(event).__name__.removesuffix("Event").lower()


def _details(event: events.Event) -> dict[str, Any]:
    out = {}
    for f in dataclasses.fields(event):
        if f.name not in _BASE_FIELDS:
            value = getattr(event, f.name)
            out[f.name] = [dict(v) if isinstance(v, dict) else v for v in value] if isinstance(value, list) else value
    return out


def records(snap: Snapshot) -> list[dict[str, Any]]:
    """One dict per phase occurrence: function (its label: `step`, `step (2)` for a second
    function object named `step`), phase, start (s since the collector started or was reset),
    duration (s) and details (the event's other fields). A recompile record starts with the
    trace it caused and lasts its trace + compile time. Sorted by start."""
    out = []
    labels = snap.labels()
    trace_start: dict[tuple[str, int], float] = {}
    traced: dict[tuple[str, int], bool] = {}  # whether the current cache miss got past its trace
    for e in snap.events:
        start = e.start
        key = key_of(e)
        details = _details(e)
        if isinstance(e, events.TraceEvent):
            trace_start[key] = e.start
            traced[key] = True
        elif isinstance(e, events.RecompileEvent):  # published at the end: anchor at its trace
            start = trace_start.get(key, e.start - e.duration)
        elif isinstance(e, events.CacheEvent) and e.level == "memory" and not e.hit:
            traced[key] = False
        elif isinstance(e, events.CompileFailedEvent):
            details["stage"] = "compile" if traced.get(key) else "trace"
        out.append({"function": labels.get(key, e.function), "phase": phase_name(e), "start": start - snap.t0,
                    "duration": e.duration, "details": details})
    for key, cols in snap.warm.items():
        name = labels[key]
        for s, d in zip(cols.run_starts, cols.run_durations):
            out.append({"function": name, "phase": "run", "start": s - snap.t0, "duration": d,
                        "details": {"first": False}})
        for s in cols.hit_starts:
            out.append({"function": name, "phase": "cache", "start": s - snap.t0, "duration": 0.0,
                        "details": {"hit": True, "level": "memory"}})
    out.sort(key=lambda r: r["start"])
    return out


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _row_of(r: dict[str, Any]) -> str:
    """The function, or `f @ worker ...` for what a Dask worker recorded (profiler/workers.py)."""
    if r["phase"] in ("block", "worker transfer"):
        return f"{r['function']} @ {r['details']['worker']}"
    return r["function"]


def chrome_trace(recs: list[dict[str, Any]]) -> dict[str, Any]:
    """The Chrome trace-event JSON object: one complete event ("ph": "X", ts and dur in µs) per
    record, one thread per function and per Dask worker track (named by metadata events), loadable by Perfetto and
    chrome://tracing."""
    pid = os.getpid()
    tids: dict[str, int] = {}
    trace_events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "jitkernel"}}]
    for r in recs:
        row = _row_of(r)
        tid = tids.get(row)
        if tid is None:
            tid = tids[row] = len(tids) + 1
            trace_events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                                 "args": {"name": row}})
        trace_events.append({"name": r["phase"], "cat": "jitkernel", "ph": "X", "pid": pid, "tid": tid,
                             "ts": r["start"] * 1e6, "dur": r["duration"] * 1e6,
                             "args": _json_safe(r["details"])})
    return {"traceEvents": trace_events, "displayTimeUnit": "ms"}


def write_chrome_trace(recs: list[dict[str, Any]], path: str | os.PathLike) -> Path:
    """Write `chrome_trace(recs)` to `path` (parent folders created); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(chrome_trace(recs)))
    return path

"""Engine events: small records published synchronously to subscribers.

Publishing costs one truthiness check when nobody listens: call sites test `events.enabled()`
(or `if events.SUBSCRIBERS:`) before building an event.

>>> from jitkernel import events
>>> seen = []
>>> unsubscribe = events.subscribe(seen.append)
>>> events.publish(events.TraceEvent(function="f", start=0.0, duration=0.001))
>>> unsubscribe(); [type(e).__name__ for e in seen]
['TraceEvent']
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

SUBSCRIBERS: list[Callable[["Event"], None]] = []
clock = time.perf_counter


@dataclass
class Event:
    """Base: the jitted function's name, a monotonic start time (time.perf_counter) and a duration (s).

    `function_id` tells two function objects with the same name apart (a `%%jit` cell run again
    defines a new `step`): it is the `Jitted.function_id` of the function that published the
    event, 0 where the publisher does not know it (the backends' events: the profiler gives them
    the id of the call they belong to). Keyword-only, so positional construction is unchanged."""

    function: str
    start: float
    duration: float = 0.0
    function_id: int = field(default=0, kw_only=True)


@dataclass
class TraceEvent(Event):
    signature: str = ""
    writes: tuple = ()  # the arguments the function writes (copied back after each call)


@dataclass
class OptimizeEvent(Event):
    eqns_before: int = 0
    eqns_after: int = 0


@dataclass
class FuseEvent(Event):
    kernels: int = 0
    library_calls: int = 0
    graph_ops: int = 0
    groups: list[dict[str, Any]] = field(default_factory=list)  # one per kernel: ops, bytes
    bytes_unfused: int = 0  # bytes an op-by-op execution would move


@dataclass
class CodegenEvent(Event):
    backend: str = ""


@dataclass
class CompileEvent(Event):
    backend: str = ""


@dataclass
class CompileProgressEvent(Event):
    """An external compiler run (nvcc, the emulator's g++) starting (`phase` "start") or done
    ("end": `duration` its time, `ok` whether it succeeded), published around the run so that a
    front end can show progress while it lasts (jitkernel/compile_progress.py, magics/progress.py).
    The finished compile's own record stays the CompileEvent."""

    phase: str = "start"
    backend: str = ""
    tool: str = ""
    ok: bool = True


@dataclass
class CacheEvent(Event):
    hit: bool = False
    level: str = "memory"
    signature: str = ""


@dataclass
class RecompileEvent(Event):
    """A cache miss of a function that already had entries; duration = trace + compile."""

    reasons: list[str] = field(default_factory=list)
    signature: str = ""


@dataclass
class CompileFailedEvent(Event):
    """A memory-cache miss whose trace or compile raised; published before the exception
    propagates (`error`: the exception's type and first line). Not a compile."""

    error: str = ""
    signature: str = ""


@dataclass
class StartupEvent(Event):
    """The process's one-time start-up of tracing (jitkernel/startup.py), published once, before
    the first trace starts, with `function` "start-up": not part of any function's trace time.
    `first_function`: the function whose first call triggered it."""

    first_function: str = ""


@dataclass
class RunEvent(Event):
    first: bool = False
    backend: str = ""


@dataclass
class DebugNansEvent(Event):
    """`debug_nans` found a NaN or an infinity made inside a call (jitted/debug_nans.py),
    published just before its FloatingPointError: the operation, the kernel that ran it and the
    user's `file:line: source` that made it."""

    kernel: str = ""
    operation: str = ""
    location: str = ""
    what: str = "NaN"


def subscribe(callback: Callable[[Event], None]) -> Callable[[], None]:
    """Call `callback(event)` for every event from now on; returns a function that unsubscribes."""
    SUBSCRIBERS.append(callback)

    def unsubscribe() -> None:
        if callback in SUBSCRIBERS:
            SUBSCRIBERS.remove(callback)
    return unsubscribe


def enabled() -> bool:
    return bool(SUBSCRIBERS)


def publish(event: Event) -> None:
    for callback in list(SUBSCRIBERS):
        callback(event)


# -- per-worker profiles of Dask graphs (jitkernel/distributed/profile.py) ----------------------
@dataclass
class BlockEvent(Event):
    """One block task of a jitted function over Dask arrays, run on `worker` (a track of the
    timeline: `worker <name> <address>` or `thread <name>` in the driver's process). `start` is on
    this process's clock (worker clocks aligned by distributed/profile.py); `compile` the seconds
    of it spent compiling (or loading from the persistent cache: `disk_hit`)."""

    worker: str = ""
    address: str = ""
    pid: int = 0
    thread: str = ""
    block: str = ""  # the block program and its grid index: f_block1[0,2]
    program: str = ""
    compile: float = 0.0
    disk_hit: bool = False
    bytes_in: int = 0  # bytes of the input blocks read
    bytes_out: int = 0  # bytes of the output blocks written


@dataclass
class WorkerTransferEvent(Event):
    """Dask moving blocks of a profiled graph between workers, or from a worker to the client
    (from the workers' transfer logs)."""

    worker: str = ""  # the track it is drawn on: the receiving worker (the sender's for the client)
    source: str = ""
    destination: str = ""
    nbytes: int = 0
    keys: int = 0


# -- device phases (backend "cuda" and its emulator; docs/gpu.md, "The PyCUDA runtime") ----------
@dataclass
class KernelEvent(Event):
    """One kernel launch on a device: `duration` is the kernel's time (CUDA events on a GPU, the
    wall time of the host run on the emulator); `start` is the host clock at the launch."""

    kernel: str = ""
    device: str = ""
    grid: int = 0
    block: int = 0


@dataclass
class TransferEvent(Event):
    """One copy between host and device memory: `direction` "host->device" or "device->host",
    `nbytes` the bytes copied, `duration` the copy's time (a device->host copy includes the
    wait for the work it depends on)."""

    direction: str = ""
    nbytes: int = 0
    device: str = ""

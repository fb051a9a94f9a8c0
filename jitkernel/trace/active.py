"""The traces running in each thread, innermost last: a leaf module, so that the Tracer
(trace/tracer.py) can ask for the current trace without importing the contexts that make
Tracers (trace/context.py)."""
from __future__ import annotations

import threading
from typing import Any


class _ThreadTraces(threading.local):
    """The traces running in this thread, innermost last. Thread-local: two threads tracing at
    once must each see only their own context (a shared list made one thread's NumPy calls
    record into the other's program)."""

    def __init__(self) -> None:
        self.stack: list[Any] = []  # TraceContext (trace/context.py)


_traces = _ThreadTraces()


def current_context() -> Any:
    """The innermost TraceContext running in this thread, or None."""
    stack = _traces.stack
    return stack[-1] if stack else None


def is_tracing() -> bool:
    """Whether this thread is inside a trace."""
    return bool(_traces.stack)

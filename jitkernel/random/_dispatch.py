"""How a jk.random function runs: inside a trace its implementation binds primitives into that
trace; outside one it runs as `jk.jit` of the implementation, cached per function and static
parameters (shape, dtype, ...) and, as any jitted function, per argument signature, returning
NumPy arrays."""
from __future__ import annotations

import atexit
import functools
from typing import Any, Callable

from ..entry import jit
from ..trace.context import is_tracing
from ..tree import static_key
from ..transforms.core import as_tracer

_JITTED: dict[tuple, Any] = {}
# Release the compiled functions while the interpreter is whole: left to module teardown, this
# dict would outlive the CPU backend's module and its finalisers would find their helpers gone.
atexit.register(_JITTED.clear)


def run(name: str, impl: Callable[..., Any], arrays: tuple, static: dict[str, Any]) -> Any:
    """`impl(*arrays, **static)` on Tracers: in the active trace, or compiled when none is active."""
    if is_tracing():
        return impl(*[as_tracer(a) for a in arrays], **static)
    cache_key = (name, tuple((k, static_key(v)) for k, v in sorted(static.items())))
    jitted = _JITTED.get(cache_key)
    if jitted is None:
        # autograph off: the implementations' Python loops are over static ranges (rounds of the
        # hash, permutation rounds) and must unroll.
        jitted = _JITTED[cache_key] = jit(functools.partial(impl, **static), name=f"random.{name}", autograph=False)
    return jitted(*arrays)

"""Run-time debugging inside compiled code: `jk.debug.print` and `jk.debug.callback` (JAX's
`jax.debug.print` / `jax.debug.callback`), docs/debugging.md.

A plain `print` in a jitted function runs once, while tracing, and shows tracers. These run every
time the compiled program runs, with the values of that call, on every backend (the device
values come back to the host for the call), in program order, each iteration of a loop:

>>> import numpy as np, jitkernel as jk
>>> @jk.jit
... def f(x):
...     y = np.sin(x)
...     jk.debug.print("y = {}, total = {total:.1f}", y, total=x.sum())
...     return y * 2
>>> _ = f(np.zeros(3))
y = [0. 0. 0.], total = 0.0
>>> _ = f(np.ones(3))
y = [0.84147098 0.84147098 0.84147098], total = 3.0

Outside a trace both run at once. Under `jk.vmap` the callback runs once with the whole batch
(a batched value has the batch axis first), as JAX does; under `jk.grad` it sees the primal
values (the forward pass), never tangents or cotangents.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .ir.debug_prims import HostCall, Printer
from .trace.context import current_context
from .trace.operands import lift
from .trace.tracer import Tracer
from .tree import tree_flatten

__all__ = ["print", "callback"]


def callback(callback: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """Call `callback(*args, **kwargs)` when the compiled program runs, with the run's values as
    NumPy arrays (0-d values as NumPy scalars); its return value is ignored. `args` and `kwargs`
    are pytrees of arrays and numbers.

    >>> import numpy as np, jitkernel as jk
    >>> seen = []
    >>> @jk.jit
    ... def f(x):
    ...     jk.debug.callback(seen.append, x.max())
    ...     return x + 1
    >>> _ = f(np.arange(3.0)); _ = f(np.arange(5.0))
    >>> seen
    [np.float64(2.0), np.float64(4.0)]
    """
    leaves, treedef = tree_flatten((tuple(args), dict(kwargs)))
    call = HostCall(callback, treedef)
    ctx = next((leaf._ctx for leaf in leaves if isinstance(leaf, Tracer)), None) or current_context()
    if ctx is None:  # not tracing: run now, as JAX does outside jit
        call([np.asarray(leaf) for leaf in leaves])
        return
    values = []
    for leaf in leaves:
        if not isinstance(leaf, Tracer) and np.asarray(leaf).dtype.kind not in "biufc":
            raise TypeError(f"jk.debug: a value to pass at run time must be an array or a number, got {type(leaf).__name__} "
                            "(format constant text into the format string instead)")
        values.append(lift(ctx, leaf))
    ctx.bind("debug_callback", values, call=call)


def print(fmt: str, *args: Any, **kwargs: Any) -> None:  # noqa: A001 - JAX's name, jk.debug.print
    """Print `fmt.format(*args, **kwargs)` when the compiled program runs, with the run's values
    (str.format fields, as `jax.debug.print`: `"{}"`, `"{x}"` with `x=` a keyword value,
    `"{:.3f}"` for a 0-d value).

    >>> import numpy as np, jitkernel as jk
    >>> @jk.jit
    ... def total(x):
    ...     for i in range(2):
    ...         jk.debug.print("step {i}: {s}", i=i, s=x.sum())
    ...         x = x * 2
    ...     return x
    >>> _ = total(np.ones(2))
    step 0: 2.0
    step 1: 4.0
    """
    if not isinstance(fmt, str):
        raise TypeError(f"jk.debug.print: the format must be a str, got {type(fmt).__name__}")
    callback(Printer(fmt), *args, **kwargs)

"""The jit entry point and autograph's converter, for the layers below the ones that define them.

Transformations (`jk.grad(f)(x)` outside a trace compiles itself), the random samplers, the Dask
partitioner and pickling all make or recognise jitted functions, but sit below `jitkernel.api`
(which imports them). api.py registers `Jitted` here when it is imported; they ask for it here,
so no import runs back up the layers.

>>> import jitkernel as jk
>>> is_jitted(jk.jit(lambda x: x)), is_jitted(lambda x: x)
(True, False)
"""
from __future__ import annotations

from typing import Any, Callable

_JITTED: list[type] = []


def register_jitted(cls: type) -> None:
    """Called once by jitkernel.api with its `Jitted` class."""
    _JITTED[:] = [cls]


def jitted_class() -> type:
    if not _JITTED:
        raise RuntimeError("internal error: jitkernel.api is not imported (it registers the jit entry point)")
    return _JITTED[0]


def jit(fun: Callable[..., Any], **options: Any) -> Any:
    """`jitkernel.api.Jitted(fun, **options)`."""
    return jitted_class()(fun, **options)


def is_jitted(obj: Any) -> bool:
    return bool(_JITTED) and isinstance(obj, _JITTED[0])


# autograph's converter (Python control flow on traced values -> lax), registered by
# jitkernel.autograph: transformations convert the functions they trace as jk.jit does.
_CONVERT: list[Callable[[Callable[..., Any]], Any]] = []


def register_converter(convert: Callable[[Callable[..., Any]], Any]) -> None:
    _CONVERT[:] = [convert]


def converter() -> Callable[[Callable[..., Any]], Any] | None:
    """autograph's `convert` (returns the converted function or None, and raises what it
    raises), or None before jitkernel.autograph is imported."""
    return _CONVERT[0] if _CONVERT else None


def converted(fun: Callable[..., Any]) -> Callable[..., Any]:
    """`fun` with its Python control flow converted (autograph), or `fun` itself where autograph
    is not registered or cannot read its source."""
    if not _CONVERT:
        return fun
    try:
        return _CONVERT[0](fun) or fun
    except Exception:  # source that autograph cannot read: trace it as written
        return fun

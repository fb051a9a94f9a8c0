"""The jit entry point, for the layers below the one that defines it.

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

"""jitkernel.numpy's functions as the trace layer calls them: the ndarray methods of a Tracer
(`x.sum()`, `x[i]`, `x @ y`), in-place updates, checked scalar stores, the table of unsupported
functions. jitkernel.numpy registers them here when it is imported, so the trace layer never
imports the layer above it (JAX attaches its Tracer's array methods from jax.numpy the same way).

>>> import jitkernel as jk
>>> NUMPY.namespace is jk.numpy
True
"""
from __future__ import annotations

from typing import Any


class NumpyAPI:
    """Attribute access to what jitkernel.numpy registered (`NUMPY.getitem`, `NUMPY.namespace`)."""

    def __init__(self) -> None:
        self._functions: dict[str, Any] = {}

    def register(self, **functions: Any) -> None:
        self._functions.update(functions)

    def __getattr__(self, name: str) -> Any:
        functions = self.__dict__.get("_functions", {})
        if name in functions:
            return functions[name]
        if not functions:
            raise RuntimeError("internal error: jitkernel.numpy is not imported (it registers the functions "
                               "a Tracer's methods call)")
        raise AttributeError(f"jitkernel.numpy registered no {name!r}")


NUMPY = NumpyAPI()

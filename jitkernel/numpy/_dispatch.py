"""NumPy's protocols -> our functions. `np.sin(tracer)` arrives in `__array_ufunc__`,
`np.sum(tracer)` in `__array_function__`; anything without an entry here raises
UnsupportedOperationError naming the function."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedOperationError

_REDUCE_METHODS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
                   "logical_and": "all", "logical_or": "any"}


# NumPy callables outside the top-level namespace (np.linalg.solve, np.fft.fft, ...) and any
# other function whose implementation is not `jitkernel.numpy.<same name>`: register_function.
_REGISTERED: dict = {}


def register_function(np_func: Any, impl: Any) -> Any:
    """Route `np_func(tracer, ...)` (the __array_function__ protocol) to `impl`. Returns impl,
    so it can decorate. The table of supported NumPy functions (docs/numpy-support.md) is
    generated from this registry and jitkernel.numpy's names."""
    _REGISTERED[np_func] = impl
    global _FUNCTIONS
    _FUNCTIONS = None
    return impl


def _table() -> dict:
    from .. import numpy as jnp
    table = {}
    for name in jnp.__all__:
        np_obj = getattr(np, name, None)
        if np_obj is not None and callable(np_obj) and not isinstance(np_obj, (np.ufunc, type)):
            table[np_obj] = getattr(jnp, name)
    table.update(_REGISTERED)
    return table


_FUNCTIONS: dict | None = None


def apply_function_protocol(func: Any, args: tuple, kwargs: dict) -> Any:
    global _FUNCTIONS
    if _FUNCTIONS is None:
        _FUNCTIONS = _table()
    impl = _FUNCTIONS.get(func)
    if impl is None:
        name = getattr(func, "__module__", "numpy").replace("numpy._core.", "numpy.") + "." + getattr(func, "__name__", str(func))
        raise UnsupportedOperationError(
            f"{name} is not supported inside a jitted function (jitkernel compiles a subset of NumPy; "
            "see docs/numpy-support.md)")
    return impl(*args, **kwargs)


def apply_ufunc_protocol(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    from .. import numpy as jnp
    name = ufunc.__name__
    if method == "__call__" and "out" in kwargs:
        from ..trace import inplace
        stem = inplace.concrete_inplace_stem(ufunc, inputs, kwargs)
        if stem is not None:
            # `a OP= traced` on a NumPy array `a`: ndarray.__iadd__ calls us with out=(a,).
            refs = inplace._refs_of_out(inputs, kwargs)
            from ._core import context_of
            return inplace.concrete_augmented_assign(context_of(*inputs), stem, inputs, refs)
    if method == "__call__":
        fn = getattr(jnp, name, None)
        if fn is None:
            raise UnsupportedOperationError(f"numpy.{name} is not supported inside a jitted function")
        return fn(*inputs, **kwargs)
    if method == "reduce" and name in _REDUCE_METHODS and len(inputs) == 1:
        kwargs.setdefault("axis", 0)
        return getattr(jnp, _REDUCE_METHODS[name])(inputs[0], **kwargs)
    if method in ("accumulate", "reduce") and len(inputs) == 1:
        from ._cumulative import ufunc_method  # other ufuncs' reduce and every accumulate
        return ufunc_method(ufunc, method, inputs[0], kwargs)
    if method == "outer" and len(inputs) == 2 and hasattr(jnp, name):
        a, b = inputs
        nb = len(jnp.asarray(b).shape)
        return getattr(jnp, name)(jnp.reshape(a, tuple(jnp.asarray(a).shape) + (1,) * nb), b)
    raise UnsupportedOperationError(f"numpy.{name}.{method} is not supported inside a jitted function")

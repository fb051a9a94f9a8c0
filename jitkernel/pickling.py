"""How a jitted function pickles (docs/distributed.md, "Pickling jitted functions").

As Numba's and JAX's jitted functions: a `Jitted` reachable as `module.qualname` (a module-level
`@jk.jit` function, or one in a class body) pickles as that reference, so a worker process
imports the module and gets the module's own jitted function (its compiled code cached there
once per process). Otherwise (defined in `__main__` or a notebook, inside another function, a
lambda, `jk.jit(np.sin)`) it pickles by value: the wrapped function (by cloudpickle where it is
installed, which pickles `__main__` functions, lambdas and closures by value, else by pickle)
plus the jit options; the worker builds a new `Jitted` from them. When neither works, a
`JittedPicklingError` (a `pickle.PicklingError`) says why.

>>> import pickle, jitkernel as jk
>>> from jitkernel.pickling import reference
>>> reference(jk.jit(lambda x: x)) is None  # a lambda: not reachable by name, pickled by value
True
"""
from __future__ import annotations

import importlib
import pickle
import sys
from typing import Any, Callable

from .entry import is_jitted, jit
from .errors import JitError


class JittedPicklingError(JitError, pickle.PicklingError):
    """A jitted function that can be pickled neither by reference nor by value."""


def _lookup(module: Any, qualname: str) -> Any:
    obj = module
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def reference(jitted: Any) -> tuple[str, str] | None:
    """(module, qualified name) under which `jitted` itself is reachable, or None. Only modules
    already imported are looked in: the function's own module is, when the function exists."""
    module_name = getattr(jitted.fun, "__module__", None)
    qualname = jitted.__qualname__
    module = sys.modules.get(module_name) if isinstance(module_name, str) else None
    if module is None or "<locals>" in qualname or "<lambda>" in qualname:
        return None
    try:
        found = _lookup(module, qualname)
    except AttributeError:
        return None
    return (module_name, qualname) if found is jitted else None


def jitted_by_reference(module_name: str, qualname: str) -> Any:
    """The unpickling side of a reference: the module's own jitted function."""
    found = _lookup(importlib.import_module(module_name), qualname)
    if not is_jitted(found):
        raise pickle.UnpicklingError(f"{module_name}.{qualname} is a {type(found).__name__} in this process, "
                                     "not the jitted function that was pickled")
    return found


def jitted_by_value(function_bytes: bytes, options: dict[str, Any]) -> Any:
    """The unpickling side of a pickle by value: a new Jitted of the same function and options."""
    return jit(pickle.loads(function_bytes), **options)


def _function_bytes(fun: Callable[..., Any]) -> tuple[bytes | None, str]:
    """(the wrapped function pickled, or None; why not). cloudpickle first: it pickles functions
    of `__main__`, lambdas and closures by value, where pickle can only name them."""
    errors = []
    try:
        import cloudpickle
    except ImportError:
        errors.append("cloudpickle is not installed")
    else:
        try:
            return cloudpickle.dumps(fun), ""
        except Exception as e:  # noqa: BLE001 - reported in the error below
            errors.append(f"cloudpickle: {type(e).__name__}: {e}")
    try:
        return pickle.dumps(fun), ""
    except Exception as e:  # noqa: BLE001 - reported in the error below
        errors.append(f"pickle: {type(e).__name__}: {e}")
    return None, "; ".join(errors)


def options(jitted: Any) -> dict[str, Any]:
    """The keyword arguments of `Jitted` that rebuild `jitted`'s behaviour (its static arguments
    include the integers a static-int retrace made static: the rebuilt function needs no retrace)."""
    return {"static_argnums": tuple(sorted(jitted.static_argnums)),
            "static_argnames": tuple(sorted(jitted.static_argnames)), "backend": jitted.backend, "fastmath": jitted.fastmath, "name": jitted.__name__,
            "disk_cache": jitted.disk_cache, "autograph": jitted.autograph}


def reduce_jitted(jitted: Any) -> tuple:
    """`Jitted.__reduce__`: by reference where the name reaches it outside `__main__`, else by
    value, else (a `__main__` function without a picklable body) by reference, as pickle names
    a plain `__main__` function; otherwise JittedPicklingError."""
    ref = reference(jitted)
    if ref is not None and ref[0] != "__main__":
        return jitted_by_reference, ref
    payload, why = _function_bytes(jitted.fun)
    if payload is not None:
        return jitted_by_value, (payload, options(jitted))
    if ref is not None:
        return jitted_by_reference, ref
    raise JittedPicklingError(
        f"jitted function {jitted.__qualname__!r} cannot be pickled: it is not reachable by name as "
        f"{getattr(jitted.fun, '__module__', '?')}.{jitted.__qualname__} (define it at module level of an importable "
        f"module to pickle it by reference), and its function cannot be pickled by value ({why})")

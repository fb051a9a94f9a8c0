"""jitkernel.array_api with every function run through `jk.jit`: the namespace the conformance
harness (benchmarks/array_api_conformance.py) hands the array-api-tests suite.

Each call traces the function with its NumPy-array arguments (found anywhere in the positional
and keyword arguments, lists and tuples included) as traced inputs and everything else static,
compiles it for the chosen backend and returns NumPy arrays (a 0-d result as a 0-d array, as
the standard's functions return arrays). Functions about dtypes and the inspection object are
not array computations and are called directly.

>>> import numpy as np
>>> xp = namespace("interpret")
>>> xp.sum(xp.asarray([1, 2, 3], dtype=xp.int32)).dtype
dtype('int64')
"""
from __future__ import annotations

import functools
import types
from typing import Any, Callable

import numpy as np

import jitkernel as jk
from jitkernel import array_api

_NOT_TRACED = {"can_cast", "finfo", "iinfo", "isdtype", "result_type", "__array_namespace_info__"}


class _Slot:
    """Where the i-th traced array sits in a call's static argument template."""

    def __init__(self, i: int) -> None:
        self.i = i

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Slot) and other.i == self.i

    def __hash__(self) -> int:
        return hash(("slot", self.i))


def _template(value: Any, arrays: list) -> Any:
    """`value` with each NumPy array replaced by a _Slot (hashable where the statics are)."""
    if isinstance(value, (np.ndarray, np.generic)) and not isinstance(value, np.dtype):
        arrays.append(np.asarray(value))
        return _Slot(len(arrays) - 1)
    if isinstance(value, list):
        return ("__list__", tuple(_template(v, arrays) for v in value))
    if isinstance(value, tuple):
        return tuple(_template(v, arrays) for v in value)
    return value


def _fill(template: Any, arrays: tuple) -> Any:
    if isinstance(template, _Slot):
        return arrays[template.i]
    if isinstance(template, tuple) and len(template) == 2 and template[0] == "__list__":
        return [_fill(v, arrays) for v in template[1]]
    if isinstance(template, tuple):
        return tuple(_fill(v, arrays) for v in template)
    return template


def _as_arrays(result: Any) -> Any:
    if isinstance(result, np.generic):
        return np.asarray(result)
    if isinstance(result, tuple) and hasattr(result, "_fields"):
        return type(result)(*(_as_arrays(r) for r in result))
    if isinstance(result, (list, tuple)):
        return type(result)(_as_arrays(r) for r in result)
    return result


def _jitted(fn: Callable[..., Any], backend: str) -> Callable[..., Any]:
    def traced(template: Any, *arrays: Any) -> Any:
        args, kwargs = _fill(template, arrays)
        return fn(*args, **dict(kwargs))

    compiled = jk.jit(traced, static_argnums=0, backend=backend)

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        arrays: list = []
        template = (_template(args, arrays), tuple(sorted((k, _template(v, arrays)) for k, v in kwargs.items())))
        try:
            hash(template)
        except TypeError:  # an unhashable static argument: trace this call alone
            return _as_arrays(jk.jit(lambda *a: traced(template, *a), backend=backend)(*arrays))
        return _as_arrays(compiled(template, *arrays))
    return call


def _wrapped_module(name: str, source: types.ModuleType, backend: str) -> types.ModuleType:
    module = types.ModuleType(name)
    for attr in source.__all__:
        value = getattr(source, attr)
        if callable(value) and not isinstance(value, (type, np.dtype, types.ModuleType)) and attr not in _NOT_TRACED:
            value = _jitted(value, backend)
        setattr(module, attr, value)
    module.__all__ = list(source.__all__)
    return module


def namespace(backend: str = "cpu") -> types.ModuleType:
    """jitkernel.array_api, each array function compiled by jk.jit(backend=backend) per call signature."""
    xp = _wrapped_module(f"jitkernel.array_api[jit:{backend}]", array_api, backend)
    xp.linalg = _wrapped_module(f"{xp.__name__}.linalg", array_api.linalg, backend)
    xp.fft = _wrapped_module(f"{xp.__name__}.fft", array_api.fft, backend)
    return xp

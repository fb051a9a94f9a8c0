"""A first line for the commonest newcomer error: a Python list (or tuple) of numbers passed
where the function expects an array.

A list argument is a pytree, traced as separate Python scalars (as in JAX), so `x.sum()` on it
is an AttributeError and `np.sum(x)` a TracerArrayConversionError whose detail does not say
what to do. When a call fails that way and one of its arguments is a list or tuple of numbers,
the exception's message gets a first line naming the argument and the fix; the original message
follows unchanged.

>>> import numpy as np, jitkernel as jk
>>> try:
...     jk.jit(lambda x: x.sum())([1, 2, 3])
... except AttributeError as e:
...     print(str(e).splitlines()[0])
jitted functions take arrays, not Python lists: pass np.asarray(x)
"""
from __future__ import annotations

import inspect
import numbers
from typing import Any, Callable

import numpy as np
from ..errors import TracerArrayConversionError

HINT_START = "jitted functions take arrays, not Python "


def _is_number_sequence(value: Any) -> bool:
    """A non-empty list or tuple whose leaves (nested lists and tuples included) are numbers."""
    if not isinstance(value, (list, tuple)) or not value:
        return False
    return all(_is_number_sequence(v) if isinstance(v, (list, tuple))
               else isinstance(v, (numbers.Number, np.generic)) for v in value)


def _sequence_argument(fun: Callable[..., Any], args: tuple, kwargs: dict) -> tuple[str, str] | None:
    """(parameter name, "list" or "tuple") of the first argument that is a sequence of numbers."""
    try:
        bound = inspect.signature(fun).bind_partial(*args, **kwargs).arguments
    except (TypeError, ValueError):
        bound = {f"argument {i}": a for i, a in enumerate(args)} | kwargs
    for name, value in bound.items():
        if _is_number_sequence(value):
            return name, type(value).__name__
        if isinstance(value, tuple) and not isinstance(value, list):  # *args
            for v in value:
                if _is_number_sequence(v):
                    return name, type(v).__name__
    return None


def _about_a_sequence(error: BaseException) -> bool:
    """Whether `error` is about a list/tuple argument used as an array: an attribute missing on
    the list or tuple itself (`x.sum()`), or NumPy converting its traced scalars to an array
    (`np.sum(x)`)."""
    if isinstance(error, AttributeError):
        return isinstance(getattr(error, "obj", None), (list, tuple))
    return isinstance(error, TracerArrayConversionError) and "Python scalar argument" in str(error)


def add_sequence_hint(error: BaseException, fun: Callable[..., Any], args: tuple, kwargs: dict) -> None:
    """Put the hint line first in `error`'s message when the error is about a list/tuple-of-numbers
    argument used as an array; other errors are left alone."""
    if not error.args or not _about_a_sequence(error):
        return
    message = error.args[0]
    if not isinstance(message, str) or message.startswith(HINT_START) or str(error) != message:
        return
    found = _sequence_argument(fun, args, kwargs)
    if found is None:
        return
    name, kind = found
    obj = getattr(error, "obj", None)
    if isinstance(obj, (list, tuple)):  # the sequence the attribute was missing on
        name, kind = getattr(obj, "_jk_name", name), "list" if isinstance(obj, list) else "tuple"
    error.args = (f"{HINT_START}{kind}s: pass np.asarray({name})\n{message}", *error.args[1:])

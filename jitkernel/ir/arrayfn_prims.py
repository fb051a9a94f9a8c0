"""Library primitives of the array functions (numpy/_manipulation.py, numpy/_statistics.py).

- `take_static(x, indices)`: `np.take(x, indices, axis)` for an index vector known at trace time
  (a constant input): the gather behind `np.repeat` with per-element counts and `np.delete`
  when their source indices do not form a few slices.
- `raise_if(value, bad)`: returns `value` and raises `exception(message)` when the bool 0-d
  `bad` is true: the run-time checks NumPy makes on data (`np.average`: "Weights sum to zero").
  It is a library step, so it runs where the interpreter runs it, after its inputs exist. A
  `{int}` in the message is replaced by the integer the 0-d `value` holds (`check_message`), for
  NumPy's messages that name the value ("Python integer 300 out of bounds for uint8").
"""
from __future__ import annotations

import builtins

import numpy as np

from .primitives import Primitive, register
from .types import AType


def _take_rule(in_avals: list[AType], *, axis: int) -> list[AType]:
    x, idx = in_avals
    if idx.dtype.kind not in "iu" or len(idx.shape) != 1:
        raise TypeError("take_static: indices must be a 1-d integer array")
    return [AType(x.shape[:axis] + idx.shape + x.shape[axis + 1:], x.dtype)]


def _take_impl(x: np.ndarray, idx: np.ndarray, *, axis: int) -> list[np.ndarray]:
    return [np.asarray(np.take(x, idx, axis=axis), order="C")]


register(Primitive("take_static", "library", _take_rule, _take_impl))


def _raise_if_rule(in_avals: list[AType], *, exception: str, message: str) -> list[AType]:
    if in_avals[1].shape != () or in_avals[1].dtype != np.bool_:
        raise TypeError("raise_if: the condition must be a bool 0-d value")
    return [in_avals[0]]


def check_message(message: str, value: np.ndarray) -> str:
    """The message of a failed `raise_if`, its `{int}` replaced by the value's integer (a
    batched value has several: the placeholder is dropped then)."""
    if "{int}" not in message:
        return message
    value = np.asarray(value)
    return message.replace("{int}", str(int(value.reshape(-1)[0])) if value.size == 1 else "value")


def _raise_if_impl(value: np.ndarray, bad: np.ndarray, *, exception: str, message: str) -> list[np.ndarray]:
    if bool(bad):
        raise getattr(builtins, exception)(check_message(message, value))
    return [np.array(value, copy=True)]


register(Primitive("raise_if", "library", _raise_if_rule, _raise_if_impl))

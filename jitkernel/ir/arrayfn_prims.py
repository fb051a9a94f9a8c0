"""Library primitives of the array functions (numpy/_manipulation.py, numpy/_statistics.py).

- `take_static(x, indices)`: `np.take(x, indices, axis)` for an index vector known at trace time
  (a constant input): the gather behind `np.repeat` with per-element counts and `np.delete`
  when their source indices do not form a few slices.
- `raise_if(value, bad)`: returns `value` and raises `exception(message)` when the bool 0-d
  `bad` is true: the run-time checks NumPy makes on data (`np.average`: "Weights sum to zero").
  It is a library step, so it runs where the interpreter runs it, after its inputs exist. The
  exception `NUMPY_STORE` (message "<dtype>:float" or "<dtype>:int") raises what NumPy raises
  when it stores the 0-d `value` as a Python float or int into an array of that dtype: NumPy's
  own exception and message ("Python integer 300 out of bounds for uint8"; trace/scalar_store.py).
  The exception `ERROR_CODE` raises the check that the int32 0-d `value` numbers, from the table
  in the message (`error_code_message`): the error code of a loop or branch, whose checks could
  not be raise_if steps inside it (trace/pending_checks.py).
"""
from __future__ import annotations

import builtins
import json

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


register(Primitive("take_static", "library", _take_rule, _take_impl, checks_data=True))


def _raise_if_rule(in_avals: list[AType], *, exception: str, message: str) -> list[AType]:
    if in_avals[1].shape != () or in_avals[1].dtype != np.bool_:
        raise TypeError("raise_if: the condition must be a bool 0-d value")
    return [in_avals[0]]


NUMPY_STORE = "NumPyStore"  # raise_if's exception: what NumPy's setitem raises for the value
ERROR_CODE = "ErrorCode"  # raise_if's exception: the check numbered by the value, from the message's table


def error_code_message(sites: dict[int, tuple[str, str]]) -> str:
    """raise_if's message for ERROR_CODE: check number -> (exception, message)."""
    return json.dumps({str(k): list(v) for k, v in sorted(sites.items())})


def error_code_sites(message: str) -> dict[int, tuple[str, str]]:
    return {int(k): (e, m) for k, (e, m) in json.loads(message).items()}


def check_error(exception: str, message: str, value: np.ndarray) -> Exception:
    """The exception a failed `raise_if` raises (every backend: the interpreter, the CPU library
    step, the CUDA check step)."""
    if exception == ERROR_CODE:
        code = int(np.asarray(value).reshape(-1)[0])
        exc, text = error_code_sites(message)[code]
        return getattr(builtins, exc)(text)
    if exception != NUMPY_STORE:
        return getattr(builtins, exception)(message)
    dtype, kind = message.split(":")
    first = np.asarray(value).reshape(-1)[0]  # (a batched value: the first one)
    try:
        np.empty((), dtype)[()] = float(first) if kind == "float" else int(first)
    except (OverflowError, ValueError, TypeError) as e:
        return e.with_traceback(None)
    return OverflowError(f"a value does not fit {dtype}")


def _raise_if_impl(value: np.ndarray, bad: np.ndarray, *, exception: str, message: str) -> list[np.ndarray]:
    if bool(bad):
        raise check_error(exception, message, value)
    return [np.array(value, copy=True)]


# NumPy (and Python: range() with a zero step) raises even when the checked value is never read:
# dead-code elimination keeps the check, in sub-programs too (ir/program.py may_raise).
register(Primitive("raise_if", "library", _raise_if_rule, _raise_if_impl, unread="step"))

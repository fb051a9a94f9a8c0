"""The standard's dtype objects and data type functions (astype, can_cast, finfo, iinfo, isdtype,
result_type), on NumPy's dtypes. Each takes an array (traced or not) wherever it takes a dtype.

>>> import numpy as np
>>> isdtype(float32, "real floating"), result_type(int8, 1), can_cast(int8, int16)
(True, dtype('int8'), True)
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..numpy import astype as _astype
from ._device import check_device

bool = np.dtype(np.bool_)  # noqa: A001 - the standard's name
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float32, float64 = np.dtype(np.float32), np.dtype(np.float64)
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

DTYPES = {"bool": bool, "int8": int8, "int16": int16, "int32": int32, "int64": int64, "uint8": uint8,
          "uint16": uint16, "uint32": uint32, "uint64": uint64, "float32": float32, "float64": float64,
          "complex64": complex64, "complex128": complex128}


def _dtype_of(x: Any) -> Any:
    """An array's dtype, or `x` itself where it already names one."""
    return x.dtype if hasattr(x, "dtype") and not isinstance(x, np.dtype) else x


def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    """`x` cast to `dtype` (the standard's casting: NumPy's `astype`, unsafe casts included)."""
    check_device(device)
    return _astype(x, dtype, copy=copy)


def can_cast(from_: Any, to: Any, /) -> bool:
    """Whether `from_` (a dtype or an array) promotes to `to` under the standard's rules."""
    return np.can_cast(_dtype_of(from_), to)


class FinfoResult(NamedTuple):
    """The standard's finfo object: Python floats, where NumPy's finfo holds NumPy scalars."""
    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype


def finfo(type: Any, /) -> FinfoResult:  # noqa: A002 - the standard's parameter name
    """Machine limits of a floating (real or complex) dtype or array."""
    info = np.finfo(_dtype_of(type))
    return FinfoResult(int(info.bits), float(info.eps), float(info.max), float(info.min),
                       float(info.smallest_normal), info.dtype)


def iinfo(type: Any, /) -> Any:  # noqa: A002
    """NumPy's iinfo for an integer dtype or array."""
    return np.iinfo(_dtype_of(type))


def isdtype(dtype: Any, kind: Any) -> bool:
    """Whether `dtype` is of `kind` (a dtype, a kind name such as "integral", or a tuple of them)."""
    return np.isdtype(dtype, kind)


def result_type(*arrays_and_dtypes: Any) -> Any:
    """The promoted dtype of arrays, dtypes and Python scalars (scalars are weak, as in NEP 50)."""
    return np.result_type(*(_dtype_of(a) for a in arrays_and_dtypes))


FUNCTIONS = {f.__name__: f for f in (astype, can_cast, finfo, iinfo, isdtype, result_type)}

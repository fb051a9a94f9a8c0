"""Abstract array types: a shape and a dtype. The only type information the IR carries."""
from __future__ import annotations

import math

from dataclasses import dataclass

import numpy as np

from .symdim import SymDim, max_dim

# Every dtype the engine compiles. Order matters only for printing.
SUPPORTED_DTYPES: tuple[np.dtype, ...] = tuple(
    np.dtype(n)
    for n in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float16", "float32", "float64", "complex64", "complex128")
)
_SUPPORTED = frozenset(SUPPORTED_DTYPES)


def check_dtype(dtype: object, what: str = "array") -> np.dtype:
    """Return `dtype` as np.dtype in native byte order, or raise TypeError naming it if the
    engine cannot compile it. Kernels compute in native order: a '>f8' request computes float64,
    and the places where NumPy gives a result the requested order record it (trace/context.py
    `request_byteorder`)."""
    dt = np.dtype(dtype)
    if not dt.isnative and dt.kind in "biufc":
        dt = dt.newbyteorder("=")
    if dt not in _SUPPORTED:
        kind = {"O": "object", "U": "str", "S": "bytes", "c": "complex", "M": "datetime",
                "m": "timedelta", "V": "structured"}.get(dt.kind, dt.kind)
        raise TypeError(
            f"jitkernel does not support dtype {dt} ({kind}) for {what}; supported dtypes are "
            + ", ".join(str(d) for d in SUPPORTED_DTYPES))
    return dt


def check_ufunc_dtype(dtype: object, what: str) -> np.dtype:
    """check_dtype for a ufunc's `dtype=` (reductions, accumulations): NumPy refuses a byte order
    there ("only select the general DType"), with TypeError, and so does jitkernel."""
    dt = np.dtype(dtype)
    if not dt.isnative:
        raise TypeError(f"{what}: the dtype= of a ufunc selects only the general DType, not the byte order "
                        f"({dt.str!r}); pass np.{dt.newbyteorder('=').name} or its string name, as NumPy requires")
    return check_dtype(dt, what)


def short_dtype(dt: np.dtype) -> str:
    """Compact dtype name used by the printer: f32, i64, u8, bool, c64 (complex64)."""
    if dt.kind == "b":
        return "bool"
    return {"f": "f", "i": "i", "u": "u", "c": "c"}[dt.kind] + str(dt.itemsize * 8)


@dataclass(frozen=True)
class AType:
    """The abstract value of an array: its shape and dtype. A dimension is an int or, inside
    a traced program, a `SymDim` (ir/symdim.py): a length known only at run time."""

    shape: tuple  # of int | SymDim
    dtype: np.dtype

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape",
                           tuple(d if isinstance(d, SymDim) else int(d) for d in self.shape))
        object.__setattr__(self, "dtype", np.dtype(self.dtype))

    @property
    def is_symbolic(self) -> bool:
        return any(isinstance(d, SymDim) for d in self.shape)

    @property
    def max_shape(self) -> tuple[int, ...]:
        """The shape at the largest value of every symbolic dimension (its buffer's shape)."""
        return tuple(max_dim(d) for d in self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)  # exact Python ints; np.prod cost ~5 us on every query

    def __str__(self) -> str:
        return f"{short_dtype(self.dtype)}[{','.join(map(str, self.shape))}]"


# NumPy's largest array in bytes (npy_intp); NumPy describes no array past it, views included.
MAX_NBYTES = int(np.iinfo(np.intp).max)


def check_nbytes(aval: AType) -> None:
    """Raise NumPy's ValueError for a length past npy_intp, or for an array whose nonzero lengths
    times its itemsize overflow npy_intp (NumPy's PyArray_NewFromDescr refuses it even with a zero
    length elsewhere, before any allocation). Inside jit the check runs on every traced result:
    without it a program of such a shape would go on to the backends, whose work estimates and
    buffers assume sizes fit (the CPU backend's chunking ran out of memory on `np.ones(2**62)`).
    Symbolic lengths are bounded by real arrays, so only static shapes are checked."""
    if any(not isinstance(d, SymDim) and d > MAX_NBYTES for d in aval.shape):
        raise ValueError("Maximum allowed dimension exceeded")  # NumPy's shape converter, checked first
    nbytes = aval.dtype.itemsize
    for d in aval.shape:
        if isinstance(d, SymDim):
            return
        if d:
            nbytes *= d
    if nbytes > MAX_NBYTES:
        raise ValueError("array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum possible size.")

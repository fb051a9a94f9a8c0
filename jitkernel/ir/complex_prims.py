"""Primitives of complex numbers (docs/architecture.md "Complex numbers").

The graph IR keeps complex values: every complex ufunc is NumPy's own loop (the interpreter's
reference), and these add what NumPy spells without a ufunc:

- `real`, `imag` (complex -> its component float dtype), `make_complex` (two float parts ->
  complex, bit for bit) and `conjugate` (NumPy's ufunc, which the base registry does not list);
- for compiled backends, after `passes/complex_lower.py` has rewritten complex values into
  (real, imag) float pairs: `fma` (NumPy's complex multiply, square and absolute are computed
  with fused multiply-adds on this CPU), and the library step `complex_library`, which runs any
  complex primitive the lowering does not expand (transcendental functions with their C99
  Annex G special cases, sums, products, max/min reductions, argmax, matmul) through NumPy
  itself, on complex arrays packed as float (..., 2) arrays (views, no copies).
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from .primitives import Primitive, _elementwise_impl, _elementwise_rule, evaluate, infer_avals, register
from .types import AType

_COMPONENT = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}
_COMPLEX = {f: c for c, f in _COMPONENT.items()}


def component_dtype(dt: np.dtype) -> np.dtype:
    """float32 for complex64, float64 for complex128."""
    return _COMPONENT[np.dtype(dt)]


def complex_dtype(dt: np.dtype) -> np.dtype:
    """complex64 for float32, complex128 for float64."""
    return _COMPLEX[np.dtype(dt)]


def is_complex(dt: np.dtype) -> bool:
    return np.dtype(dt).kind == "c"


def _part_rule(name: str):
    def rule(in_avals: list[AType]) -> list[AType]:
        (x,) = in_avals
        if not is_complex(x.dtype):
            raise TypeError(f"{name} needs a complex operand, got {x.dtype}")
        return [AType(x.shape, component_dtype(x.dtype))]
    return rule


def _make_complex_rule(in_avals: list[AType]) -> list[AType]:
    re, im = in_avals
    if re.dtype != im.dtype or re.dtype not in _COMPLEX or re.shape != im.shape:
        raise TypeError(f"make_complex needs two float32 or float64 parts of one shape, got {re}, {im}")
    return [AType(re.shape, complex_dtype(re.dtype))]


def make_complex_array(re: np.ndarray, im: np.ndarray) -> np.ndarray:
    """The complex array with these parts, bit for bit (`re + 1j * im` would turn an infinite
    imaginary part into a NaN real part)."""
    out = np.empty(np.shape(re), complex_dtype(np.asarray(re).dtype))
    out.real, out.imag = re, im
    return out


def _fma_rule(in_avals: list[AType]) -> list[AType]:
    a, b, c = in_avals
    if not (a.dtype == b.dtype == c.dtype) or a.dtype not in _COMPLEX or not (a.shape == b.shape == c.shape):
        raise TypeError(f"fma needs three float32 or float64 operands of one shape, got {a}, {b}, {c}")
    return [a]


def _fma_impl(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> list[np.ndarray]:
    """a * b + c rounded once (the reference; compiled code uses llvm.fma). float32 products
    are exact in float64; float64 ones are computed exactly with fractions (slow, reference
    only: the interpreter never meets fma, which exists only after complex lowering)."""
    dt = np.asarray(a).dtype
    with np.errstate(all="ignore"):
        out = np.array(a * b + c, dtype=dt)  # right for infinities and NaNs
    flat = out.reshape(-1)
    for k, (x, y, z) in enumerate(zip(np.ravel(a), np.ravel(b), np.ravel(c))):
        if np.isfinite(x) and np.isfinite(y) and np.isfinite(z):
            exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
            flat[k] = _to_float(exact) if dt == np.float64 else _round_fraction_f32(exact)
    return [np.asarray(out)]


def _to_float(value: Fraction) -> float:
    try:
        return float(value)
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")


def _round_fraction_f32(value: Fraction) -> np.float32:
    """A fraction rounded to nearest float32 (no double rounding through float64)."""
    with np.errstate(over="ignore"):
        lo = np.float32(_to_float(value))
    if not np.isfinite(lo):
        return lo
    candidates = [lo, np.nextafter(lo, np.float32(np.inf)), np.nextafter(lo, np.float32(-np.inf))]
    finite = [c for c in candidates if np.isfinite(c)]
    if not finite:
        return lo
    best = min(finite, key=lambda c: (abs(Fraction(float(c)) - value), int(np.float32(c).view(np.uint32)) & 1))
    return np.float32(best)


# -- packed complex arrays ----------------------------------------------------------------------
# Where a compiled program needs a complex value in memory (its arguments and results, the
# operands of library steps) it holds it as a float array of shape (..., 2): the complex array's
# own bytes, so packing and unpacking at the boundary are views, never copies.

def packed_aval(aval: AType) -> AType:
    """f64[..., 2] for c128[...]."""
    return AType(tuple(aval.shape) + (2,), component_dtype(aval.dtype))


def unpacked_aval(aval: AType) -> AType:
    """c128[...] for f64[..., 2]."""
    return AType(tuple(aval.shape[:-1]), complex_dtype(aval.dtype))


def as_complex(a: np.ndarray) -> np.ndarray:
    """The complex view of a packed C-contiguous float array (..., 2)."""
    return a.view(complex_dtype(a.dtype))[..., 0]


def as_packed(z: np.ndarray) -> np.ndarray:
    """The packed float (..., 2) view of a complex array (a C-ordered copy first if needed)."""
    # Not np.ascontiguousarray: it makes a 0-d result (a complex sum) 1-d, which would pack as
    # (1, 2) instead of (2,).
    z = np.asarray(z, order="C")
    return z.reshape(-1).view(component_dtype(z.dtype)).reshape(tuple(z.shape) + (2,))


# -- complex_library: a complex primitive run by NumPy on packed operands ----------------------
# Params hold no shapes (the buffers do), so a program with such a step stays shape-generic.

def _library_rule(in_avals: list[AType], *, prim: str, prim_params: tuple, in_layout: tuple) -> list[AType]:
    originals = [unpacked_aval(a) if packed else a for a, packed in zip(in_avals, in_layout)]
    return [packed_aval(a) if is_complex(a.dtype) else a
            for a in infer_avals(prim, originals, dict(prim_params))]


def _library_impl(*arrays: np.ndarray, prim: str, prim_params: tuple, in_layout: tuple) -> list[np.ndarray]:
    """View the packed operands (`in_layout`: True) as complex arrays, run the primitive's
    reference implementation (NumPy's complex loops) and return complex results packed."""
    args = [as_complex(a) if packed else a for a, packed in zip(arrays, in_layout)]
    return [as_packed(r) if is_complex(np.asarray(r).dtype) else r for r in evaluate(prim, args, dict(prim_params))]


register(Primitive("real", "elementwise", _part_rule("real"), lambda x: [np.asarray(np.real(x), order="C")]))
register(Primitive("imag", "elementwise", _part_rule("imag"), lambda x: [np.asarray(np.imag(x), order="C")]))
register(Primitive("make_complex", "elementwise", _make_complex_rule,
                   lambda re, im: [make_complex_array(re, im)]))
register(Primitive("conjugate", "elementwise", _elementwise_rule(np.conjugate),
                   _elementwise_impl(np.conjugate), np.conjugate))
register(Primitive("fma", "elementwise", _fma_rule, _fma_impl))
register(Primitive("complex_library", "library", _library_rule, _library_impl))


def library_params(prim: str, params: dict[str, Any], in_layout: tuple) -> dict[str, Any]:
    """The params of a `complex_library` equation running `prim(**params)`."""
    return {"prim": prim, "prim_params": tuple(sorted(params.items())), "in_layout": in_layout}

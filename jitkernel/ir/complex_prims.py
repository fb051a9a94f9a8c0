"""Primitives of complex numbers (docs/architecture.md "Complex numbers").

The graph IR keeps complex values: every complex ufunc is NumPy's own loop (the interpreter's
reference), and these add what NumPy spells without a ufunc:

- `real`, `imag` (complex -> its component float dtype), `make_complex` (two floats -> complex),
  `conjugate` (NumPy's ufunc, which the base registry does not list);
- for compiled backends, after `passes/complex_lower.py` has rewritten complex values into
  (real, imag) float pairs: `fma` (NumPy's complex multiply, square and absolute are computed
  with fused multiply-adds on this CPU), and three library steps: `complex_split` and
  `complex_join` at the program's boundary, and `complex_library`, which runs any complex
  primitive the lowering does not expand (transcendental functions with their C99 Annex G
  special cases, products, max/min reductions, argmax, matmul) through NumPy itself.
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


def _split_rule(in_avals: list[AType]) -> list[AType]:
    (x,) = in_avals
    part = AType(x.shape, component_dtype(x.dtype))
    return [part, part]


def _split_impl(x: np.ndarray) -> list[np.ndarray]:
    return [np.array(x.real, order="C"), np.array(x.imag, order="C")]  # 0-d stays 0-d


def _join_impl(re: np.ndarray, im: np.ndarray) -> list[np.ndarray]:
    return [make_complex_array(re, im)]


# -- complex_library: a complex primitive run by NumPy on (real, imag) pairs -------------------
# Params hold no shapes (the buffers do), so a program with such a step stays shape-generic.

def _original_avals(in_avals: list[AType], in_layout: tuple) -> list[AType]:
    avals, k = [], 0
    for paired in in_layout:
        if paired:
            avals.append(AType(in_avals[k].shape, complex_dtype(in_avals[k].dtype)))
            k += 2
        else:
            avals.append(in_avals[k])
            k += 1
    return avals


def _split_avals(avals: list[AType]) -> list[AType]:
    out = []
    for aval in avals:
        if is_complex(aval.dtype):
            part = AType(aval.shape, component_dtype(aval.dtype))
            out += [part, part]
        else:
            out.append(aval)
    return out


def _library_rule(in_avals: list[AType], *, prim: str, prim_params: tuple, in_layout: tuple) -> list[AType]:
    return _split_avals(infer_avals(prim, _original_avals(in_avals, in_layout), dict(prim_params)))


def _library_impl(*arrays: np.ndarray, prim: str, prim_params: tuple, in_layout: tuple) -> list[np.ndarray]:
    """Rebuild the complex operands from their pairs (`in_layout`: True for a pair), run the
    primitive's reference implementation (NumPy's complex loops) and split its results."""
    args, k = [], 0
    for paired in in_layout:
        if paired:
            args.append(make_complex_array(arrays[k], arrays[k + 1]))
            k += 2
        else:
            args.append(arrays[k])
            k += 1
    out: list[np.ndarray] = []
    for r in evaluate(prim, args, dict(prim_params)):
        r = np.asarray(r)
        out += _split_impl(r) if is_complex(r.dtype) else [r]
    return out


register(Primitive("real", "elementwise", _part_rule("real"), lambda x: [np.ascontiguousarray(np.real(x))]))
register(Primitive("imag", "elementwise", _part_rule("imag"), lambda x: [np.ascontiguousarray(np.imag(x))]))
register(Primitive("make_complex", "elementwise", _make_complex_rule,
                   lambda re, im: [make_complex_array(re, im)]))
register(Primitive("conjugate", "elementwise", _elementwise_rule(np.conjugate),
                   _elementwise_impl(np.conjugate), np.conjugate))
register(Primitive("fma", "elementwise", _fma_rule, _fma_impl))
register(Primitive("complex_split", "library", _split_rule, _split_impl))
register(Primitive("complex_join", "library", lambda in_avals: _make_complex_rule(in_avals), _join_impl))
register(Primitive("complex_library", "library", _library_rule, _library_impl))


def library_params(prim: str, params: dict[str, Any], in_layout: tuple) -> dict[str, Any]:
    """The params of a `complex_library` equation running `prim(**params)`."""
    return {"prim": prim, "prim_params": tuple(sorted(params.items())), "in_layout": in_layout}

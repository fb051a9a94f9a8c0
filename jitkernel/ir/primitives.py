"""The primitive registry: one registration per primitive, holding its shape/dtype rule and its
NumPy reference implementation (the oracle of every test and the `interpret` backend).

Transformation and lowering rules live in their own modules, keyed by primitive name.
Elementwise primitives are NumPy ufuncs applied to inputs that already have the dtypes of the
ufunc's inner loop (tracing inserts the casts), so NumPy's own loop table is the dtype rule.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .semantics import float_to_int_plan
from .symdim import SymDim, reshape_axis_map
from .types import AType, check_nbytes

ShapeRule = Callable[..., list[AType]]
Impl = Callable[..., list[np.ndarray]]


@dataclass(frozen=True)
class Primitive:
    """One primitive, declared once: its shape/dtype rule, its NumPy reference implementation and
    its properties. Layers read the properties instead of keeping lists of names; rules of their
    own (differentiation, batching, Dask, lowering) are registered against the name by the layer."""

    name: str
    kind: str  # "elementwise" | "movement" | "reduce" | "library" | "creation" | "structural"
    shape_rule: ShapeRule  # (in_avals, **params) -> out avals
    impl: Impl  # (*arrays, **params) -> out arrays
    ufunc: np.ufunc | None = None
    # How NumPy's error of an unread result is kept (NumPy evaluates every statement: `unused =
    # x[i]` raises): "step" (dead-code elimination keeps the equation), "output" (the trace keeps
    # its value as a hidden output, trace/__init__.py), None: its run never raises on the data.
    unread: str | None = None
    # Its run can raise on some data even though its result is not kept when unread (an update
    # whose target index is checked when it is applied): not hoisted out of a loop that may run
    # zero times, not run on an example that would not run it under vmap.
    checks_data: bool = False
    # An element costs several simple operations (a libm call, a division): fusion recomputes
    # such a value in each consumer only up to a limit (fusion/schedule.py RECOMPUTE_LIMIT).
    expensive: bool = False
    # It runs for what it does, not for its result (jk.debug.print, ir/debug_prims.py): every
    # equation runs, in program order, so common-subexpression elimination never merges two
    # equal ones (dead-code elimination keeps it through `unread="step"`).
    effect: bool = False

    @property
    def may_raise(self) -> bool:
        """Whether running it on some data raises NumPy's error (an index out of bounds, a
        singular matrix, a failed run-time check). Integer `power` with a negative exponent
        raises too, which depends on the dtype (`raises_on_data`)."""
        return self.unread is not None or self.checks_data


PRIMITIVES: dict[str, Primitive] = {}


def register(prim: Primitive) -> Primitive:
    if prim.name in PRIMITIVES:
        raise ValueError(f"primitive {prim.name!r} registered twice")
    PRIMITIVES[prim.name] = prim
    return prim


def get(name: str) -> Primitive:
    return PRIMITIVES[name]


def infer_avals(name: str, in_avals: Sequence[AType], params: dict[str, Any]) -> list[AType]:
    """The result types of `name` on these inputs; an array NumPy could not describe (its bytes
    overflow npy_intp) raises NumPy's ValueError here, at the trace."""
    out = PRIMITIVES[name].shape_rule(list(in_avals), **params)
    for aval in out:
        check_nbytes(aval)
    return out


def raises_on_data(prim: str, out_avals: Sequence[AType]) -> bool:
    """Whether an equation of `prim` with these results can raise on some data: the primitive
    may raise, or it is an integer `power` (a negative exponent is NumPy's ValueError)."""
    return PRIMITIVES[prim].may_raise or (prim == "power" and out_avals[0].dtype.kind in "iu")


def evaluate(name: str, arrays: Sequence[np.ndarray], params: dict[str, Any]) -> list[np.ndarray]:
    """Run the reference implementation; results are arrays with exactly the inferred avals."""
    with np.errstate(all="ignore"):
        return PRIMITIVES[name].impl(*arrays, **params)


# ----------------------------------------------------------------------------- elementwise

UNARY_UFUNCS = (
    "negative", "absolute", "sign", "sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log1p",
    "log2", "log10", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
    "arcsinh", "arccosh", "arctanh", "floor", "ceil", "trunc", "rint", "logical_not", "invert",
    "isnan", "isinf", "isfinite", "signbit", "square", "reciprocal",
)
BINARY_UFUNCS = (
    "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "fmod", "power",
    "maximum", "minimum", "fmax", "fmin", "arctan2", "hypot", "copysign", "equal", "not_equal",
    "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
    "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
)


def ufunc_loop(ufunc: np.ufunc, in_types: Sequence[object]) -> tuple[tuple[np.dtype, ...], tuple[np.dtype, ...]]:
    """NumPy's inner-loop dtypes for `ufunc` called on `in_types` (dtypes, or the Python types
    int/float/bool for weak scalars, NEP 50). Raises NumPy's own TypeError when no loop exists."""
    # resolve_dtypes takes only int/float/complex as weak types; a Python bool is NumPy's bool.
    in_types = tuple(np.dtype(np.bool_) if t is bool else t for t in in_types)
    loop = ufunc.resolve_dtypes(in_types + (None,) * ufunc.nout)
    return tuple(loop[: ufunc.nin]), tuple(loop[ufunc.nin:])


def _elementwise_rule(ufunc: np.ufunc) -> ShapeRule:
    def rule(in_avals: list[AType]) -> list[AType]:
        if len(in_avals) != ufunc.nin:
            raise TypeError(f"{ufunc.__name__} takes {ufunc.nin} inputs, got {len(in_avals)}")
        shape = in_avals[0].shape
        if any(a.shape != shape for a in in_avals):
            raise ValueError(f"{ufunc.__name__}: operand shapes differ: " + ", ".join(str(a.shape) for a in in_avals))
        ins, outs = ufunc_loop(ufunc, [a.dtype for a in in_avals])
        if tuple(a.dtype for a in in_avals) != ins:
            raise TypeError(f"{ufunc.__name__}: inputs {[str(a.dtype) for a in in_avals]} are not a loop of the ufunc ({[str(d) for d in ins]})")
        return [AType(shape, d) for d in outs]
    return rule


def _elementwise_impl(ufunc: np.ufunc) -> Impl:
    def impl(*xs: np.ndarray) -> list[np.ndarray]:
        out = ufunc(*xs)
        return [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))]
    return impl


def _power_impl(x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    """The power primitive is pow for every element. NumPy's float loop computes an exponent
    of stride 0 (a 0-d or broadcast one) with sqrt / x * x / 1 / x instead; tracing decides
    those fast paths (numpy/_ufuncs.power), so give the loop a real exponent stride here."""
    out = np.power(np.array(x, copy=True).reshape(-1), np.array(y, copy=True).reshape(-1))
    return [np.asarray(out.reshape(np.shape(x)))]


# Elementwise primitives whose element is a libm call or a division (Primitive.expensive).
_EXPENSIVE_UFUNCS = frozenset({
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
    "arctanh", "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "power", "arctan2", "hypot", "cbrt",
    "sqrt", "divide", "floor_divide", "remainder", "fmod"})

for _name in UNARY_UFUNCS + BINARY_UFUNCS:
    _uf = getattr(np, _name)
    _impl = _power_impl if _name == "power" else _elementwise_impl(_uf)
    register(Primitive(_name, "elementwise", _elementwise_rule(_uf), _impl, _uf, expensive=_name in _EXPENSIVE_UFUNCS))


def _convert_rule(in_avals: list[AType], *, dtype: np.dtype) -> list[AType]:
    return [AType(in_avals[0].shape, dtype)]


def _convert_impl(x: np.ndarray, *, dtype: np.dtype) -> list[np.ndarray]:
    x = np.asarray(x)
    if x.dtype.kind == "c" and np.dtype(dtype).kind not in "cb":
        x = x.real  # complex -> real drops the imaginary part; the ComplexWarning is traced once
    if x.dtype.kind == "f" and np.dtype(dtype).kind in "iu":
        plan = float_to_int_plan(x.dtype, np.dtype(dtype))
        if plan[0] == "signed":  # the renderers' conversion, not NumPy's position-dependent one
            x = x.astype(np.dtype(f"int{plan[1]}"))
    return [x.astype(dtype)]


register(Primitive("convert", "elementwise", _convert_rule, _convert_impl))


def _select_rule(in_avals: list[AType]) -> list[AType]:
    pred, a, b = in_avals
    if pred.dtype != np.bool_ or a.dtype != b.dtype or not (pred.shape == a.shape == b.shape):
        raise TypeError(f"select needs bool predicate and equal operand types, got {pred}, {a}, {b}")
    return [a]


register(Primitive("select", "elementwise", _select_rule, lambda p, a, b: [np.asarray(np.where(p, a, b))]))


def _iota_rule(in_avals: list[AType], *, shape: tuple[int, ...], dimension: int, dtype: np.dtype) -> list[AType]:
    return [AType(shape, dtype)]


def _iota_impl(*, shape: tuple[int, ...], dimension: int, dtype: np.dtype) -> list[np.ndarray]:
    idx = np.arange(shape[dimension], dtype=dtype).reshape(
        [shape[dimension] if d == dimension else 1 for d in range(len(shape))])
    return [np.asarray(np.broadcast_to(idx, shape))]


register(Primitive("iota", "creation", _iota_rule, _iota_impl))

# ----------------------------------------------------------------------------- movement


def _broadcast_rule(in_avals: list[AType], *, shape: tuple[int, ...], broadcast_dimensions: tuple[int, ...]) -> list[AType]:
    (x,) = in_avals
    if len(broadcast_dimensions) != x.ndim:
        raise ValueError(f"broadcast_in_dim: {x.ndim} operand dims but {broadcast_dimensions}")
    for src, dst in enumerate(broadcast_dimensions):
        if x.shape[src] not in (1, shape[dst]):
            raise ValueError(f"broadcast_in_dim: cannot broadcast {x.shape} to {shape}")
    return [AType(shape, x.dtype)]


def _broadcast_impl(x: np.ndarray, *, shape: tuple[int, ...], broadcast_dimensions: tuple[int, ...]) -> list[np.ndarray]:
    expanded = [1] * len(shape)
    for src, dst in enumerate(broadcast_dimensions):
        expanded[dst] = x.shape[src]
    return [np.broadcast_to(x.reshape(expanded), shape).copy()]


register(Primitive("broadcast_in_dim", "movement", _broadcast_rule, _broadcast_impl))


def _reshape_rule(in_avals: list[AType], *, new_shape: tuple[int, ...]) -> list[AType]:
    (x,) = in_avals
    if x.is_symbolic or any(isinstance(d, SymDim) for d in new_shape):
        if reshape_axis_map(x.shape, tuple(new_shape)) is None:  # a symbolic axis stays whole
            raise ValueError(f"cannot reshape array of shape {x.shape} into shape {tuple(new_shape)}")
        return [AType(tuple(new_shape), x.dtype)]
    if int(np.prod(new_shape, dtype=np.int64)) != x.size:
        raise ValueError(f"cannot reshape array of size {x.size} into shape {new_shape}")
    return [AType(new_shape, x.dtype)]


register(Primitive("reshape", "movement", _reshape_rule,
                   lambda x, *, new_shape: [np.asarray(x).reshape(new_shape)]))


def _transpose_rule(in_avals: list[AType], *, permutation: tuple[int, ...]) -> list[AType]:
    (x,) = in_avals
    if sorted(permutation) != list(range(x.ndim)):
        raise ValueError(f"axes {permutation} don't match array of {x.ndim} dimensions")
    return [AType(tuple(x.shape[p] for p in permutation), x.dtype)]


register(Primitive("transpose", "movement", _transpose_rule,
                   lambda x, *, permutation: [np.asarray(np.transpose(x, permutation))]))


def _slice_rule(in_avals: list[AType], *, starts: tuple[int, ...], steps: tuple[int, ...], shape: tuple[int, ...]) -> list[AType]:
    """out[i] = x[starts + steps * i] per dimension; steps may be negative, never zero. On an
    axis of symbolic length (inside a loop body, before passes/lower_symbolic.py) a slice takes
    the whole axis, forwards (start 0, step 1) or reversed (start 0, step -1: `x[:i][::-1]`)."""
    (x,) = in_avals
    for d, (s, st, n) in enumerate(zip(starts, steps, shape)):
        if isinstance(x.shape[d], SymDim) or isinstance(n, SymDim):
            if not (n == x.shape[d] and s == 0 and st in (1, -1)):
                raise ValueError(f"a slice of the symbolic axis {d} of {x} takes it whole (forwards or "
                                 f"reversed), not start {s}, step {st}, length {n}")
            continue
        if st == 0 or n < 0 or (n > 0 and not (0 <= s < x.shape[d] and 0 <= s + st * (n - 1) < x.shape[d])):
            raise ValueError(f"slice out of bounds in dimension {d}: start {s}, step {st}, length {n}, size {x.shape[d]}")
    return [AType(shape, x.dtype)]


def _slice_impl(x: np.ndarray, *, starts: tuple[int, ...], steps: tuple[int, ...], shape: tuple[int, ...]) -> list[np.ndarray]:
    index = np.ix_(*[s + st * np.arange(n) for s, st, n in zip(starts, steps, shape)]) if shape else ()
    return [np.asarray(x[index])]


register(Primitive("slice", "movement", _slice_rule, _slice_impl))

# ----------------------------------------------------------------------------- structural


def _concatenate_rule(in_avals: list[AType], *, axis: int) -> list[AType]:
    first = in_avals[0]
    for a in in_avals:
        if a.dtype != first.dtype or a.ndim != first.ndim or any(
                a.shape[d] != first.shape[d] for d in range(first.ndim) if d != axis):
            raise ValueError("concatenate: all the input array dimensions except for the concatenation axis must match exactly")
    shape = list(first.shape)
    shape[axis] = sum(a.shape[axis] for a in in_avals)
    return [AType(tuple(shape), first.dtype)]


register(Primitive("concatenate", "structural", _concatenate_rule,
                   lambda *xs, axis: [np.concatenate(xs, axis=axis)]))

# ----------------------------------------------------------------------------- reductions

REDUCE_UFUNCS = {
    "reduce_sum": np.add, "reduce_prod": np.multiply, "reduce_max": np.maximum,
    "reduce_min": np.minimum, "reduce_and": np.logical_and, "reduce_or": np.logical_or,
}


def _reduce_rule(name: str) -> ShapeRule:
    def rule(in_avals: list[AType], *, axes: tuple[int, ...]) -> list[AType]:
        (x,) = in_avals
        if name in ("reduce_and", "reduce_or") and x.dtype != np.bool_:
            raise TypeError(f"{name} needs a bool operand, got {x.dtype}")
        if name in ("reduce_max", "reduce_min") and any(x.shape[a] == 0 for a in axes):
            raise ValueError(f"zero-size array to reduction operation {REDUCE_UFUNCS[name].__name__} which has no identity")
        return [AType(tuple(n for d, n in enumerate(x.shape) if d not in axes), x.dtype)]
    return rule


def _reduce_impl(name: str) -> Impl:
    uf = REDUCE_UFUNCS[name]

    def impl(x: np.ndarray, *, axes: tuple[int, ...]) -> list[np.ndarray]:
        # NumPy's own reduction, in its own order (float16 accumulates in float32 within an
        # inner loop and rounds between them): the kernels follow exactly that order.
        return [np.asarray(uf.reduce(x, axis=axes, dtype=x.dtype))]
    return impl


for _name in REDUCE_UFUNCS:
    register(Primitive(_name, "reduce", _reduce_rule(_name), _reduce_impl(_name)))


def _arg_rule(name: str) -> ShapeRule:
    def rule(in_avals: list[AType], *, axis: int) -> list[AType]:
        (x,) = in_avals
        if x.shape[axis] == 0:
            raise ValueError(f"attempt to get {name} of an empty sequence")
        return [AType(tuple(n for d, n in enumerate(x.shape) if d != axis), np.dtype(np.int64))]
    return rule


register(Primitive("argmax", "reduce", _arg_rule("argmax"), lambda x, *, axis: [np.asarray(np.argmax(x, axis=axis))]))
register(Primitive("argmin", "reduce", _arg_rule("argmin"), lambda x, *, axis: [np.asarray(np.argmin(x, axis=axis))]))

# ----------------------------------------------------------------------------- library steps


def _dot_rule(in_avals: list[AType], *, contracting: tuple[tuple[int, ...], tuple[int, ...]],
              batch: tuple[tuple[int, ...], tuple[int, ...]]) -> list[AType]:
    lhs, rhs = in_avals
    (lc, rc), (lb, rb) = contracting, batch
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"dot_general operands must share a dtype, got {lhs.dtype} and {rhs.dtype}")
    for a, b in list(zip(lc, rc)) + list(zip(lb, rb)):
        if lhs.shape[a] != rhs.shape[b]:
            raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature (n?,k),(k,m?)->(n?,m?) (size {rhs.shape[b]} is different from {lhs.shape[a]})")
    lfree = [d for d in range(lhs.ndim) if d not in lc and d not in lb]
    rfree = [d for d in range(rhs.ndim) if d not in rc and d not in rb]
    shape = tuple(lhs.shape[d] for d in lb) + tuple(lhs.shape[d] for d in lfree) + tuple(rhs.shape[d] for d in rfree)
    return [AType(shape, lhs.dtype)]


def dot_general_numpy(lhs: np.ndarray, rhs: np.ndarray, *, contracting: tuple[tuple[int, ...], tuple[int, ...]],
                      batch: tuple[tuple[int, ...], tuple[int, ...]], out: np.ndarray | None = None,
                      matmul: Callable[..., np.ndarray] = np.matmul) -> np.ndarray:
    """dot_general through np.matmul (BLAS for floats): operands are transposed to
    (batch, free, contract) / (batch, contract, free) views, then multiplied. `out`, a
    C-contiguous array of the result's shape and dtype, receives the product (the CPU runtime
    passes a buffer it reuses across calls: a fresh large result costs its page faults);
    `matmul` multiplies (the CPU runtime's splits large products across its threads)."""
    (lc, rc), (lb, rb) = contracting, batch
    lfree = [d for d in range(lhs.ndim) if d not in lc and d not in lb]
    rfree = [d for d in range(rhs.ndim) if d not in rc and d not in rb]
    bshape = [lhs.shape[d] for d in lb]
    # math.prod, not np.prod: np.prod of a list costs about 10 us, on every call of the step.
    m = math.prod(lhs.shape[d] for d in lfree)
    k = math.prod(lhs.shape[d] for d in lc)
    n = math.prod(rhs.shape[d] for d in rfree)
    a = np.transpose(lhs, list(lb) + lfree + list(lc)).reshape(bshape + [m, k])
    b = np.transpose(rhs, list(rb) + list(rc) + rfree).reshape(bshape + [k, n])
    if out is not None:
        matmul(a, b, out=out.reshape(bshape + [m, n]))
        return out
    product = matmul(a, b)
    return product.reshape(bshape + [lhs.shape[d] for d in lfree] + [rhs.shape[d] for d in rfree])


register(Primitive("dot_general", "library", _dot_rule, lambda a, b, **p: [np.asarray(dot_general_numpy(a, b, **p))]))

"""Data-dependent shapes: `x[mask]`, `np.nonzero`, `np.flatnonzero`, `np.argwhere`,
`np.where(cond)`, `np.extract`, `np.compress`, `np.unique` and slices whose bounds are read
from arrays (`data[ptr[i]:ptr[i + 1]]`, CSR), traced once for every count.

A value whose leading length is known only when the program runs is a `DataDependent`: a
padded Tracer `data` of static shape `(N, *rest)` (N the largest length it can have) and a 0-d
int64 Tracer `count`; only `data[:count]` is the value (docs/architecture.md, "Data-dependent
shapes"). The program keeps static shapes, so a new count never re-traces or recompiles: the
count is a run-time value of the compiled program. The *split* is the step that produces the
count (`datadep_call`, ir/datadep_prims.py): the program before it runs, then the rest runs with
the count as a run-time parameter; `as_text("kernels")` and the fusion plot name it.

What works on a data-dependent value, and how:
- elementwise operations (ufuncs, operators, `np.where(c, a, b)`, `np.clip`, `astype`) with
  scalars, arrays that broadcast against its trailing axes, and other values of the same count
  (the same mask, the same nonzero(), the same slice bounds) run on the padded buffer and fuse
  like any other kernel: the padding holds values nobody reads;
- reductions over the data-dependent axis (`sum`, `mean`, `max`, `argmin`, `std`, `median`,
  `dot` of two, ...), `np.sort`, `np.argsort`, `np.cumsum`, `np.unique`, and gathers and
  scatters through data-dependent indices run NumPy's own function on the exact prefix
  (`datadep_call`, one library step), so their values, dtypes and errors are NumPy's;
- returned from the jitted function, it is trimmed: the caller gets a fresh array of exactly
  `count` rows (pipeline.Compiled.finish), as NumPy returns a fresh array.
- its `.size`, `.shape[0]` and `len()` (in converted code) are the count as a traced Python int
  (`TracedLength`): arithmetic, comparisons, `range()` and returning it work.
Everything else raises UnsupportedOperationError naming the user's line; using the length as a
concrete int (`np.zeros(len(v))`, `int(v.shape[0])`) raises `SymbolicDimError` (suggesting
`np.count_nonzero`).

>>> import numpy as np, jitkernel as jk
>>> f = jk.jit(lambda x, t: x[x > t] * 2)
>>> f(np.array([1.0, 5.0, 3.0, 7.0]), 2.0)
array([10.,  6., 14.])
>>> f(np.array([1.0, 5.0, 3.0, 7.0]), 6.0)     # another count: the same compiled program
array([14.])
"""
from __future__ import annotations

import math
import operator
import warnings
from typing import Any, Callable

import numpy as np

from ..ir import semantics
from ..errors import UnsupportedOperationError, UnsupportedAttributeError
from ..ir.symdim import SymbolicDimError
from ..trace.context import _traces, user_frame_location
from ..trace.numpy_api import NUMPY
from ..trace.tracer import Tracer
from ..trace.operands import lift, broadcast_to_shape
from ._dispatch import register_function
from ..ir.datadep_prims import PURE_FUNCTIONS, PURE_NUMPY_FUNCTIONS
from ..ir.program import WITH_SUB_PROGRAMS
from ..transforms.custom import custom_jvp
from ._shape import reshape, ravel
from ._ufuncs import where as where3

# jitkernel.numpy names (after _sorting and _ufuncs in _EXTENSION_MODULES: these replace theirs).
__all__ = ["nonzero", "flatnonzero", "argwhere", "where", "extract", "compress", "unique", "count_nonzero"]

_I64 = np.dtype(np.int64)


def _where() -> str:
    return f"at {user_frame_location()}"


def _unsupported(what: str, hint: str = "") -> UnsupportedOperationError:
    return UnsupportedOperationError(
        f"{what} is not supported with data-dependent shapes (x[mask], np.nonzero, np.unique, a slice with "
        f"bounds read from an array) ({_where()}).{' ' + hint if hint else ''} See docs/numpy-support.md, "
        "'Data-dependent shapes'.")


def _count_refusal() -> SymbolicDimError:
    return SymbolicDimError(
        f"the length of this selection is known only when the program runs, so it cannot be used as a "
        f"Python int (a shape, an index, np.zeros(n)) ({_where()}). It is a traced int: use it in "
        "arithmetic, comparisons, range() or return it; or compute np.count_nonzero(mask) for x[mask], or "
        "use the selection itself (x[mask].sum(), x[mask].mean()).")


class TracedLength(Tracer):
    """`.size`, `.shape[0]` and `len()` of a data-dependent value: the run-time count as a
    traced Python int (weak int64, as a static `.size` is a Python int), so it works in
    arithmetic, comparisons, `range()` and as a result. Only its use as a concrete Python int
    (a shape, np.zeros(n)) is refused, with a hint, as a `SymbolicDimError`."""

    __slots__ = ()

    def __index__(self) -> int:
        self._stored_into_array()
        self._raise_pending(_count_refusal())

    def __int__(self) -> int:
        return self.__index__()


def traced_length(count: Tracer, per_row: int = 1) -> TracedLength:
    """The traced Python int `count * per_row` (per_row: the static size of one row)."""
    value = count if per_row == 1 else count * np.int64(per_row)
    return TracedLength(value._ctx, value.ir_var, int)


class DataDependent:
    """An array of shape `(count, *rest)` with `count` known only at run time: `data[:count]`
    of the padded Tracer `data`. Every operation is whitelisted: what is not handled raises
    (never a silent computation on the padding)."""

    __slots__ = ("padded", "count", "origin", "dense", "__weakref__")
    __array_priority__ = 2000  # above Tracer's: mixed operators and protocols come here
    _jk_datadep = True

    def __init__(self, data: Tracer, count: Tracer, origin: str, dense: tuple | None = None) -> None:
        if data.ndim == 0:
            raise TypeError("internal error: a data-dependent value has at least one axis")
        self.padded, self.count, self.origin = data, count, origin
        # (values, mask) with `data == values[mask]` when the value is a selection (or an
        # elementwise function of selections by one mask): reductions then run densely on
        # np.where(mask, values, identity), fused, without the selection step.
        self.dense = dense

    # -- abstract value ------------------------------------------------------------------
    @property
    def maximum(self) -> int:
        return self.padded.shape[0]

    @property
    def rest(self) -> tuple[int, ...]:
        return self.padded.shape[1:]

    @property
    def shape(self) -> tuple:
        return (traced_length(self.count),) + self.rest

    @property
    def dtype(self) -> np.dtype:
        return self.padded.dtype

    @property
    def ndim(self) -> int:
        return self.padded.ndim

    @property
    def size(self) -> Any:
        per_row = math.prod(self.rest)
        if per_row == 0:
            return 0
        return traced_length(self.count, per_row)

    @property
    def T(self) -> "DataDependent":
        if self.ndim == 1:
            return self
        raise _unsupported("transposing (.T)", "Its data-dependent axis must stay the first one.")

    def __repr__(self) -> str:
        return f"DataDependent<{self.dtype}[count<={self.maximum}{''.join(f', {d}' for d in self.rest)}] from {self.origin}>"

    def __len__(self) -> int:
        # Python's len() must return an int: converted code's len() goes to
        # autograph/runtime.builtin_call instead (the traced length); here (a lambda,
        # autograph=False) it is refused.
        raise _count_refusal()

    def __iter__(self) -> Any:
        raise _unsupported("iteration (for v in x[mask])", "Use a vectorised operation or a reduction.")

    def __bool__(self) -> bool:
        raise _unsupported("bool() / if", "Use np.any(...) or np.all(...) with jk.lax.cond.")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise _unsupported("conversion to a NumPy array (np.asarray, or a NumPy function jitkernel does not support)")

    def __index__(self) -> int:
        raise _unsupported("use as a Python int")

    __int__ = __float__ = __index__
    __hash__ = None  # type: ignore[assignment]

    # -- protocols -----------------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if kwargs.get("out") is not None:
            return _ufunc_into(ufunc, method, inputs, kwargs)
        if method == "__call__":
            if kwargs.get("where", True) is not True:
                raise _unsupported(f"numpy.{ufunc.__name__}(..., where=...)")
            return elementwise(lambda *ops: ufunc(*ops, **kwargs), inputs)
        if method == "reduce" and len(inputs) == 1 and ufunc.__name__ in _REDUCE_UFUNCS:
            kwargs.setdefault("axis", 0)
            return reduce(_REDUCE_UFUNCS[ufunc.__name__], inputs[0], kwargs)
        raise _unsupported(f"numpy.{ufunc.__name__}.{method}")

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        impl = _FUNCTIONS.get(func)
        if impl is None:
            raise _unsupported(f"numpy.{getattr(func, '__name__', func)}")
        return impl(*args, **kwargs)

    # -- indexing ------------------------------------------------------------------------
    def __getitem__(self, index: Any) -> Any:
        return getitem(self, index if isinstance(index, tuple) else (index,))

    def __setitem__(self, index: Any, value: Any) -> None:
        raise _unsupported("assignment into a selection (sel[i] = v)",
                           "Assign into the original array instead: x[mask] = v, x[idx] = v.")

    # -- methods -------------------------------------------------------------------------
    def astype(self, dtype: Any, copy: bool = True) -> "DataDependent":
        return elementwise(lambda a: a.astype(dtype), (self,))

    def copy(self) -> "DataDependent":
        return elementwise(lambda a: a.copy(), (self,))

    def ravel(self, order: str = "C") -> "DataDependent":
        if self.ndim == 1:
            return self
        return _call("ravel", (self,), (), "new", self.padded.size)

    flatten = ravel

    def sort(self, axis: int = -1, kind: Any = None) -> None:
        sorted_ = sort(self, axis=axis, kind=kind)
        self.padded, self.count = sorted_.padded, sorted_.count

    def dot(self, other: Any) -> Any:
        return dot(self, other)

    def with_data(self, data: Tracer) -> "DataDependent":
        return DataDependent(data, self.count, self.origin)

    @property
    def real(self) -> "DataDependent":
        return elementwise(lambda a: a.real.copy(), (self,))

    @property
    def imag(self) -> "DataDependent":
        return elementwise(lambda a: a.imag.copy(), (self,))

    def conj(self) -> "DataDependent":
        return elementwise(lambda a: a.conj(), (self,))

    conjugate = conj

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> Any:
        return traced_length(self.count, math.prod(self.rest) * self.dtype.itemsize)

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("_") and hasattr(np.ndarray, name):
            # an AttributeError as well: hasattr() keeps working
            raise UnsupportedAttributeError(str(_unsupported(f"ndarray.{name}")))
        raise AttributeError(f"'DataDependent' object has no attribute {name!r}")


def _install_operators() -> None:
    binary = {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor", "lshift",
              "rshift", "eq", "ne", "lt", "le", "gt", "ge"}
    for stem in binary:
        op = getattr(operator, stem if stem not in ("and", "or") else f"{stem}_")

        def forward(self: DataDependent, other: Any, _op: Callable = op) -> Any:
            return elementwise(_op, (self, other))

        def reflected(self: DataDependent, other: Any, _op: Callable = op) -> Any:
            return elementwise(lambda a, b: _op(b, a), (self, other))
        setattr(DataDependent, f"__{stem}__", forward)
        if stem not in ("eq", "ne", "lt", "le", "gt", "ge"):
            setattr(DataDependent, f"__r{stem}__", reflected)

    def matmul(self: DataDependent, other: Any) -> Any:
        return dot(self, other)

    def rmatmul(self: DataDependent, other: Any) -> Any:
        return dot(other, self)
    DataDependent.__matmul__, DataDependent.__rmatmul__ = matmul, rmatmul
    for stem, fn in {"neg": operator.neg, "pos": operator.pos, "abs": operator.abs, "invert": operator.invert}.items():
        setattr(DataDependent, f"__{stem}__", lambda self, _fn=fn: elementwise(_fn, (self,)))


def is_data_dependent(x: Any) -> bool:
    return getattr(type(x), "_jk_datadep", False)


def holds_data_dependent(items: Any) -> bool:
    if is_data_dependent(items):
        return True
    if isinstance(items, (tuple, list)):
        return any(holds_data_dependent(i) for i in items)
    if isinstance(items, dict):
        return any(holds_data_dependent(i) for i in items.values())
    return False


# ----------------------------------------------------------------------------- counts


def _current_ctx(*values: Any) -> Any:
    """The innermost trace (a jk.lax sub-trace when inside one): where equations are bound."""
    if _traces.stack:
        return _traces.stack[-1]
    for v in values:
        if isinstance(v, Tracer):
            return v._ctx
    raise TypeError("internal error: no trace is active")


def _memo_table(ctx: Any) -> dict:
    table = getattr(ctx, "_datadep_counts", None)  # on the trace itself: it dies with the trace
    if table is None:
        table = ctx._datadep_counts = {}
    return table


def _memo(ctx: Any, key: tuple, make: Callable[[], Any]) -> Any:
    """One count per (trace, mask) or (trace, slice bounds): selections by the same mask have
    the same count variable, so `x[m] + y[m]` and `x[m] * np.flatnonzero(m)` combine."""
    table = _memo_table(ctx)
    hit = table.get(key)
    if hit is None:
        hit = table[key] = make()
    return hit


_MAX_KEY_DEPTH = 8
_SMALL_CONSTANT = 16


def _structural_key(ctx: Any, var: Any) -> tuple:
    """A hashable description of how `var` was computed in this trace (primitives, params,
    inputs, small constants by value), so that a mask written twice (`x[x > 0] + y[x > 0]`)
    is recognised as one: equal keys mean equal values (every primitive involved is pure; a
    control-flow step, a large constant or a deep expression is keyed by its variable)."""
    table = _memo_table(ctx)
    producers = table.setdefault("producers", {})
    seen = table.get("scanned", 0)
    for eqn in ctx.eqns[seen:]:
        for k, o in enumerate(eqn.outputs):
            producers[o] = (eqn, k)
    table["scanned"] = len(ctx.eqns)
    constants = table.get("constants")
    if constants is None or len(constants) != len(ctx.constvars):
        constants = table["constants"] = dict(zip(ctx.constvars, ctx.consts))

    def key(v: Any, depth: int) -> tuple:
        if v in constants and constants[v].size <= _SMALL_CONSTANT:
            c = constants[v]
            return ("const", c.dtype.str, c.shape, c.tobytes())
        made = producers.get(v)
        if made is None or depth >= _MAX_KEY_DEPTH or made[0].prim in WITH_SUB_PROGRAMS:
            return ("var", v)
        eqn, k = made
        try:
            params = tuple(sorted(eqn.params.items()))
            hash(params)
        except TypeError:
            return ("var", v)
        return (eqn.prim, params, k, tuple(key(i, depth + 1) for i in eqn.inputs))
    return key(var, 0)


def canonical_mask(mask: Tracer) -> tuple[Tracer, Tracer]:
    """(the first Tracer of an equal mask in this trace, its count: the number of nonzero
    elements as an int64 0-d Tracer). Selections by equal masks share both."""
    ctx = _current_ctx(mask)
    snapshot = Tracer(mask._ctx, mask.ir_var)

    def make() -> tuple[Tracer, Tracer]:
        nonzero_ = snapshot if snapshot.dtype == np.bool_ else snapshot.astype(np.bool_)
        return snapshot, lift(ctx, np.sum(nonzero_, dtype=_I64), _I64)
    key = ("mask", snapshot._ctx is ctx, _structural_key(snapshot._ctx, snapshot.ir_var))
    return _memo(ctx, key, make)


def mask_count(mask: Tracer) -> Tracer:
    """The number of nonzero elements of `mask` (an int64 0-d Tracer), one per mask value."""
    return canonical_mask(mask)[1]


# ----------------------------------------------------------------------------- the library step


def _probe(x: Any) -> np.ndarray:
    """A small concrete stand-in to ask NumPy for a result's dtype and trailing shape."""
    if is_data_dependent(x):
        return np.ones((1,) + x.rest, x.dtype)
    if isinstance(x, Tracer):
        return np.ones(x.shape, x.dtype)
    return np.asarray(x)


def _operand(ctx: Any, x: Any) -> Tracer:
    if is_data_dependent(x):
        return x.padded
    if isinstance(x, Tracer):
        return Tracer(ctx, x.ir_var) if x.weak is not None else x
    return ctx.const(np.asarray(x))


def datadep_call(fn: str, operands: tuple, kw: tuple, outs: tuple, origin: str, split: bool = False) -> list[Tracer]:
    """Bind one `datadep_call` step: `operands` are Tracers, DataDependent values (trimmed to
    their counts when the step runs) or constants."""
    ctx = _current_ctx(*[o.padded if is_data_dependent(o) else o for o in operands])
    counts: list[Tracer] = []
    layout = []
    for o in operands:
        if is_data_dependent(o):
            k = next((i for i, c in enumerate(counts) if c.ir_var is o.count.ir_var), None)
            if k is None:
                k = len(counts)
                counts.append(o.count)
            layout.append(k)
        else:
            layout.append(-1)
    ins = counts + [_operand(ctx, o) for o in operands]
    outs = tuple((kind, tuple(int(d) for d in shape), np.dtype(dtype).str) for kind, shape, dtype in outs)
    split = split or any(kind == "len" for kind, _, _ in outs)  # a new count
    pure = fn in PURE_FUNCTIONS or (fn == "call" and dict(kw).get("name") in PURE_NUMPY_FUNCTIONS
                                    and dict(kw).get("module") == "numpy")
    return ctx.bind("datadep_pure" if pure else "datadep_call", ins, ncounts=len(counts), fn=fn, kw=kw, layout=tuple(layout),
                    outs=outs, where=origin, split=split)


def _origin(what: str) -> str:
    return f"{what} at {user_frame_location()}"


def _hashable(kwargs: dict) -> tuple:
    items = []
    for k, v in sorted(kwargs.items()):
        if isinstance(v, (list, np.ndarray)):
            v = tuple(np.asarray(v).tolist())
        if isinstance(v, Tracer) or is_data_dependent(v):
            raise _unsupported(f"a traced {k}= argument")
        try:
            hash(v)
        except TypeError:
            raise _unsupported(f"the argument {k}={v!r}") from None
        items.append((k, v))
    return tuple(items)


def _call(name: str, operands: tuple, kwargs: tuple, result: str, max_len: int | None = None,
          like: "DataDependent | None" = None, module: str = "numpy") -> Any:
    """`numpy.<name>(*operands, **kwargs)` on the exact prefixes. `result`: "static" (a value of
    static shape), "same" (the leading length is `like`'s count) or "new" (a new count, at most
    `max_len`). The result's dtype and trailing shape come from NumPy on small probes."""
    mod = np if module == "numpy" else getattr(np, module)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sample = mod.__dict__[name](*[_probe(o) for o in operands], **dict(kwargs))
    sample = np.asarray(sample)
    kw = (("name", name), ("kwargs", kwargs), ("module", module))
    origin = _origin(f"numpy.{name}" if module == "numpy" else f"numpy.{module}.{name}")
    if result == "static":
        (out,) = datadep_call("call", operands, kw, (("static", sample.shape, sample.dtype),), origin)
        return out
    if sample.ndim == 0:
        raise TypeError(f"internal error: numpy.{name} gave a 0-d result for a data-dependent one")
    if result == "same":
        (out,) = datadep_call("call", operands, kw, (("pad", (like.maximum,) + sample.shape[1:], sample.dtype),), origin)
        return DataDependent(out, like.count, like.origin)
    data, count = datadep_call("call", operands, kw, (("pad", (max_len,) + sample.shape[1:], sample.dtype),
                                                      ("len", (), _I64)), origin)
    return DataDependent(data, count, origin)


# ----------------------------------------------------------------------------- elementwise


def _common_count(values: list[DataDependent]) -> DataDependent:
    """The count shared by `values` (elementwise operands). Selections by the same mask object,
    the same nonzero() or the same slice bounds share one count variable; two counts of equal
    padding that may differ (`x[x > 0] + y[x > 0]`: two evaluations of the mask) are checked
    when the program runs: NumPy raises when the lengths differ, and so do we."""
    first = values[0]
    count = first.count
    for v in values[1:]:
        if v.count.ir_var is count.ir_var and v.maximum == first.maximum:
            continue
        if v.maximum != first.maximum:
            raise _unsupported(
                "combining two selections of different largest lengths "
                f"({first.origin}; {v.origin})",
                "Select with the same mask (x[m] + y[m]), or combine before selecting ((x + y)[m]).")
        ctx = _current_ctx(count)
        bad = np.not_equal(v.count, count)
        count = ctx.bind1("raise_if", count, lift(ctx, bad, np.dtype(np.bool_)), exception="ValueError",
                          message="operands could not be broadcast together: two data-dependent selections of "
                                  f"different lengths ({first.origin}; {v.origin})")
    if count is first.count:
        return first
    return DataDependent(first.padded, count, first.origin)


def _aligned(ctx: Any, x: Any, ndim: int) -> Any:
    """A static operand of an elementwise operation with a value of shape (count, *rest): it
    must broadcast against rest, or have a leading axis of length 1."""
    shape = x.shape if isinstance(x, (Tracer, np.ndarray, np.generic)) else np.shape(x)
    if len(shape) < ndim:
        return x
    if len(shape) == ndim and shape[0] == 1:
        return reshape(x if isinstance(x, Tracer) else ctx.const(np.asarray(x)), shape[1:])
    raise _unsupported(
        f"broadcasting an array of shape {tuple(shape)} against a selection of shape (count, ...)",
        "NumPy would need the run-time count to decide; an operand must broadcast against the trailing axes.")


def elementwise(fn: Callable[..., Any], operands: tuple) -> Any:
    """`fn(*operands)` with the data-dependent operands replaced by their padded buffers (the
    padding computes values nobody reads); the result has their count."""
    operands = tuple(np.asarray(o) if isinstance(o, (list, tuple)) else o for o in operands)
    dds = [o for o in operands if is_data_dependent(o)]
    like = _common_count(dds)
    ndim = max(d.ndim for d in dds)
    ctx = _current_ctx(like.padded)
    converted = []
    for o in operands:
        if is_data_dependent(o):
            if o.ndim < ndim:
                raise _unsupported("broadcasting selections of different ranks")
            converted.append(o.padded)
        else:
            converted.append(_aligned(ctx, o, ndim))
    result = fn(*converted)
    if result is NotImplemented:
        return result
    dense = _dense_result(fn, operands, dds, ndim)
    if isinstance(result, tuple):
        return tuple(_wrap(r, like, None if dense is None else (d, dense[1])) for r, d in zip(result, dense[0]))
    return _wrap(result, like, None if dense is None else (dense[0], dense[1]))


def _ufunc_into(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> DataDependent:
    """`ufunc(*inputs, out=v)` into a data-dependent `v` (`np.multiply(z, z, z)`,
    `np.logical_not(m, m)`): computed as without `out`, checked against NumPy's casting rule
    and v's count (NumPy's error when the lengths differ), cast and broadcast to v's dtype and
    shape, and stored by rebinding v's buffer: every name that refers to `v` sees the new
    values, as every name refers to NumPy's one array."""
    kw = dict(kwargs)
    outs = kw.pop("out")
    outs = outs if isinstance(outs, tuple) else (outs,)
    if method != "__call__" or len(outs) != 1 or not is_data_dependent(outs[0]) or kw.get("where", True) is not True:
        raise _unsupported(f"numpy.{ufunc.__name__}{'' if method == '__call__' else '.' + method}(..., out=...) "
                           "other than one data-dependent out= of an elementwise call")
    kw.pop("where", None)
    target = outs[0]
    casting = kw.pop("casting", "same_kind")
    if any(is_data_dependent(i) for i in inputs):
        result = elementwise(lambda *ops: ufunc(*ops, **kw), inputs)
        count = _common_count([target, result]).count
        value = result.padded
    else:
        result, count = ufunc(*inputs, **kw), target.count
        value = result if isinstance(result, Tracer) else lift(_current_ctx(target.padded), result)
        if value.ndim > len(target.rest):
            raise _unsupported(f"numpy.{ufunc.__name__}(..., out=v) of static arrays into a data-dependent v",
                               "NumPy would need the run-time count to broadcast them.")
    if not np.can_cast(value.dtype, target.dtype, casting):
        from ..trace.inplace import _numpy_out_verdict
        _numpy_out_verdict(ufunc, tuple(_probe(i) for i in inputs), target.dtype, casting)
    rest = value.shape[1:] if is_data_dependent(result) else value.shape
    if np.broadcast_shapes(rest, target.rest) != target.rest:
        raise ValueError(f"non-broadcastable output operand with shape (count, {', '.join(map(str, target.rest))}) "
                         f"doesn't match the broadcast shape (count, {', '.join(map(str, rest))})")
    ctx = _current_ctx(target.padded)
    if value.dtype != target.dtype:
        value = value.astype(target.dtype)
    if value.shape != target.padded.shape:
        value = broadcast_to_shape(ctx, value, target.padded.shape)
    same = is_data_dependent(result) and result.dense is not None and value is result.padded
    target.padded, target.count = Tracer(ctx, value.ir_var), count
    target.dense = result.dense if same else None
    return target


def _wrap(r: Any, like: DataDependent, dense: tuple | None = None) -> DataDependent:
    if not isinstance(r, Tracer) or r.ndim == 0 or r.shape[0] != like.maximum:
        raise TypeError("internal error: an elementwise result lost the data-dependent axis")
    return DataDependent(Tracer(r._ctx, r.ir_var), like.count, like.origin, dense)


def _dense_result(fn: Callable[..., Any], operands: tuple, dds: list, ndim: int) -> tuple | None:
    """`fn` on the dense values of selections by one mask: (result or tuple of results, mask),
    or None. Unused, it is dropped by dead-code elimination; an integer power is never computed
    densely (it may raise on elements the mask leaves out, which NumPy never computes)."""
    if any(d.dense is None or d.dense[1].ir_var is not dds[0].dense[1].ir_var for d in dds):
        return None
    mask = dds[0].dense[1]
    if any(d.dense[0].ndim - mask.ndim + 1 != d.ndim for d in dds):
        return None
    ctx = _current_ctx(mask)
    start = len(ctx.eqns)
    ops = [o.dense[0] if is_data_dependent(o) else _aligned(ctx, o, ndim) for o in operands]
    result = fn(*ops)
    if any(e.prim == "power" and e.outputs[0].aval.dtype.kind in "iu" for e in ctx.eqns[start:]):
        del ctx.eqns[start:]  # nothing refers to these yet
        table = _memo_table(ctx)
        table["scanned"] = min(table.get("scanned", 0), start)  # (_structural_key's index of ctx.eqns)
        return None
    parts = result if isinstance(result, tuple) else (result,)
    if not all(isinstance(p, Tracer) and p.shape[:mask.ndim] == mask.shape for p in parts):
        return None
    return (tuple(Tracer(p._ctx, p.ir_var) for p in parts) if isinstance(result, tuple)
            else Tracer(result._ctx, result.ir_var)), mask


# ----------------------------------------------------------------------------- reductions


_REDUCE_UFUNCS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
                  "logical_and": "all", "logical_or": "any"}
_REDUCTIONS = ("sum", "prod", "mean", "std", "var", "max", "min", "amax", "amin", "any", "all", "argmax",
               "argmin", "count_nonzero", "median", "ptp", "nansum", "nanprod", "nanmean", "nanstd", "nanvar",
               "nanmax", "nanmin", "nanargmax", "nanargmin", "nanmedian", "average", "percentile", "quantile",
               "nanpercentile", "nanquantile")


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in axes:
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % ndim)
    return tuple(out)


def reduce(name: str, x: Any, kwargs: dict, *args: Any) -> Any:
    """A reduction: over the data-dependent axis, NumPy's function on the exact prefix (its
    values, dtype, and errors for an empty selection); over trailing axes only, the reduction of
    the padded buffer row by row (fused)."""
    kwargs = dict(kwargs)
    for bad in ("out", "where"):
        if kwargs.get(bad) is not None and not (bad == "where" and kwargs[bad] is True):
            raise _unsupported(f"numpy.{name}(..., {bad}=...)")
        kwargs.pop(bad, None)
    if name == "average" and kwargs.get("weights") is not None:
        raise _unsupported("numpy.average(..., weights=...)")
    if name in ("percentile", "quantile", "nanpercentile", "nanquantile"):
        q = args[0] if args else kwargs.pop("q")
        if isinstance(q, Tracer) or is_data_dependent(q):
            raise _unsupported(f"numpy.{name} with a traced q")
        kwargs["q"] = tuple(np.asarray(q).ravel().tolist()) if np.ndim(q) else float(q)
        if np.ndim(q) > 1:
            raise _unsupported(f"numpy.{name} with a q of more than one dimension")
    axis = kwargs.get("axis", None)
    axes = _axes(axis, x.ndim)
    if 0 not in axes:
        fn = getattr(np, name)
        return x.with_data(fn(x.padded, **kwargs))
    if x.dense is not None and name in _DENSE_IDENTITY and x.dtype.kind in "biuf" \
            and set(kwargs) <= {"axis", "keepdims", "dtype"} and (name in ("sum", "prod", "mean") or "dtype" not in kwargs):
        if not _order_dependent(name, x, axes, kwargs.get("dtype")):
            return _dense_reduce(name, x, axes, kwargs)
        return _exact_with_dense_derivative(name, x, axes, kwargs)
    return _call(name, (x,), _hashable(kwargs), "static")


def _exact_with_dense_derivative(name: str, x: DataDependent, axes: tuple, kwargs: dict) -> Any:
    """NumPy's `name` (a float sum or mean) of the selection itself, in NumPy's order, with the
    derivative of the dense form: a sum is linear, so its tangent, the same reduction of the
    tangents, does not depend on the order, and `jk.grad` of `x[x > 0].sum()` keeps working (a
    selection step alone is not differentiable)."""
    values, mask = x.dense
    hashable = _hashable(kwargs)
    rest = values.shape[mask.ndim:]

    def exact_value(mask: Tracer, count: Tracer, v: Tracer) -> Any:
        return _call(name, (_mask_select(v, mask),), hashable, "static")

    def dense_tangent(primals: tuple, tangents: tuple) -> tuple:
        (mask, count, v), (_, _, t) = primals, tangents  # (a bool mask and an int count have no tangent)
        like = DataDependent(t.reshape((mask.size,) + rest), count, x.origin, (t, mask))  # (count, *rest), dense
        return exact(mask, count, v), _dense_reduce(name, like, axes, kwargs)

    exact = custom_jvp(exact_value)
    exact.defjvp(dense_tangent)
    return exact(mask, x.count, values)


def _order_dependent(name: str, x: DataDependent, axes: tuple[int, ...], requested: Any) -> bool:
    """Would reducing `np.where(mask, values, identity)` instead of the selection change the
    result? A float sum (a mean is one) whose NumPy inner loop runs along the selection is a
    pairwise sum, whose grouping depends on the positions of the values: the identities shift
    them, changing the rounding and even the kind of answer (inf against 1e308). Integer and
    bool sums are exact; max, min, any and all do not depend on the order; products are
    sequential in NumPy (float16 blocks of the selection are those of the dense array) and
    multiplying by 1 is exact; and where the inner loop runs along a kept trailing axis
    (`rows.sum(axis=0)` of selected rows) NumPy adds rows element by element, in order, so the
    rows of +0.0 added change nothing."""
    if name not in ("sum", "mean"):
        return False
    if requested is not None:
        float_sum = np.dtype(requested).kind in "fc"
    else:
        float_sum = name == "mean" or x.dtype.kind in "fc"
    if not float_sum:
        return False
    # The count's extent does not matter when a trailing axis of extent other than 1 exists.
    rows_in_order = any(n != 1 for n in x.rest) and semantics.reduction_inner_loop_kept((2,) + x.rest, axes)
    return not rows_in_order


# The value a reduction ignores, by dtype kind (max/min: the lowest/highest value; NaN stays NaN).
_DENSE_IDENTITY = {
    "sum": lambda dt: 0, "mean": lambda dt: 0, "prod": lambda dt: 1, "any": lambda dt: False, "all": lambda dt: True,
    "max": lambda dt: -np.inf if dt.kind == "f" else (False if dt.kind == "b" else np.iinfo(dt).min),
    "min": lambda dt: np.inf if dt.kind == "f" else (True if dt.kind == "b" else np.iinfo(dt).max),
}
_DENSE_IDENTITY["amax"], _DENSE_IDENTITY["amin"] = _DENSE_IDENTITY["max"], _DENSE_IDENTITY["min"]


def _dense_reduce(name: str, x: DataDependent, axes: tuple, kwargs: dict) -> Tracer:
    """A reduction over the data-dependent axis of a selection `values[mask]`, computed as the
    reduction of np.where(mask, values, identity) over the mask's axes (and the trailing axes
    asked for): one fused kernel, no selection step. Only for reductions whose result does not
    depend on the positions of the values (`_order_dependent`): integer and bool sums, products,
    max/min (which raise NumPy's ValueError when the selection is empty), any/all; an integer
    mean is the sum divided by the count."""
    values, mask = x.dense
    ctx = _current_ctx(mask)
    k = mask.ndim
    m = broadcast_to_shape(ctx, reshape(mask, mask.shape + (1,) * (values.ndim - k)), values.shape)
    fill = ctx.const(np.asarray(_DENSE_IDENTITY[name](values.dtype), values.dtype))
    masked = np.where(m, values, fill)
    dense_axes = tuple(range(k)) + tuple(k - 1 + a for a in axes if a > 0)
    stem = {"amax": "max", "amin": "min"}.get(name, name)
    if stem == "mean":
        dt = values.dtype
        requested = np.dtype(kwargs["dtype"]) if kwargs.get("dtype") is not None else None
        acc = requested or (np.dtype(np.float64) if dt.kind in "biu" else np.dtype(np.float32) if dt == np.float16 else dt)
        out_dt = requested or (np.dtype(np.float64) if dt.kind in "biu" else dt)
        total = np.sum(masked, axis=dense_axes, dtype=acc)
        n = x.count * math.prod(x.rest[a - 1] for a in axes if a > 0)
        result = (total / lift(ctx, n, acc)).astype(out_dt)
    else:
        extra = {"dtype": kwargs["dtype"]} if kwargs.get("dtype") is not None else {}
        result = getattr(np, stem)(masked, axis=dense_axes, **extra)
    if kwargs.get("keepdims"):
        sample = getattr(np, stem)(np.ones((1,) + x.rest, x.dtype), axis=axes, keepdims=True)
        result = reshape(result, sample.shape)
    if stem in ("max", "min"):
        empty = np.equal(x.count, 0)
        ufunc = "maximum" if stem == "max" else "minimum"
        result = ctx.bind1("raise_if", result, lift(ctx, empty, np.dtype(np.bool_)), exception="ValueError",
                           message=f"zero-size array to reduction operation {ufunc} which has no identity")
    if result.ndim == 0:
        result = Tracer(result._ctx, result.ir_var)  # a NumPy scalar, as NumPy's reduction
    return result


def _reduction(name: str) -> Callable[..., Any]:
    def impl(a: Any, *args: Any, **kwargs: Any) -> Any:
        if args and name not in ("percentile", "quantile", "nanpercentile", "nanquantile"):
            kwargs.setdefault("axis", args[0])
            args = args[1:]
        return reduce(name, a, kwargs, *args)
    impl.__name__ = name
    return impl


for _name in _REDUCTIONS:
    if _name in ("amax", "amin"):
        continue
    setattr(DataDependent, _name, _reduction(_name))


# ----------------------------------------------------------------------------- functions


def sort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> Any:
    if order is not None:
        raise _unsupported("numpy.sort(..., order=...)")
    kw = {"kind": kind} if kind is not None else {}
    if stable is not None:
        kw["stable"] = stable
    return _along_axis("sort", a, axis, kw)


def argsort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> Any:
    if order is not None:
        raise _unsupported("numpy.argsort(..., order=...)")
    kw = {"kind": kind} if kind is not None else {}
    if stable is not None:
        kw["stable"] = stable
    return _along_axis("argsort", a, axis, kw)


def _along_axis(name: str, a: DataDependent, axis: Any, kwargs: dict) -> Any:
    """A function along one axis (sort, argsort, cumsum, cumprod): along a trailing axis it runs
    on the padded buffer row by row; along the data-dependent axis on the exact prefix."""
    if axis is None:
        if a.ndim == 1:
            axis = 0
        else:
            flat = a.ravel()
            return _call(name, (flat,), _hashable({**kwargs, "axis": 0}), "same", like=flat)
    (ax,) = _axes(axis, a.ndim)
    if ax != 0:
        return a.with_data(getattr(np, name)(a.padded, axis=ax, **kwargs))
    return _call(name, (a,), _hashable({**kwargs, "axis": 0}), "same", like=a)


def _cumulative(name: str) -> Callable[..., Any]:
    def impl(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, **kw: Any) -> Any:
        if out is not None:
            raise _unsupported(f"numpy.{name}(..., out=...)")
        if dtype is not None:
            kw["dtype"] = dtype
        return _along_axis(name, a, axis, kw)
    impl.__name__ = name
    return impl


def dot(a: Any, b: Any) -> Any:
    """a @ b / np.dot / np.inner / np.vdot with data-dependent operands (CSR: `vals @ x[cols]`)."""
    for o in (a, b):
        if is_data_dependent(o) and o.ndim != 1:
            raise _unsupported("a matrix product of a data-dependent matrix",
                               "Only 1-D selections: vals @ x[cols] (a dot product).")
    if not (is_data_dependent(a) and is_data_dependent(b)):
        raise _unsupported("a dot product of a selection with an array of static length",
                           "Both operands need the same data-dependent length.")
    return _call("dot", (a, b), (), "static")


def unique(ar: Any, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           axis: Any = None, *, equal_nan: bool = True, sorted: bool = True) -> Any:
    """numpy.unique with return_index / return_inverse / return_counts, sorted=False (NumPy's own
    order) and axis=0 (distinct rows): one step, the number of distinct values (rows) is the
    new count. Another axis raises: only the first axis can have a data-dependent length."""
    if not isinstance(ar, Tracer) and not is_data_dependent(ar):
        return np.unique(ar, return_index, return_inverse, return_counts, axis, equal_nan=equal_nan, sorted=sorted)
    if isinstance(axis, Tracer) or is_data_dependent(axis):
        raise _unsupported("numpy.unique with a traced axis=")
    if axis is not None:
        (axis,) = _axes(axis, ar.ndim)
        if axis != 0:
            raise _unsupported(f"numpy.unique(..., axis={axis}) of a {ar.ndim}-D array",
                               "Only the first axis can have a data-dependent length: transpose to make it axis 0.")
    flat_max = ar.maximum * math.prod(ar.rest) if is_data_dependent(ar) else ar.size
    rows_max = flat_max if axis is None else ar.maximum if is_data_dependent(ar) else ar.shape[0]
    settings = {"return_index": bool(return_index), "return_inverse": bool(return_inverse),
                "return_counts": bool(return_counts), "equal_nan": bool(equal_nan), "sorted": bool(sorted)}
    if axis is not None:
        settings["axis"] = 0
    kwargs = _hashable(settings)
    probe_input = np.ones((1,) + ar.shape[1:] if axis == 0 else (1,), ar.dtype)
    probe = np.unique(probe_input, **dict(kwargs))  # the dtypes and the trailing shape of the values
    probes = probe if isinstance(probe, tuple) else (probe,)
    outs: list[tuple] = [("pad", (rows_max,) + probes[0].shape[1:], probes[0].dtype), ("len", (), _I64)]
    kinds = ["values"]
    if return_index:
        outs.append(("pad", (rows_max,), _I64))
        kinds.append("index")
    if return_inverse:
        if is_data_dependent(ar):
            outs.append(("pad", (ar.maximum,) + (ar.rest if axis is None else ()), _I64))
        else:
            outs.append(("static", ar.shape if axis is None else (ar.shape[0],), _I64))
        kinds.append("inverse")
    if return_counts:
        outs.append(("pad", (rows_max,), _I64))
        kinds.append("counts")
    origin = _origin("numpy.unique")
    results = datadep_call("call", (ar,), (("name", "unique"), ("kwargs", kwargs), ("module", "numpy")),
                           tuple(outs), origin)
    values, count = results[0], results[1]
    out = [DataDependent(values, count, origin)]
    for kind, r in zip(kinds[1:], results[2:]):
        if kind == "inverse":
            out.append(DataDependent(r, ar.count, ar.origin) if is_data_dependent(ar) else r)
        else:
            out.append(DataDependent(r, count, origin))
    return out[0] if len(out) == 1 else tuple(out)


def _as_traced(x: Any) -> Tracer:
    ctx = _current_ctx(x)
    return x if isinstance(x, Tracer) else ctx.const(np.asarray(x))


def nonzero(a: Any) -> tuple:
    """numpy.nonzero of a traced array: one index array per axis, all of the same count."""
    if is_data_dependent(a):
        if a.ndim != 1:
            raise _unsupported("numpy.nonzero of a data-dependent 2-D value")
        return (_call("flatnonzero", (a,), (), "new", a.maximum),)
    if not isinstance(a, Tracer):
        return np.nonzero(a)
    if a.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() instead. "
                         "If the context of this error is of the form `arr[nonzero(cond)]`, just use `arr[cond]`.")
    count = mask_count(a)
    origin = _origin("numpy.nonzero")
    outs = tuple(("pad", (a.size,), _I64) for _ in range(a.ndim))
    parts = datadep_call("nonzero", (a,), (), outs, origin, split=True)
    return tuple(DataDependent(p, count, origin) for p in parts)


def flatnonzero(a: Any) -> Any:
    if is_data_dependent(a):
        return nonzero(a.ravel())[0]
    if not isinstance(a, Tracer):
        return np.flatnonzero(a)
    flat = ravel(a)
    count = mask_count(a)
    origin = _origin("numpy.flatnonzero")
    (idx,) = datadep_call("nonzero", (flat,), (), (("pad", (a.size,), _I64),), origin, split=True)
    return DataDependent(idx, count, origin)


def argwhere(a: Any) -> Any:
    if not isinstance(a, Tracer):
        if is_data_dependent(a):
            raise _unsupported("numpy.argwhere of a data-dependent value")
        return np.argwhere(a)
    count = mask_count(a)
    origin = _origin("numpy.argwhere")
    (out,) = datadep_call("call", (a,), (("name", "argwhere"), ("kwargs", ()), ("module", "numpy")),
                          (("pad", (max(a.size, 1) if a.ndim == 0 else a.size, a.ndim), _I64),), origin, split=True)
    return DataDependent(out, count, origin)


def where(condition: Any, x: Any = None, y: Any = None) -> Any:
    """numpy.where: the one-argument form is nonzero(); the three-argument form works on
    data-dependent operands elementwise."""
    if x is None and y is None:
        if isinstance(condition, Tracer) or is_data_dependent(condition):
            return nonzero(condition)  # (a 0-d condition: NumPy's ValueError)
        return np.where(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    if holds_data_dependent((condition, x, y)):
        return elementwise(where3, (condition, x, y))
    return where3(condition, x, y)


def extract(condition: Any, arr: Any) -> Any:
    """numpy.extract: `ravel(arr)[nonzero(ravel(condition))]` (NumPy's definition)."""
    if holds_data_dependent((condition, arr)):
        raise _unsupported("numpy.extract of a data-dependent value")
    if not isinstance(condition, Tracer):
        if not isinstance(arr, Tracer):
            return np.extract(condition, arr)
        condition = _as_traced(condition)
    arr = _as_traced(arr)
    count = mask_count(condition)
    origin = _origin("numpy.extract")
    (out,) = datadep_call("call", (condition, arr), (("name", "extract"), ("kwargs", ()), ("module", "numpy")),
                          (("pad", (min(condition.size, arr.size),), arr.dtype),), origin, split=True)
    return DataDependent(out, count, origin)


def compress(condition: Any, a: Any, axis: Any = None, out: Any = None) -> Any:
    """numpy.compress with a traced condition, along axis 0 or of the flattened array."""
    if out is not None:
        raise _unsupported("numpy.compress(..., out=...)")
    if holds_data_dependent((condition, a)):
        raise _unsupported("numpy.compress of a data-dependent value")
    if not isinstance(condition, Tracer):
        return _static_compress(condition, a, axis)
    a = _as_traced(a)
    if condition.ndim != 1:
        raise ValueError("condition must be a 1-d array")
    if axis is not None:
        (axis,) = _axes(axis, a.ndim)
        if axis != 0:
            raise _unsupported(f"numpy.compress along axis {axis}",
                               "Only axis=0 (or axis=None) gives a data-dependent first axis.")
    n = a.size if axis is None else a.shape[0]
    if condition.shape[0] > n:
        raise IndexError(f"index {n} is out of bounds for axis 0 with size {n}")
    count = mask_count(condition)
    rest = () if axis is None else a.shape[1:]
    origin = _origin("numpy.compress")
    (res,) = datadep_call("call", (condition, a), (("name", "compress"), ("kwargs", (("axis", axis),)), ("module", "numpy")),
                          (("pad", (condition.shape[0],) + rest, a.dtype),), origin, split=True)
    return DataDependent(res, count, origin)


def _static_compress(condition: Any, a: Any, axis: Any) -> Any:
    if not isinstance(a, Tracer):
        return np.compress(condition, a, axis)
    idx = np.flatnonzero(np.asarray(condition))
    return NUMPY.namespace.take(a, idx, axis=axis)


# ----------------------------------------------------------------------------- indexing


def _mask_select(x: Tracer, mask: Tracer) -> DataDependent:
    """x[mask] for a traced boolean mask covering x's leading axes (NumPy checked the shapes on
    probes already)."""
    mask, count = canonical_mask(mask)
    rest = x.shape[mask.ndim:]
    origin = _origin("x[mask]")
    (out,) = datadep_call("mask_select", (x, mask), (), (("pad", (max(mask.size, 1) if mask.ndim == 0 else mask.size,) + rest, x.dtype),), origin, split=True)
    dense = (Tracer(x._ctx, x.ir_var), Tracer(mask._ctx, mask.ir_var)) if mask.ndim > 0 else None
    return DataDependent(out, count, origin, dense)


def traced_mask_getitem(x: Tracer, index: tuple) -> DataDependent:
    """`x[mask]` (numpy/_advanced.py routes a traced boolean mask here)."""
    (mask,) = index if len(index) == 1 else (None,)
    if not (isinstance(mask, Tracer) and mask.dtype == np.bool_):
        raise _unsupported("an index mixing a traced boolean mask with other entries (x[mask, j], x[:, mask])",
                           "Only x[mask] with the mask over the leading axes; transpose first for another axis.")
    return _mask_select(x, mask)


def _encode_index(index: tuple) -> tuple[tuple, list]:
    entries, arrays = [], []
    for ix in index:
        if is_data_dependent(ix) or isinstance(ix, (Tracer, np.ndarray, list)):
            entries.append(("array", len(arrays)))
            arrays.append(ix)
        elif isinstance(ix, slice):
            if any(isinstance(p, Tracer) for p in (ix.start, ix.stop, ix.step)):
                raise _unsupported("a traced slice bound next to a data-dependent index")
            entries.append(("slice", ix.start, ix.stop, ix.step))
        elif ix is None:
            entries.append(("none",))
        elif ix is Ellipsis:
            entries.append(("ellipsis",))
        elif isinstance(ix, (int, np.integer)) and not isinstance(ix, (bool, np.bool_)):
            entries.append(("int", int(ix)))
        else:
            raise _unsupported(f"an index entry of type {type(ix).__name__}")
    return tuple(entries), arrays


def getitem(x: Any, index: tuple) -> Any:
    """`x[index]` where `x` or an index entry is data-dependent: NumPy's indexing of the exact
    prefixes. The result's first axis must be the data-dependent one (x[idx], x[nonzero(m)],
    x[idx, :], sel[sel > 0])."""
    dd_index = [ix for ix in index if is_data_dependent(ix)]
    if is_data_dependent(x):
        if len(index) == 1 and is_data_dependent(index[0]) and index[0].dtype == np.bool_:
            return _call_getitem(x, index, "new", x.maximum)
        raise _unsupported("indexing a selection (sel[i], sel[1:], sel[idx])",
                           "Index the original array (x[mask][0] -> select first, then reduce), or use a reduction.")
    if not dd_index:
        raise TypeError("internal error: no data-dependent index")
    if any(ix.dtype.kind not in "iu" for ix in dd_index):
        raise _unsupported("a data-dependent boolean index of a static array")
    like = _common_count(dd_index)
    leading = all(is_data_dependent(ix) for ix in index[:len(dd_index)]) and \
        all(isinstance(ix, slice) and ix == slice(None) for ix in index[len(dd_index):])
    if not leading or any(ix.ndim != 1 for ix in dd_index):
        raise _unsupported("a data-dependent index that is not the leading part of the index (x[:, idx], x[idx, 0])",
                           "Index the leading axes: x[idx], x[idx, :], x[np.nonzero(m)].")
    if len(dd_index) > x.ndim:
        raise IndexError(f"too many indices for array: array is {x.ndim}-dimensional, but {len(dd_index)} were indexed")
    return _call_getitem(x, index, "same", like=like)


def _call_getitem(x: Any, index: tuple, result: str, max_len: int | None = None, like: Any = None) -> Any:
    """One `getitem` step. "same": `x[dd_1, ..., dd_k, :, ...]` of a static `x` (the result's
    first axis has the indices' count); "new": `sel[sel_mask]` (a new count)."""
    entries, arrays = _encode_index(index)
    origin = _origin("x[index]")
    kw = (("index", entries),)
    if result == "same":
        rest = x.shape[len(arrays):]
        (out,) = datadep_call("getitem", (x, *arrays), kw, (("pad", (like.maximum,) + rest, x.dtype),), origin)
        return DataDependent(out, like.count, like.origin)
    outs = (("pad", (max_len,) + x.rest, x.dtype), ("len", (), _I64))
    data, count = datadep_call("getitem", (x, *arrays), kw, outs, origin)
    return DataDependent(data, count, origin)


def update(x: Tracer, index: tuple, value: Any) -> Tracer:
    """The array `x` with `x[index] = value` (functional) where the index holds data-dependent
    arrays or a traced mask and/or the value is data-dependent: NumPy's assignment on the exact
    prefixes (its casting, its last-wins rule, its error for a value of the wrong length)."""
    ctx = _current_ctx(x)
    if not isinstance(x, Tracer):
        x = lift(ctx, x)
    if type(value) in (bool, int, float, complex):
        value = np.asarray(value, dtype=x.dtype)  # NumPy casts a Python scalar by value (300 into int8 raises)
    elif isinstance(value, (list, tuple)):
        value = np.asarray(value)
    entries, arrays = _encode_index(index)
    origin = _origin("x[index] = value")
    (out,) = datadep_call("setitem", (x, value, *arrays), (("index", entries),), (("static", x.shape, x.dtype),), origin)
    out.scalar = False
    return out


def involved(index: tuple, value: Any) -> bool:
    return is_data_dependent(value) or any(is_data_dependent(ix) for ix in index)


# ----------------------------------------------------------------------------- slices read from arrays


def _clamped_bound(ctx: Any, p: Any, n: int, default: int) -> Tracer:
    """A slice bound as NumPy normalises it for step 1: negative wraps, then clamped to [0, n]."""
    if p is None:
        return ctx.const(np.asarray(default, _I64))
    t = lift(ctx, p, _I64) if isinstance(p, Tracer) else ctx.const(np.asarray(int(p), _I64))
    t = np.where(t < 0, t + n, t)
    return np.clip(t, 0, n)


def window(x: Tracer, index: tuple) -> DataDependent | None:
    """`x[start:stop]` (and `x[start:stop, ...]`) whose length depends on traced bounds that no
    loop range proves (CSR: `data[ptr[i]:ptr[i + 1]]`): a data-dependent value of at most
    `len(x)` rows. None when the index has another form (the caller raises its own error)."""
    if not index or not isinstance(index[0], slice) or x.ndim == 0:
        return None
    ix = index[0]
    if ix.step is not None and not (isinstance(ix.step, (int, np.integer)) and int(ix.step) == 1):
        return None
    if not all(isinstance(r, slice) and r == slice(None) for r in index[1:]):
        return None
    ctx = _current_ctx(x)
    n = x.shape[0]
    start = _clamped_bound(ctx, ix.start, n, 0)
    stop = _clamped_bound(ctx, ix.stop, n, n)
    key_vars = tuple(p.ir_var if isinstance(p, Tracer) else p for p in (ix.start, ix.stop))

    def make() -> Tracer:
        return np.maximum(stop - start, 0)
    count = _memo(ctx, ("window", key_vars[0], key_vars[1], n), make) if isinstance(ix.start, Tracer) else make()
    # (keyed by the bound variables: A_val[a:b] and A_col[a:b] share a count)
    origin = _origin(f"a slice of length <= {n} with bounds read from data")
    (out,) = datadep_call("window", (x, start, stop), (), (("pad", x.shape, x.dtype),), origin, split=True)
    return DataDependent(out, count, origin)


# ----------------------------------------------------------------------------- dispatch tables


def _shape_of(a: Any) -> tuple:
    return a.shape


def _size_of(a: Any, axis: Any = None) -> Any:
    return a.size if axis is None else a.shape[axis]


def _ufunc_like(name: str) -> Callable[..., Any]:
    def impl(*args: Any, **kwargs: Any) -> Any:
        fn = getattr(np, name)
        n_arrays = {"clip": 3, "round": 1, "around": 1, "nan_to_num": 1, "real": 1, "imag": 1, "conj": 1,
                    "conjugate": 1, "isclose": 2, "fix": 1}.get(name, 1)
        arrays, extra = args[:n_arrays], args[n_arrays:]
        return elementwise(lambda *ops: fn(*ops, *extra, **kwargs), arrays)
    impl.__name__ = name
    return impl


_FUNCTIONS: dict = {}


def _register_tables() -> None:
    for name in _REDUCTIONS:
        _FUNCTIONS[getattr(np, name)] = _reduction(name)
    for name in ("clip", "round", "around", "nan_to_num", "real", "imag", "conj", "conjugate", "isclose", "fix"):
        _FUNCTIONS[getattr(np, name)] = _ufunc_like(name)
    _FUNCTIONS.update({
        np.sort: sort, np.argsort: argsort, np.cumsum: _cumulative("cumsum"), np.cumprod: _cumulative("cumprod"),
        np.dot: dot, np.inner: dot, np.vdot: dot, np.matmul: dot, np.unique: unique, np.nonzero: nonzero,
        np.flatnonzero: flatnonzero, np.where: where, np.shape: _shape_of, np.size: _size_of,
        np.ndim: lambda a: a.ndim, np.copy: lambda a, **k: a.copy(), np.ravel: lambda a, order="C": a.ravel(),
        np.astype: lambda a, dtype, copy=True, **k: a.astype(dtype),
    })


_register_tables()
_install_operators()

unique.__jk_support__ = "partly: axis=None or axis=0 (another axis raises: only the first axis can have a data-dependent length)"
compress.__jk_support__ = "partly: a traced condition selects along axis 0 or of the flattened array"
nonzero.__jk_support__ = flatnonzero.__jk_support__ = argwhere.__jk_support__ = extract.__jk_support__ = \
    "supported: a data-dependent length, traced once for every count (docs/numpy-support.md)"

# NumPy functions with a traced (static-shaped) argument that give a data-dependent result.
for _np_func, _impl in ((np.nonzero, nonzero), (np.flatnonzero, flatnonzero), (np.argwhere, argwhere),
                        (np.where, where), (np.extract, extract), (np.compress, compress), (np.unique, unique)):
    register_function(_np_func, _impl)


def _method_nonzero(self: Tracer) -> tuple:
    return nonzero(self)


def _method_compress(self: Tracer, condition: Any, axis: Any = None, out: Any = None) -> Any:
    return compress(condition, self, axis, out)


Tracer.nonzero = _method_nonzero
Tracer.compress = _method_compress


def count_nonzero(a: Any, axis: Any = None, *, keepdims: bool = False) -> Any:
    """numpy.count_nonzero of a traced array: a sum of `a != 0` in intp (NumPy 2 returns an
    intp scalar for axis=None)."""
    if is_data_dependent(a):
        return reduce("count_nonzero", a, {"axis": axis, "keepdims": keepdims})
    if not isinstance(a, Tracer):
        return np.count_nonzero(a, axis=axis, keepdims=keepdims)
    nonzero_ = a if a.dtype == np.bool_ else a.astype(np.bool_)
    return np.sum(nonzero_, axis=axis, dtype=np.intp, keepdims=keepdims)


register_function(np.count_nonzero, count_nonzero)

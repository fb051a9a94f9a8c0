"""In-place updates on traced arrays, with NumPy's semantics: `x[idx] = v`, `x op= y`, ufunc
`out=`, `np.copyto`, `x.fill(v)`, `np.put`. Every write goes through trace/views.py (`write`):
the new value of the target's base is computed functionally and later reads see it; arguments
that are written become hidden outputs that the call copies back into the caller's arrays
(docs/numpy-support.md "In-place updates and views").

Casting is NumPy's: assignment (`x[i] = v`, fill, put) casts arrays unsafely, as
ndarray.__setitem__ does, and stores a Python or NumPy scalar by NumPy's scalar rule
(trace/scalar_store.py: a float 300.7 into uint8 raises OverflowError, NaN ValueError); augmented operators and ufunc `out=` use `same_kind` (int array += float raises
UFuncTypeError); np.copyto takes its `casting=`. A NumPy scalar (a 0-d result of a ufunc,
reduction or integer index) and a Python scalar are immutable: `s += y` rebinds `s`, exactly as
in NumPy. A NumPy array made outside the function and captured by it (a closure, a global) is
a constant of the program: `a OP= tracer` on one is rebound when nothing else can see it, and
raises InPlaceUpdateError otherwise (it would have to change the caller's array).
"""
from __future__ import annotations

import operator
import sys
from typing import Any

import numpy as np

from ..errors import InPlaceUpdateError, TracerArrayConversionError, UnsupportedOperationError
from .frames import user_frame_location, user_instruction, user_statement_target
from .memory import emit
from .numpy_api import NUMPY
from .operands import broadcast_shapes, broadcast_to_shape, context_of, dtype_key, lift
from .scalar_store import numpy_stored, store_operand, stored_scalar
from .tracer import Tracer
from .views import check_writeable, same_view, write

# operator-method stem -> (symbol, NumPy ufunc name or "matmul")
INPLACE_OPERATORS = {
    "add": ("+=", "add"), "sub": ("-=", "subtract"), "mul": ("*=", "multiply"),
    "truediv": ("/=", "divide"), "floordiv": ("//=", "floor_divide"), "mod": ("%=", "remainder"),
    "pow": ("**=", "power"), "matmul": ("@=", "matmul"), "and": ("&=", "bitwise_and"),
    "or": ("|=", "bitwise_or"), "xor": ("^=", "bitwise_xor"), "lshift": ("<<=", "left_shift"),
    "rshift": (">>=", "right_shift"),
}
_UFUNC_TO_STEM = {ufunc: stem for stem, (_, ufunc) in INPLACE_OPERATORS.items()}
_DUMMY_WEAK = {bool: True, int: 1, float: 1.0, complex: 1j}


class _Probe:
    """Stands in for a Tracer while the reference count of an unshared NumPy target is measured."""

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> int:
        return _refs_of_out(inputs, kwargs)


def _refs_of_out(inputs: tuple, kwargs: dict) -> int:
    return sys.getrefcount(kwargs["out"][0])


def _calibrate() -> int:
    """The reference count of a local ndarray updated by `a += tracer`, as __array_ufunc__ sees
    it, measured on this interpreter."""
    def local_array_update() -> int:
        a = np.zeros(1)
        a += _Probe()
        return a

    return local_array_update()


_ARRAY_REFS = _calibrate()


def _error(ctx_name: str, symbol: str, why: str) -> InPlaceUpdateError:
    target = user_statement_target() or "the target"
    return InPlaceUpdateError(
        f"in jitted function {ctx_name!r} at {user_frame_location()}: `{target} {symbol} ...` would update "
        f"`{target}` in place, but {why}. A NumPy array captured from outside the jitted function (a "
        f"closure, a global, an attribute) is a constant of the compiled program and cannot be written. "
        f"Pass it as an argument (arguments are written back), or write `{target} = {target} {symbol[:-1]} ...`.")


def _dummy(x: Any, ndim_limit: int | None = None) -> Any:
    """A one-element stand-in with x's dtype (or x itself for Python scalars), for asking NumPy
    which error an in-place operation raises."""
    if isinstance(x, Tracer):
        if x.weak is not None:
            return _DUMMY_WEAK[x.weak]
        return np.zeros((1,) * x.ndim, x.dtype)
    if isinstance(x, (np.ndarray, np.generic)):
        return np.zeros((1,) * x.ndim, x.dtype)
    if isinstance(x, (list, tuple)):
        a = np.asarray(x)
        return np.zeros((1,) * a.ndim, a.dtype)
    return x


def _numpy_verdict(stem: str, dtype: np.dtype, ndim: int, other: Any) -> None:
    """Raise what NumPy raises for `target OP= other` on these dtypes (casting errors such as
    `int_array /= 2`, OverflowError for a Python int that does not fit), if anything."""
    target = np.zeros((1,) * ndim, dtype)
    try:
        with np.errstate(all="ignore"):
            getattr(operator, f"i{stem}")(target, _dummy(other))
    except (TypeError, OverflowError):
        raise
    except (ValueError, ArithmeticError):
        pass  # shape errors are checked on the real shapes; values are not known here


def _numpy_shape(shape: tuple) -> str:
    """A shape as NumPy's messages print it: (2,3), (3,)."""
    return "(" + ",".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


def _finish(result: Any, dtype: np.dtype, shape: tuple, stem: str) -> Any:
    """The in-place result: NumPy's shape rule (the output keeps the target's shape) and cast
    (the target keeps its dtype)."""
    if tuple(result.shape) != tuple(shape):
        if stem == "matmul" and len(result.shape) == len(shape):
            d = next(i for i, (a, b) in enumerate(zip(shape, result.shape)) if a != b)
            raise ValueError(f"matmul: Output operand 0 has a mismatch in its core dimension {d}, with gufunc "
                             f"signature (n?,k),(k,m?)->(n?,m?) (size {shape[d]} is different from {result.shape[d]})")
        raise ValueError(f"non-broadcastable output operand with shape {_numpy_shape(shape)} doesn't match the "
                         f"broadcast shape {_numpy_shape(result.shape)}")
    if result.dtype != dtype or result.weak is not None:
        result = lift(result._ctx, result, dtype)
    if result.ndim == 0 and isinstance(result, Tracer):
        result = Tracer(result._ctx, result.ir_var)
        result.scalar = False  # still the 0-d array it updated
    return result


def augmented_assign(target: Any, other: Any, stem: str) -> Any:
    """`target OP= other` for a Tracer target (Tracer.__iadd__ and friends): NumPy's
    `ufunc(target, other, out=target)` with same_kind casting, written through the view."""
    binary = getattr(Tracer, f"__{stem}__")
    if target.weak is not None or (target.ndim == 0 and target.scalar):
        return binary(target, other)  # Python and NumPy scalars are immutable: NumPy rebinds too
    if target.aval.is_symbolic and (user_statement_target() or "").endswith("]"):
        # x[:i] += v: the window of symbolic length is not a view; the setitem that Python runs
        # next writes the result into x (numpy/_dynamic.py dynamic_update).
        _numpy_verdict(stem, target.dtype, target.ndim, other)
        result = binary(target, other)
        return result if result is NotImplemented else _finish(result, target.dtype, target.shape, stem)
    check_writeable(target)
    _numpy_verdict(stem, target.dtype, target.ndim, other)
    result = binary(target, other)
    if result is NotImplemented:
        return result
    write(target, _finish(result, target.dtype, target.shape, stem))
    return target


# ----------------------------------------------------------------------------- assignment


def assignment_value(target: Any, value: Any, shape: tuple[int, ...], as_setitem: bool = True) -> Any:
    """`value` as ndarray.__setitem__ stores it into a region of `shape` of target's dtype:
    arrays cast unsafely, scalars by NumPy's scalar rule (trace/scalar_store.py; `as_setitem`
    False: np.copyto, which casts a scalar as an array), leading size-1 dimensions dropped,
    broadcast."""
    ctx = target._ctx
    if isinstance(value, Tracer):
        if value._ctx is not ctx and hasattr(ctx, "localize"):
            value = ctx.localize(value)  # a loop body or branch reading an enclosing trace's value
        if value._ctx is not ctx:
            raise UnsupportedOperationError(f"{ctx.name}: a value traced by another jitted function leaked into this one")
        t = lift(ctx, stored_scalar(value, target.dtype) if as_setitem else value, target.dtype)
    elif as_setitem and np.ndim(value) == 0 and not isinstance(value, np.ndarray):
        t = ctx.const(numpy_stored(value, target.dtype))  # NumPy's own setitem decides
    else:
        t = ctx.const(np.asarray(value, dtype=target.dtype))
    vshape = t.shape
    while len(vshape) > len(shape) and vshape[0] == 1:
        vshape = vshape[1:]
    if vshape != t.shape:
        reshape = NUMPY.reshape
        t = reshape(t, vshape)
    try:
        # (NumPy's broadcast_shapes, and structural for symbolic lengths)
        if len(vshape) > len(shape) or broadcast_shapes(vshape, shape) != tuple(shape):
            raise ValueError
    except ValueError:
        raise ValueError(f"could not broadcast input array from shape {_numpy_shape(value_shape(value))} into "
                         f"shape {_numpy_shape(shape)}") from None
    return broadcast_to_shape(ctx, t, tuple(shape))


def value_shape(value: Any) -> tuple[int, ...]:
    return value.shape if isinstance(value, Tracer) else np.shape(value)


def setitem(target: Any, index: Any, value: Any) -> None:
    """`target[index] = value` (Tracer.__setitem__)."""
    getitem, index_kind = NUMPY.getitem, NUMPY.index_kind
    check_writeable(target)
    key = index if isinstance(index, tuple) else (index,)
    _datadep = NUMPY.datadep
    if _datadep.involved(key, value):  # a data-dependent index or value (x[np.nonzero(m)] = v, y[m] = x[m])
        if NUMPY.holds_traced_strided(key) and _datadep.is_data_dependent(value):
            # x[a::s] += v: the value read from a strided slice with traced bounds is a selection
            # (numpy/_strided_dynamic.py writes it back position by position)
            write(target, NUMPY.dynamic_update(target, key, value))
            return
        write(target, _datadep.update(target, key, store_operand(value, target.dtype)))
        return
    kind = index_kind(key)
    if kind == "basic":
        if len(key) == target.ndim and all(isinstance(ix, (int, np.integer)) for ix in key):
            key = key + (Ellipsis,)  # x[i, j] = v writes the 0-d view x[i, j, ...]
        region = getitem(target, key)
        if region._mem is not None and getattr(value, "_mem", None) is region._mem and same_view(value, region):
            return  # x[i] op= v: the augmented operator already wrote through the view x[i]
        write(region, assignment_value(target, value, region.shape))
        return
    if kind == "dynamic":  # a traced integer or slice bound: to NumPy a basic store (by value)
        value = stored_scalar(value, target.dtype)
    else:  # an index array or mask: NumPy makes an array of a NumPy scalar first
        value = store_operand(value, target.dtype)
    if not isinstance(value, Tracer):
        value = numpy_stored(value, target.dtype) if np.ndim(value) == 0 and not isinstance(value, np.ndarray) \
            else np.asarray(value, dtype=target.dtype)
    else:
        value = assignment_value(target, value, value.shape)
    if kind == "dynamic":
        dynamic_update = NUMPY.dynamic_update
        new = dynamic_update(target, key, value)
    else:
        advanced_update = NUMPY.advanced_update
        new = advanced_update(target, key, value)
    write(target, new)


def fill(target: Any, value: Any) -> None:
    """ndarray.fill: every element takes the scalar `value` (cast unsafely)."""
    check_writeable(target)
    if value_shape(value) != () and np.size(np.empty(value_shape(value), np.int8)) != 1:
        raise ValueError("Input object to FillWithScalar is not a scalar")
    write(target, assignment_value(target, value, target.shape))


# ----------------------------------------------------------------------------- out=


def _out_tuple(out: Any) -> tuple:
    return out if isinstance(out, tuple) else (out,)


def _captured_out(ctx: Any, what: str) -> Exception:
    return TracerArrayConversionError(
        f"in jitted function {ctx.name!r} at {user_frame_location()}: {what} is a NumPy array made outside the "
        "jitted function (a closure or a global): it is a constant of the compiled program and cannot receive "
        "traced values. Pass it as an argument (arguments that are written are written back to the caller), "
        "or create it inside the function (np.empty(...), np.zeros(...)).")


def _write_out(out: Any, result: Any, where: Any, casting: str | None, what: str) -> None:
    """Store `result` into Tracer `out` (shape checked, cast, `where` applied)."""
    if not isinstance(out, Tracer):
        raise _captured_out(result._ctx, what)
    check_writeable(out)
    ctx = out._ctx
    shape = tuple(result.shape)
    if len(shape) > out.ndim or np.broadcast_shapes(shape, out.shape) != out.shape:
        raise ValueError(f"non-broadcastable output operand with shape {_numpy_shape(out.shape)} doesn't match the "
                         f"broadcast shape {_numpy_shape(np.broadcast_shapes(shape, out.shape))}")
    value = broadcast_to_shape(ctx, lift(ctx, result, out.dtype), out.shape)
    if where is not True:
        np_where = NUMPY.namespace.where
        value = np_where(where, value, out)
        value = lift(ctx, value, out.dtype)
    write(out, value)


def ufunc_with_out(ufunc: np.ufunc, inputs: tuple, kwargs: dict) -> Any:
    """`ufunc(*inputs, out=..., where=..., casting=...)` on traced values: computed, checked
    against NumPy's casting rule for the output, and written into `out`. Returns `out` (a
    tuple for a ufunc with several outputs, as NumPy)."""
    jnp = NUMPY.namespace
    kwargs = dict(kwargs)
    outs = _out_tuple(kwargs.pop("out"))
    where = kwargs.pop("where", True)
    casting = kwargs.pop("casting", "same_kind")
    if all(o is None for o in outs):
        return getattr(jnp, ufunc.__name__)(*inputs, **kwargs)
    fn = jnp.matmul if ufunc.__name__ == "matmul" else getattr(jnp, ufunc.__name__)
    result = fn(*inputs, **kwargs)
    results = result if isinstance(result, tuple) else (result,)
    if len(outs) != len(results):
        raise ValueError(f"The 'out' tuple must have exactly {len(results)} entries: one per ufunc output")
    for o, r in zip(outs, results):
        if o is None:
            continue
        if not np.can_cast(r.dtype, o.dtype, casting):
            _numpy_out_verdict(ufunc, inputs, o.dtype, casting)
        _write_out(o, r, where, casting, "the out= array")
    written = tuple(o if o is not None else r for o, r in zip(outs, results))
    return written[0] if len(written) == 1 else written


def _numpy_out_verdict(ufunc: np.ufunc, inputs: tuple, out_dtype: np.dtype, casting: str) -> None:
    """Raise NumPy's own error for this output cast (UFuncTypeError naming the dtypes)."""
    dummies = [_dummy(x) for x in inputs]
    ufunc(*dummies, out=np.zeros((1,) * max([np.ndim(d) for d in dummies] + [0]), out_dtype), casting=casting)
    raise TypeError(f"Cannot cast ufunc {ufunc.__name__!r} output to {out_dtype} with casting rule {casting!r}")


def function_with_out(impl: Any, name: str, args: tuple, kwargs: dict) -> Any:
    """A NumPy function with `out=` (np.sum(x, axis, out=s), np.clip(..., out=...)): computed
    without it, then written into `out` (the reduction's accumulation dtype is out's, as NumPy's
    reductions use the output dtype when no dtype= is given)."""
    kwargs = dict(kwargs)
    out = kwargs.pop("out")
    if isinstance(out, tuple) and len(out) == 1:
        out = out[0]
    if isinstance(out, Tracer) and name in ("sum", "prod") and kwargs.get("dtype") is None:
        kwargs["dtype"] = out.dtype
    result = impl(*args, **kwargs)
    if not isinstance(out, Tracer):
        ctx = result._ctx if isinstance(result, Tracer) else None
        raise _captured_out(ctx or _ctx_of(args), f"the out= array of numpy.{name}")
    if tuple(result.shape) != out.shape:
        raise ValueError(f"output parameter for numpy.{name} has the wrong shape: {_numpy_shape(out.shape)}, "
                         f"expected {_numpy_shape(result.shape)}")
    _write_out(out, result, True, None, f"the out= array of numpy.{name}")
    return out


def _ctx_of(args: tuple) -> Any:
    return context_of(*args)


# ----------------------------------------------------------------------------- copyto, put


def copyto(dst: Any, src: Any, casting: str = "same_kind", where: Any = True) -> None:
    """numpy.copyto on traced arrays: `casting` checked as NumPy does, `src` broadcast to dst."""
    if not isinstance(dst, Tracer):
        raise _captured_out(_ctx_of((src, where)), "the destination of np.copyto")
    check_writeable(dst)
    ctx = dst._ctx
    key = dtype_key(src)
    if isinstance(key, type):  # a Python scalar: NumPy checks its value against dst's dtype
        probe = src if not isinstance(src, Tracer) else {bool: True, int: 1, float: 1.0, complex: 1j}[key]
        np.copyto(np.zeros((), dst.dtype), probe, casting=casting)
    elif not np.can_cast(key, dst.dtype, casting):
        np.copyto(np.zeros((), dst.dtype), np.zeros((), key), casting=casting)  # NumPy's TypeError
    if not isinstance(src, Tracer):
        # np.copyto casts a scalar as an array (300.7 -> uint8 44 with casting="unsafe"): NumPy's own
        copied = np.zeros(np.shape(src), dst.dtype)
        np.copyto(copied, src, casting=casting)
        src = copied
    value = assignment_value(dst, src, dst.shape, as_setitem=False) if not isinstance(src, Tracer) else None
    if value is None:
        if len(src.shape) > dst.ndim or np.broadcast_shapes(src.shape, dst.shape) != dst.shape:
            raise ValueError(f"could not broadcast input array from shape {_numpy_shape(src.shape)} into shape "
                             f"{_numpy_shape(dst.shape)}")
        value = assignment_value(dst, src, dst.shape, as_setitem=False)
    if where is not True:
        np_where = NUMPY.namespace.where
        value = lift(ctx, np_where(where, value, dst), dst.dtype)
    write(dst, value)


_PUT_MAX_TRACED = 1024  # a traced `v`: one region write per index


def put(a: Any, ind: Any, v: Any, mode: str = "raise") -> None:
    """numpy.put with static indices: `a.flat[ind] = v`, v repeated to the length of ind (the
    last write to a position wins), out-of-range indices raising, wrapping or clipping by mode."""
    reshape = NUMPY.reshape
    if not isinstance(a, Tracer):
        raise TypeError("put: first argument must be an array (a traced array inside jit)")
    if isinstance(ind, Tracer):  # a traced index array: one library step (numpy/_advanced.py)
        put_traced_indices = NUMPY.put
        return put_traced_indices(a, ind, v, mode)
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    check_writeable(a)
    ctx = a._ctx
    idx = np.asarray(ind).reshape(-1)
    if idx.size and idx.dtype.kind not in "iu":
        raise TypeError(f"Cannot cast array data from {idx.dtype!r} to dtype('int64') according to the rule 'safe'")
    idx = idx.astype(np.int64)
    n = a.size
    if idx.size == 0:
        return
    if n == 0:
        raise IndexError("cannot replace elements of an empty array")
    if mode == "raise":
        bad = idx[(idx < -n) | (idx >= n)]
        if bad.size:
            raise IndexError(f"index {int(bad[0])} is out of bounds for axis 0 with size {n}")
        idx = idx % n
    elif mode == "wrap":
        idx = idx % n
    else:
        idx = np.clip(idx, 0, n - 1)
    if np.ndim(v) == 0 and not isinstance(v, np.ndarray):  # a scalar: NumPy's rule for np.put
        v = store_operand(v, a.dtype)
        v = numpy_stored(v, a.dtype) if type(v) in (bool, int, float, complex) else v
    vals = v if isinstance(v, Tracer) else np.asarray(v)
    nv = vals.size
    if nv == 0:
        return
    last = {int(p): j % nv for j, p in enumerate(idx)}  # the last write to a position wins
    flat = reshape(a, (-1,)) if a.ndim != 1 else a
    flat_var = flat.ir_var
    if not isinstance(vals, Tracer):
        new = np.zeros(n, a.dtype)
        mask = np.zeros(n, bool)
        src = vals.reshape(-1).astype(a.dtype)
        for p, j in last.items():
            new[p], mask[p] = src[j], True
        np_where = NUMPY.namespace.where
        result = np_where(ctx.const(mask), ctx.const(new), _snapshot(ctx, flat_var))
    else:
        if len(last) > _PUT_MAX_TRACED:
            raise UnsupportedOperationError(f"numpy.put of traced values at more than {_PUT_MAX_TRACED} positions "
                                            f"is not supported inside jit ({user_frame_location()})")
        src = reshape(lift(ctx, vals, a.dtype), (-1,))
        var = flat_var
        for p, j in last.items():
            piece = emit(ctx, "slice", [src.ir_var], {"starts": (j,), "steps": (1,), "shape": (1,)})
            var = emit(ctx, "update_slice", [var, piece], {"starts": (p,), "steps": (1,)})
        result = _snapshot(ctx, var)
    write(a, reshape(result, a.shape) if a.ndim != 1 else result)


def _snapshot(ctx: Any, var: Any) -> Any:
    t = Tracer(ctx, var)
    t.scalar = False
    return t


def concrete_inplace_stem(ufunc: np.ufunc, inputs: tuple, kwargs: dict) -> str | None:
    """The operator stem if this __array_ufunc__ call is NumPy's own `a OP= tracer` on a concrete
    ndarray `a` (ndarray.__iadd__ calls the ufunc with out=(a,)), else None."""
    out = kwargs.get("out")
    stem = _UFUNC_TO_STEM.get(ufunc.__name__)
    if stem is None or not isinstance(out, tuple) or len(out) != 1 or not inputs or out[0] is not inputs[0]:
        return None
    if not isinstance(out[0], np.ndarray):
        return None
    opname, argrepr = user_instruction()
    return stem if opname == "BINARY_OP" and argrepr == INPLACE_OPERATORS[stem][0] else None


def concrete_augmented_assign(ctx: Any, stem: str, inputs: tuple, refs: int) -> Any:
    """`a OP= tracer` where `a` is a NumPy array made inside the function (a constant of the
    program): the name is rebound to the traced result when nothing else can see `a`."""
    array, other = inputs[0], inputs[1]
    symbol = INPLACE_OPERATORS[stem][0]
    if id(array) in ctx._const_ids:
        refs -= 1  # the trace's own keep-alive reference to a constant it captured earlier
    if user_instruction(following=True)[0] != "STORE_FAST":
        # `self.w += x`, `G += x` (global), `d[k] += x`: NumPy would change an array that lives
        # on after the call; rebinding would leave a traced value there instead.
        raise _error(ctx.name, symbol, "it is not a local variable of the function (an attribute, a container "
                                       "element or a global), and NumPy would change that array outside the call")
    if array.base is not None:
        raise _error(ctx.name, symbol, "it is a view of another NumPy array, which NumPy would change too")
    if not array.flags.writeable:
        raise ValueError("output array is read-only")
    if refs > _ARRAY_REFS:
        raise _error(ctx.name, symbol, "another variable or container refers to the same NumPy array, and NumPy "
                                       "would change it too")
    _numpy_verdict(stem, array.dtype, array.ndim, other)
    jnp = NUMPY.namespace
    fn = jnp.matmul if stem == "matmul" else getattr(jnp, INPLACE_OPERATORS[stem][1])
    result = fn(array, other)
    return _finish(result, array.dtype, array.shape, stem)


# The Tracer's writes are this module's: tracer.py knows nothing of them (the augmented
# operators, `x += y`, are attached with the others by trace/operators.py).
Tracer.__setitem__ = setitem
Tracer.fill = fill

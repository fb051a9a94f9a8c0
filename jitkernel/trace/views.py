"""Views and in-place writes: NumPy's aliasing, functionalised.

Every traced array is a view of a base `Memory`: an argument, an array made inside the function
(np.zeros, .copy(), ...) or the fresh result of a computation (its Memory is made lazily, on the
first view or write). A Memory holds the base's current SSA value and a version. A view Tracer
holds its parent Tracer and the movement op NumPy returns a view for (`_view = (parent, prim,
params)`; "identity" for `x[...]`; "dynamic_slice" with the start Vars in params for `x[i]` of a
traced `i`), its strides relative to the base (to know when NumPy's
reshape or ravel copies instead) and a cached value with the version it was derived at.
`Tracer.ir_var` returns the cached value while the version has not moved, and re-derives the view
from its parent otherwise: one attribute compare on the common path.

A write through any view computes the view's new value, then walks the view chain back to the
base applying the inverse of each movement (slice -> `update_slice` of the region, reshape ->
reshape back, transpose -> the inverse permutation), sets the base's value and bumps its version.
The program stays a pure dataflow graph; the observable semantics are NumPy's, `x[1:] = x[:-1]`
included (the right-hand side is an SSA value read before the write).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..errors import UnsupportedOperationError
from ..ir import Eqn, Var, primitives


class Memory:
    """The base an array is a view of: its current value (a Var) and a version bumped by every
    write. `argument` is the caller's array (its input index in `index`); `written` marks a base
    that was written, whose final value is then a hidden output (arguments) of the program."""

    __slots__ = ("argument", "ctx", "value", "version", "written", "index", "layout_read")

    def __init__(self, argument: bool = False, ctx: Any = None, value: Var | None = None, index: int = -1) -> None:
        self.argument = argument
        self.ctx = ctx
        self.value = value
        self.version = 0
        self.written = False
        self.index = index
        # A view-or-copy decision read this argument's real strides: the program is valid only
        # for arguments of the same layout (Program.layout_args, the call's layout guard).
        self.layout_read = False


def c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a C-ordered array of `shape`."""
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def strides_of(t: Any) -> tuple[int, ...]:
    """t's element strides relative to its base: a view's own, an argument's real layout (set by
    TraceContext.new_input), C order for an array made inside the function."""
    return t._strides if t._strides is not None else c_strides(t.shape)


def argument_strides(array: Any) -> tuple[int, ...] | None:
    """The element strides of a caller's array, as the trace's view rules read them (None for
    what has no strides: Python scalars, device arrays). Byte strides that are not a multiple of
    the item size (a hand-made as_strided layout) are kept in bytes: NumPy merges axes on stride
    equalities, which hold in bytes exactly when they hold in elements."""
    strides = getattr(array, "strides", None)
    if strides is None:
        return None
    size = array.dtype.itemsize
    if size and all(s % size == 0 for s in strides):
        return tuple(s // size for s in strides)
    return tuple(strides)


def _layout_decides(t: Any) -> None:
    """A view-or-copy decision is being made on t's strides: if t is (a view of) an argument, the
    program depends on that argument's layout (a C-ordered call and an F-ordered one differ)."""
    mem = t._mem
    if mem is not None and mem.argument:
        mem.layout_read = True


def _numpy_layout(shape: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    """A data-less stand-in with these element strides (int8: bytes are elements), for asking
    NumPy's own layout rules. Never read: its buffer is one byte."""
    return as_strided(np.zeros(1, np.int8), shape, strides, writeable=False)


def reshape_strides(shape: tuple[int, ...], strides: tuple[int, ...], new_shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The strides NumPy's reshape gives as a view, or None when NumPy copies."""
    try:
        return np.reshape(_numpy_layout(shape, strides), new_shape, copy=False).strides
    except (ValueError, AttributeError):
        return None


def is_c_contiguous(t: Any) -> bool:
    """Whether t is C-contiguous: a view-or-copy decision, so an argument's layout guards the
    program (a C-ordered argument has no _strides, yet its program must not serve an F one)."""
    _layout_decides(t)
    if t._view is None and t._strides is None:
        return True  # C order: made inside the function, or a C-ordered argument
    return bool(_numpy_layout(t.shape, strides_of(t)).flags.c_contiguous)


def is_f_contiguous(t: Any) -> bool:
    _layout_decides(t)
    return bool(_numpy_layout(t.shape, strides_of(t)).flags.f_contiguous)


def _view_strides(parent: Any, prim: str, params: dict, out_shape: tuple[int, ...]) -> tuple[int, ...] | None:
    s = strides_of(parent)
    if prim in ("identity", "dynamic_slice"):
        return s  # a window at a run-time start keeps its parent's strides
    if prim == "slice":
        return tuple(a * b for a, b in zip(s, params["steps"]))
    if prim == "transpose":
        return tuple(s[p] for p in params["permutation"])
    if prim == "reshape":
        if [n for n in parent.shape if n != 1] != [n for n in out_shape if n != 1]:
            _layout_decides(parent)  # (adding or dropping size-1 axes is a view for every layout)
        return reshape_strides(parent.shape, s, out_shape)
    if prim in ("real", "imag"):
        return tuple(2 * x for x in s)  # a part of each complex element: twice the stride in floats
    if prim == "diagonal":  # NumPy's own strides for its diagonal view
        return np.diagonal(_numpy_layout(parent.shape, s), params["offset"], params["axis1"], params["axis2"]).strides
    if prim == "broadcast_in_dim":
        out = [0] * len(out_shape)
        for src, dst in enumerate(params["broadcast_dimensions"]):
            if parent.shape[src] == out_shape[dst]:
                out[dst] = s[src]
        return tuple(out)
    raise AssertionError(prim)


def ensure_memory(t: Any) -> Memory:
    """t's Memory, made now for a fresh base (a computed result seen as an array of its own)."""
    mem = t._mem
    if mem is None:
        mem = t._mem = Memory(ctx=t._ctx, value=t._var)
        t._version = 0
    return mem


def make_view(out: Any, parent: Any, prim: str, params: dict | None) -> None:
    """Make Tracer `out` (just computed from `parent` by movement `prim`) a view of parent's
    base, as NumPy's reshape / transpose / basic slicing / broadcast_to return views. A reshape
    NumPy would copy (a non-contiguous parent) leaves `out` a fresh array."""
    out.scalar = False
    if parent.weak is not None or (parent.ndim == 0 and parent.scalar and prim != "broadcast_in_dim"):
        return  # a view of a Python or NumPy scalar is a new array: nothing else can see it
    if out.aval.is_symbolic or parent.aval.is_symbolic:
        return  # a window of symbolic length is never a view: check_writeable refuses writes into it
    strides = _view_strides(parent, prim, params or {}, out.shape)
    if strides is None:
        return
    mem = ensure_memory(parent)
    out._mem = mem
    out._view = (parent, prim, params or {})
    out._strides = strides
    out._version = mem.version


def emit(ctx: Any, prim: str, inputs: list[Var], params: dict) -> Var:
    """Append one equation on Vars (no Tracer bookkeeping) and return its output."""
    (aval,) = primitives.infer_avals(prim, [v.aval for v in inputs], params)
    out = Var(aval)
    ctx.eqns.append(Eqn(prim, list(inputs), [out], dict(params)))
    local = getattr(ctx, "_local", None)
    if local is not None:  # a sub-trace (trace/subtrace.py): its own value, never a capture
        local.add(out)
        ctx.producer[out] = ctx.eqns[-1]
    return out


def refresh(t: Any) -> Var:
    """t's current value after a write to its base moved the version (Tracer.ir_var)."""
    mem = t._mem
    if t._view is None:
        var = mem.value
    else:
        parent, prim, params = t._view
        pv = parent.ir_var
        if prim == "identity":
            var = pv
        elif prim == "dynamic_slice":  # the window at the starts the view was made with
            var = emit(t._ctx, prim, [pv, *params["starts"]], {"sizes": params["sizes"]})
        elif prim == "diagonal":
            var = emit_diagonal(t._ctx, pv, parent.shape, **params)
        else:
            var = emit(t._ctx, prim, [pv], params)
    t._var, t._version = var, mem.version
    return var


def emit_diagonal(ctx: Any, var: Var, shape: tuple[int, ...], offset: int, axis1: int, axis2: int) -> Var:
    """numpy.diagonal of `var` (of `shape`) as movements: the two axes moved last, the matrices'
    rows laid end to end, and a strided slice of them (element (i, i + offset) is element
    i * (m + 1) + offset), whose index map simplifies back to the matrix's own offsets."""
    rest = [d for d in range(len(shape)) if d not in (axis1, axis2)]
    perm = tuple(rest + [axis1, axis2])
    if perm != tuple(range(len(shape))):
        var = emit(ctx, "transpose", [var], {"permutation": perm})
    batch = tuple(shape[d] for d in rest)
    n, m = shape[axis1], shape[axis2]
    length = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    var = emit(ctx, "reshape", [var], {"new_shape": batch + (n * m,)})
    start = (offset if offset >= 0 else -offset * m) if length else 0
    return emit(ctx, "slice", [var], {"starts": (0,) * len(batch) + (start,), "steps": (1,) * len(batch) + (m + 1,),
                                      "shape": batch + (length,)})


def fresh(t: Any) -> Any:
    """A new array with t's current values (a copy: its own identity, nothing shared)."""
    from .tracer import Tracer
    out = Tracer(t._ctx, t.ir_var)
    out.scalar = False
    return out


def _inverse(ctx: Any, prim: str, params: dict, parent: Any, value: Var) -> Var:
    """The parent's new value when its view (made by `prim`) takes the value `value`."""
    if prim == "identity":
        return value
    if prim == "reshape":
        return emit(ctx, "reshape", [value], {"new_shape": parent.shape})
    if prim == "transpose":
        inverse = tuple(int(i) for i in np.argsort(params["permutation"]))
        return emit(ctx, "transpose", [value], {"permutation": inverse})
    if prim == "slice":
        return emit(ctx, "update_slice", [parent.ir_var, value], {"starts": params["starts"], "steps": params["steps"]})
    if prim == "dynamic_slice":  # x[i] of a traced i (numpy/_dynamic.py): the window written back at i
        return emit(ctx, "dynamic_update_slice", [parent.ir_var, value, *params["starts"]], {})
    if prim == "real":  # z.real[...] = v: the complex base with its real part replaced
        return emit(ctx, "make_complex", [value, emit(ctx, "imag", [parent.ir_var], {})], {})
    if prim == "imag":
        return emit(ctx, "make_complex", [emit(ctx, "real", [parent.ir_var], {}), value], {})
    raise AssertionError(prim)


# Views NumPy makes read-only: np.broadcast_to, ndarray.diagonal.
_READ_ONLY_VIEWS = frozenset({"broadcast_in_dim", "diagonal"})


def check_writeable(t: Any) -> None:
    """Raise NumPy's error for a write into `t` that NumPy refuses, before anything is written."""
    from .context import current_context
    if t.weak is not None:
        raise TypeError(f"'{t.weak.__name__}' object does not support item assignment")
    if t.ndim == 0 and t.scalar:
        raise TypeError(f"'numpy.{t.dtype.name}' object does not support item assignment")
    if t.aval.is_symbolic:
        raise UnsupportedOperationError(
            f"a write into an array of symbolic length {t.aval} (a slice whose length depends on a loop "
            f"index, kept in a variable) is not supported, at {_where()}: assign through the "
            "array itself, x[:i] = ... or x[:i] += ...")
    node = t
    while node._view is not None:
        if node._view[1] in _READ_ONLY_VIEWS:
            raise ValueError("assignment destination is read-only")
        node = node._view[0]
    mem = t._mem
    # (a view made inside a loop body of an enclosing trace's array shares that trace's Memory:
    # writing it there would give the enclosing base a value of the body)
    if t._ctx is not current_context() or (mem is not None and mem.ctx is not None and mem.ctx is not current_context()):
        raise UnsupportedOperationError(
            f"in jitted function {current_context().name if current_context() else '?'!r}: an array of the "
            f"enclosing trace ({(t._ctx if t._ctx is not current_context() else mem.ctx).name!r}) is written inside a nested trace (a loop body or a branch); "
            "pass it in as a loop carry (or an operand) and write the result back after the loop")


def write(t: Any, value: Any) -> None:
    """`t[...] = value` for a Tracer `value` of t's exact shape and dtype: the new value of t's
    base, through the inverse of every view op between them. check_writeable(t) came first."""
    var = value.ir_var  # read the right-hand side before anything changes (x[1:] = x[:-1])
    assert var.aval.shape == t.shape and var.aval.dtype == t.dtype, (var.aval, t.aval)
    ctx = t._ctx
    node, new = t, var
    while node._view is not None:
        parent, prim, params = node._view
        new = _inverse(ctx, prim, params, parent, new)
        node = parent
    mem = ensure_memory(node)
    ctx.carry_byteorder(mem.value, new)  # a written array keeps its dtype (np.zeros_like(a), then written)
    mem.value = new
    mem.version += 1
    mem.written = True
    node._var, node._version = new, mem.version
    t._var, t._version = var, mem.version  # the view itself now holds exactly what was written


def same_view(a: Any, b: Any) -> bool:
    """Whether Tracers a and b are the same region of the same base (x[i] = x[i] after an
    augmented update through the view: nothing to write)."""
    while True:
        if a is b:
            return True
        if a._view is None or b._view is None or a._view[1:] != b._view[1:]:
            return False
        a, b = a._view[0], b._view[0]


# The movements NumPy's own view functions make, replayed on the caller's array for a returned
# view (a window at a run-time start, dynamic_slice, is not: that result stays a new array).
_REPLAYABLE = frozenset({"identity", "slice", "transpose", "reshape", "real", "imag", "broadcast_in_dim", "diagonal"})


def argument_view_chain(t: Any, ctx: Any) -> tuple[int, tuple] | None:
    """(input index, movements) when the returned Tracer t is an array argument or a view of
    one, which NumPy returns as that array or a view of it: the call then returns the same view
    of the caller's array (after written arguments are copied back), not a new array. Each
    movement is (prim, params, shape of its result). None for anything else (0-d results: NumPy
    returns scalars, as the call does)."""
    mem = t._mem
    if mem is None or not mem.argument or mem.ctx is not ctx or t.weak is not None or t.ndim == 0:
        return None
    chain = []
    node = t
    while node._view is not None:
        parent, prim, params = node._view
        if prim not in _REPLAYABLE:
            return None
        chain.append((prim, params, node.shape))
        node = parent
    if node._ctx is not ctx:
        return None
    return mem.index, tuple(reversed(chain))


def replay_view(array: np.ndarray, chain: tuple) -> np.ndarray | None:
    """The view of the caller's `array` that `chain` (argument_view_chain) made of it while
    tracing; None if NumPy would not give a view (never, for the layout the program was traced
    for: api.Jitted's layout guard)."""
    out = array
    for prim, params, shape in chain:
        if prim == "identity":
            out = out.view()
        elif prim == "slice":
            out = out[tuple(slice(s, s + st * n if s + st * n >= 0 else None, st) if n else slice(0, 0)
                            for s, st, n in zip(params["starts"], params["steps"], shape))]
        elif prim == "transpose":
            out = out.transpose(params["permutation"])
        elif prim == "reshape":
            try:
                out = np.reshape(out, shape, copy=False)
            except ValueError:
                return None
        elif prim in ("real", "imag"):
            out = out.real if prim == "real" else out.imag
        elif prim == "diagonal":
            out = np.diagonal(out, params["offset"], params["axis1"], params["axis2"])
        else:  # broadcast_in_dim: np.broadcast_to's read-only view
            expanded = [1] * len(shape)
            for src, dst in enumerate(params["broadcast_dimensions"]):
                expanded[dst] = out.shape[src]
            out = np.broadcast_to(out.reshape(expanded), shape)
    if chain and out.shape != tuple(chain[-1][2]):
        return None  # (a slice of a symbolic or unexpected shape: the program's own result stays)
    return out


def _where() -> str:
    from .context import user_frame_location
    return user_frame_location()

"""What a traced array is a view of, and how a view reads its base: the `Memory` of a base,
element strides relative to it (NumPy's own rules decide whether a reshape is a view or a
copy), making a view, and deriving a view's current value again after a write moved its base's
version. The reading half of the model trace/views.py describes; the writing half is there.
Below tracer.py: `Tracer.ir_var` calls `refresh`, and nothing here needs the Tracer class
(views are read through their attributes)."""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

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


def layout_strides(array: Any) -> tuple[int, ...] | None:
    """The byte strides a program's layout guard compares (Program.layout_guard): an ndarray's
    own; C order's for an array that has a shape but no strides (a device array: the trace reads
    it in C order, `argument_strides`, and its host copy is C-ordered); None for a scalar."""
    strides = getattr(array, "strides", None)
    if strides is not None or getattr(array, "shape", None) is None:
        return strides
    itemsize = np.dtype(array.dtype).itemsize
    return tuple(s * itemsize for s in c_strides(tuple(array.shape)))


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


# ----------------------------------------------------------------------------- a view's strides
# Each rule: (parent, the parent's strides, params, the view's shape) -> the view's strides
# relative to the base, or None where NumPy copies instead of making a view.

def _same_strides(parent: Any, s: tuple, params: dict, out_shape: tuple) -> tuple:
    return s  # x[...]; a window at a run-time start (dynamic_slice) keeps its parent's strides


def _slice_strides(parent: Any, s: tuple, params: dict, out_shape: tuple) -> tuple:
    return tuple(a * b for a, b in zip(s, params["steps"]))


def _transpose_strides(parent: Any, s: tuple, params: dict, out_shape: tuple) -> tuple:
    return tuple(s[p] for p in params["permutation"])


def _reshape_strides(parent: Any, s: tuple, params: dict, out_shape: tuple) -> tuple | None:
    if [n for n in parent.shape if n != 1] != [n for n in out_shape if n != 1]:
        _layout_decides(parent)  # (adding or dropping size-1 axes is a view for every layout)
    return reshape_strides(parent.shape, s, out_shape)


def _part_strides(parent: Any, s: tuple, params: dict, out_shape: tuple) -> tuple:
    return tuple(2 * x for x in s)  # a part of each complex element: twice the stride in floats


def _diagonal_strides(parent: Any, s: tuple, params: dict, out_shape: tuple) -> tuple:
    # NumPy's own strides for its diagonal view
    return np.diagonal(_numpy_layout(parent.shape, s), params["offset"], params["axis1"], params["axis2"]).strides


def _broadcast_strides(parent: Any, s: tuple, params: dict, out_shape: tuple) -> tuple:
    out = [0] * len(out_shape)
    for src, dst in enumerate(params["broadcast_dimensions"]):
        if parent.shape[src] == out_shape[dst]:
            out[dst] = s[src]
    return tuple(out)


_VIEW_STRIDES = {
    "identity": _same_strides, "dynamic_slice": _same_strides, "slice": _slice_strides,
    "transpose": _transpose_strides, "reshape": _reshape_strides, "real": _part_strides,
    "imag": _part_strides, "diagonal": _diagonal_strides, "broadcast_in_dim": _broadcast_strides,
}


def _view_strides(parent: Any, prim: str, params: dict, out_shape: tuple[int, ...]) -> tuple[int, ...] | None:
    rule = _VIEW_STRIDES.get(prim)
    if rule is None:
        raise AssertionError(prim)
    return rule(parent, strides_of(parent), params, out_shape)


# ----------------------------------------------------------------------------- making a view

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


# ----------------------------------------------------------------------------- reading a view again

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


# The view's value from its parent's current value `pv`, where that is not one equation of the
# movement itself with the view's params: (ctx, pv, parent, params) -> Var.
_REDERIVE = {
    "identity": lambda ctx, pv, parent, params: pv,
    # the window at the starts the view was made with
    "dynamic_slice": lambda ctx, pv, parent, params: emit(ctx, "dynamic_slice", [pv, *params["starts"]],
                                                          {"sizes": params["sizes"]}),
    "diagonal": lambda ctx, pv, parent, params: emit_diagonal(ctx, pv, parent.shape, **params),
}


def refresh(t: Any) -> Var:
    """t's current value after a write to its base moved the version (Tracer.ir_var)."""
    mem = t._mem
    if t._view is None:
        var = mem.value
    else:
        parent, prim, params = t._view
        pv = parent.ir_var
        rule = _REDERIVE.get(prim)
        var = rule(t._ctx, pv, parent, params) if rule is not None else emit(t._ctx, prim, [pv], params)
    t._var, t._version = var, mem.version
    return var

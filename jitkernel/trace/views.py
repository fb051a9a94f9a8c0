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

Memory, strides, making a view and re-deriving its value are trace/memory.py's (below the
Tracer, whose `ir_var` needs them); writing through views and returning them are here.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedOperationError
from ..ir import Var
from .context import current_context, user_frame_location
from .memory import emit, ensure_memory
# Read here by the modules above the trace (numpy/, jitted/): the reading half of the model,
# and `fresh` (a copy, not a view: the Tracer's own, x.copy()).
from .memory import (argument_strides as argument_strides, c_strides as c_strides,
                     layout_strides as layout_strides, emit_diagonal as emit_diagonal,
                     is_c_contiguous as is_c_contiguous, is_f_contiguous as is_f_contiguous, make_view as make_view)
from .tracer import fresh as fresh


# ----------------------------------------------------------------------------- writing through a view
# The parent's new value when its view, made by the movement, takes the value `value`:
# (ctx, parent, params, value) -> Var. Read-only views (_READ_ONLY_VIEWS) have none.

def _transpose_back(ctx: Any, parent: Any, params: dict, value: Var) -> Var:
    inverse = tuple(int(i) for i in np.argsort(params["permutation"]))
    return emit(ctx, "transpose", [value], {"permutation": inverse})


_INVERSE = {
    "identity": lambda ctx, parent, params, value: value,
    "reshape": lambda ctx, parent, params, value: emit(ctx, "reshape", [value], {"new_shape": parent.shape}),
    "transpose": _transpose_back,
    "slice": lambda ctx, parent, params, value: emit(ctx, "update_slice", [parent.ir_var, value],
                                                     {"starts": params["starts"], "steps": params["steps"]}),
    # x[i] of a traced i (numpy/_dynamic.py): the window written back at i
    "dynamic_slice": lambda ctx, parent, params, value: emit(ctx, "dynamic_update_slice",
                                                             [parent.ir_var, value, *params["starts"]], {}),
    # z.real[...] = v: the complex base with its real part replaced
    "real": lambda ctx, parent, params, value: emit(ctx, "make_complex",
                                                    [value, emit(ctx, "imag", [parent.ir_var], {})], {}),
    "imag": lambda ctx, parent, params, value: emit(ctx, "make_complex",
                                                    [emit(ctx, "real", [parent.ir_var], {}), value], {}),
}


def _inverse(ctx: Any, prim: str, params: dict, parent: Any, value: Var) -> Var:
    """The parent's new value when its view (made by `prim`) takes the value `value`."""
    rule = _INVERSE.get(prim)
    if rule is None:
        raise AssertionError(prim)
    return rule(ctx, parent, params, value)


# Views NumPy makes read-only: np.broadcast_to, ndarray.diagonal.
_READ_ONLY_VIEWS = frozenset({"broadcast_in_dim", "diagonal"})


def check_writeable(t: Any) -> None:
    """Raise NumPy's error for a write into `t` that NumPy refuses, before anything is written."""
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
    refused = getattr(t._ctx, "_refused_writes", None)
    if refused and t._mem is not None and id(t._mem) in refused:
        raise UnsupportedOperationError(f"{refused[id(t._mem)][1]} (at {_where()})")
    mem = t._mem
    # (a view made inside a loop body of an enclosing trace's array shares that trace's Memory:
    # writing it there would give the enclosing base a value of the body)
    if t._ctx is not current_context() or (mem is not None and mem.ctx is not None and mem.ctx is not current_context()):
        raise UnsupportedOperationError(
            f"in jitted function {current_context().name if current_context() else '?'!r}: an array of the "
            f"enclosing trace ({(t._ctx if t._ctx is not current_context() else mem.ctx).name!r}) is written inside a nested trace (a loop body or a branch); "
            "pass it in as a loop carry (or an operand) and write the result back after the loop")


def refuse_writes(t: Any, message: str) -> None:
    """Make every later write into `t`'s memory (t, its base, any view of them) raise
    UnsupportedOperationError(message): for arrays that NumPy would link by a view that jitkernel
    computes as a copy (as_strided, sliding_window_view), where a write would reach the other
    array in NumPy and not here."""
    refused = getattr(t._ctx, "_refused_writes", None)
    if refused is None:
        refused = t._ctx._refused_writes = {}
    mem = ensure_memory(t)
    refused[id(mem)] = (mem, message)  # (the Memory is kept alive: its id is never reused)


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


# ----------------------------------------------------------------------------- returning a view
# The movements NumPy's own view functions make, replayed on the caller's array for a returned
# view: (array, params, shape of the result) -> the view, or None where NumPy would copy. A
# window at a run-time start, dynamic_slice, is not replayed: that result stays a new array.

def _replay_slice(out: np.ndarray, params: dict, shape: tuple) -> np.ndarray:
    return out[tuple(slice(s, s + st * n if s + st * n >= 0 else None, st) if n else slice(0, 0)
                     for s, st, n in zip(params["starts"], params["steps"], shape))]


def _replay_reshape(out: np.ndarray, params: dict, shape: tuple) -> np.ndarray | None:
    try:
        return np.reshape(out, shape, copy=False)
    except ValueError:
        return None


def _replay_broadcast(out: np.ndarray, params: dict, shape: tuple) -> np.ndarray:
    """np.broadcast_to's read-only view."""
    expanded = [1] * len(shape)
    for src, dst in enumerate(params["broadcast_dimensions"]):
        expanded[dst] = out.shape[src]
    return np.broadcast_to(out.reshape(expanded), shape)


_REPLAY = {
    "identity": lambda out, params, shape: out.view(),
    "slice": _replay_slice,
    "transpose": lambda out, params, shape: out.transpose(params["permutation"]),
    "reshape": _replay_reshape,
    "real": lambda out, params, shape: out.real,
    "imag": lambda out, params, shape: out.imag,
    "diagonal": lambda out, params, shape: np.diagonal(out, params["offset"], params["axis1"], params["axis2"]),
    "broadcast_in_dim": _replay_broadcast,
}
_REPLAYABLE = frozenset(_REPLAY)


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
        out = _REPLAY[prim](out, params, shape)
        if out is None:
            return None
    if chain and out.shape != tuple(chain[-1][2]):
        return None  # (a slice of a symbolic or unexpected shape: the program's own result stays)
    return out


def _where() -> str:
    return user_frame_location()

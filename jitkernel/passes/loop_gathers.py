"""Data-dependent windows and gathers inside loop bodies become kernel gathers, so the loop runs
natively.

A CSR row as written (`cols = A_col[A_row[i]:A_row[i + 1]]; y[i] = A_val[...] @ x[cols]`, NPBench
spmv) traces to `datadep_call` library steps (numpy/_datadep.py): the window, the gather `x[cols]`
and the dot each run NumPy on the exact prefix. A library step keeps a CPU loop Python-driven
(`native_ok`): one Python round trip per row, three NumPy calls, and padded copies as long as the
whole array, per trip. In a body whose only obstacles are such steps, each is rewritten as graph
operations on the padded value (valid part `[0, count)`, zeros after it, as the steps give):

- `window(data, start, stop)` of a 1-D `data`: `select(j < count, data[pos], 0)` with `pos =
  select(j < count, start' + j, 0)`, `start'`/`stop'` Python's slice bounds (a negative bound
  wraps once, both clamp to `[0, n]`) and `count = max(stop' - start', 0)`;
- `x[idx[:count]]` of a non-empty 1-D `x` (`getitem` by one index array): `select(j < count,
  x[select(j < count, idx, 0)], 0)`: NumPy's IndexError for a valid index out of bounds, never
  for the padding (index 0 is in bounds);
- `np.dot(a[:count], b[:count])` of two 1-D values whose counts are the same value (the same
  variable, or the same computation: a window's count is computed once per bound form): the
  masked product summed in any order (`pad_fill` + `dot_sum`, as a dot over a symbolic length,
  ir/symdim_prims.py); BLAS's dot has no order either. Different counts keep the step (NumPy's
  ValueError for unequal lengths).

The gathers then become loads inside kernels (passes/native_loops.py `kernel_gather`) and the
masked sum a reduction whose loop stops at the count (fusion/extents.py): per row, `count`
multiply-adds. A gather whose result nothing reads is not rewritten (the step raises NumPy's
IndexError even then; a rewritten one would not be computed). The body is kept as it was unless
the rewrite makes the loop native.

>>> import numpy as np, jitkernel as jk
>>> def spmv(A_row, A_col, A_val, x):
...     y = np.empty(A_row.size - 1, A_val.dtype)
...     for i in range(A_row.size - 1):
...         y[i] = A_val[A_row[i]:A_row[i + 1]] @ x[A_col[A_row[i]:A_row[i + 1]]]
...     return y
>>> from jitkernel.passes import optimize
>>> from jitkernel.passes.native_loops import native_ok
>>> A_row = np.array([0, 2, 3, 3, 3, 3])  # five rows: a loop (shorter ranges are unrolled)
>>> args = (A_row, np.array([0, 1, 1]), np.array([1.0, 2.0, 3.0]), np.array([1.0, 10.0]))
>>> prog = datadep_in_loops_as_gathers(optimize(jk.make_ir(spmv)(*args)))
>>> [native_ok(e) for e in prog.eqns if e.prim == "fori_loop"]
[True]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..ir import AType, Eqn, Program, Var
from .dot_operands import _Emitter
from .loop_dots import _small_dots_as_reductions, rewrite_loops_to_native
from .same_value import SameValue

INT64 = np.dtype(np.int64)
_DATADEP = ("datadep_call", "datadep_pure")


def datadep_in_loops_as_gathers(program: Program) -> Program:
    """Each loop or branch (recursively) that is not native because of data-dependent windows,
    gathers and dot products of them gets them as graph operations; any other stays as it is."""
    return rewrite_loops_to_native(program, _rewrite_body_and_dots)


def _rewrite_body_and_dots(body: Program) -> Program | None:
    """`_rewrite_body`, then its small matrix products as reductions where all are small
    (passes/loop_dots.py: a body may need both to be native)."""
    rewritten = _rewrite_body(body)
    if rewritten is None:
        return None
    return _small_dots_as_reductions(rewritten) or rewritten


def _rewrite_body(body: Program) -> Program | None:
    """`body` with its windows, gathers and dots of padded values as graph operations; None when
    nothing was rewritten."""
    if not any(e.prim in _DATADEP for e in body.eqns):
        return body
    live = _read_vars(body)
    same = SameValue(body)
    em = _Emitter(body)
    changed = False
    for eqn in body.eqns:
        rule = _rule_for(eqn)
        done = rule is not None and rule(eqn, em, live, same)
        changed |= bool(done)
        if not done:
            em.eqns.append(eqn)
    if not changed:
        return None
    return em.rebuilt(body)


def _rule_for(eqn: Eqn) -> Any:
    if eqn.prim not in _DATADEP:
        return None
    fn, kw = eqn.params["fn"], dict(eqn.params["kw"])
    if fn == "window":
        return _window
    if fn == "getitem" and kw.get("index") == (("array", 0),):
        return _getitem
    if fn == "call" and kw.get("name") == "dot" and kw.get("module", "numpy") == "numpy" and not kw.get("kwargs"):
        return _dot
    return None


def _read_vars(body: Program) -> set[Var]:
    """The variables the body's results are computed from (not those only kept for their
    errors, which a rewrite must not drop)."""
    need = set(body.outvars)
    for e in reversed(body.eqns):
        if any(o in need for o in e.outputs):
            need.update(e.inputs)
    return need


def _outs(eqn: Eqn) -> tuple:
    return tuple(kind for kind, _, _ in eqn.params["outs"])


def _scalar(em: _Emitter, value: int, dtype: np.dtype = INT64) -> Var:
    return em.const(np.asarray(value, dtype))


def _full(em: _Emitter, v: Var, n: int) -> Var:
    """The 0-d `v` broadcast to `(n,)`."""
    return em.emit("broadcast_in_dim", [v], AType((n,), v.aval.dtype), shape=(n,), broadcast_dimensions=())


def _int64(em: _Emitter, v: Var) -> Var:
    return v if v.aval.dtype == INT64 else em.emit("convert", [v], AType(v.aval.shape, INT64), dtype=INT64)


def _valid(em: _Emitter, count: Var, n: int) -> Var:
    """`iota(n) < count`: the valid positions of a padded value."""
    j = em.emit("iota", [], AType((n,), INT64), shape=(n,), dimension=0, dtype=INT64)
    return em.emit("less", [j, _full(em, _int64(em, count), n)], AType((n,), np.dtype(bool)))


def _masked(em: _Emitter, valid: Var, v: Var, out: Var | None = None) -> Var:
    """`select(valid, v, 0)` (into `out` when given)."""
    zeros = _full(em, _scalar(em, 0, v.aval.dtype), v.aval.shape[0])
    if out is None:
        return em.emit("select", [valid, v, zeros], v.aval)
    em.eqns.append(Eqn("select", [valid, v, zeros], [out], {}))
    return out


def _slice_bound(em: _Emitter, bound: Var, n: int) -> Var:
    """A 1-D slice bound as Python takes it: `bound + n` when negative, then clamped to [0, n]."""
    s = _int64(em, bound)
    scalar = AType((), INT64)
    negative = em.emit("less", [s, _scalar(em, 0)], AType((), np.dtype(bool)))
    wrapped = em.emit("select", [negative, em.emit("add", [s, _scalar(em, n)], scalar), s], scalar)
    return em.emit("minimum", [em.emit("maximum", [wrapped, _scalar(em, 0)], scalar), _scalar(em, n)], scalar)


def _window(eqn: Eqn, em: _Emitter, live: set[Var], same: SameValue) -> bool:
    """`data[start:stop]` padded to (N,): a gather of the valid positions, zeros after them."""
    data, start, stop = eqn.inputs
    (out,) = eqn.outputs
    if _outs(eqn) != ("pad",) or data.aval.ndim != 1 or data.aval.shape[0] == 0 or out.aval.ndim != 1:
        return False
    # (A uint64 bound above 2**63 is a huge Python int to the slice, not a negative int64.)
    if any(v.aval.shape != () or v.aval.dtype.kind not in "iu" or v.aval.dtype == np.uint64 for v in (start, stop)):
        return False
    n, size = data.aval.shape[0], out.aval.shape[0]
    first, last = _slice_bound(em, start, n), _slice_bound(em, stop, n)
    scalar = AType((), INT64)
    count = em.emit("maximum", [em.emit("subtract", [last, first], scalar), _scalar(em, 0)], scalar)
    valid = _valid(em, count, size)
    j = em.emit("iota", [], AType((size,), INT64), shape=(size,), dimension=0, dtype=INT64)
    position = _masked(em, valid, em.emit("add", [_full(em, first, size), j], AType((size,), INT64)))
    taken = em.emit("gather", [data, position], AType((size,), data.aval.dtype), index=(("array", 0),))
    _masked(em, valid, taken, out)
    return True


def _getitem(eqn: Eqn, em: _Emitter, live: set[Var], same: SameValue) -> bool:
    """`x[idx[:count]]` padded: the gather of the valid indices (index 0 in the padding)."""
    if eqn.params["ncounts"] != 1 or tuple(eqn.params["layout"]) != (-1, 0) or _outs(eqn) != ("pad",):
        return False
    count, x, idx = eqn.inputs
    (out,) = eqn.outputs
    if out not in live or x.aval.ndim != 1 or x.aval.shape[0] == 0 or idx.aval.ndim != 1:
        return False
    if idx.aval.dtype.kind not in "iu" or out.aval != AType(idx.aval.shape, x.aval.dtype):
        return False
    valid = _valid(em, count, idx.aval.shape[0])
    index = _masked(em, valid, idx)
    taken = em.emit("gather", [x, index], out.aval, index=(("array", 0),))
    _masked(em, valid, taken, out)
    return True


def _dot(eqn: Eqn, em: _Emitter, live: set[Var], same: SameValue) -> bool:
    """`np.dot(a[:count], b[:count])` of 1-D values: the masked product, summed in any order."""
    params = eqn.params
    if _outs(eqn) != ("static",) or len(eqn.inputs) != params["ncounts"] + 2:
        return False
    counts, (a, b) = eqn.inputs[:params["ncounts"]], eqn.inputs[params["ncounts"]:]
    layout = tuple(params["layout"])
    (out,) = eqn.outputs
    dt = out.aval.dtype
    if -1 in layout or not same(counts[layout[0]], counts[layout[1]]):
        return False
    if out.aval.shape != () or dt.kind not in "iuf" or dt.itemsize < 4 or a.aval.ndim != 1 or a.aval.shape != b.aval.shape:
        return False
    if a.aval.dtype.kind not in "biuf" or b.aval.dtype.kind not in "biuf":
        return False
    n = a.aval.shape[0]
    ops = [v if v.aval.dtype == dt else em.emit("convert", [v], AType((n,), dt), dtype=dt) for v in (a, b)]
    product = em.emit("multiply", ops, AType((n,), dt))
    zeros = _full(em, _scalar(em, 0, dt), n)
    masked = em.emit("pad_fill", [_valid(em, counts[layout[0]], n), product, zeros], AType((n,), dt))
    em.eqns.append(Eqn("dot_sum", [masked], [out], {"axes": (0,)}))
    return True


"""Library work of a loop that no trip's state feeds, computed for every trip before the loop.

NPBench's contour_integral solves one linear system per point of a contour and accumulates the
solutions: `for z in pts: Tz = sum(z**k * H[k]); X = np.linalg.solve(Tz, Y); P0 += X; ...`.
The solve reads the loop index and values from before the loop, never the accumulators, so the
trips' solves are independent of each other: Numba's `prange` version runs them on two threads.
Here the loop's equations that no carry feeds and that lead to such a library step (linalg)
are taken out of the body, batched over the trips (transforms/batching.py, the vmap rules:
NumPy's linalg computes a stack of matrices matrix by matrix, the same LAPACK call per matrix,
so the results are the loop's bit for bit), and computed once before the loop; the body reads
its trip's slice. The batched step then splits its stack across the CPU's worker threads
(backends/cpu/library_batches.py), and the loop, with no library step left, can be native.

Only where nothing changes that a user sees:
- the trip count is a constant (the batch's size), at least 2, and the batched values take at
  most `MAX_BATCH_BYTES`;
- the hoisted library steps are the only equations of the body that can raise (NumPy raises
  the first trip's error; a batched step raises on its first failing matrix, with the same
  error, and no other step of an earlier trip could have raised first);
- every hoisted equation has a batching rule (otherwise the loop is left as it is).

>>> import numpy as np, jitkernel as jk
>>> def f(a, pts):
...     acc = np.zeros(3)
...     for z in pts:
...         acc = acc + np.linalg.solve(a * z + np.eye(3), np.ones(3))
...     return acc
>>> a, pts = np.arange(9.0).reshape(3, 3), np.array([1.0, 2.0, 3.0])
>>> np.allclose(jk.jit(f)(a, pts), f(a, pts))
True
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from ..ir import AType, Eqn, Program, Var, primitives
from ..ir.control_flow import sub_programs
from ..ir.library_prims import STACKED_LINALG
from ..ir.program import may_raise
from .control_flow import map_sub_programs
from .dot_operands import _Emitter
from .native_loops import body_library_prims
from .rewrite import inline_copy

INT64 = np.dtype(np.int64)
MAX_BATCH_BYTES = 64 << 20


def hoist_trip_maps(program: Program) -> Program:
    """`program` with the independent library work of its constant-trip `fori_loop`s computed
    before them (module docstring); unchanged where nothing qualifies, and on backends that run
    library steps in loop bodies (no native loop to gain, no stack split)."""
    if body_library_prims():
        return program
    return _hoist_all(program)


def _hoist_all(program: Program) -> Program:
    if not any(sub_programs(e.params) for e in program.eqns):
        return program
    consts = {v: c for v, c in zip(program.constvars, program.consts)}
    em = _Emitter(program)
    changed = False
    for eqn in program.eqns:
        if sub_programs(eqn.params):
            new = map_sub_programs(eqn, _hoist_all)
            changed |= new is not eqn
            eqn = new
        if eqn.prim == "fori_loop" and _hoist(eqn, consts, em):
            changed = True
            continue
        em.eqns.append(eqn)
    return em.rebuilt(program) if changed else program


def _constant_int(v: Var, consts: dict) -> int | None:
    c = consts.get(v)
    if c is None or np.ndim(c) != 0 or np.asarray(c).dtype.kind not in "iu":
        return None
    return int(np.asarray(c))


def _hoist(loop: Eqn, consts: dict, em: _Emitter) -> bool:
    """Emit the batched work and the loop reading it into `em`; False (nothing emitted) when
    the loop does not qualify."""
    lower, upper = (_constant_int(v, consts) for v in loop.inputs[:2])
    if lower is None or upper is None or upper - lower < 2:
        return False
    trips = upper - lower
    body: Program = loop.params["body"]
    nconsts = loop.params["nconsts"]
    index, body_consts = body.invars[0], body.invars[1:1 + nconsts]
    dependent = set(body.invars[1 + nconsts:])
    for e in body.eqns:
        if any(v in dependent for v in e.inputs):
            dependent.update(e.outputs)
    targets = [e for e in body.eqns if e.prim in STACKED_LINALG and not any(o in dependent for o in e.outputs)]
    if len(targets) != 1:
        return False  # none, or two raising steps (the batch could report another trip's error first)
    # the hoisted equations: the target and everything it is computed from
    needed = set(targets[0].inputs)
    hoisted_ids = {id(targets[0])}
    for e in reversed(body.eqns):
        if id(e) not in hoisted_ids and any(o in needed for o in e.outputs):
            if sub_programs(e.params) or (may_raise(e) and not _trip_window(e, index, lower, upper)):
                return False  # (a loop, a branch or a check inside: not batched here)
            hoisted_ids.add(id(e))
            needed.update(e.inputs)
    hoisted = [e for e in body.eqns if id(e) in hoisted_ids]
    rest = [e for e in body.eqns if id(e) not in hoisted_ids]
    if any(may_raise(e) or (primitives.get(e.prim).kind == "library" and e.prim != "dot_general") for e in rest):
        return False  # (a product never raises; another library step may, before the batch's error)
    used = {v for e in rest for v in e.inputs} | set(body.outvars)
    exported = [o for e in hoisted for o in e.outputs if o in used]
    if not exported or sum(_nbytes(v.aval) for v in exported) * trips > MAX_BATCH_BYTES:
        return False
    reads_of = [v for e in hoisted for v in e.inputs]
    shared = [v for v in list(body_consts) + list(body.constvars) if v in reads_of]
    batched = _batched(Program([index] + shared, [], [], hoisted, exported, f"{body.name}.trips"), trips)
    if batched is None:
        return False
    # before the loop: the trips' indices, then the batched part on the loop's operands
    outer_of = dict(zip(body_consts, loop.inputs[2:2 + nconsts]))
    outer_of.update((v, em.const(np.asarray(c))) for v, c in zip(body.constvars, body.consts) if v in shared)
    idx = em.emit("iota", [], AType((trips,), INT64), shape=(trips,), dimension=0, dtype=INT64)
    if lower:
        wide = em.emit("broadcast_in_dim", [em.const(np.asarray(lower, INT64))], AType((trips,), INT64),
                       shape=(trips,), broadcast_dimensions=())
        idx = em.emit("add", [idx, wide], AType((trips,), INT64))
    if index.aval.dtype != INT64:
        idx = em.emit("convert", [idx], AType((trips,), index.aval.dtype), dtype=index.aval.dtype)
    stacked = inline_copy(batched, [idx] + [outer_of[v] for v in shared], em.constvars, em.consts, em.eqns)
    # the body reads its trip's slice of each stacked value
    inner = _Emitter(body)
    slices = [Var(v.aval) for v in stacked]
    pos = index if index.aval.dtype == INT64 else inner.emit("convert", [index], AType((), INT64), dtype=INT64)
    if lower:
        pos = inner.emit("subtract", [pos, inner.const(np.asarray(lower, INT64))], AType((), INT64))
    zero = inner.const(np.asarray(0, INT64))
    for v, s in zip(exported, slices):
        window = inner.emit("dynamic_slice", [s, pos] + [zero] * v.aval.ndim,
                            AType((1,) + tuple(v.aval.shape), v.aval.dtype), sizes=(1,) + tuple(v.aval.shape))
        inner.eqns.append(Eqn("reshape", [window], [v], {"new_shape": tuple(v.aval.shape)}))
    new_body = dataclasses.replace(inner.rebuilt(body), eqns=inner.eqns + rest,
                                   invars=[index] + list(body_consts) + slices + list(body.invars[1 + nconsts:]))
    em.eqns.append(Eqn("fori_loop", list(loop.inputs[:2 + nconsts]) + stacked + list(loop.inputs[2 + nconsts:]),
                       loop.outputs, dict(loop.params, body=new_body, nconsts=nconsts + len(slices))))
    return True


def _trip_window(e: Eqn, index: Var, lower: int, upper: int) -> bool:
    """`x[i]` of a 1-D `x` at the trip's index `i` (a `dynamic_slice`), in bounds on every trip:
    it never raises."""
    if e.prim != "dynamic_slice" or len(e.inputs) != 2 or e.inputs[1] is not index:
        return False
    (size,) = e.params["sizes"]
    return 0 <= lower and upper - 1 + size <= e.inputs[0].aval.shape[0]


def _nbytes(aval: AType) -> int:
    return int(np.prod(aval.shape, dtype=np.int64)) * aval.dtype.itemsize


# Batching a program is the vmap rules' work (transforms/batching.py, a layer above this one),
# which registers it here when it is imported (jitkernel's package imports it); unset, no loop
# is changed.
_batch_program: Callable[[Program, int], Program | None] | None = None


def register_program_batcher(fn: Callable[[Program, int], Program | None]) -> None:
    """`fn(part, size)`: `part` batched over its first input (size `size`, the batch axis first),
    its other inputs shared, every output batched; None when a primitive has no batching rule."""
    global _batch_program
    _batch_program = fn


def _batched(part: Program, trips: int) -> Program | None:
    return _batch_program(part, trips) if _batch_program is not None else None

"""Selections of selections and scatters through them as native loops over the count.

A loop whose state shrinks by a mask each trip (NPBench mandelbrot2) holds, per trip, one
`getitem` step per compacted array (`Z = Z[I]`: NumPy's boolean indexing of the exact prefix,
padded again) and one `setitem_selected` step per scatter (`N_[Xi[I], Yi[I]] = i + 1`,
passes/selected_scatters.py). Library steps keep the loop Python-driven and work on the whole
padded buffer. Where every count involved is one variable (passes/equal_state.py merges the
counts of state selected by one mask), each becomes a `fori_loop` over `[0, count)` of
dynamic slices, which the CPU schedules as native loops (fusion/loops.py):

- `a[m]` (1-D `a` and bool `m` of one padded length N, both trimmed by the count `c`): the
  compaction `for k in [0, c): out[j] = out[k]; j += m[k]` on a carry that starts as `a` (in
  place where `a` is not read later; `j <= k`, so `out[k]` is still `a[k]` when read), then
  `out[j:c] = 0`, so the value is NumPy's selection followed by zeros where the step wrote
  zeros; past `c` the buffer keeps `a`'s padding (an elementwise function of zeros, as the
  padding of any elementwise result is). The length is `j`.
- `y[a1[m], ..., an[m]] = v` (every axis of `y` indexed by an int64 selection by one mask and
  count, `v` a 0-d value or a selection by the same mask, of `y`'s dtype, no axis of length 0):
  NumPy checks every index of axis 0, then of axis 1, ... before it writes anything; so one
  loop per axis reads `y` at the selected index of that axis (a `dynamic_slice`, which raises
  NumPy's IndexError with NumPy's message and wraps a negative index once), then one loop writes
  the selected positions in order (duplicates: the last write wins, as NumPy's assignment).
  Unselected positions read index 0, which every axis has.

Both rewrites run in `fusion.schedule` before complex lowering (a complex carry is two float
carries, no packing), only for backends that run no library steps in loop bodies (the CPU);
the interpreter keeps NumPy's steps, so tests compare the two.
"""
from __future__ import annotations

import numpy as np

from ..ir import AType, Eqn, Program, Var
from ..ir.control_flow import sub_programs
from .control_flow import map_sub_programs
from .dot_operands import _Emitter
from .native_loops import body_library_prims

INT64 = np.dtype(np.int64)
_DATADEP = ("datadep_call", "datadep_pure")
_MASK_INDEX = (("index", (("array", 0),)),)


def native_selections(program: Program) -> Program:
    """`program` (and its sub-programs) with the selections and scatters of the module
    docstring as loops; unchanged on backends that run library steps in bodies."""
    if body_library_prims():
        return program
    return _rewrite(program)


def _rewrite(program: Program) -> Program:
    if not any(e.prim in _DATADEP or sub_programs(e.params) for e in program.eqns):
        return program
    em = _Emitter(program)
    changed = False
    for eqn in program.eqns:
        if sub_programs(eqn.params):
            new = map_sub_programs(eqn, _rewrite)
            changed |= new is not eqn
            em.eqns.append(new)
            continue
        done = eqn.prim in _DATADEP and (_compaction(eqn, em) or _scatter(eqn, em))
        changed |= bool(done)
        if not done:
            em.eqns.append(eqn)
    if not changed:
        return program
    return em.rebuilt(program)


# -- building loop bodies --------------------------------------------------------------------

class _Body:
    """A fori_loop body under construction: inputs (index, consts..., carries...) and equations."""

    def __init__(self, consts: list[Var], carries: list[Var]) -> None:
        self.index = Var(AType((), INT64))
        self.consts = [Var(v.aval) for v in consts]
        self.carries = [Var(v.aval) for v in carries]
        self.em = _Emitter(Program([], [], [], [], []))

    def emit(self, prim: str, inputs: list[Var], aval: AType, **params) -> Var:
        return self.em.emit(prim, inputs, aval, **params)

    def scalar(self, value, dtype: np.dtype = INT64) -> Var:
        return self.em.const(np.asarray(value, dtype))

    def element(self, x: Var) -> Var:
        """`x[index]` of a 1-D `x`, 0-d."""
        one = self.emit("dynamic_slice", [x, self.index], AType((1,), x.aval.dtype), sizes=(1,))
        return self.emit("reshape", [one], AType((), x.aval.dtype), new_shape=())

    def program(self, outs: list[Var], name: str) -> Program:
        return Program([self.index] + self.consts + self.carries, self.em.constvars, self.em.consts,
                       self.em.eqns, outs, name)


def _fori(em: _Emitter, lower: Var, upper: Var, consts: list[Var], init: list[Var], body: Program,
          outs: list[Var] | None = None) -> list[Var]:
    outs = outs if outs is not None else [Var(v.aval) for v in init]
    em.eqns.append(Eqn("fori_loop", [lower, upper] + consts + init, outs, {"body": body, "nconsts": len(consts)}))
    return outs


def _counts(eqn: Eqn) -> tuple[list[Var], list[Var], tuple]:
    p = eqn.params
    return list(eqn.inputs[:p["ncounts"]]), list(eqn.inputs[p["ncounts"]:]), tuple(p["layout"])


# -- a[m] --------------------------------------------------------------------------------------

def _compaction(eqn: Eqn, em: _Emitter) -> bool:
    p = eqn.params
    if p["fn"] != "getitem" or tuple(p["kw"]) != _MASK_INDEX:
        return False
    if tuple(kind for kind, _, _ in p["outs"]) != ("pad", "len"):
        return False
    counts, (a, m), layout = _counts(eqn)
    if layout[0] < 0 or layout[1] < 0 or counts[layout[0]] is not counts[layout[1]]:
        return False
    c = counts[layout[0]]
    pad, length = eqn.outputs
    if (a.aval.ndim != 1 or m.aval.shape != a.aval.shape or m.aval.dtype != np.dtype(bool) or a.aval.shape[0] == 0
            or pad.aval != a.aval or c.aval.dtype != INT64):
        return False
    zero = em.const(np.asarray(0, INT64))
    # out[j] = out[k]; j += m[k]
    b = _Body([m], [a, zero])
    (m_in,), (out, j) = b.consts, b.carries
    moved = b.emit("dynamic_slice", [out, b.index], AType((1,), a.aval.dtype), sizes=(1,))
    out2 = b.emit("dynamic_update_slice", [out, moved, j], out.aval)
    step = b.emit("convert", [b.element(m_in)], AType((), INT64), dtype=INT64)
    j2 = b.emit("add", [j, step], AType((), INT64))
    compacted, _ = _fori(em, zero, c, [m], [a, zero], b.program([out2, j2], "compaction"),
                         [Var(a.aval), length])
    # out[j:c] = 0
    z = _Body([], [a])
    (tail,) = z.carries
    zeros = z.emit("broadcast_in_dim", [z.scalar(0, a.aval.dtype)], AType((1,), a.aval.dtype), shape=(1,),
                   broadcast_dimensions=())
    cleared = z.emit("dynamic_update_slice", [tail, zeros, z.index], tail.aval)
    _fori(em, length, c, [], [compacted], z.program([cleared], "compaction_tail"), [pad])
    return True


# -- y[a1[m], ..., an[m]] = v ------------------------------------------------------------------

def _scatter(eqn: Eqn, em: _Emitter) -> bool:
    p = eqn.params
    if p["fn"] != "setitem_selected":
        return False
    kw = dict(p["kw"])
    counts, operands, layout = _counts(eqn)
    y, rest, rest_layout = operands[0], operands[1:], layout[1:]
    index, parts = kw["index"], kw["parts"]
    ndim = y.aval.ndim
    if layout[0] >= 0 or ndim == 0 or 0 in y.aval.shape or tuple(index) != tuple(("array", d) for d in range(ndim)):
        return False
    if len(parts) != ndim + 1 or any(part == "plain" for part in parts[1:]):
        return False
    # operands per part: plain -> one, sel -> (a, m)
    sels, value, k = [], None, 0
    for part in parts:
        if part == "plain":
            value = (rest[k], rest_layout[k])
            k += 1
        else:
            sels.append(((rest[k], rest_layout[k]), (rest[k + 1], rest_layout[k + 1])))
            k += 2
    masks = {id(m) for (_, (m, _)) in sels}
    count_slots = {slot for sel in sels for (_, slot) in sel}
    if len(masks) != 1 or (value is not None and value[1] >= 0):
        return False
    m = sels[0][1][0]
    n = m.aval.shape[0] if m.aval.ndim == 1 else -1
    if m.aval.dtype != np.dtype(bool) or n <= 0:
        return False
    if count_slots == {-1}:
        c = em.const(np.asarray(n, INT64))
    elif -1 not in count_slots and len({id(counts[s]) for s in count_slots}) == 1:
        c = counts[next(iter(count_slots))]
    else:
        return False
    arrays = [a for ((a, _), _) in sels]
    if any(a.aval.shape != (n,) for a in arrays) or c.aval.dtype != INT64:
        return False
    value_sel = value is None
    indices = arrays[1:] if value_sel else arrays
    v = arrays[0] if value_sel else value[0]
    if any(a.aval.dtype != INT64 for a in indices) or v.aval.dtype != y.aval.dtype:
        return False
    if not value_sel and v.aval.shape != ():
        return False
    zero = em.const(np.asarray(0, INT64))
    ones = (1,) * ndim
    # NumPy checks axis 0's indices, then axis 1's, ..., before writing
    for d, idx in enumerate(indices):
        b = _Body([idx, m, y], [zero])
        (idx_in, m_in, y_in), (acc,) = b.consts, b.carries
        start = b.emit("select", [b.element(m_in), b.element(idx_in), b.scalar(0)], AType((), INT64))
        starts = [b.scalar(0) if e != d else start for e in range(ndim)]
        b.emit("dynamic_slice", [y_in] + starts, AType(ones, y.aval.dtype), sizes=ones)
        _fori(em, zero, c, [idx, m, y], [zero], b.program([acc], f"scatter_check_axis{d}"))
    b = _Body(indices + [m, v], [y])
    *idx_in, m_in, v_in = b.consts
    (y_cur,) = b.carries
    mk = b.element(m_in)
    starts = [b.emit("select", [mk, b.element(i), b.scalar(0)], AType((), INT64)) for i in idx_in]
    vk = b.element(v_in) if value_sel else v_in
    vk = b.emit("reshape", [vk], AType(ones, y.aval.dtype), new_shape=ones)
    old = b.emit("dynamic_slice", [y_cur] + starts, AType(ones, y.aval.dtype), sizes=ones)
    mb = b.emit("reshape", [mk], AType(ones, np.dtype(bool)), new_shape=ones)
    new = b.emit("select", [mb, vk, old], AType(ones, y.aval.dtype))
    y2 = b.emit("dynamic_update_slice", [y_cur, new] + starts, y.aval)
    _fori(em, zero, c, indices + [m, v], [y], b.program([y2], "scatter"), list(eqn.outputs))
    return True

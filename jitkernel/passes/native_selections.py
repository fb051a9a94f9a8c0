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
  zeros; past `c` the buffer keeps `a`'s padding (whatever it held: the padding of any value
  of data-dependent length is read by nobody). The length is `j`. Consecutive selections by
  one mask and count (`Xi, Yi = Xi[I], Yi[I]`) are one loop that reads the mask once and moves
  every array, and one tail loop.
- `y[a1[m], ..., an[m]] = v` (every axis of `y` indexed by an int64 selection by one mask and
  count, `v` a 0-d value or a selection by the same mask, of `y`'s dtype, no axis of length 0):
  NumPy checks every index of axis 0, then of axis 1, ... before it writes anything; so one
  loop per axis reads `y` at the selected index of that axis (a `dynamic_slice`, which raises
  NumPy's IndexError with NumPy's message and wraps a negative index once), then one loop writes
  the selected positions in order (duplicates: the last write wins, as NumPy's assignment).
  Each loop branches on the point's mask (a `cond`): most points of a shrinking loop's trip are
  not selected, and an unselected point then costs a load and a branch. Scatters through the
  same selected points into arrays of one shape that follow each other (`N_[Xi[I], Yi[I]] =
  i + 1; Z_[Xi[I], Yi[I]] = Z[I]`, none reading another's result) check the indices once (the
  later checks are the same and pass when the first passes) and write in one loop.

Both rewrites run in `fusion.schedule` before complex lowering (a complex carry is two float
carries, no packing), only for backends that run no library steps in loop bodies (the CPU);
the interpreter keeps NumPy's steps, so tests compare the two.
"""
from __future__ import annotations

import numpy as np

from ..ir import AType, Eqn, Program, Var
from ..ir.control_flow import sub_programs
from ..ir.datadep_prims import DATADEP_PRIMITIVES
from .control_flow import map_sub_programs
from .dot_operands import _Emitter
from .native_loops import body_library_prims

INT64 = np.dtype(np.int64)
_MASK_INDEX = (("index", (("array", 0),)),)


def native_selections(program: Program) -> Program:
    """`program` (and its sub-programs) with the selections and scatters of the module
    docstring as loops; unchanged on backends that run library steps in bodies."""
    if body_library_prims():
        return program
    return _rewrite(program)


def _rewrite(program: Program) -> Program:
    if not any(e.prim in DATADEP_PRIMITIVES or sub_programs(e.params) for e in program.eqns):
        return program
    em = _Emitter(program)
    changed = False
    eqns = program.eqns
    p = 0
    while p < len(eqns):
        eqn = eqns[p]
        p += 1
        if sub_programs(eqn.params):
            new = map_sub_programs(eqn, _rewrite)
            changed |= new is not eqn
            em.eqns.append(new)
            continue
        # selections by one mask and count that follow each other (`Xi, Yi = Xi[I], Yi[I]`):
        # one loop reads the mask once and moves every array
        first = _compaction_operands(eqn)
        if first is not None:
            members, p = _run(eqns, p, eqn, first, _compaction_operands,
                              lambda nxt, made: nxt[1:] == first[1:] and nxt[0] not in made)
            _compaction(members, em)
            changed = True
            continue
        # scatters through the same selected points (`N_[Xi[I], Yi[I]] = i + 1; Z_[Xi[I],
        # Yi[I]] = Z[I]`): one set of index checks, one writing loop
        first = _scatter_operands(eqn)
        if first is not None:
            members, p = _run(eqns, p, eqn, first, _scatter_operands,
                              lambda nxt, made: _same_points(first, nxt))
            _scatters(members, em)
            changed = True
            continue
        em.eqns.append(eqn)
    if not changed:
        return program
    return em.rebuilt(program)


def _run(eqns: list[Eqn], p: int, eqn: Eqn, first: tuple, operands_of, fits) -> tuple[list, int]:
    """`eqn` (operands `first`) and the equations from `p` on that `operands_of` recognises and
    `fits(operands, outputs of the run so far)` accepts, none reading an output of the run;
    (the run as (equation, operands) pairs, the position after it)."""
    members = [(eqn, first)]
    made = set(eqn.outputs)
    while p < len(eqns):
        nxt = operands_of(eqns[p])
        if nxt is None or not fits(nxt, made) or any(v in made for v in eqns[p].inputs):
            break
        members.append((eqns[p], nxt))
        made.update(eqns[p].outputs)
        p += 1
    return members, p


# -- building loop bodies --------------------------------------------------------------------

class _Builder:
    """Equations (and constants) of a sub-program under construction."""

    def __init__(self) -> None:
        self.em = _Emitter(Program([], [], [], [], []))

    def emit(self, prim: str, inputs: list[Var], aval: AType, **params) -> Var:
        return self.em.emit(prim, inputs, aval, **params)

    def scalar(self, value, dtype: np.dtype = INT64) -> Var:
        return self.em.const(np.asarray(value, dtype))


class _Body(_Builder):
    """A fori_loop body under construction: inputs (index, consts..., carries...) and equations."""

    def __init__(self, consts: list[Var], carries: list[Var]) -> None:
        super().__init__()
        self.index = Var(AType((), INT64))
        self.consts = [Var(v.aval) for v in consts]
        self.carries = [Var(v.aval) for v in carries]

    def element(self, x: Var) -> Var:
        """`x[index]` of a 1-D `x`, 0-d."""
        one = self.emit("dynamic_slice", [x, self.index], AType((1,), x.aval.dtype), sizes=(1,))
        return self.emit("reshape", [one], AType((), x.aval.dtype), new_shape=())

    def program(self, outs: list[Var], name: str) -> Program:
        return Program([self.index] + self.consts + self.carries, self.em.constvars, self.em.consts,
                       self.em.eqns, outs, name)

    def when(self, flag: Var, branch: "_Branch", passed: list[Var], results: list[Var] | None = None) -> list[Var]:
        """`results` (default: the passed values) where the 0-d bool `flag` holds, else `passed`
        unchanged: a `cond` whose taken branch is `branch`."""
        n = len(branch.outer) - len(passed)
        taken = Program(branch.operands, branch.em.constvars, branch.em.consts, branch.em.eqns,
                        list(results) if results is not None else branch.operands[n:], "selected")
        skip_in = [Var(v.aval) for v in branch.outer]
        skipped = Program(skip_in, [], [], [], skip_in[n:], "not_selected")
        index = self.emit("convert", [flag], AType((), np.dtype(np.int32)), dtype=np.dtype(np.int32))
        outs = [Var(v.aval) for v in passed]
        self.em.eqns.append(Eqn("cond", [index] + branch.outer, outs, {"branches": (skipped, taken)}))
        return outs


class _Branch(_Builder):
    """The taken branch of a `cond` on one point's mask under construction: its operands are
    `values` then `passed` (returned unchanged by the branch not taken)."""

    def __init__(self, values: list[Var], passed: list[Var]) -> None:
        super().__init__()
        self.outer = list(values) + list(passed)
        self.operands = [Var(v.aval) for v in self.outer]


def _fori(em: _Emitter, lower: Var, upper: Var, consts: list[Var], init: list[Var], body: Program,
          outs: list[Var] | None = None) -> list[Var]:
    outs = outs if outs is not None else [Var(v.aval) for v in init]
    em.eqns.append(Eqn("fori_loop", [lower, upper] + consts + init, outs, {"body": body, "nconsts": len(consts)}))
    return outs


def _counts(eqn: Eqn) -> tuple[list[Var], list[Var], tuple]:
    p = eqn.params
    return list(eqn.inputs[:p["ncounts"]]), list(eqn.inputs[p["ncounts"]:]), tuple(p["layout"])


# -- a[m] --------------------------------------------------------------------------------------

def _compaction_operands(eqn: Eqn) -> tuple[Var, Var, Var] | None:
    """(a, m, c) when `eqn` is `a[m]` of the module docstring, else None."""
    if eqn.prim not in DATADEP_PRIMITIVES:
        return None
    p = eqn.params
    if p["fn"] != "getitem" or tuple(p["kw"]) != _MASK_INDEX:
        return None
    if tuple(kind for kind, _, _ in p["outs"]) != ("pad", "len"):
        return None
    counts, (a, m), layout = _counts(eqn)
    if layout[0] < 0 or layout[1] < 0 or counts[layout[0]] is not counts[layout[1]]:
        return None
    c = counts[layout[0]]
    pad, length = eqn.outputs
    if (a.aval.ndim != 1 or m.aval.shape != a.aval.shape or m.aval.dtype != np.dtype(bool) or a.aval.shape[0] == 0
            or pad.aval != a.aval or c.aval.dtype != INT64):
        return None
    return a, m, c


def _compaction(members: list[tuple[Eqn, tuple[Var, Var, Var]]], em: _Emitter) -> None:
    """The selections `a[m]` of `members` (one mask and count) as one loop and one tail loop."""
    _, m, c = members[0][1]
    arrays = [a for _, (a, _, _) in members]
    zero = em.const(np.asarray(0, INT64))
    # out[j] = out[k] for every array; j += m[k]
    b = _Body([m], arrays + [zero])
    (m_in,), outs, j = b.consts, b.carries[:-1], b.carries[-1]
    moved = []
    for out in outs:
        one = b.emit("dynamic_slice", [out, b.index], AType((1,), out.aval.dtype), sizes=(1,))
        moved.append(b.emit("dynamic_update_slice", [out, one, j], out.aval))
    step = b.emit("convert", [b.element(m_in)], AType((), INT64), dtype=INT64)
    j2 = b.emit("add", [j, step], AType((), INT64))
    length = members[0][0].outputs[1]
    compacted = _fori(em, zero, c, [m], arrays + [zero], b.program(moved + [j2], "compaction"),
                      [Var(a.aval) for a in arrays] + [length])[:-1]
    for eqn, _ in members[1:]:  # every selection has the first one's length
        em.eqns.append(Eqn("add", [length, em.const(np.asarray(0, INT64))], [eqn.outputs[1]], {}))
    # out[j:c] = 0
    z = _Body([], arrays)
    cleared = []
    for tail in z.carries:
        zeros = z.emit("broadcast_in_dim", [z.scalar(0, tail.aval.dtype)], AType((1,), tail.aval.dtype), shape=(1,),
                       broadcast_dimensions=())
        cleared.append(z.emit("dynamic_update_slice", [tail, zeros, z.index], tail.aval))
    _fori(em, length, c, [], compacted, z.program(cleared, "compaction_tail"), [eqn.outputs[0] for eqn, _ in members])


# -- y[a1[m], ..., an[m]] = v ------------------------------------------------------------------

def _scatter_operands(eqn: Eqn) -> tuple | None:
    """(y, indices, m, count, v, value_sel) when `eqn` is `y[a1[m], ..., an[m]] = v` of the
    module docstring, else None; `count` is a Var, or the padded length N where nothing is
    trimmed; value_sel: `v` is a selection by `m` (read at each point), else a 0-d value."""
    if eqn.prim not in DATADEP_PRIMITIVES:
        return None
    p = eqn.params
    if p["fn"] != "setitem_selected":
        return None
    kw = dict(p["kw"])
    counts, operands, layout = _counts(eqn)
    y, rest, rest_layout = operands[0], operands[1:], layout[1:]
    index, parts = kw["index"], kw["parts"]
    ndim = y.aval.ndim
    if layout[0] >= 0 or ndim == 0 or 0 in y.aval.shape or tuple(index) != tuple(("array", d) for d in range(ndim)):
        return None
    if len(parts) != ndim + 1 or any(part == "plain" for part in parts[1:]):
        return None
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
        return None
    m = sels[0][1][0]
    n = m.aval.shape[0] if m.aval.ndim == 1 else -1
    if m.aval.dtype != np.dtype(bool) or n <= 0:
        return None
    if count_slots == {-1}:
        c = n
    elif -1 not in count_slots and len({id(counts[s]) for s in count_slots}) == 1:
        c = counts[next(iter(count_slots))]
        if c.aval.dtype != INT64:
            return None
    else:
        return None
    arrays = [a for ((a, _), _) in sels]
    if any(a.aval.shape != (n,) for a in arrays):
        return None
    value_sel = value is None
    indices = tuple(arrays[1:] if value_sel else arrays)
    v = arrays[0] if value_sel else value[0]
    if any(a.aval.dtype != INT64 for a in indices) or v.aval.dtype != y.aval.dtype:
        return None
    if not value_sel and v.aval.shape != ():
        return None
    return y, indices, m, c, v, value_sel


def _same_points(a: tuple, b: tuple) -> bool:
    """Do two scatters write through the same selected indices into arrays of one shape (so
    the second's index checks are the first's, and one loop may write both)?"""
    return (a[0].aval.shape == b[0].aval.shape and len(a[1]) == len(b[1])
            and all(x is y for x, y in zip(a[1], b[1])) and a[2] is b[2]
            and (a[3] is b[3] if isinstance(a[3], Var) else a[3] == b[3]))


def _scatters(members: list[tuple[Eqn, tuple]], em: _Emitter) -> None:
    """The scatters of `members` (the same selected indices, arrays of one shape, none reading
    another's result) as NumPy runs them one after the other: the first one's index checks (the
    later ones' are the same and pass when it passes), then one loop writing every array."""
    y0, indices, m, c, _, _ = members[0][1]
    indices = list(indices)
    if not isinstance(c, Var):
        c = em.const(np.asarray(c, INT64))
    ndim = y0.aval.ndim
    zero = em.const(np.asarray(0, INT64))
    ones = (1,) * ndim
    # NumPy checks axis 0's indices, then axis 1's, ..., before writing; only the selected
    # points (a branch per point: most points of a shrinking loop's trip are not selected)
    for d, idx in enumerate(indices):
        b = _Body([idx, m, y0], [zero])
        (idx_in, m_in, y_in), (acc,) = b.consts, b.carries
        check = _Branch([b.element(idx_in), y_in], [acc])
        i_k, y_k = check.operands[:2]
        starts = [check.scalar(0) if e != d else i_k for e in range(ndim)]
        check.emit("dynamic_slice", [y_k] + starts, AType(ones, y0.aval.dtype), sizes=ones)
        (acc2,) = b.when(b.element(m_in), check, [acc])
        _fori(em, zero, c, [idx, m, y0], [zero], b.program([acc2], f"scatter_check_axis{d}"))
    ys = [info[0] for _, info in members]
    vs = [info[4] for _, info in members]
    b = _Body(indices + [m] + vs, ys)
    idx_in, m_in, v_in = b.consts[:ndim], b.consts[ndim], b.consts[ndim + 1:]
    vks = [b.element(v) if info[5] else v for v, (_, info) in zip(v_in, members)]
    write = _Branch([b.element(i) for i in idx_in] + vks, b.carries)
    starts, v_ks, y_ks = write.operands[:ndim], write.operands[ndim:ndim + len(vs)], write.operands[ndim + len(vs):]
    written = []
    for v_k, y_k in zip(v_ks, y_ks):
        v_k = write.emit("reshape", [v_k], AType(ones, y_k.aval.dtype), new_shape=ones)
        written.append(write.emit("dynamic_update_slice", [y_k, v_k] + starts, y_k.aval))
    new = b.when(b.element(m_in), write, b.carries, written)
    _fori(em, zero, c, indices + [m] + vs, ys, b.program(new, "scatter"), [eqn.outputs[0] for eqn, _ in members])

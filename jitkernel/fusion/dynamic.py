"""Run-time offsets inside kernels: `dynamic_slice(x, *starts; sizes)` is a movement op whose
index map adds the start values, `dynamic_update_slice(x, v, *starts)` a copy of `x` (skipped when
updated in place) plus a kernel storing `v` at the start offsets. No library step per element.

A start is read through an index-map atom `("val", buffer, lo, hi)`: the value of a 0-d int64
buffer known to lie in `[lo, hi]` (fusion/index.py). That buffer is written by a **check
kernel** emitted where the equation stands: NumPy's rule as `lax` decided it (ir primitives'
reference implementation): a negative start wraps by adding the axis length, and a start outside
`[0, n - size]` after that sets the IndexError flag of the status word (backends/cpu/ops.py) and is
replaced by 0, so no access ever leaves the array. A start that is a literal is checked here and
becomes a constant offset. Inside a loop the checked start is a register (fusion/schedule_control.py).

In-place updates: `in_place_operand` names the operand whose buffer an equation's output may
take (the updated array of `dynamic_update_slice`, the initial carry of a loop); a loop carry
whose body result is such an update of the carry itself is updated in the carry's own buffer when
nothing else reads the old value afterwards (`can_update_in_place`): a DP table `D[i, j] = ...` in
a loop costs one store per trip, not a copy of the table.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..ir import AType, Eqn, Program, Var, primitives
from ..passes.native_loops import CONTROL_FLOW, kernel_gather
from . import index as ix
from .kernel_ir import Compute, Literal, Load, Store

SLICE, UPDATE = "dynamic_slice", "dynamic_update_slice"
PRIMS = (SLICE, UPDATE)
REGION_UPDATES = (UPDATE, "update_slice")  # writes into a window of their base (fusion/update.py)
INT64 = np.dtype(np.int64)

# How the dynamic-offset primitives fuse (the registry has them as library steps): a dynamic
# slice is a movement (an index map reading the checked starts), an update a structural op (a
# copy, skipped in place, and a kernel storing the window).
_FUSION_KIND = {SLICE: "movement", UPDATE: "structural"}


def fusion_kind(name: str) -> str:
    """The kind fusion schedules a primitive as: the registry's, but for the dynamic-offset
    primitives (`_FUSION_KIND`).

    >>> fusion_kind("dynamic_slice"), fusion_kind("sin"), fusion_kind("cond")
    ('movement', 'elementwise', 'library')
    """
    return _FUSION_KIND.get(name) or primitives.get(name).kind


def eqn_fusion_kind(eqn: Eqn) -> str:
    """`fusion_kind` of an equation: "gather" for a gather that becomes loads inside kernels
    (passes/native_loops.py kernel_gather), else its primitive's."""
    return "gather" if kernel_gather(eqn) else fusion_kind(eqn.prim)


def starts_of(eqn: Eqn) -> list[Var]:
    return eqn.inputs[1:] if eqn.prim == SLICE else eqn.inputs[2:]


def window(eqn: Eqn) -> tuple[int, ...]:
    """The size of the read or written window, per dimension."""
    if eqn.prim == SLICE:
        return tuple(eqn.params["sizes"])
    return eqn.inputs[1].aval.shape


def _literal_start(sched: Any, v: Var) -> int | None:
    if sched._is_literal(v):
        return int(sched.const_value[v].reshape(()).item())
    return None


def emit_checks(sched: Any, eqn: Eqn, steps: list) -> None:
    """The start offsets of `eqn`, checked: constants, or one check kernel (domain ()) storing
    every run-time start, wrapped and bounded, in a 0-d int64 buffer of its own."""
    if id(eqn) in sched.checked:
        return
    shape = eqn.inputs[0].aval.shape
    offsets: list[ix.Aff] = []
    stores: list[Store] = []
    ops = {sched.eqn_index[id(eqn)]}
    for d, (s, n, size) in enumerate(zip(starts_of(eqn), shape, window(eqn))):
        limit = n - size
        lit = _literal_start(sched, s)
        if lit is not None and 0 <= (lit + n if lit < 0 else lit) <= limit:
            offsets.append(ix.const(lit + n if lit < 0 else lit))
            continue
        # A constant start out of bounds is checked at run time too, in axis order: NumPy names
        # the first bad axis, and an equation in an untaken branch or a zero-trip loop must
        # not raise at all.
        value = sched.expr(s, (), (), {}, ops)
        proved = _proved_offset(sched, value, limit)
        if proved is not None:
            offsets.append(proved)
            continue
        if value.dtype != INT64:
            value = Compute("convert", (value,), (), INT64)
        checked = Compute("index_check", (value, Literal(int(n), INT64), Literal(int(limit), INT64),
                                          Literal(d, INT64)), (), INT64)
        # Role "check": a 0-d temporary that dead-store removal never drops, because the check
        # has an effect (the status flag) even where nothing reads the start any more (a size-1
        # axis, whose index maps are 0). Inside a loop body it becomes a register (schedule_control.py);
        # at the top level it is memory: its readers may be in another native segment.
        bid = sched.new_buffer(AType((), INT64), "check")
        stores.append(Store(bid, ix.const(0), checked))
        offsets.append(ix.Aff(((("val", bid, 0, max(limit, 0)), 1),), 0))
    if stores:
        steps.append(sched._kernel(f"k{len(steps)}_index_check", (), 0, stores, ops))
    sched.checked[id(eqn)] = offsets


def _affine_of(sched: Any, nd: Any) -> tuple[int, int, int] | None:
    """(buffer, c, (lo, hi)) when `nd` is `buffer[0] + c` for a 0-d int64 buffer of known range."""
    if isinstance(nd, Load) and nd.dtype == INT64 and not nd.offset.terms and nd.buffer in sched.ranges:
        return nd.buffer, 0, sched.ranges[nd.buffer]
    if isinstance(nd, Compute) and nd.prim in ("add", "subtract") and nd.dtype == INT64 and len(nd.args) == 2:
        a, b = nd.args
        if nd.prim == "add" and isinstance(a, Literal):
            a, b = b, a
        inner = _affine_of(sched, a)
        if inner is not None and isinstance(b, Literal):
            c = int(b.value) if nd.prim == "add" else -int(b.value)
            return inner[0], inner[1] + c, inner[2]
    return None


# Ranges are kept only while every bound is far from int64's limits: the arithmetic below then
# cannot wrap, so a range is a proof, never a guess.
_RANGE_LIMIT = 1 << 62


def range_of(ranges: dict, nd: Any) -> tuple[int, int] | None:
    """The interval [lo, hi] an int64 scalar expression lies in, from the ranges of the 0-d
    buffers it loads (loop indices, values computed from them) and its literals; None when some
    part of it has no known range. Interval arithmetic: `39 - i` for i in [0, 39] is [0, 39].

    >>> from jitkernel.fusion import index as ix
    >>> i = Load(5, ix.const(0), INT64)
    >>> rev = Compute("add", (Compute("multiply", (i, Literal(-1, INT64)), (), INT64), Literal(39, INT64)), (), INT64)
    >>> range_of({5: (0, 39)}, rev), range_of({}, rev)
    ((0, 39), None)
    """
    if getattr(nd, "dtype", None) != INT64:
        return None
    if isinstance(nd, Literal):
        r = (int(nd.value), int(nd.value))
    elif isinstance(nd, Load):
        if nd.offset.terms or nd.buffer not in ranges:
            return None
        r = ranges[nd.buffer]
    elif isinstance(nd, Compute) and nd.prim in _RANGE_RULES and len(nd.args) == _RANGE_RULES[nd.prim][0]:
        args = [range_of(ranges, a) for a in nd.args]
        if any(a is None for a in args):
            return None
        r = _RANGE_RULES[nd.prim][1](*args)
    else:
        return None
    return r if -_RANGE_LIMIT < r[0] <= r[1] < _RANGE_LIMIT else None


def _range_mul(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    corners = [x * y for x in a for y in b]
    return min(corners), max(corners)


_RANGE_RULES: dict[str, tuple[int, Callable]] = {
    "add": (2, lambda a, b: (a[0] + b[0], a[1] + b[1])),
    "subtract": (2, lambda a, b: (a[0] - b[1], a[1] - b[0])),
    "multiply": (2, _range_mul),
    "negative": (1, lambda a: (-a[1], -a[0])),
    "maximum": (2, lambda a, b: (max(a[0], b[0]), max(a[1], b[1]))),
    "minimum": (2, lambda a, b: (min(a[0], b[0]), min(a[1], b[1]))),
}


def note_ranges(sched: Any, stores: list) -> None:
    """A 0-d int64 value computed by a scalar kernel from values of known range (a loop body's
    `i + 1` passed to an inner loop, the `n - 1 - t` of a reversed `range`) gets the range
    interval arithmetic gives it."""
    for st in stores:
        if st.reduce is None and not st.offset.terms and sched.buffers[st.buffer].dtype == INT64:
            r = range_of(sched.ranges, st.value)
            if r is not None:
                sched.ranges[st.buffer] = r


def _proved_offset(sched: Any, value: Any, limit: int) -> ix.Aff | None:
    """A start `i + c` (i a loop index with constant bounds) that lies in [0, limit] for every
    value of i: its offset reads the index directly, with no check (the common `D[i + 1, j]`)."""
    form = _affine_of(sched, value)
    if form is None:
        return None
    bid, c, (lo, hi) = form
    if lo + c < 0 or hi + c > limit:
        return None
    return ix.Aff(((("val", bid, lo, hi), 1),), c)


def slice_source(sched: Any, eqn: Eqn, index: tuple) -> tuple:
    """dynamic_slice's input index of output position `index` (the check kernel came first)."""
    return tuple(ix.add(start, i) for start, i in zip(sched.checked[id(eqn)], index))


def update_steps(sched: Any, eqn: Eqn, v: Var, n: int) -> list:
    """dynamic_update_slice into v's buffer: the copy of the operand (unless it is that buffer:
    in place), then the window."""
    x, val = eqn.inputs[0], eqn.inputs[1]
    out = sched.buf_of[v]
    steps = []
    if sched.buf_of.get(x) != out:
        shape = x.aval.shape
        index = tuple(ix.var(d) for d in range(len(shape)))
        ops = {sched.eqn_index[id(eqn)]}
        value = sched.expr(x, index, shape, {}, ops)
        steps.append(sched._kernel(f"k{n}_update_copy", shape, 0, [Store(out, ix.linearize(index, shape), value)], ops))
    shape = val.aval.shape
    index = tuple(ix.var(d) for d in range(len(shape)))
    dst = tuple(ix.add(start, i) for start, i in zip(sched.checked[id(eqn)], index))
    ops = {sched.eqn_index[id(eqn)]}
    value = sched.expr(val, index, shape, {}, ops)
    steps.append(sched._kernel(f"k{n + len(steps)}_{UPDATE}", shape, 0,
                               [Store(out, ix.linearize(dst, x.aval.shape), value)], ops))
    return steps


# -- in-place updates of loop carries ---------------------------------------------------------

def in_place_operand(eqn: Eqn, out_index: int) -> int | None:
    """The input position whose buffer output `out_index` of `eqn` may reuse, if any."""
    rule = _IN_PLACE_OPERAND.get(eqn.prim)
    return None if rule is None else rule(eqn, out_index)


def _cond_in_place_operand(eqn: Eqn, out_index: int) -> int | None:
    """A branch (`if` on a traced value in a DP loop) whose every branch either returns operand
    k unchanged or updates it in place (can_update_in_place) may write output `out_index` into
    operand k's buffer: without this, each branch copied the whole table for one cell."""
    branches = eqn.params["branches"]
    for k in range(1, len(eqn.inputs)):
        if eqn.inputs.count(eqn.inputs[k]) != 1 or eqn.inputs[k].aval != eqn.outputs[out_index].aval:
            continue
        ok = True
        for br in branches:
            x, result = br.invars[k - 1], br.outvars[out_index]
            if result is x:
                if sum(1 for o in br.outvars if o is x) != 1:
                    ok = False
                continue
            if not can_update_in_place(br, x, result):
                ok = False
        if ok and any(br.outvars[out_index] is not br.invars[k - 1] for br in branches):
            return k
    return None


# Per primitive whose output may take an operand's buffer: (eqn, output index) -> that operand's
# input position, or None. Region writes update their base (fusion/update.py skips the copy); a
# loop's carry is its initial value; a branch's output one operand every branch updates.
_IN_PLACE_OPERAND: dict[str, Callable[[Eqn, int], int | None]] = {
    **{prim: (lambda eqn, k: 0) for prim in REGION_UPDATES},
    "fori_loop": lambda eqn, k: 2 + eqn.params["nconsts"] + k,
    "while_loop": lambda eqn, k: eqn.params["cond_nconsts"] + eqn.params["body_nconsts"] + k,
    "cond": _cond_in_place_operand,
}


def can_update_in_place(body: Program, x: Var, result: Var) -> bool:
    """May `result` (a body output) be computed in x's buffer (x a body input)? Yes when its
    producer updates x (in_place_operand), reads x through no other operand, and every other
    reader of x (transitively) only feeds that producer: nothing reads the old x afterwards. An
    update window whose value reads x (a DP cell from its neighbours) must be one element: the
    element's loads come before its store, or its value is computed into a buffer of its own
    first (`staged_window_values`). A chain of updates (`L[j, j] = ...` then
    `L[j+1:, j] = ...`) qualifies when every link does (`update_chain`)."""
    chain = update_chain(body, x, result)
    if chain is None or x.aval.ndim == 0:
        return False
    if sum(1 for o in body.outvars if o is result) != 1 or x in body.outvars:
        return False
    base = x
    for producer, out in chain:
        if not _link_in_place(body, base, producer, out):
            return False
        base = out
    return True


def update_chain(body: Program, x: Var, result: Var) -> list[tuple[Eqn, Var]] | None:
    """(equation, its output) from x to `result` when `result` is x updated by a chain of
    in-place operations (region updates, loops and branches that update their operand), each
    reading the previous one's output (first link first); None otherwise."""
    producers = {o: e for e in body.eqns for o in e.outputs}
    chain: list[tuple[Eqn, Var]] = []
    v = result
    while True:
        producer = producers.get(v)
        if producer is None:
            return None
        k = in_place_operand(producer, producer.outputs.index(v))
        if k is None:
            return None
        chain.append((producer, v))
        v = producer.inputs[k]
        if v is x:
            return chain[::-1]
        if v in body.outvars or len(chain) > 64:
            return None


def _link_in_place(body: Program, x: Var, producer: Eqn, out: Var) -> bool:
    k = in_place_operand(producer, producer.outputs.index(out))
    if k is None or producer.inputs[k] is not x or producer.inputs.count(x) != 1:
        return False
    if body.eqns.index(producer) != max(i for i, e in enumerate(body.eqns) if x in e.inputs):
        return False  # something after the update reads the old value directly
    # Ancestors of the producer (what its other operands are computed from).
    anc: set[int] = set()
    need = {v for i, v in enumerate(producer.inputs) if i != k}
    for e in reversed(body.eqns[:body.eqns.index(producer)]):
        if any(o in need for o in e.outputs):
            anc.add(id(e))
            need.update(e.inputs)
    # Everything downstream of x, not through the producer: each must be an ancestor (computed
    # before the producer's step, in program order). Ancestors' results may be returned: a
    # returned value is materialised when its equation runs, before the update, so what reads
    # it later reads that buffer, not x (vadv's `divided`, computed from the ccol column before
    # ccol's update and read by dcol's update after it).
    # A loop or branch before the producer that reads x may be no ancestor (an index-check loop
    # of a scatter, whose result nothing reads; a compaction of another array through a mask
    # computed from x): it is a step of its own, run where it stands, before the update, and its
    # results are its own buffers, computed then (an update in place of x would have to be x's
    # last reader, and the producer reads x after it).
    returned = set(body.outvars)
    tainted = {x}
    before = body.eqns.index(producer)
    for i, e in enumerate(body.eqns):
        if e is producer or not any(v in tainted for v in e.inputs):
            continue
        if id(e) not in anc:
            if e.prim in CONTROL_FLOW and i < before:
                continue
            return False
        tainted.update(o for o in e.outputs if o not in returned)
    if reads_base_elsewhere(body, producer):
        # The window's value reads x where other elements of the window are written: it is
        # computed into a buffer of its own first (`staged_window_values`), unless it is no
        # computed value at all (x itself, an input of the body).
        value = producer.inputs[1]
        if value is x or value in body.invars or value in body.constvars:
            return False
    return True


def reads_base_elsewhere(body: Program, update: Eqn) -> bool:
    """Is `update` a region update of more than one element whose value, fused into the window
    kernel, reads the updated array other than element by element where it writes
    (`A[i, 1:-1] += A[i, 2:]`: NumPy evaluates the whole right-hand side first)?"""
    return (update.prim in REGION_UPDATES and int(np.prod(window(update))) != 1
            and _fused_reads(body, update.inputs[1], update.inputs[0], update))


def staged_window_values(body: Program) -> set[Var]:
    """The values of a loop body's region updates that read their updated array elsewhere
    (`reads_base_elsewhere`): each gets a window-sized buffer, computed before the update, so
    the update may write the array in place (can_update_in_place) and copies one window instead
    of the whole array (seidel_2d: 48 values per row, not 2,500)."""
    leaves = set(body.invars) | set(body.constvars)
    return {e.inputs[1] for e in body.eqns
            if reads_base_elsewhere(body, e) and e.inputs[1] not in leaves and e.inputs[1] is not e.inputs[0]}


def _fused_reads(body: Program, v: Var, x: Var, update: Eqn | None = None) -> bool:
    """Does the expression of `v` that fuses into the window kernel read x? (Walks through
    elementwise and movement equations, which fuse; results of reductions, updates, loops and
    library steps have buffers of their own, computed before.) A read of x's window itself
    (the same starts and sizes as `update`) reached through elementwise operations only reads
    each element where it is then written: the masked write of a window of symbolic length,
    `select(mask, new, old)` (passes/lower_symbolic.py), is such a read. So is a read of a window
    of x that the update's window never overlaps (`y[:, j] = a * y[:, j - 1] + b * y[:, j - 2]`,
    a recurrence along one axis): no element it reads is written by the update."""
    producer = {o: e for e in body.eqns for o in e.outputs}
    stack, seen = [(v, True)], set()
    while stack:
        u, pointwise = stack.pop()
        if u is x:
            return True
        if (u, pointwise) in seen or u not in producer:
            continue
        seen.add((u, pointwise))
        e = producer[u]
        if (pointwise and update is not None and update.prim == UPDATE and e.prim == SLICE and e.inputs[0] is x
                and tuple(e.params["sizes"]) == window(update)
                and all(_affine_start(body, producer, a) == _affine_start(body, producer, b)
                        for a, b in zip(e.inputs[1:], update.inputs[2:]))):
            continue  # the window itself (its starts the same Vars, or equal constants: C[i, :i + 1] *= b)
        if update is not None and e.inputs and e.inputs[0] is x and _disjoint_windows(body, producer, e, update):
            continue
        kind = eqn_fusion_kind(e)
        if kind in ("elementwise", "movement"):
            same_order = kind == "elementwise" or (e.prim == "reshape" and _unit_axes_only(e))
            stack.extend((w, pointwise and same_order) for w in e.inputs)
        elif kind == "gather":  # fused too, and it reads x anywhere
            stack.extend((w, False) for w in e.inputs)
    return False


def _window_of(eqn: Eqn) -> tuple[list, tuple[int, ...]] | None:
    """(start Vars or constant ints per axis, window sizes) of a window read (dynamic_slice, a
    slice of unit steps) or written (dynamic_update_slice, update_slice of unit steps); None for
    anything else."""
    if eqn.prim == SLICE:
        return list(eqn.inputs[1:]), tuple(eqn.params["sizes"])
    if eqn.prim == UPDATE:
        return list(eqn.inputs[2:]), tuple(eqn.inputs[1].aval.shape)
    if eqn.prim in ("slice", "update_slice") and all(int(st) == 1 for st in eqn.params["steps"]):
        sizes = eqn.outputs[0].aval.shape if eqn.prim == "slice" else eqn.inputs[1].aval.shape
        return [int(st) for st in eqn.params["starts"]], tuple(sizes)
    return None


def _affine_start(body: Program, producer: dict, start: Any) -> tuple[Var | None, int]:
    """A start as (base, c), start = base + c: base None for a constant; additions and
    subtractions of constants are followed (`j - 1`, `197 - i + 2`)."""
    if isinstance(start, int):
        return None, start
    consts = {id(cv): c for cv, c in zip(body.constvars, body.consts)}
    if id(start) in consts and np.ndim(consts[id(start)]) == 0:
        return None, int(consts[id(start)])
    e = producer.get(start)
    if e is not None and e.prim in ("add", "subtract") and len(e.inputs) == 2:
        (a_base, a_c), (b_base, b_c) = (_affine_start(body, producer, w) for w in e.inputs)
        if b_base is None:
            return a_base, a_c + b_c if e.prim == "add" else a_c - b_c
        if a_base is None and e.prim == "add":
            return b_base, a_c + b_c
    return start, 0


def _disjoint_windows(body: Program, producer: dict, read: Eqn, update: Eqn) -> bool:
    """Does the window `read` takes of x lie apart from the one `update` writes, on some axis, for
    every value of their run-time starts? A run-time start is wrapped once when negative (NumPy's
    `y[:, j - 1]` at j = 0 reads the last column) and checked to lie in bounds
    (`emit_checks`), so two starts `base + c` of one base differ by their constants' difference,
    give or take the axis length."""
    r, w = _window_of(read), _window_of(update)
    if r is None or w is None or read.inputs[0].aval.shape != update.inputs[0].aval.shape:
        return False
    for n, r_start, w_start, r_size, w_size in zip(read.inputs[0].aval.shape, r[0], w[0], r[1], w[1]):
        (r_base, r_c), (w_base, w_c) = _affine_start(body, producer, r_start), _affine_start(body, producer, w_start)
        if r_base is None and w_base is None:
            gaps = {(r_c + n if r_c < 0 else r_c) - (w_c + n if w_c < 0 else w_c)}
        elif r_base is not None and r_base is w_base:
            gaps = {r_c - w_c, r_c - w_c + n, r_c - w_c - n}
        else:
            continue  # starts not comparable on this axis
        if all(g >= w_size or g <= -r_size for g in gaps):
            return True
    return False


def _unit_axes_only(e: Eqn) -> bool:
    """A reshape that only adds or removes axes of length 1: element k stays element k."""
    drop = lambda shape: tuple(n for n in shape if n != 1)  # noqa: E731
    return drop(e.inputs[0].aval.shape) == drop(e.outputs[0].aval.shape)

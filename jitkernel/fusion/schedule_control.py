"""Scheduling a native control-flow equation (fusion/loops.py): a `cond` becomes a `BranchStep`,
a `fori_loop` or `while_loop` a `LoopStep`, whose sub-programs are scheduled by a nested
scheduler sharing the enclosing program's buffer table (`sub_steps`).

The scheduler (fusion/schedule.py) calls `schedule_control` and passes itself; the nested one
comes from its `nested` method, so this module does not import the scheduler back.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import numpy as np

from ..ir import AType, Eqn, Program, Var
from ..passes.loops import hoist_loop_invariants
from .dynamic import can_update_in_place, update_chain
from .kernel_ir import KernelProgram
from .kernel_passes import fuse_kernels
from .loops import BranchStep, Carry, LoopStep, all_steps
from .versioning import assumptions, condition_kernel


def register_buffer(sched: Any, aval: Any) -> int:
    """A 0-d value of a loop: a stack slot of the segment (promoted to a register)."""
    return sched.new_buffer(aval, "register")


def alias_buffer(sched: Any, aval: Any) -> int:
    """A name the body reads or writes a carry through; the renderer binds it to real memory."""
    return sched.new_buffer(aval, "alias")


def _carry(sched: Any, init_var: Var, out_var: Var, in_place: bool = False) -> Carry:
    init, out = sched.buf_of[init_var], sched.buf_of[out_var]
    aval = out_var.aval
    if aval.ndim == 0:
        return Carry(register_buffer(sched, aval), register_buffer(sched, aval), init, out, None)
    if in_place:
        cur = alias_buffer(sched, aval)
        return Carry(cur, cur, init, out, None, True)
    return Carry(alias_buffer(sched, aval), alias_buffer(sched, aval), init, out, sched.new_buffer(aval, "temp"))


def _carries(sched: Any, init: list[Var], outs: list[Var], body: Program, n_lead: int) -> list[Carry]:
    """The carries of a loop; those the body updates in place (a DP table, a stencil's interior)
    share one buffer between the old and the new value."""
    carry_in = body.invars[n_lead:]
    return [_carry(sched, v, o, can_update_in_place(body, x, r))
            for v, o, x, r in zip(init, outs, carry_in, body.outvars)]


def schedule_control(sched: Any, eqn: Eqn, n: int) -> list:
    """The step of a control-flow equation whose inputs and outputs have buffers."""
    text = [sched._eqn_text(sched.eqn_index[id(eqn)])]
    return _SCHEDULE[eqn.prim](sched, eqn, n, text)


def _schedule_cond(sched: Any, eqn: Eqn, n: int, text: list[str]) -> list:
    buf = sched.buf_of
    index, operands = eqn.inputs[0], eqn.inputs[1:]
    outs = [buf[v] for v in eqn.outputs]
    branches = [sub_steps(sched, br, [buf[v] for v in operands], outs) for br in eqn.params["branches"]]
    for j, br in enumerate(branches):
        _prefix_names(br, f"k{n}_cond_b{j}_")
    for b in outs:  # several branches write these: a range proved in one is no proof
        sched.ranges.pop(b, None)
    return [BranchStep(f"k{n}_cond", buf[index], branches, outs, [buf[v] for v in operands], text)]


def _schedule_fori(sched: Any, eqn: Eqn, n: int, text: list[str]) -> list:
    buf = sched.buf_of
    nconsts = eqn.params["nconsts"]
    lower, upper = eqn.inputs[:2]
    consts, init = eqn.inputs[2:2 + nconsts], eqn.inputs[2 + nconsts:]
    body: Program = eqn.params["body"]
    carries = _carries(sched, init, eqn.outputs, body, 1 + nconsts)
    index = register_buffer(sched, body.invars[0].aval)
    bounds = [_bound_range(sched, v) for v in (lower, upper)]
    trips_at_most = None
    if bounds[0] is not None and bounds[1] is not None:
        # The index lies in [smallest lower, largest upper - 1] on every trip, whatever the
        # bounds are at run time: an inner loop's `range(i + 1, n)` gives its index a range too.
        (lo, _), (_, hi) = bounds
        trips_at_most = max(hi - lo, 0)
        if hi > lo:
            sched.ranges[index] = (lo, hi - 1)
    ins = [index] + [buf[v] for v in consts] + [c.cur for c in carries]
    outs = [c.nxt for c in carries]
    versioning, sched.versioning = sched.versioning, False  # one versioned copy per nest
    try:
        steps = sub_steps(sched, body, ins, outs)
        _prefix_names(steps, f"k{n}_fori_")
        loop = LoopStep(f"k{n}_fori_loop", "fori", carries, steps, index=index, lower=buf[lower],
                        upper=buf[upper], graph_ops=text, trips_at_most=trips_at_most)
        assumed = assumptions(loop, steps, _literal_of(sched), sched.ranges) if versioning else {}
        if not assumed:
            return [loop]
        lo, hi = (assumed.get(buf[v], r) for v, r in zip((lower, upper), bounds))
        index_range = (lo[0], hi[1] - 1) if lo is not None and hi is not None else None
        fast = _fast_copy(sched, body, ins, outs, assumed, index, index_range)
    finally:
        sched.versioning = versioning
    _prefix_names(fast, f"k{n}_fast_")
    fast_loop = LoopStep(f"k{n}_fast_fori_loop", "fori", carries, fast, index=index, lower=buf[lower], upper=buf[upper],
                         graph_ops=text, trips_at_most=None if index_range is None else max(index_range[1] + 1 - index_range[0], 0))
    flag = sched.new_buffer(AType((), np.dtype(np.int32)), "temp")
    dtypes = {b: sched.buffers[b].dtype for b in assumed}
    check = condition_kernel(f"k{n}_versions_check", assumed, dtypes, flag)
    return [check, BranchStep(f"k{n}_versions", flag, [[loop], [fast_loop]], [c.out for c in carries],
                              sorted(set(loop.inputs) | set(assumed)), text, versioned=True)]


def _literal_of(sched: Any) -> Callable[[int], int | None]:
    """A buffer's value when it holds an integer constant (a constant loop bound): a literal of
    this program or a 0-d constant buffer of an enclosing one."""
    values = {b: int(np.asarray(c).reshape(()).item()) for b, c in sched.const_sink
              if np.ndim(c) == 0 and np.asarray(c).dtype.kind in "iu"}
    values.update({sched.buf_of[v]: int(sched.const_value[v].reshape(()).item())
                   for v in sched.const_value if sched._is_literal(v) and v in sched.buf_of
                   and np.asarray(sched.const_value[v]).dtype.kind in "iu"})
    return values.get


def _fast_copy(sched: Any, body: Program, ins: list[int], outs: list[int], assumed: dict, index: int,
               index_range: tuple[int, int] | None) -> list:
    """The body scheduled again with the bounds assumed in their ranges (and the loop's own
    index in the range they give it); the ranges the assumptions implied for buffers that exist
    outside this copy are taken back afterwards."""
    before = dict(sched.ranges)
    first = len(sched.buffers)
    sched.ranges.update(assumed)
    if index_range is not None and index_range[0] <= index_range[1]:
        sched.ranges[index] = index_range
    try:
        return sub_steps(sched, body, ins, outs)
    finally:
        for b in list(sched.ranges):
            if b in before:
                sched.ranges[b] = before[b]
            elif b < first:
                del sched.ranges[b]


def _bound_range(sched: Any, v: Var) -> tuple[int, int] | None:
    """The range of a loop bound: a literal's value, or the range proved for its buffer."""
    if sched._is_literal(v):
        value = int(sched.const_value[v].reshape(()).item())
        return value, value
    return sched.ranges.get(sched.buf_of.get(v))


def _schedule_while(sched: Any, eqn: Eqn, n: int, text: list[str]) -> list:
    buf = sched.buf_of
    cn, bn = eqn.params["cond_nconsts"], eqn.params["body_nconsts"]
    cconsts, bconsts, init = eqn.inputs[:cn], eqn.inputs[cn:cn + bn], eqn.inputs[cn + bn:]
    carries = _carries(sched, init, eqn.outputs, eqn.params["body"], bn)
    cur = [c.cur for c in carries]
    cond_prog: Program = eqn.params["cond"]
    cond_out = register_buffer(sched, cond_prog.outvars[0].aval)
    cond = sub_steps(sched, cond_prog, [buf[v] for v in cconsts] + cur, [cond_out])
    body = sub_steps(sched, eqn.params["body"], [buf[v] for v in bconsts] + cur, [c.nxt for c in carries])
    _prefix_names(cond, f"k{n}_while_c_")
    _prefix_names(body, f"k{n}_while_")
    return [LoopStep(f"k{n}_while_loop", "while", carries, body, cond=cond, cond_out=cond_out, graph_ops=text)]


# The control-flow primitives scheduled natively (passes/native_loops.native_ok decides which
# equations qualify; `scan` is rewritten to `fori_loop` before scheduling).
_SCHEDULE: dict[str, Callable[[Any, Eqn, int, list[str]], list]] = {
    "cond": _schedule_cond, "fori_loop": _schedule_fori, "while_loop": _schedule_while,
}


def _prefix_names(steps: list, prefix: str) -> None:
    """Kernels of sub-programs become functions of the same LLVM module: names must be unique
    (nested steps were prefixed by their own loop already, so prefixing every step suffices)."""
    for s in all_steps(steps):
        s.name = prefix + s.name


def _bind_update_chain(sub: Any, program: Program, v: Var, b: int) -> None:
    """An output computed in place by a chain of updates of an input that has the output's
    buffer (an in-place carry, fusion/dynamic.py update_chain): every link writes that buffer."""
    for x in program.invars:
        if sub.buf_of.get(x) == b:
            chain = update_chain(program, x, v)
            for _, link_out in (chain or [])[:-1]:
                sub.buf_of.setdefault(link_out, b)
            return


def sub_steps(parent: Any, program: Program, in_bufs: list[int], out_bufs: list[int]) -> list:
    """Schedule a sub-program whose inputs are `in_bufs` and whose outputs go to `out_bufs`,
    with the fusion passes of a whole program. Buffers are allocated in the parent's table."""
    sub = parent.nested(hoist_loop_invariants(program))
    program = sub.program
    first_new = len(parent.buffers)
    mat = sub.materialized()
    sub.buf_of.update(zip(program.invars, in_bufs))
    for v, c in zip(program.constvars, program.consts):
        if not sub._is_literal(v) or v in mat:
            b = sub.new_buffer(v.aval, "const")
            sub.buf_of[v] = b
            parent.const_sink.append((b, c))
    copies: list[tuple[Var, int]] = []
    seen: set[Var] = set()
    for v, b in zip(program.outvars, out_bufs):
        if v in sub.leaves and v not in seen and sub.buf_of.get(v) == b:
            seen.add(v)  # an operand returned unchanged into its own buffer (an in-place branch)
            continue
        if v in sub.leaves or v in seen:
            copies.append((v, b))
        else:
            sub.buf_of[v] = b
            _bind_update_chain(sub, program, v, b)
        seen.add(v)
    steps: list = []
    sub.emit_equations(mat, steps)
    for v, b in copies:
        sub._emit(steps, lambda k, v=v, b=b: [sub._copy_kernel(v, b, k)])
    # The fusion passes, on a private copy of the buffer table: their dead-buffer removal must
    # neither see the enclosing program's temporaries nor drop the stores of the sub-program's
    # outputs (marked as outputs here).
    keep = set(out_bufs)
    table = {bid: (replace(b, role="output") if bid in keep else b) for bid, b in parent.buffers.items()}
    kp = fuse_kernels(KernelProgram(program.name, table, [], [], list(out_bufs), steps))
    for bid, b in kp.buffers.items():
        if bid in keep:
            continue
        if bid >= first_new and b.role in ("temp", "check") and not b.shape:
            b = replace(b, role="register")  # a body's 0-d temporary lives in a register
        parent.buffers[bid] = b
    return kp.steps

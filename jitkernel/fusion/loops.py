"""Native control flow: a `fori_loop`, `while_loop` or `cond` equation whose sub-programs fuse into
kernels becomes one structured step of the KernelProgram (`LoopStep`, `BranchStep`), which the CPU
backend renders as a real LLVM loop or branch inside one native segment: one native call for the
whole loop, no Python per iteration (docs/architecture.md, "Native loops").

- The body is scheduled by a nested scheduler that shares the program's buffer table, so the
  fusion inside a body (elementwise chains, reductions, row kernels, multi-output loops) is
  today's. Body inputs are bound to buffers: the loop's constants are the outer buffers, the
  carry and the loop index are buffers of the loop.
- An array carry is double-buffered: the body reads `Carry.cur` and writes `Carry.nxt`, two
  buffer ids that name no memory of their own; the renderer binds them to two real buffers (the
  loop's output and a spare) and swaps the pointers after every iteration. The final value is
  copied into the output only when the trip count left it in the spare.
- 0-d carries, the loop index and the body's 0-d temporaries have role "register": a stack slot
  of the native segment, which LLVM promotes to a register once the kernels are inlined.
- Bodies holding library steps (BLAS, LAPACK, sorting) keep the Python-driven lowering, except
  the library primitives a backend names with `library_steps_in_bodies` (the CUDA backend, whose
  loops are host-driven anyway: backends/cuda/flow.py).
- `hoist_loop_invariants` (a graph pass run before scheduling) moves body equations that read
  neither the carry nor the index out to the enclosing program.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Iterator

import numpy as np

from ..ir import Eqn, Program, Var, primitives

LOOP_PRIMS = ("fori_loop", "while_loop")
BRANCH_PRIMS = ("cond",)
CONTROL_FLOW = LOOP_PRIMS + BRANCH_PRIMS

# Primitives that may set a run-time error flag: never hoisted out of a loop, which would raise
# for a loop that runs zero times. Integer power (negative exponent) is handled by dtype below.
# (raise_if, the run-time check of NumPy's value errors, is a RAISING_STEP: `_may_raise` sees it.)
_MAY_RAISE = ("dynamic_slice", "dynamic_update_slice", "dynamic_index", "gather", "scatter",
              "scatter_ufunc", "put", "put_along_axis", "take_along_axis", "place")


@dataclass
class Carry:
    """One loop-carried value. `cur` is what the body reads, `nxt` what it writes; for an array
    carry both are alias ids bound by the renderer to `out` and `spare` in turn; for a register
    carry (0-d) both are stack slots and `spare` is None. `init` is the outer buffer of the
    initial value, `out` that of the loop's result. `in_place`: an array carry the body updates
    in its own buffer (nxt == cur, no spare, no swap; fusion/dynamic.py can_update_in_place)."""

    cur: int
    nxt: int
    init: int
    out: int
    spare: int | None
    in_place: bool = False


@dataclass
class LoopStep:
    """`fori_loop` (kind "fori": `index` = lower + trip, from buffers `lower`/`upper`) or
    `while_loop` (kind "while": `cond` steps compute the 0-d bool `cond_out` before each trip)."""

    name: str
    kind: str
    carries: list[Carry]
    body: list
    index: int | None = None
    lower: int | None = None
    upper: int | None = None
    cond: list = field(default_factory=list)
    cond_out: int | None = None
    graph_ops: list[str] = field(default_factory=list)

    domain = ()  # no loop of its own over elements: never split across threads
    stores: tuple = ()

    @property
    def inputs(self) -> list[int]:
        extra = [b for b in (self.lower, self.upper) if b is not None]
        return extra + [c.init for c in self.carries]

    @property
    def outputs(self) -> list[int]:
        return [c.out for c in self.carries]

    def substeps(self) -> list:
        return self.cond + self.body

    def loads(self) -> dict[int, list]:
        """Every buffer the step touches (read, written or swapped), so that the passes over the
        enclosing program keep them all."""
        return {b: [] for b in touched_buffers(self)}


@dataclass
class BranchStep:
    """`cond`: branch `min(max(index, 0), n - 1)` runs; every branch writes the step's outputs."""

    name: str
    index: int
    branches: list[list]
    outs: list[int]
    operands: list[int]
    graph_ops: list[str] = field(default_factory=list)

    domain = ()
    stores: tuple = ()

    @property
    def inputs(self) -> list[int]:
        return [self.index] + self.operands

    @property
    def outputs(self) -> list[int]:
        return list(self.outs)

    def substeps(self) -> list:
        return [s for br in self.branches for s in br]

    def loads(self) -> dict[int, list]:
        return {b: [] for b in touched_buffers(self)}


ControlStep = LoopStep | BranchStep


def is_control(step: Any) -> bool:
    return isinstance(step, (LoopStep, BranchStep))


def own_buffers(step: ControlStep) -> set[int]:
    """The buffers the step itself names (not those of its sub-steps)."""
    if isinstance(step, BranchStep):
        return set(step.inputs) | set(step.outs)
    out = set(step.inputs) | set(step.outputs)
    for c in step.carries:
        out |= {c.cur, c.nxt} | ({c.spare} if c.spare is not None else set())
    out |= {b for b in (step.index, step.cond_out) if b is not None}
    return out


def touched_buffers(step: Any) -> set[int]:
    """Every buffer a step and its sub-steps read or write."""
    if is_control(step):
        out = own_buffers(step)
        for s in step.substeps():
            out |= touched_buffers(s)
        return out
    if hasattr(step, "prim"):  # LibraryCall
        return set(step.inputs) | set(step.outputs)
    if hasattr(step, "phases"):
        return {b for p in step.phases for b in p.buffers()}
    return set(step.buffers())


def all_steps(steps: list) -> list:
    """Every step, sub-steps of control steps included (pre-order)."""
    out: list = []
    stack = list(reversed(steps))
    while stack:
        s = stack.pop()
        out.append(s)
        if is_control(s):
            stack.extend(reversed(s.substeps()))
    return out


# -- can an equation run natively? ----------------------------------------------------------

def sub_programs(eqn: Eqn) -> list[Program]:
    if eqn.prim == "fori_loop":
        return [eqn.params["body"]]
    if eqn.prim == "while_loop":
        return [eqn.params["cond"], eqn.params["body"]]
    if eqn.prim == "cond":
        return list(eqn.params["branches"])
    return []


def native_ok(eqn: Eqn, kernel_prims: set[str] | None = None) -> bool:
    """Does every sub-program (recursively) fuse into kernels? Library steps and primitives
    without a kernel lowering (scan, data-dependent shapes) keep lax's Python-driven loop."""
    if eqn.prim not in CONTROL_FLOW:
        return False
    if eqn.prim == "fori_loop" and any(v.aval.ndim for v in eqn.inputs[:2]):
        return False
    kernel_prims = _kernel_prims() if kernel_prims is None else kernel_prims
    for prog in sub_programs(eqn):
        for e in prog.eqns:
            if e.prim in CONTROL_FLOW:
                if not native_ok(e, kernel_prims):
                    return False
            elif e.prim not in kernel_prims:
                return False
    return True


def _kernel_prims() -> set[str]:
    """Primitives the scheduler turns into kernels (elementwise, movement, reductions,
    concatenate, iota, update_slice: a copy and a region kernel, fusion/update.py), plus those the kernel lowering of dynamic indices handles,
    plus the library primitives the backend being scheduled for runs inside bodies."""
    kinds = ("elementwise", "movement", "reduce")
    names = {n for n, p in primitives.PRIMITIVES.items() if p.kind in kinds}
    return names | {"concatenate", "iota", "update_slice"} | set(_DYNAMIC_KERNEL_PRIMS) | _BODY_LIBRARY_PRIMS.get()


# Library primitives whose steps may sit inside a LoopStep/BranchStep body: none for the CPU
# (its native loops are LLVM loops over kernels); the CUDA backend drives its loops from the host
# and runs any step kind in a body, so it names the library steps it implements.
_BODY_LIBRARY_PRIMS: ContextVar[frozenset] = ContextVar("body_library_prims", default=frozenset())


def body_library_prims() -> frozenset:
    """The library primitives bodies may hold in the schedule under way (library_steps_in_bodies)."""
    return _BODY_LIBRARY_PRIMS.get()


@contextmanager
def library_steps_in_bodies(prims: frozenset) -> Iterator[None]:
    """Schedule with control-flow bodies that may hold library steps of `prims`.

    >>> with library_steps_in_bodies(frozenset({"dot_general"})):
    ...     "dot_general" in _kernel_prims()
    True
    >>> "dot_general" in _kernel_prims()
    False
    """
    token = _BODY_LIBRARY_PRIMS.set(frozenset(prims))
    try:
        yield
    finally:
        _BODY_LIBRARY_PRIMS.reset(token)


# Dynamic-offset primitives with a kernel lowering (fusion/dynamic.py).
_DYNAMIC_KERNEL_PRIMS = ("dynamic_slice", "dynamic_update_slice")


# -- scheduling ---------------------------------------------------------------------------

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
    from .dynamic import can_update_in_place
    carry_in = body.invars[n_lead:]
    return [_carry(sched, v, o, can_update_in_place(body, x, r))
            for v, o, x, r in zip(init, outs, carry_in, body.outvars)]


def schedule_control(sched: Any, eqn: Eqn, n: int) -> list:
    """The step of a control-flow equation whose inputs and outputs have buffers."""
    text = [sched._eqn_text(sched.eqn_index[id(eqn)])]
    buf = sched.buf_of
    if eqn.prim == "cond":
        index, operands = eqn.inputs[0], eqn.inputs[1:]
        outs = [buf[v] for v in eqn.outputs]
        branches = [sub_steps(sched, br, [buf[v] for v in operands], outs) for br in eqn.params["branches"]]
        for j, br in enumerate(branches):
            _prefix_names(br, f"k{n}_cond_b{j}_")
        for b in outs:  # several branches write these: a range proved in one is no proof
            sched.ranges.pop(b, None)
        return [BranchStep(f"k{n}_cond", buf[index], branches, outs, [buf[v] for v in operands], text)]
    if eqn.prim == "fori_loop":
        nconsts = eqn.params["nconsts"]
        lower, upper = eqn.inputs[:2]
        consts, init = eqn.inputs[2:2 + nconsts], eqn.inputs[2 + nconsts:]
        body: Program = eqn.params["body"]
        carries = _carries(sched, init, eqn.outputs, body, 1 + nconsts)
        index = register_buffer(sched, body.invars[0].aval)
        if sched._is_literal(lower) and sched._is_literal(upper):
            lo, hi = (int(sched.const_value[v].reshape(()).item()) for v in (lower, upper))
            if hi > lo:
                sched.ranges[index] = (lo, hi - 1)
        ins = [index] + [buf[v] for v in consts] + [c.cur for c in carries]
        steps = sub_steps(sched, body, ins, [c.nxt for c in carries])
        _prefix_names(steps, f"k{n}_fori_")
        return [LoopStep(f"k{n}_fori_loop", "fori", carries, steps, index=index, lower=buf[lower],
                         upper=buf[upper], graph_ops=text)]
    # while_loop
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


def _prefix_names(steps: list, prefix: str) -> None:
    """Kernels of sub-programs become functions of the same LLVM module: names must be unique
    (nested steps were prefixed by their own loop already, so prefixing every step suffices)."""
    for s in all_steps(steps):
        s.name = prefix + s.name


def _bind_update_chain(sub: Any, program: Program, v: Var, b: int) -> None:
    """An output computed in place by a chain of updates of an input that has the output's
    buffer (an in-place carry, fusion/dynamic.py update_chain): every link writes that buffer."""
    from .dynamic import update_chain
    for x in program.invars:
        if sub.buf_of.get(x) == b:
            chain = update_chain(program, x, v)
            for _, link_out in (chain or [])[:-1]:
                sub.buf_of.setdefault(link_out, b)
            return


def sub_steps(parent: Any, program: Program, in_bufs: list[int], out_bufs: list[int]) -> list:
    """Schedule a sub-program whose inputs are `in_bufs` and whose outputs go to `out_bufs`,
    with the fusion passes of a whole program. Buffers are allocated in the parent's table."""
    from .schedule import collapse_step, _Scheduler
    from .rows import fuse_rows, merge_siblings, split_full_reductions
    from .split import split_large_kernels
    from .kernel_ir import KernelProgram

    sub = _Scheduler(hoist_loop_invariants(program), buffers=parent.buffers, const_sink=parent.const_sink,
                     ranges=parent.ranges)
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
    kp = KernelProgram(program.name, table, [], [], list(out_bufs), steps)
    kp = fuse_rows(merge_siblings(kp))
    kp.steps = [collapse_step(s) for s in kp.steps]
    kp = merge_siblings(kp)
    kp = split_full_reductions(kp)
    kp = split_large_kernels(kp)
    for bid, b in kp.buffers.items():
        if bid in keep:
            continue
        if bid >= first_new and b.role in ("temp", "check") and not b.shape:
            b = replace(b, role="register")  # a body's 0-d temporary lives in a register
        parent.buffers[bid] = b
    steps = kp.steps
    return steps


# -- loop-invariant code motion -----------------------------------------------------------

def _movement(eqn: Eqn) -> bool:
    return primitives.get(eqn.prim).kind in ("movement", "creation") or eqn.prim == "iota"


def _may_raise(eqn: Eqn) -> bool:
    from ..ir.program import may_raise  # the registry of raising steps (helpers add theirs)
    if eqn.prim in _MAY_RAISE or eqn.prim in CONTROL_FLOW or may_raise(eqn):
        return True
    return eqn.prim == "power" and eqn.outputs[0].aval.dtype.kind in "iu"


def hoist_loop_invariants(program: Program) -> Program:
    """Move the equations of fori_loop/while_loop bodies that read neither the carry nor the
    index out of the loop (innermost loops first), as new loop constants. Movement ops stay in
    the body unless a hoisted equation needs them (they are free index maps there), and nothing
    that may raise at run time moves (a zero-trip loop must not raise).

    >>> import numpy as np
    >>> hoist_loop_invariants(Program([], [], [], [], [])).eqns
    []
    """
    if not any(e.prim in LOOP_PRIMS for e in program.eqns):
        return program
    eqns: list[Eqn] = []
    consts: list[tuple[Var, Any]] = []
    for eqn in program.eqns:
        if eqn.prim in LOOP_PRIMS:
            new, new_consts = (_hoist_fori if eqn.prim == "fori_loop" else _hoist_while)(eqn)
            eqns += new
            consts += new_consts
        else:
            eqns.append(eqn)
    return replace(program, eqns=eqns, constvars=program.constvars + [v for v, _ in consts],
                   consts=program.consts + [c for _, c in consts])


def _split_invariant(body: Program, invariant_in: set[Var]) -> tuple[list[Eqn], list[Eqn]]:
    inv = set(invariant_in) | set(body.constvars)
    candidates = []
    for e in body.eqns:
        if all(v in inv for v in e.inputs) and not _may_raise(e):
            inv.update(e.outputs)
            candidates.append(e)
    producer = {o: e for e in candidates for o in e.outputs}
    hoist: set[int] = set()
    stack = [e for e in candidates if not _movement(e)]
    while stack:
        e = stack.pop()
        if id(e) in hoist:
            continue
        hoist.add(id(e))
        stack.extend(producer[v] for v in e.inputs if v in producer)
    moved = [e for e in body.eqns if id(e) in hoist]
    kept = [e for e in body.eqns if id(e) not in hoist]
    return moved, kept


def _rehome(body: Program, moved: list[Eqn], kept: list[Eqn], outer_of: dict[Var, Var],
            n_lead: int) -> tuple[list[Eqn], Program, list[Var]]:
    """Outer copies of `moved` (body invars replaced by the outer values), the body without them
    and with the hoisted values it still reads as new invars after the first `n_lead` ones, and
    the outer values to pass for them."""
    sub = dict(outer_of)
    new_consts = []
    used = {v for e in moved for v in e.inputs}
    for v, c in zip(body.constvars, body.consts):
        if v in used:  # a body constant read by a hoisted equation: an outer constant too
            sub[v] = Var(v.aval)
            new_consts.append((sub[v], c))
    outer_eqns = []
    for e in moved:
        outs = [Var(o.aval) for o in e.outputs]
        outer_eqns.append(Eqn(e.prim, [sub[v] for v in e.inputs], outs, dict(e.params)))
        sub.update(zip(e.outputs, outs))
    produced = {o for e in moved for o in e.outputs}
    needed: list[Var] = []
    for e in kept:
        needed += [v for v in e.inputs if v in produced and v not in needed]
    needed += [v for v in body.outvars if v in produced and v not in needed]
    new_invars = [Var(v.aval) for v in needed]
    rename = dict(zip(needed, new_invars))
    kept = [Eqn(e.prim, [rename.get(v, v) for v in e.inputs], e.outputs, e.params) for e in kept]
    outvars = [rename.get(v, v) for v in body.outvars]
    invars = body.invars[:n_lead] + new_invars + body.invars[n_lead:]
    new_body = replace(body, invars=invars, eqns=kept, outvars=outvars)
    return outer_eqns, new_body, [sub[v] for v in needed], new_consts


def _hoist_fori(eqn: Eqn) -> list[Eqn]:
    body = hoist_loop_invariants(eqn.params["body"])
    nconsts = eqn.params["nconsts"]
    consts = eqn.inputs[2:2 + nconsts]
    body_consts = body.invars[1:1 + nconsts]
    moved, kept = _split_invariant(body, set(body_consts))
    if not moved:
        return [replace_eqn(eqn, body=body)], []
    outer_eqns, new_body, extra, new_consts = _rehome(body, moved, kept, dict(zip(body_consts, consts)), 1 + nconsts)
    inputs = eqn.inputs[:2 + nconsts] + extra + eqn.inputs[2 + nconsts:]
    return outer_eqns + [Eqn(eqn.prim, inputs, eqn.outputs, {**eqn.params, "body": new_body,
                                                              "nconsts": nconsts + len(extra)})], new_consts


def _hoist_while(eqn: Eqn) -> list[Eqn]:
    body = hoist_loop_invariants(eqn.params["body"])
    cn, bn = eqn.params["cond_nconsts"], eqn.params["body_nconsts"]
    consts = eqn.inputs[cn:cn + bn]
    body_consts = body.invars[:bn]
    moved, kept = _split_invariant(body, set(body_consts))
    if not moved:
        return [replace_eqn(eqn, body=body)], []
    outer_eqns, new_body, extra, new_consts = _rehome(body, moved, kept, dict(zip(body_consts, consts)), bn)
    inputs = eqn.inputs[:cn + bn] + extra + eqn.inputs[cn + bn:]
    return outer_eqns + [Eqn(eqn.prim, inputs, eqn.outputs, {**eqn.params, "body": new_body,
                                                              "body_nconsts": bn + len(extra)})], new_consts


def replace_eqn(eqn: Eqn, **params: Any) -> Eqn:
    return Eqn(eqn.prim, eqn.inputs, eqn.outputs, {**eqn.params, **params})


# -- text ---------------------------------------------------------------------------------

def format_control(step: ControlStep, buffers: dict, indent: str, format_steps: Any) -> list[str]:
    """`as_text("kernels")` of a loop or branch: its header, then its sub-steps indented."""
    inner = indent + "    "
    if isinstance(step, BranchStep):
        outs = ", ".join(f"%{b}" for b in step.outs)
        lines = [f"{indent}branch {step.name}: {outs} = cond(%{step.index}; "
                 + ", ".join(f"%{b}" for b in step.operands) + ") [native]"]
        for j, br in enumerate(step.branches):
            lines.append(f"{indent}  branch {j}:")
            lines += format_steps(br, buffers, inner)
        return lines
    carries = ", ".join(f"%{c.out} <- %{c.init} (reads %{c.cur}, writes %{c.nxt}"
                        + (", in place)" if c.in_place else ", register)" if c.spare is None
                           else f", swapped with %{c.spare})")
                        for c in step.carries)
    if step.kind == "fori":
        head = f"{indent}loop {step.name}: for %{step.index} in [%{step.lower}, %{step.upper}) [native]"
    else:
        head = f"{indent}loop {step.name}: while %{step.cond_out} [native]"
    lines = [head, f"{indent}  carries: {carries}"]
    if step.cond:
        lines.append(f"{indent}  condition:")
        lines += format_steps(step.cond, buffers, inner)
    lines.append(f"{indent}  body:")
    lines += format_steps(step.body, buffers, inner)
    return lines


# -- work estimate (runtime.py: long calls run on a worker thread, interruptibly) -------------

# Work units one trip costs besides its kernels (the loop's own branch, index and swaps).
TRIP_WORK = 4


def control_work(step: ControlStep, consts: dict, kernel_work: Any, unknown: int) -> int:
    """A loop's work: trip count times its body's when the bounds are constants, else `unknown`
    (a while loop, or bounds read from arguments); a branch: its largest branch."""
    def steps_work(steps: list) -> int:
        return sum(kernel_work(s, consts) for s in steps)

    if isinstance(step, BranchStep):
        return max((steps_work(br) for br in step.branches), default=0)
    if step.kind != "fori" or step.lower not in consts or step.upper not in consts:
        return unknown
    trips = max(int(consts[step.upper]) - int(consts[step.lower]), 0)
    return trips * (TRIP_WORK + steps_work(step.body))


# -- scan as a native loop --------------------------------------------------------------------

def scans_to_fori(program: Program) -> Program:
    """Each `scan` whose body fuses into kernels becomes the equivalent `fori_loop` (recursively,
    inside sub-programs too), so it runs as a native loop: the x slices are dynamic slices at
    the trip index `t` (`length - 1 - i` when reversed), the ys are carries written with
    dynamic_update_slice at `t`, in place. The interpreter keeps running `scan` itself.

    >>> scans_to_fori(Program([], [], [], [], [])).eqns
    []
    """
    if not any(e.prim == "scan" or e.prim in CONTROL_FLOW for e in program.eqns):
        return program
    eqns: list[Eqn] = []
    consts: list[tuple[Var, Any]] = []
    for eqn in program.eqns:
        if eqn.prim in CONTROL_FLOW:
            params = {k: (scans_to_fori(v) if isinstance(v, Program) else
                          tuple(scans_to_fori(p) for p in v) if isinstance(v, tuple) and v and isinstance(v[0], Program)
                          else v) for k, v in eqn.params.items()}
            eqns.append(Eqn(eqn.prim, eqn.inputs, eqn.outputs, params))
        elif eqn.prim == "scan":
            fori, new_consts = _scan_as_fori(eqn)
            eqns.append(fori)
            consts += new_consts
        else:
            eqns.append(eqn)
    return replace(program, eqns=eqns, constvars=program.constvars + [v for v, _ in consts],
                   consts=program.consts + [c for _, c in consts])


def _scan_as_fori(eqn: Eqn) -> tuple[Eqn, list[tuple[Var, Any]]]:
    from ..ir import AType
    p = eqn.params
    body: Program = scans_to_fori(p["body"])
    nconsts, ncarry, length, reverse = p["nconsts"], p["ncarry"], p["length"], p["reverse"]
    if not native_ok(candidate_fori(body)):
        return eqn, []  # a body with library steps keeps lax's Python-driven scan
    i64 = np.dtype(np.int64)

    def const(value: Any, dtype: Any) -> tuple[Var, Any]:
        arr = np.asarray(value, dtype)
        return Var(AType(arr.shape, arr.dtype)), arr

    body_consts = body.invars[:nconsts]
    body_carry = body.invars[nconsts:nconsts + ncarry]
    body_x = body.invars[nconsts + ncarry:]
    ys_out = body.outvars[ncarry:]
    i = Var(AType((), i64))
    xs_v = [Var(x.aval) for x in eqn.inputs[nconsts + ncarry:]]
    ys_v = [Var(AType((length,) + y.aval.shape, y.aval.dtype)) for y in ys_out]
    inner_consts: list[tuple[Var, Any]] = []
    eqns: list[Eqn] = []
    if reverse:
        last = const(length - 1, i64)
        inner_consts.append(last)
        t = Var(AType((), i64))
        eqns.append(Eqn("subtract", [last[0], i], [t]))
    else:
        t = i
    zero = const(0, i64)
    inner_consts.append(zero)
    for xv, xb in zip(xs_v, body_x):
        window = Var(AType((1,) + xb.aval.shape, xb.aval.dtype))
        eqns.append(Eqn("dynamic_slice", [xv, t] + [zero[0]] * xb.aval.ndim, [window],
                        {"sizes": (1,) + xb.aval.shape}))
        eqns.append(Eqn("reshape", [window], [xb], {"new_shape": xb.aval.shape}))
    eqns += body.eqns
    new_ys = []
    for yv, y in zip(ys_v, ys_out):
        row = Var(AType((1,) + y.aval.shape, y.aval.dtype))
        new = Var(yv.aval)
        eqns.append(Eqn("reshape", [y], [row], {"new_shape": (1,) + y.aval.shape}))
        eqns.append(Eqn("dynamic_update_slice", [yv, row, t] + [zero[0]] * y.aval.ndim, [new]))
        new_ys.append(new)
    new_body = Program([i] + body_consts + xs_v + body_carry + ys_v,
                       body.constvars + [v for v, _ in inner_consts], body.consts + [c for _, c in inner_consts],
                       eqns, body.outvars[:ncarry] + new_ys, body.name)
    lo, hi = const(0, i64), const(length, i64)
    ys_init = [const(np.zeros(v.aval.shape, v.aval.dtype), v.aval.dtype) for v in ys_v]
    consts_in, init_in, xs_in = (eqn.inputs[:nconsts], eqn.inputs[nconsts:nconsts + ncarry],
                                 eqn.inputs[nconsts + ncarry:])
    inputs = [lo[0], hi[0]] + consts_in + xs_in + init_in + [v for v, _ in ys_init]
    fori = Eqn("fori_loop", inputs, eqn.outputs, {"body": new_body, "nconsts": nconsts + len(xs_in)})
    return fori, [lo, hi] + ys_init


def candidate_fori(body: Program) -> Eqn:
    """A stand-in fori_loop over `body`, for native_ok (which only looks at sub-programs)."""
    return Eqn("fori_loop", [], [], {"body": body, "nconsts": 0})

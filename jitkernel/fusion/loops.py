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
- Which equations qualify is `passes/native_loops.native_ok`; the graph passes run before
  scheduling (`scans_to_fori`, `hoist_loop_invariants`) are in `passes/loops.py`.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..ir import Eqn, Program, Var
from ..passes.loops import hoist_loop_invariants

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




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

This module holds the steps themselves (`LoopStep`, `BranchStep`), their text and their work
estimate; it imports no other fusion module, so the renderers, the printer and the fusion passes
all read it. Scheduling an equation into these steps is fusion/schedule_control.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
    # A bound on the trip count proved at scheduling (from the bounds' ranges) where the bounds
    # are not constants: `for j in range(i + 1, n)` inside `for i in range(n)` runs at most n
    # trips. Only the work estimate reads it.
    trips_at_most: int | None = None

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
    # Two copies of one loop (fusion/versioning.py): branch 1, its index checks proved from
    # assumed bounds, runs whenever the bounds lie in those ranges; branch 0 is the checked loop.
    versioned: bool = False

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
    """A loop's work: trip count times its body's when the bounds are constants or the trip
    count has a proved bound (`LoopStep.trips_at_most`), else `unknown` (a while loop, or
    bounds read from arguments); a branch: its largest branch."""
    def steps_work(steps: list) -> int:
        return sum(kernel_work(s, consts) for s in steps)

    if isinstance(step, BranchStep):
        if step.versioned:
            # The checked copy runs only for bounds outside the assumed ranges, where its
            # indices leave the arrays (an IndexError) within about the arrays' lengths.
            return steps_work(step.branches[1])
        return max((steps_work(br) for br in step.branches), default=0)
    if step.kind != "fori":
        return unknown
    if step.lower in consts and step.upper in consts:
        trips = max(int(consts[step.upper]) - int(consts[step.lower]), 0)
    elif step.trips_at_most is not None:
        trips = step.trips_at_most
    else:
        return unknown
    return trips * (TRIP_WORK + steps_work(step.body))




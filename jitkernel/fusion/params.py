"""Shape-generic kernel programs: the integer and float constants of a KernelProgram that depend
on a dynamic dimension become run-time parameters.

`walk(kp, on_const)` visits every constant of a kernel program in a fixed order (buffer shapes,
loop extents, index-map coefficients, offsets and divisors, literals, row sizes) and rebuilds it
with `on_const(value)` in place of each, while recording the structure around them. Two kernel
programs with equal structure differ only in constants: the positions that differ are the
parameters, and the renderer reads them from a parameter array instead of baking them in. A new
size then needs only tracing and fusion (milliseconds) to produce the values: no LLVM compile.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from .index import Aff
from .loops import BranchStep, is_control
from .kernel_ir import (Buffer, Compute, IndexValue, Kernel, KernelProgram, Literal, Load,
                        Node, RowKernel, Store, postorder)


@dataclass(frozen=True)
class Param:
    """A run-time parameter: slot `index` of the parameter array. `value` is the value it had in
    the program it was made from (used only for heuristics, never for codegen)."""

    index: int
    kind: str  # "int" | "float"
    value: Any

    def __str__(self) -> str:
        return f"${self.index}"


def _bits(value: Any) -> Any:
    """Equality key of a constant: floats by bit pattern (NaN == NaN, -0.0 != 0.0)."""
    if isinstance(value, float):
        return ("f", np.float64(value).tobytes())
    return ("i", int(value)) if not isinstance(value, Param) else ("p", value.index)


class _IdMemo:
    """`node in _IdMemo(memo)`: is the node (by identity) in a memo keyed by id()?"""

    __slots__ = ("memo",)

    def __init__(self, memo: dict) -> None:
        self.memo = memo

    def __contains__(self, nd: object) -> bool:
        return id(nd) in self.memo


class _Walker:
    def __init__(self, on_const: Callable[[Any], Any]) -> None:
        self.on_const = on_const
        self.structure: list = []

    def c(self, value: Any) -> Any:
        self.structure.append("#")
        return self.on_const(value)

    def s(self, *tokens: Any) -> None:
        self.structure.extend(tokens)

    def aff(self, a: Aff) -> Aff:
        self.s("aff", len(a.terms))
        terms = []
        for atom, k in a.terms:
            if atom[0] == "i":
                self.s("i", atom[1])
                new_atom = atom
            elif atom[0] == "val":  # a run-time start: its bounds shape the loop, so they are structure
                self.s("val", *atom[1:])
                new_atom = atom
            else:
                self.s(atom[0])
                new_atom = (atom[0], self.aff(atom[1]), self.c(atom[2]))
            terms.append((new_atom, self.c(k)))
        return Aff(tuple(terms), self.c(a.const))

    def literal(self, nd: Literal) -> Literal:
        self.s("lit", nd.dtype.str)
        return Literal(self.c(nd.value), nd.dtype)

    def node(self, root: Node, memo: dict) -> Node:
        """Rebuild the DAG under `root`, recording it in post-order (arguments first, each node
        once: later uses are `ref`s to its number). Iterative: bodies may be very deep.

        A literal is recorded at each use, not once: the builders share equal literals, so
        `np.where(x > 2, x, n)` has one literal at n = 2 and two at n = 3, and sharing by value
        would make the structure depend on a constant's value."""
        if isinstance(root, Literal):
            return self.literal(root)
        if id(root) in memo:
            self.s("ref", memo[id(root)][0])
            return memo[id(root)][1]
        for nd in postorder([root], _IdMemo(memo)):
            if isinstance(nd, Literal):
                continue
            if isinstance(nd, Load):
                self.s("load", nd.buffer, nd.dtype.str)
                r: Node = Load(nd.buffer, self.aff(nd.offset), nd.dtype)
            elif isinstance(nd, IndexValue):
                self.s("index", nd.dtype.str)
                r = IndexValue(self.aff(nd.index), nd.dtype)
            else:
                args = tuple(self.literal(a) if isinstance(a, Literal) else memo[id(a)][1] for a in nd.args)
                refs = tuple("lit" if isinstance(a, Literal) else memo[id(a)][0] for a in nd.args)
                self.s("op", nd.prim, repr(nd.params), nd.dtype.str, refs)
                r = Compute(nd.prim, args, nd.params, nd.dtype)
            memo[id(nd)] = (len(memo), r)
        return memo[id(root)][1]

    def kernel(self, k: Kernel) -> Kernel:
        self.s("kernel", k.name, k.n_reduce, len(k.domain))
        domain = tuple(self.c(n) for n in k.domain)
        memo: dict = {}
        stores = []
        for st in k.stores:
            self.s("store", st.buffer, st.reduce, st.reduce_index is not None, block_kind(st.block, k))
            offset = self.aff(st.offset)
            red = self.aff(st.reduce_index) if st.reduce_index is not None else None
            block = self.c(st.block) if isinstance(st.block, (int, Param)) else st.block
            stores.append(Store(st.buffer, offset, self.node(st.value, memo), st.reduce, red, block))
        return Kernel(k.name, domain, k.n_reduce, stores, k.graph_ops)

    def program(self, kp: KernelProgram) -> KernelProgram:
        buffers = {}
        for bid in sorted(kp.buffers):
            b = kp.buffers[bid]
            self.s("buffer", bid, b.dtype.str, b.role, b.position, len(b.shape))
            buffers[bid] = Buffer(bid, tuple(self.c(n) for n in b.shape), b.dtype, b.role, b.position)
        self.s("inputs", tuple(kp.inputs), "outputs", tuple(kp.outputs))
        for bid, value in kp.consts:
            self.s("const", bid, hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest(), value.shape)
        steps = self.steps(kp.steps)
        out = KernelProgram(kp.name, buffers, list(kp.inputs), list(kp.consts), list(kp.outputs), steps)
        out.fusion_record = kp.fusion_record
        return out

    def control(self, step: Any) -> Any:
        """A loop or branch (fusion/loops.py): its own buffers, then its sub-steps in order."""
        if isinstance(step, BranchStep):
            self.s("branch", step.name, step.index, tuple(step.outs), tuple(step.operands), len(step.branches))
            return replace(step, branches=[self.steps(br) for br in step.branches])
        carries = tuple((c.cur, c.nxt, c.init, c.out, c.spare) for c in step.carries)
        self.s("loop", step.name, step.kind, carries, step.index, step.lower, step.upper, step.cond_out,
               len(step.cond), len(step.body))
        return replace(step, cond=self.steps(step.cond), body=self.steps(step.body))

    def steps(self, steps_in: list) -> list:
        steps: list = []
        for step in steps_in:
            if is_control(step):
                steps.append(self.control(step))
            elif isinstance(step, Kernel):
                steps.append(self.kernel(step))
            elif isinstance(step, RowKernel):
                self.s("rows", step.name, len(step.outer), len(step.phases), tuple(sorted(step.scratch)))
                outer = tuple(self.c(n) for n in step.outer)
                scratch = {b: self.c(n) for b, n in sorted(step.scratch.items())}
                phases = [self.kernel(p) for p in step.phases]
                steps.append(RowKernel(step.name, outer, phases, scratch, step.graph_ops))
            else:
                self.s("library", step.name, step.prim, repr(sorted(step.params.items())), tuple(step.inputs), tuple(step.outputs))
                steps.append(step)
        return steps


def _value(v: Any) -> Any:
    return v.value if isinstance(v, Param) else v


def block_kind(block: Any, k: Kernel) -> Any:
    """Structure of a reduction's NumPy block relative to its loops (the renderer's choice of
    loop structure depends on it, so programs sharing machine code must agree on it)."""
    if not isinstance(block, (int, Param)) or k.n_reduce == 0:
        return block
    last = _value(k.domain[-1])
    b = _value(block)
    return "in-last-loop" if b > 0 and last % b == 0 else ("empty" if b == 0 else "general")


def constants(kp: KernelProgram) -> tuple[tuple, list]:
    """(structure, constant values) of a kernel program."""
    values: list = []
    w = _Walker(lambda v: (values.append(v), v)[1])
    w.program(kp)
    return tuple(w.structure), values


def varying_positions(a: list, b: list) -> list[int]:
    return [i for i, (x, y) in enumerate(zip(a, b)) if _bits(x) != _bits(y)]


def parametrize(kp: KernelProgram, positions: list[int]) -> KernelProgram:
    """The same kernel program with the constants at `positions` replaced by Params numbered
    in order (slot i holds the constant at positions[i])."""
    slot = {p: i for i, p in enumerate(positions)}
    counter = iter(range(1 << 62))

    def on_const(v: Any) -> Any:
        i = next(counter)
        if i in slot:
            return Param(slot[i], "float" if isinstance(v, float) else "int", v)
        return v
    return _Walker(on_const).program(kp)


def parameter_values(values: list, positions: list[int]) -> np.ndarray:
    """The parameter array for one concrete program: int64 slots, floats stored bit-for-bit."""
    out = np.zeros(max(len(positions), 1), np.int64)
    for i, p in enumerate(positions):
        v = values[p]
        out[i] = np.float64(v).view(np.int64) if isinstance(v, float) else int(v)
    return out


def compatible(template_structure: tuple, template_values: list, positions: list[int],
               structure: tuple, values: list) -> bool:
    """Can a program with (structure, values) run on a template's machine code?"""
    if structure != template_structure:
        return False
    free = set(positions)
    return all(i in free or _bits(a) == _bits(b) for i, (a, b) in enumerate(zip(template_values, values)))

"""Which equations of a program form a Pallas kernel (backends/tpu/pallas.py renders them).

A *kernel group* is a maximal run of elementwise equations of one shape (not 0-d, not empty), in program order, that
a Pallas TPU kernel can compute block by block:

- the primitive is elementwise (`Primitive.kind`), has a lax rule, cannot raise (no check state
  inside a kernel: integer `power` stays with XLA) and is no effect;
- every operand and result has the group's shape and a dtype of at most 32 bits (the chip's
  float64 is emulated and Mosaic has no 64-bit vectors);
- `broadcast_in_dim` joins the group when the kernel can read its operand as it is: a
  one-element value (a scalar, a literal when it is a constant), and where the group's last dim is
  the kernel's row (`wide`), a row (`b` of `x + b`, an operand along the last dim only) or a
  column (`m` of `x - x.max(axis=-1, keepdims=True)`, every dim but the last);
- a group is cut where an equation outside it reads one of its values (the kernel runs at the
  place of its last equation, so nothing before that may need its results); chains of other
  shapes in between do not cut it.

Values of the group read elsewhere (later equations, the program's outputs) are the kernel's
outputs; the others stay in the kernel's registers and VMEM.

>>> import numpy as np, jitkernel as jk
>>> program = jk.make_ir(lambda x: np.sin(x) * 2 + 1)(np.ones(300, np.float32))
>>> [[e.prim for e in g.eqns] for g in kernel_groups(program)]
[['sin', 'broadcast_in_dim', 'multiply', 'broadcast_in_dim', 'add']]
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...ir import Eqn, Program, Var
from ...ir.primitives import PRIMITIVES, raises_on_data
from . import rules_arrays, rules_control, rules_elementwise, rules_library  # noqa: F401  (register the rules)
from .rules import LAX_RULES

LANES = 128  # a vector register's lanes: the kernel's rows are 128 wide, or the group's last dim
MAX_WIDE_LANES = 4096  # a last dim up to this (a multiple of 128) is the kernel's row itself

# What a Pallas TPU kernel computes in: no 64-bit type (Mosaic has none, and the chip's float64 is
# float32 pairs), no complex. bfloat16 is not a NumPy dtype.
KERNEL_DTYPES = frozenset(map(np.dtype, (np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                                         np.float16, np.float32)))


@dataclass(eq=False)
class KernelGroup:
    """Equations computed by one kernel, with what crosses its boundary."""

    shape: tuple[int, ...]
    eqns: list[Eqn] = field(default_factory=list)
    defined: set[Var] = field(default_factory=set)  # the members' results
    inputs: list[Var] = field(default_factory=list)  # values of the group's shape read from outside
    scalars: list[Var] = field(default_factory=list)  # one-element values broadcast inside
    rows: list[Var] = field(default_factory=list)  # values along the last dim broadcast inside
    columns: list[Var] = field(default_factory=list)  # values along every dim but the last
    outputs: list[Var] = field(default_factory=list)  # members' results read outside

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def expensive(self) -> int:
        """How many of its steps cost several operations an element (Primitive.expensive)."""
        return sum(PRIMITIVES[e.prim].expensive for e in self.eqns)

    def add(self, eqn: Eqn) -> None:
        self.eqns.append(eqn)
        self.defined.update(eqn.outputs)


def _concrete(shape: tuple) -> bool:
    return all(isinstance(d, (int, np.integer)) for d in shape)


def _fits(v: Var) -> bool:
    return np.dtype(v.aval.dtype) in KERNEL_DTYPES


def wide(shape: tuple[int, ...]) -> bool:
    """Whether a kernel of this shape takes its last dim as its row (no flattening)."""
    return len(shape) >= 2 and shape[-1] % LANES == 0 and shape[-1] <= MAX_WIDE_LANES


def broadcast_kind(eqn: Eqn) -> str | None:
    """How a kernel reads the operand of a `broadcast_in_dim`: "scalar" (one element), "row"
    (along the last dim only), "column" (along every dim but the last), or None (XLA does it)."""
    if eqn.prim != "broadcast_in_dim":
        return None
    (x,), (out,) = eqn.inputs, eqn.outputs
    shape = tuple(out.aval.shape)
    if not (_concrete(x.aval.shape) and _concrete(shape) and _fits(x) and _fits(out)):
        return None
    if math.prod(x.aval.shape) == 1:
        return "scalar"
    if not wide(shape):
        return None
    spread = [1] * len(shape)  # the operand's extent along each dim of the result
    for i, d in enumerate(eqn.params["broadcast_dimensions"]):
        spread[d] = int(x.aval.shape[i])
    if all(e == 1 for e in spread[:-1]) and spread[-1] == shape[-1]:
        return "row"
    if spread[-1] == 1 and tuple(spread[:-1]) == shape[:-1]:
        return "column"
    return None


def kernel_shape(eqn: Eqn) -> tuple[int, ...] | None:
    """The shape of the group `eqn` may join, or None when it stays with XLA."""
    if len(eqn.outputs) != 1 or not eqn.inputs and eqn.prim != "broadcast_in_dim":
        return None
    shape = tuple(eqn.outputs[0].aval.shape)
    if not shape or not _concrete(shape) or math.prod(shape) == 0 or not _fits(eqn.outputs[0]):
        return None
    if broadcast_kind(eqn):
        return tuple(int(d) for d in shape)
    prim = PRIMITIVES[eqn.prim]
    if prim.kind != "elementwise" or eqn.prim not in LAX_RULES or prim.effect:
        return None
    if raises_on_data(eqn.prim, [o.aval for o in eqn.outputs]):
        return None
    if any(tuple(v.aval.shape) != shape or not _fits(v) for v in eqn.inputs):
        return None
    return tuple(int(d) for d in shape)


def kernel_groups(program: Program) -> list[KernelGroup]:
    """The program's kernel groups, each with at least one step that is not a broadcast. Chains
    of different shapes may interleave: one group is open per shape, and a group closes when an
    equation outside it reads one of its values (its kernel runs before that reader)."""
    groups: list[KernelGroup] = []
    open_groups: dict[tuple[int, ...], KernelGroup] = {}
    for eqn in program.eqns:
        shape = kernel_shape(eqn)
        for other, group in list(open_groups.items()):
            if other != shape and any(v in group.defined for v in eqn.inputs):
                groups.append(open_groups.pop(other))
        if shape is not None:
            open_groups.setdefault(shape, KernelGroup(shape)).add(eqn)
    groups.extend(open_groups.values())
    position = {id(e): k for k, e in enumerate(program.eqns)}
    groups.sort(key=lambda g: position[id(g.eqns[0])])  # numbered in program order
    kept = [g for g in groups if any(e.prim != "broadcast_in_dim" for e in g.eqns)]
    _boundaries(program, kept)
    return kept


def _boundaries(program: Program, groups: list[KernelGroup]) -> None:
    """Fill each group's inputs, scalars and outputs."""
    readers: dict[Var, int] = {}  # value -> how many reads outside the group defining it
    member_of = {id(e): g for g in groups for e in g.eqns}
    for eqn in program.eqns:
        group = member_of.get(id(eqn))
        for v in eqn.inputs:
            if group is None or v not in group.defined:
                readers[v] = readers.get(v, 0) + 1
    for v in program.outvars:
        readers[v] = readers.get(v, 0) + 1
    for g in groups:
        for eqn in g.eqns:
            for v in eqn.inputs:
                if v in g.defined:
                    continue
                kind = broadcast_kind(eqn)
                bucket = {"scalar": g.scalars, "row": g.rows, "column": g.columns, None: g.inputs}[kind]
                if v not in bucket:
                    bucket.append(v)
            g.outputs.extend(v for v in eqn.outputs if readers.get(v))

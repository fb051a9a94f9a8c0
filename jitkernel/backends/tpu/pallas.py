"""Kernel groups (backends/tpu/pallas_plan.py) rendered as Pallas TPU kernels: one `pl.pallas_call`
per group, with a grid over row blocks, in place of XLA's own fusion of the same steps.

The kernel body applies the *same* lax rules as the rest of the lowering (`LAX_RULES`) to the
loaded blocks, so NumPy's semantics (backends/semantic_rules.py, float-to-integer casts) are
decided once. What this module decides is the layout:

- the group's values are flattened and viewed as (rows, 128) (or (rows, last dim) when the last
  dim is a multiple of 128 up to 4096: no copy), padded with zeros to a whole row when the size
  is ragged;
- a block is (block_rows, lanes), block_rows a multiple of 32 (the sublane tile of 8-bit types,
  a multiple of float32's 8), sized so that every operand's block, double-buffered, fits in
  `VMEM_BUDGET`; an array smaller than a block is one block of its own size;
- the grid runs over row blocks (its last block may be partial: Pallas masks the edge), marked
  "parallel" (a chip with two TensorCores splits it);
- with `SUB_ROWS` set, the body runs over a block in strips of that many rows (a `fori_loop`), so
  that a long chain's intermediates stay in vector registers instead of block-sized VMEM
  temporaries (off by default until measured: `benchmarks/tpu_pallas.py --sub-rows`);
- the operand of a broadcast is read as it is: a one-element one as a (1, lanes) row read once
  (a constant one as a literal), a row of the last dim as (1, lanes), a column of the leading
  dims as (rows, 1) blocks of (block_rows, 1); the kernel broadcasts them to the block;
- the padding is sliced off the results.

A group is rendered only when its kernel is one Mosaic (Pallas's TPU compiler) takes: the body
holds no 64-bit value and Mosaic lowers it (checked by lowering the kernel for the TPU, which
works on any machine); otherwise it stays with XLA and `as_text("pallas")` says why. On
`tpu-interpret` the kernels run in Pallas's TPU interpret mode (`pltpu.InterpretParams`: VMEM,
DMAs and the grid simulated on the CPU).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from ...ir import Eqn, Program, Var
from .options import auto_choice
from .pallas_plan import LANES, KernelGroup, broadcast_kind, kernel_groups, wide
from .rules import LAX_RULES

ROW_ALIGN = 32  # sublane tile of 8-bit types (16-bit: 16, 32-bit: 8): one rule for every dtype
MAX_BLOCK_ROWS = 1024
VMEM_BUDGET = 8 << 20  # bytes for all blocks of a kernel, double-buffered (v5e's scoped VMEM: 16 MiB)
SUB_ROWS = 0  # rows of a strip the body computes at a time (a multiple of ROW_ALIGN); 0: the whole block


@dataclass(frozen=True)
class Layout:
    """How a group's values are viewed and cut into blocks."""

    shape: tuple[int, ...]
    lanes: int
    block_rows: int
    strip_rows: int = 0  # the body's strip (0: the whole block at once)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def rows(self) -> int:
        return -(-self.size // self.lanes)

    @property
    def pad(self) -> int:
        return self.rows * self.lanes - self.size

    @property
    def grid(self) -> int:
        return -(-self.rows // self.block_rows)

    @property
    def block(self) -> tuple[int, int]:
        return (self.block_rows, self.lanes)

    def to_rows(self, x: Any) -> Any:
        flat = jnp.reshape(x, (-1,))
        if self.pad:
            flat = jnp.pad(flat, (0, self.pad))
        return jnp.reshape(flat, (self.rows, self.lanes))

    def from_rows(self, y: Any) -> Any:
        flat = jnp.reshape(y, (-1,))
        return jnp.reshape(flat[:self.size] if self.pad else flat, self.shape)

    def __str__(self) -> str:
        pad = f", {self.pad} elements of padding" if self.pad else ""
        strips = f", computed in strips of {self.strip_rows} rows" if self.strip_rows else ""
        return (f"viewed as ({self.rows}, {self.lanes}){pad}; blocks of {self.block}, grid ({self.grid},), "
                f"parallel{strips}")


def layout_for(group: KernelGroup) -> Layout:
    """Lanes, and block rows under the VMEM budget (every blocked operand double-buffered)."""
    shape = group.shape
    lanes = shape[-1] if wide(shape) else LANES
    # a column's (block_rows, 1) block takes a whole row of lanes in VMEM
    blocked = group.inputs + group.columns + group.outputs
    row_bytes = lanes * sum(np.dtype(v.aval.dtype).itemsize for v in blocked)
    block_rows = min(MAX_BLOCK_ROWS, VMEM_BUDGET // (2 * row_bytes))
    block_rows = max(ROW_ALIGN, block_rows // ROW_ALIGN * ROW_ALIGN)
    rows = -(-math.prod(shape) // lanes)
    block_rows = min(block_rows, rows)
    strip = SUB_ROWS if SUB_ROWS and block_rows > SUB_ROWS and block_rows % SUB_ROWS == 0 else 0
    return Layout(shape, lanes, block_rows, strip)


class NeedsXla(Exception):
    """The kernel body asked for something a kernel cannot do (a run-time check, a host step)."""


class _NoChecks:
    def __getattr__(self, name: str) -> Any:
        raise NeedsXla(f"its steps record a run-time check ({name})")


def block_index(i: Any) -> tuple:
    """The block a grid step reads: row block i, column block 0. int32, not a Python 0: the
    lowering traces with 64-bit types on, and Mosaic cannot return an int64 block index (the
    chip's compile refused every kernel with `func.return (i32, i64)`, measured on a v5e)."""
    return i, jnp.int32(0)


def first_block(i: Any) -> tuple:
    """The one block of a row operand, read by every grid step (int32, as `block_index`)."""
    return jnp.int32(0), jnp.int32(0)


class _KernelContext:
    """The `ctx` the lax rules see inside a kernel body: no check state, no host steps, no
    sub-programs (a rule asking for them leaves its chain to XLA). The constants it knows are
    the kernel's broadcast literals (the add and divide rules read them); it has no run-time
    -0.0, so the product guard of the CPU platform does not apply inside a kernel (Mosaic on the
    chip is not known to contract; Pallas's interpret mode on the CPU may: docs/tpu.md)."""

    checks = _NoChecks()
    negative_zero = None
    opaque_constants = False  # Mosaic lowers op by op (and has no optimisation barrier)

    def __init__(self) -> None:
        self.constants: dict = {}

    def __getattr__(self, name: str) -> Any:
        raise NeedsXla(f"a step needs the lowering's {name} (a host step or a sub-program)")


@dataclass(eq=False)
class Kernel:
    """One kernel group and what became of it."""

    number: int
    group: KernelGroup
    literals: dict[Var, np.ndarray]  # constant scalars of its broadcasts
    choice: str = "xla"  # "pallas" | "xla"
    why: str = ""
    layout: Layout | None = None
    body_text: str = ""

    @property
    def row_inputs(self) -> list[Var]:
        """The operands passed as one (1, lanes) row: computed scalars, then rows."""
        return [v for v in self.group.scalars if v not in self.literals] + self.group.rows

    @property
    def blocked_inputs(self) -> list[Var]:
        """The operands read block by block: inputs of the group's shape, then columns."""
        return self.group.inputs + self.group.columns

    def body(self, blocks: list, rows: list, block: tuple[int, int]) -> list:
        """The group's outputs for loaded blocks (of shape `block`; a column's block is one lane
        wide) of `blocked_inputs` and rows of `row_inputs`."""
        env: dict[Var, Any] = dict(zip(self.blocked_inputs, blocks))
        env.update(zip(self.row_inputs, rows))
        ctx = _KernelContext()
        for eqn in self.group.eqns:
            if broadcast_kind(eqn):
                env[eqn.outputs[0]] = self._broadcast(eqn, env, block)
                if eqn.inputs[0] in self.literals:
                    ctx.constants[eqn.outputs[0]] = self.literals[eqn.inputs[0]]
                continue
            outs = LAX_RULES[eqn.prim](ctx, eqn, *[env[v] for v in eqn.inputs])
            env.update(zip(eqn.outputs, outs))
        return [env[v] for v in self.group.outputs]

    def _broadcast(self, eqn: Eqn, env: dict, block: tuple[int, int]) -> Any:
        x, dtype = eqn.inputs[0], np.dtype(eqn.outputs[0].aval.dtype)
        if x in self.literals:
            return lax.full(block, np.asarray(self.literals[x], dtype).reshape(()).item(), dtype)
        value = env[x]
        if x in self.group.defined:  # a one-row group: the block already holds the value
            return value
        return jnp.broadcast_to(value, block).astype(dtype)

    def pallas_call(self, interpret: bool) -> Callable[..., list]:
        """(values of `blocked_inputs`, of `row_inputs`) -> the group's outputs, as one `pl.pallas_call`."""
        layout, group = self.layout, self.group
        n_in, n_rows = len(self.blocked_inputs), len(self.row_inputs)

        def kernel(*refs: Any) -> None:
            ins, outs = refs[:n_in], refs[n_in + n_rows:]
            rows = [r[...] for r in refs[n_in:n_in + n_rows]]
            strip = layout.strip_rows
            if not strip:
                for ref, value in zip(outs, self.body([r[...] for r in ins], rows, layout.block)):
                    ref[...] = value.astype(ref.dtype)
                return

            def step(j: Any, carry: Any) -> Any:
                part = pl.ds(pl.multiple_of(j * strip, strip), strip)
                values = self.body([r[part, :] for r in ins], rows, (strip, layout.lanes))
                for ref, value in zip(outs, values):
                    ref[part, :] = value.astype(ref.dtype)
                return carry
            # int32 bounds: the lowering traces with 64-bit types on, and Mosaic has none
            lax.fori_loop(jnp.int32(0), jnp.int32(layout.block_rows // strip), step, jnp.int32(0))

        block_spec = pl.BlockSpec(layout.block, block_index)
        column_spec = pl.BlockSpec((layout.block_rows, 1), block_index)
        row_spec = pl.BlockSpec((1, layout.lanes), first_block)
        in_specs = [block_spec] * len(group.inputs) + [column_spec] * len(group.columns) + [row_spec] * n_rows
        out_shape = [jax.ShapeDtypeStruct((layout.rows, layout.lanes), v.aval.dtype) for v in group.outputs]
        nbytes = layout.rows * layout.lanes * sum(np.dtype(v.aval.dtype).itemsize
                                                  for v in group.inputs + group.outputs)
        nbytes += layout.rows * sum(np.dtype(v.aval.dtype).itemsize for v in group.columns)
        call = pl.pallas_call(
            kernel, out_shape=out_shape, grid=(layout.grid,),
            in_specs=in_specs, out_specs=[block_spec] * len(out_shape),
            interpret=pltpu.InterpretParams() if interpret else False,
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
            cost_estimate=pl.CostEstimate(flops=layout.size * len(group.eqns),
                                          transcendentals=layout.size * group.expensive, bytes_accessed=nbytes),
            name=f"jitkernel_kernel_{self.number}")

        def run(blocked: list, rows: list) -> list:
            """`blocked`: values of `blocked_inputs`, `rows`: of `row_inputs`."""
            views = [layout.to_rows(x) for x in blocked[:len(group.inputs)]]
            views += [jnp.reshape(c, (layout.rows, 1)) for c in blocked[len(group.inputs):]]
            views += [jnp.broadcast_to(jnp.reshape(r, (1, -1)), (1, layout.lanes)) for r in rows]
            return [layout.from_rows(o) for o in call(*views)]
        return run

    def specs(self) -> tuple[list, list]:
        """Abstract inputs of `pallas_call(...)`'s function, for checking it."""
        struct = lambda v: jax.ShapeDtypeStruct(tuple(v.aval.shape), v.aval.dtype)  # noqa: E731
        return [struct(v) for v in self.blocked_inputs], [struct(v) for v in self.row_inputs]

    def text(self) -> str:
        g = self.group
        head = f"kernel {self.number}: {self.choice}" + (f" ({self.why})" if self.why else "")
        lines = [head, f"  steps: {' '.join(e.prim for e in g.eqns)} on {g.shape}"]
        types = lambda vs: ", ".join(str(v.aval) for v in vs) or "none"  # noqa: E731
        read = f"inputs: {types(g.inputs)}; scalars: {types(g.scalars)}"
        read += "".join(f"; {name}: {types(vs)}" for name, vs in (("rows", g.rows), ("columns", g.columns)) if vs)
        lines.append(f"  {read}; outputs: {types(g.outputs)}")
        if self.choice == "pallas":
            lines.append(f"  layout: {self.layout}")
            lines.append("  body: " + self.body_text.replace("\n", "\n  "))
        return "\n".join(lines)


# Mosaic on the v5e computes in 32-bit vectors: measured on the chip, a kernel of uint8 or bool
# blocks failed to compile ("Only vector<i16> and vector<i32> are supported, but got 'i8'") and one
# of float16 blocks too ("Invalid vector type for load"). bool stays allowed *inside* a kernel
# (comparison masks for `where`), where it is a register mask, never a block in memory.
BLOCK_ITEMSIZE = 4


def _all_eqns(jaxpr: Any) -> Iterator[Any]:
    """Every equation of a jaxpr, each followed by those of its sub-jaxprs (loops, branches)."""
    for eqn in jaxpr.eqns:
        yield eqn
        for p in eqn.params.values():
            sub = getattr(p, "jaxpr", p)
            if hasattr(sub, "eqns"):
                yield from _all_eqns(sub)


def _out_dtypes(eqn: Any) -> list[np.dtype]:
    return [np.dtype(v.aval.dtype) for v in eqn.outvars if hasattr(v.aval, "dtype")]


def narrow_values(kernel_inputs: list, jaxpr: Any) -> str:
    """The first value of a kernel narrower than 32 bits, as text ("" when there is none): a block
    it reads or writes (bool included), or a step computing in 8 or 16 bits."""
    for v in kernel_inputs:
        if np.dtype(v.aval.dtype).itemsize < BLOCK_ITEMSIZE:
            return f"a {np.dtype(v.aval.dtype)} block"
    for eqn in _all_eqns(jaxpr):
        for dtype in _out_dtypes(eqn):
            if dtype != np.bool_ and dtype.itemsize < BLOCK_ITEMSIZE:
                return f"a {dtype} step ({eqn.primitive.name})"
    return ""


# Steps Mosaic computes differently from XLA and NumPy, measured on the v5e: kept with XLA so that
# "pallas" never trades NumPy's answer for speed. tanh: 3e-5 relative error (about 250 float32 ulp;
# the lowering's own tanh, accurate_math.py, has not been run in a Mosaic kernel on the chip);
# copysign: the sign of a negative zero lost (copysign(-0.0, -2.5) gave +0.0). Keyed by the
# program's primitive.
DIFFERS_IN_MOSAIC = {"tanh": "Mosaic's tanh is an approximation (3e-5 relative error on the v5e)",
                     "copysign": "Mosaic's copysign loses the sign of -0.0 (measured on the v5e)"}
# Keyed by the kernel body's lax primitive, whichever rule emitted it: Mosaic negates a float as
# 0 - x (-x of +0.0 gave +0.0 on the v5e, NumPy -0.0).
DIFFERS_IN_MOSAIC_LAX = {"neg": "Mosaic negates a float as 0 - x, losing -0.0 (measured on the v5e)"}


def differs_in_mosaic(group: KernelGroup, jaxpr: Any) -> str:
    """Why a step of the group would not give NumPy's answer in a Mosaic kernel ("" when none)."""
    found = next((DIFFERS_IN_MOSAIC[e.prim] for e in group.eqns if e.prim in DIFFERS_IN_MOSAIC), "")
    return found or next((DIFFERS_IN_MOSAIC_LAX[e.primitive.name] for e in _all_eqns(jaxpr)
                          if e.primitive.name in DIFFERS_IN_MOSAIC_LAX
                          and any(np.issubdtype(d, np.floating) for d in _out_dtypes(e))), "")


def _holds_64_bit(jaxpr: Any) -> bool:
    """Whether any value of a jaxpr (its sub-jaxprs included) is 64 bits wide."""
    return any(d.itemsize == 8 for eqn in _all_eqns(jaxpr) for d in _out_dtypes(eqn))


@dataclass
class ProgramPlan:
    """The kernels of one program: equations to skip, and the kernel run at each last member."""

    members: set[int] = field(default_factory=set)  # id(eqn)
    runs_at: dict[int, Kernel] = field(default_factory=dict)  # id(last eqn) -> kernel


class PallasKernels:
    """The Pallas kernels of one lowering (a program and its loop and branch bodies)."""

    def __init__(self, mode: str, interpret: bool) -> None:
        self.mode, self.interpret = mode, interpret
        self.kernels: list[Kernel] = []
        self._plans: dict[int, ProgramPlan] = {}
        self._keep: list[Program] = []  # keeps id(program) unique while planned

    def reset(self) -> None:
        """A fresh trace (jax.jit traces once per signature) plans again."""
        self.kernels, self._plans, self._keep = [], {}, []

    def plan(self, program: Program) -> ProgramPlan:
        plan = self._plans.get(id(program))
        if plan is not None:
            return plan
        plan = self._plans[id(program)] = ProgramPlan()
        self._keep.append(program)
        if self.mode == "xla":
            return plan
        consts = dict(zip(program.constvars, program.consts))
        for group in kernel_groups(program):
            literals = {v: consts[v] for v in group.scalars if v in consts}
            kernel = Kernel(len(self.kernels), group, literals, layout=layout_for(group))
            self.kernels.append(kernel)
            self._choose(kernel)
            if kernel.choice == "pallas":
                plan.members.update(id(e) for e in group.eqns)
                plan.runs_at[id(group.eqns[-1])] = kernel
        return plan

    def _choose(self, kernel: Kernel) -> None:
        if self.mode == "auto":
            kernel.choice, kernel.why = auto_choice(kernel.group.size, kernel.group.expensive)
        else:
            kernel.choice, kernel.why = "pallas", ""
        if kernel.choice != "pallas":
            return
        problem = self._check(kernel)
        if problem:
            kernel.choice, kernel.why = "xla", problem

    def _check(self, kernel: Kernel) -> str:
        """Why Mosaic cannot take the kernel ("" when it can); fills the body's text."""
        layout = kernel.layout
        block = (layout.strip_rows, layout.lanes) if layout.strip_rows else layout.block
        blocks = [jax.ShapeDtypeStruct(block, v.aval.dtype) for v in kernel.group.inputs]
        blocks += [jax.ShapeDtypeStruct((block[0], 1), v.aval.dtype) for v in kernel.group.columns]
        rows = [jax.ShapeDtypeStruct((1, block[1]), v.aval.dtype) for v in kernel.row_inputs]
        try:
            body = jax.make_jaxpr(lambda b, r: kernel.body(b, r, block))(blocks, rows)
        except NeedsXla as e:
            return str(e)
        if _holds_64_bit(body.jaxpr):
            return "its steps compute in 64 bits, which Mosaic has no vectors for"
        group = kernel.group
        narrow = narrow_values(group.inputs + group.scalars + group.rows + group.columns + group.outputs, body.jaxpr)
        if narrow:
            return f"{narrow}: Mosaic on the v5e computes in 32-bit vectors"
        if differs := differs_in_mosaic(group, body.jaxpr):
            return differs
        kernel.body_text = str(body)
        inputs, scalars = kernel.specs()
        try:  # Mosaic's lowering runs in Python on any machine; its compile only on the chip
            jax.jit(kernel.pallas_call(interpret=False)).trace(inputs, scalars).lower(lowering_platforms=("tpu",))
        except Exception as e:  # noqa: BLE001 - any refusal of Mosaic's keeps the steps with XLA
            return f"Mosaic cannot lower it: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
        return ""

    def rendered(self) -> bool:
        """Whether any chain became a Pallas kernel."""
        return any(k.choice == "pallas" for k in self.kernels)

    def text(self, no_kernels: str = "") -> str:
        """`as_text("pallas")`: every kernel group and what became of it (`no_kernels`: why the
        program has none whatever the option says)."""
        if no_kernels:
            return f"no Pallas kernels: {no_kernels}"
        if self.mode == "xla":
            return "no Pallas kernels (tpu_fusion='xla': XLA fuses every elementwise chain)"
        if not self.kernels:
            return f"no Pallas kernels (tpu_fusion={self.mode!r}: no elementwise chain a kernel can take)"
        chosen = sum(k.choice == "pallas" for k in self.kernels)
        head = f"{chosen} Pallas kernel{'s' * (chosen != 1)} of {len(self.kernels)} elementwise chains " \
               f"(tpu_fusion={self.mode!r})"
        return "\n".join([head] + [k.text() for k in self.kernels])

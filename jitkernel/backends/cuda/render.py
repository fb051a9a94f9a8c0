"""Render a KernelProgram as one CUDA C translation unit (no #include, `extern "C"` kernels).

The kernel IR is the CPU backend's (fusion decisions are made once); this module maps each
`Kernel` onto the GPU's execution model:

- **elementwise** (no reduction): a grid-stride loop over the collapsed domain; the flat index
  is unravelled into the loop variables and the body's index maps (fusion/index.py) are
  rendered as C integer expressions.
- **rows** (a reduction with kept points): one block per kept point (grid-stride over them);
  the block's threads stride over the reduced points, combine per thread, then across the
  block: warp shuffles (`__shfl_down_sync`) and one shared-memory slot per warp. Short rows (a
  compile-time reduced extent of at most WARP_ROWS_MAX_REDUCED) are **warp rows**: one warp
  per kept point, its lanes over the reduced points, warp shuffles only.
- **columns** (a reduction over outer axes, which the CPU accumulates in memory, e.g. a column
  sum, with many kept points or few reduced ones): one thread per kept point, its reduced points
  in order (coalesced reads, NumPy's order).
- **two stages** (a reduction whose kept domain is one point): stage one, every block reduces
  a grid-stride share into one partial per block (a work buffer); stage two, one block combines
  the partials in block order. No atomics: the same input and launch shape give the same bits.

A reduction that the CPU accumulates in memory (a kernel without reduced loops whose reduce
stores ignore some loop variables, e.g. a column sum) has as kept points the variables the
store indexes (checked to be one-to-one), and becomes a columns or a rows kernel. Float max/min and argmax/argmin carry the position of
their value, so that ties resolve as in NumPy (first index for arg*, the first or last of equal
zeros for max/min: ir/semantics.py), whatever the order of the parallel combine.

Launch shapes are not baked in: the runtime picks grid and block (any block size that is a
multiple of 32, up to 1024); each `Launch` says what it iterates over. The exception is a
dot_general's tile kernel (render_matmul.py), written for one block size (`Launch.block_size`).
Complex steps that the CPU runs through NumPy are rendered by complex_ops.py.

This module assembles the translation unit: each step goes to its writer (kernel_writer.py for
fused kernels, flow.py for control flow, and for a library step the rule of its primitive,
library_rules.LIBRARY_RULES, which the modules imported below register).
"""
from __future__ import annotations

import hashlib

from ...fusion.kernel_ir import KernelProgram, LibraryCall, RowKernel
from ...fusion.loops import is_control
from . import ctype, flow
# the modules registering library-step rules (library_rules.LIBRARY_RULES)
from . import accumulate, checks, compaction, complex_ops, host_callback, indexing, render_matmul, search, sort, take  # noqa: F401
from .kernel_writer import KernelWriter, RowKernelWriter
from .launch import CudaModule
from .library_rules import LIBRARY_RULES, unsupported_step
from .names import PLACEHOLDER
from .prelude import PRELUDE
from .semantic_c import definitions_for as semantic_definitions


def render_program(kp: KernelProgram) -> CudaModule:
    """The CUDA translation unit of `kp`; raises UnsupportedOperationError naming the first
    step or feature the CUDA renderer does not cover yet.

    >>> import numpy as np, jitkernel as jk
    >>> source = jk.jit(lambda x: (x * 2).sum()).lower(np.ones(8, np.float32)).as_text("cuda")
    >>> 'extern "C" __global__ void jk_' in source and "#include" not in source.replace("no #include", "")
    True
    """
    for bid, _ in kp.consts:
        ctype.check_dtype(kp.buffers[bid].dtype)
    parts, launches = render_steps(kp, kp.steps)
    body = "\n".join(parts)
    tag = "p" + hashlib.sha256(body.encode()).hexdigest()[:10]
    body = body.replace(PLACEHOLDER, tag)
    for launch in flow.iter_launches(launches):
        launch.name = launch.name.replace(PLACEHOLDER, tag)
        # Sizes as plain ints (an `Ext` of a shape-generic program holds this program's value).
        launch.items = int(launch.items)
        launch.scratch = [(bid, dt, int(n)) for bid, dt, n in launch.scratch]
    header = f"/* jitkernel: CUDA translation unit of {kp.name} ({len(kp.steps)} steps) */\n"
    body = semantic_definitions(body) + body  # the shared NumPy rules the kernels call
    return CudaModule(kp.name, header + PRELUDE, body, launches, tag)



def render_steps(kp: KernelProgram, steps: list) -> tuple[list[str], list]:
    """The C text of `steps` and one plan per step: its launches in order (a kernel, a row kernel,
    a library step), or a control plan (flow.py) holding its sub-steps' plans."""
    parts: list[str] = []
    plans: list = []
    for n, step in enumerate(steps):
        if is_control(step):
            text, plan = flow.render_control(kp, step, render_steps)
        elif isinstance(step, LibraryCall):
            text, plan = render_library_step(kp, step, n)
        else:
            writer = RowKernelWriter(kp, step) if isinstance(step, RowKernel) else KernelWriter(kp, step)
            text, plan = writer.render()
        parts.append(text)
        plans.append(plan)
    return parts, plans


def render_library_step(kp: KernelProgram, step: LibraryCall, n: int) -> tuple[str, list]:
    """The kernels and plan of library step `step` (step `n`): the rule of its primitive;
    UnsupportedOperationError naming the step when it has none."""
    rule = LIBRARY_RULES.get(step.prim)
    if rule is None:
        raise unsupported_step(kp, step, n)
    return rule(kp, step, n, PLACEHOLDER)

"""Fusion on the CUDA backends, and the device text of a program whatever backend compiled it.

The CUDA backends fuse as the CPU backend does (the same kernel IR, the same FuseEvent), except
that loop and branch bodies may hold the library steps the GPU implements (BODY_LIBRARY_PRIMS):
flow.py runs them there.
"""
from __future__ import annotations

from ...fusion import KernelProgram, schedule
from ...ir import Program
from ...ir.control_flow import CONTROL_FLOW_PRIMITIVES
from ...passes.native_loops import library_steps_in_bodies
from ..base import fuse
from .library_steps import BODY_LIBRARY_PRIMS
from .nvcc import ptx
from .render import render_program


def schedule_program(program: Program, name: str) -> KernelProgram:
    """Fusion as the CPU backend runs it (the same kernel IR, the same FuseEvent), except that
    loop and branch bodies may hold the library steps of BODY_LIBRARY_PRIMS."""
    return fuse(program, name, BODY_LIBRARY_PRIMS)


def _has_library_loops(kp: KernelProgram) -> bool:
    """Whether `kp` holds a control-flow equation as one library step (the CPU's schedule of a
    body with library steps), which the CUDA backends schedule as a loop step instead."""
    prims = [s.params.get("prim") if getattr(s, "prim", None) == "complex_library" else getattr(s, "prim", None)
             for s in kp.steps]  # a complex loop is one complex_library step there
    return any(p in CONTROL_FLOW_PRIMITIVES for p in prims)


def device_text(program: Program, stage: str, kp: KernelProgram | None = None) -> str:
    """The "cuda" (translation unit) or "ptx" text of an optimised program, whatever backend
    compiled it: `f.lower(x).as_text("cuda")` works on the CPU backend too."""
    # A CPU schedule keeps loops with library steps library steps, and turns small products in
    # bodies into reductions (passes/loop_dots.py) where the CUDA backends keep the product:
    # a program with control flow is scheduled again as they schedule it.
    if kp is None or _has_library_loops(kp) or any(e.prim in CONTROL_FLOW_PRIMITIVES for e in program.eqns):
        with library_steps_in_bodies(BODY_LIBRARY_PRIMS):
            kp = schedule(program)
    source = render_program(kp).source
    if stage == "ptx":
        return ptx(source)
    return source

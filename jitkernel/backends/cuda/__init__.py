"""The CUDA backend (docs/gpu.md): the kernel IR rendered as one CUDA C translation unit
(render.py), run on the host by `backend="cuda-emulator"` (emulator.py) and on a GPU by
`backend="cuda"` through PyCUDA (runtime.py, pycuda_device.py; both devices share the step
runner, executor.py). Where PyCUDA, the driver or a device is missing, asking for `cuda` raises
BackendUnavailableError saying which (`missing_for_cuda`).
"""
from __future__ import annotations

import ctypes
import importlib.util
import os

from ...fusion import KernelProgram
from ...ir import Program


# Library steps the CUDA renderer implements (render.render_steps), so that fusion may leave them
# inside a loop or branch body: flow_steps.py runs any step kind there (docs/gpu.md, "Control
# flow on the GPU"). A body holding any other library step keeps the loop a library step, which
# render.py refuses naming that step.
BODY_LIBRARY_PRIMS = frozenset({"dot_general", "complex_library", "gather", "scatter", "scatter_ufunc", "accumulate",
                                "take", "take_along_axis", "sort", "argsort",
                                "searchsorted", "take_static", "raise_if", "debug_callback"})


# What the GPU runs of each library step (indexing.render_library_step's dispatch, render.py's
# matmul and complex steps); every other library step raises naming it (the coverage table,
# docs/primitive-coverage.md, prints this).
LIBRARY_STEPS = {
    "dot_general": "tiled matmul kernel (render_matmul.py)",
    "complex_library": "complex functions in C (complex_functions.py)",
    "gather": "gather kernel (indexing.py)", "scatter": "scatter kernel (indexing.py)",
    "scatter_ufunc": "ufunc.at kernel for add, subtract, multiply, maximum, minimum (indexing.py)",
    "accumulate": "scan kernel (accumulate.py)", "take": "take kernel (take.py)",
    "take_along_axis": "take kernel (take.py)", "take_static": "take kernel (take.py)",
    "sort": "sort kernel (sort.py)", "argsort": "sort kernel (sort.py)",
    "searchsorted": "binary search kernel (search.py)", "raise_if": "status check (checks.py)",
    "debug_callback": "values copied to the host, the Python callback run there (host_callback.py)",
    "datadep_pure": "boolean selection and nonzero only (compaction.py)",
    "datadep_call": "boolean selection and nonzero only (compaction.py)",
}


def schedule_program(program: Program, name: str) -> KernelProgram:
    """Fusion as the CPU backend runs it (the same kernel IR, the same FuseEvent), except that
    loop and branch bodies may hold the library steps of BODY_LIBRARY_PRIMS."""
    from ..base import fuse
    return fuse(program, name, BODY_LIBRARY_PRIMS)


def missing_for_cuda() -> list[str]:
    """What this machine lacks of PyCUDA, the CUDA driver and a device (cheap checks: nothing
    is imported or initialised)."""
    missing = []
    if importlib.util.find_spec("pycuda") is None:
        missing.append("PyCUDA (the pycuda package) is not installed")
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        missing.append("the CUDA driver (libcuda.so.1) is not found")
    if not any(os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/nvidia0")):
        missing.append("no NVIDIA GPU device (/dev/nvidia0) is present")
    return missing


def _has_library_loops(kp: KernelProgram) -> bool:
    """Whether `kp` holds a control-flow equation as one library step (the CPU's schedule of a
    body with library steps), which the CUDA backends schedule as a loop step instead."""
    from ...ir.control_flow import CONTROL_FLOW_PRIMITIVES
    prims = [s.params.get("prim") if getattr(s, "prim", None) == "complex_library" else getattr(s, "prim", None)
             for s in kp.steps]  # a complex loop is one complex_library step there
    return any(p in CONTROL_FLOW_PRIMITIVES for p in prims)


def device_text(program: Program, stage: str, kp: KernelProgram | None = None) -> str:
    """The "cuda" (translation unit) or "ptx" text of an optimised program, whatever backend
    compiled it: `f.lower(x).as_text("cuda")` works on the CPU backend too."""
    from ...fusion import schedule
    from ...passes.native_loops import library_steps_in_bodies
    from .render import render_program
    if kp is None or _has_library_loops(kp):  # a CPU schedule keeps such loops library steps
        with library_steps_in_bodies(BODY_LIBRARY_PRIMS):
            kp = schedule(program)
    source = render_program(kp).source
    if stage == "ptx":
        from .nvcc import ptx
        return ptx(source)
    return source

"""Functional updates written in place: a scatter (`x[idx] = v`, `ufunc.at`, np.put, ...) is a
library step that returns a new array (ir/index_prims.py). When the target's buffer is a
temporary that a kernel of this call filled and no later step reads, the step may write into
that buffer instead of copying it first: same values, same errors, one pass over the target
fewer (`y = x * 1; y[idx] = v` costs the kernel and the k written elements, not a copy of y).

Only a temporary written by a kernel or by another such update qualifies: kernels write fresh
(or provably unreferenced) arrays and updates return a copy or their own donated target, while
another library step's result may be a view of its input (NumPy's indexing returns views for
basic indices), which could be an argument of the call.
"""
from __future__ import annotations

from typing import Any, Callable

from ...fusion.kernel_ir import Kernel, KernelProgram, LibraryCall, RowKernel
from ...ir.index_prims import IN_PLACE_IMPLS


def _reads(step: Any) -> set[int] | None:
    """The buffers a step reads; None for a step kind not known here (then nothing is donated)."""
    if isinstance(step, LibraryCall):
        return set(step.inputs)
    if isinstance(step, Kernel):
        return set(step.loads())
    if isinstance(step, RowKernel):
        return {b for phase in step.phases for b in phase.loads()}
    return None


def _writes(step: Any) -> set[int] | None:
    if isinstance(step, LibraryCall):
        return set(step.outputs)
    if isinstance(step, Kernel):
        return {s.buffer for s in step.stores}
    if isinstance(step, RowKernel):
        return {s.buffer for phase in step.phases for s in phase.stores}
    return None


def in_place_impl(kp: KernelProgram, step: LibraryCall) -> Callable | None:
    """The implementation writing into the target's buffer, when that is safe for this step of
    `kp`; None otherwise (the reference implementation, which copies, runs)."""
    impl = IN_PLACE_IMPLS.get(step.prim)
    if impl is None or not step.inputs:
        return None
    target = step.inputs[0]
    if kp.buffers[target].role != "temp" or target in step.inputs[1:] or target in kp.outputs:
        return None
    names = [s.name for s in kp.steps]
    if names.count(step.name) != 1:
        return None
    at = names.index(step.name)
    writer = next((s for s in reversed(kp.steps[:at]) if target in (_writes(s) or ())), None)
    fresh = isinstance(writer, (Kernel, RowKernel)) or (
        isinstance(writer, LibraryCall) and writer.prim in IN_PLACE_IMPLS)  # a copy, or in place itself
    if not fresh:
        return None
    for later in kp.steps[at + 1:]:
        reads = _reads(later)
        if reads is None or target in reads:
            return None
    return impl

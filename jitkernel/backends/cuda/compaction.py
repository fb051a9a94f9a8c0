"""Boolean selections on the GPU: the `datadep_pure` steps `mask_select` (`x[mask]`) and
`nonzero` (`np.nonzero`, `np.flatnonzero`, `np.argwhere`'s source), docs/gpu.md, "Indexing and
in-place updates on the GPU".

A data-dependent result lives in a padded buffer of static shape (ir/datadep_prims.py): the
selected rows first, in NumPy's order (C order of the True positions), zeros after them; the
count is computed by the program's own kernels (a sum of the mask) and trims the result at the
end. The kernels: the padded outputs zeroed; the mask cut into chunks of consecutive positions,
each chunk's number of True entries counted (one thread per chunk); one thread turning those
counts into each chunk's first output row, in order; each chunk walked again, writing its
selected rows (mask_select: the trailing elements of x at that position) or its positions'
coordinates (nonzero) from that row on. No atomics: the same bits on every run and any grid.

Operands that are themselves trimmed by a count (a selection of a selection), windows and the
other data-dependent functions raise UnsupportedOperationError naming the step.
"""
from __future__ import annotations

import numpy as np

from ...fusion.kernel_ir import KernelProgram, LibraryCall
from . import ctype, ops
from .dynamic_params import Ext, extent_product
from .library_kernels import grid_stride, kernel_signature
from .launch import Launch
from .library_rules import library_rule, unsupported_step
from .names import kernel_name
from .work_step import WorkStep

CHUNK_THREADS = 1 << 16  # about this many chunks in all, none shorter than CHUNK_MIN positions
CHUNK_MIN = 32


def _truthy(ref: str, dt: np.dtype) -> str:
    return ops.truthy(ctype.load(ref, dt), dt)


SELECTIONS = ("mask_select", "nonzero")


@library_rule("datadep_pure", "datadep_call")
def render_data_dependent(kp: KernelProgram, step: LibraryCall, n: int, placeholder: str) -> tuple[str, WorkStep]:
    """Of the data-dependent steps, the GPU runs the selections (SELECTIONS); any other raises."""
    if step.params.get("fn") not in SELECTIONS:
        raise unsupported_step(kp, step, n)
    return render_selection(kp, step, n, placeholder)


def render_selection(kp: KernelProgram, step: LibraryCall, n: int, placeholder: str) -> tuple[str, WorkStep]:
    """The kernels of a mask_select or nonzero step (module docstring)."""
    fn = step.params["fn"]
    selection = fn in SELECTIONS
    if not selection or step.params["ncounts"] or any(k >= 0 for k in step.params["layout"]):
        raise unsupported_step(kp, step, n, f" for {fn!r}" + (" of a data-dependent operand" if selection else ""))
    shapes = [kp.buffers[b].shape for b in step.inputs + step.outputs]
    if any(isinstance(d, Ext) or not isinstance(d, (int, np.integer)) for shape in shapes for d in shape):
        raise unsupported_step(kp, step, n, " for run-time extents")
    for b in step.inputs + step.outputs:
        ctype.check_dtype(kp.buffers[b].dtype)
    base = kernel_name(placeholder, step.name)
    if fn == "mask_select":
        x, mask = step.inputs
        xshape = [int(d) for d in kp.buffers[x].shape]
        positions = int(extent_product([int(d) for d in kp.buffers[mask].shape]))
        inner = int(extent_product(xshape[len(kp.buffers[mask].shape):]))
        test = _truthy(f"b{mask}[p]", kp.buffers[mask].dtype)
        reads = [x, mask]
        write = [f"        for (long long j = 0; j < {inner}LL; ++j) b{step.outputs[0]}[r * {inner}LL + j] = "
                 f"b{x}[p * {inner}LL + j];"]
    else:
        (x,) = step.inputs
        xshape = [int(d) for d in kp.buffers[x].shape]
        positions, inner = int(extent_product(xshape)), 1
        test = _truthy(f"b{x}[p]", kp.buffers[x].dtype)
        reads = [x]
        write = [f"        b{out}[r] = (p / {int(extent_product(xshape[d + 1:]))}LL) % {xshape[d]}LL;"
                 for d, out in enumerate(step.outputs)]
    head = f"\n/* {step.name}: {fn} over {positions} positions, padded results in NumPy's order */"
    if positions == 0:
        return head, WorkStep([])
    chunks = max(1, min(CHUNK_THREADS, -(-positions // CHUNK_MIN)))
    size = -(-positions // chunks)
    chunks = -(-positions // size)
    work = [("long long* __restrict__ w0", ("work", 0, "val"))]
    outs = list(step.outputs)
    text = [head]
    launches = []
    for out in outs:  # the padding is zeros (ir/datadep_prims.py)
        total = int(extent_product([int(d) for d in kp.buffers[out].shape]))
        sig, params = kernel_signature(kp, f"{base}_zero{out}", [out], {out})
        text += [sig + " {"] + grid_stride(f"{total}LL") + [f"    b{out}[t] = 0;", "  }", "}"]
        launches.append(Launch(f"{base}_zero{out}", "elementwise", total, params))
    last = f"p0 + {size}LL < {positions}LL ? p0 + {size}LL : {positions}LL"
    span = [f"    const long long p0 = t * {size}LL, p1 = {last};"]
    sig, params = kernel_signature(kp, base + "_count", reads, set(), work)
    text += [sig + " {  /* the True entries of each chunk */"] + grid_stride(f"{chunks}LL") + span
    text += ["    long long c = 0;", f"    for (long long p = p0; p < p1; ++p) c += {test} ? 1 : 0;",
             "    w0[t] = c;", "  }", "}"]
    launches.append(Launch(base + "_count", "elementwise", chunks, params))
    sig, params = kernel_signature(kp, base + "_first", [], set(), work)
    text += [sig + " {  /* each chunk's first output row, in order */",
             "  if (blockIdx.x == 0 && threadIdx.x == 0) {",
             "    long long r = 0;",
             f"    for (long long c = 0; c < {chunks}LL; ++c) {{ const long long k = w0[c]; w0[c] = r; r += k; }}",
             "  }", "}"]
    launches.append(Launch(base + "_first", "elementwise", 1, params))
    sig, params = kernel_signature(kp, base + "_put", reads + outs, set(outs), work)
    text += [sig + " {  /* each chunk's selected rows from its first output row on */"] + grid_stride(f"{chunks}LL")
    text += span + [
        "    long long r = w0[t];",
        "    for (long long p = p0; p < p1; ++p) {",
        f"      if ({test}) {{"] + write + ["        ++r;", "      }", "    }", "  }", "}"]
    launches.append(Launch(base + "_put", "elementwise", chunks, params))
    return "\n".join(text), WorkStep(launches, [(0, np.dtype(np.int64), chunks)])

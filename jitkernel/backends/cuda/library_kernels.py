"""Pieces every library step's kernels share (indexing.py, take.py, sort.py, search.py,
accumulate.py, compaction.py): the `extern "C"` head with its `Launch.params`, and the
grid-stride loop.

>>> grid_stride("n")[0]
'  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n;'
"""
from __future__ import annotations

from typing import Sequence

from ...fusion.kernel_ir import KernelProgram
from . import ctype
from .dynamic_params import has_params


def grid_stride(total: str, var: str = "t") -> list[str]:
    """The two lines opening a grid-stride loop of `var` over [0, total) (a C expression): any
    grid and block size visit every point once."""
    return [f"  for (long long {var} = (long long)blockIdx.x * blockDim.x + threadIdx.x; {var} < {total};",
            f"       {var} += (long long)blockDim.x * gridDim.x) {{"]


def kernel_signature(kp: KernelProgram, name: str, bufs: list[int], written: set[int],
                     extra: Sequence[tuple[str, tuple]] = ()) -> tuple[str, list[tuple]]:
    """The `extern "C"` head of a library step's kernel and its `Launch.params`: the buffers
    `bufs` (const unless written), then `extra` (C parameter, param tag: work buffers), the
    run-time parameters of a shape-generic program, and the status word."""
    args, params = [], []
    for b in dict.fromkeys(bufs):  # one parameter per buffer (x[i, i] names i twice)
        const = "" if b in written else "const "
        args.append(f"{const}{ctype.mem(kp.buffers[b].dtype)}* __restrict__ b{b}")
        params.append(("buf", b))
    for text, tag in extra:
        args.append(text)
        params.append(tag)
    if has_params(kp):
        args.append("const long long* __restrict__ jk_params")
        params.append(("params",))
    args.append("unsigned int* __restrict__ jk_status")
    params.append(("status",))
    return f'extern "C" __global__ void {name}(\n    ' + ",\n    ".join(args) + ")", params

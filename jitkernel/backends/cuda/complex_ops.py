"""Complex numbers on the CUDA backend (docs/gpu.md, "Complex numbers on the GPU").

Complex values reach the renderer already as (real, imag) pairs of floats: compiled backends
schedule `passes/complex_lower.py`, which expands complex arithmetic, comparisons, `abs`,
`sign`, casts, selects and movement into float32/float64 expressions with exactly the
operations of NumPy 2's complex loops (fma where NumPy's AVX-512 loops fuse; `fma` renders as
CUDA's `fma`/`fmaf`). Those semantics are decided once, there, for every renderer. A complex
argument or result is a float buffer of shape (..., 2) holding the complex array's own bytes
(`KernelProgram.complex_views`); the runtime passes and returns views (`pack_arguments`,
`complex_results`).

What the lowering leaves to NumPy on the CPU, a `complex_library` step, is rendered here when
it has a GPU form, else refused naming the function (never a round trip through the host):

- `reduce_sum`: complex addition is componentwise, so a complex sum is the float sum of the
  packed buffer over the same axes, keeping the pair axis: a float `Kernel` handed to the
  ordinary reduction renderer (rows, columns or two stages; the accumulator rules of
  backends/semantics.py; NaN propagation is IEEE's, as in NumPy's componentwise adds).
- `reduce_prod`: one block per kept point, threads multiply their share, then a tree across
  the block (shuffles and shared slots) with NumPy's reduce formula, products rounded
  (`re = ar*br - ai*bi`, `im = ar*bi + ai*br`, no fma). A tree, not NumPy's sequential order:
  results agree within rounding; where infinities meet zeros the NaN parts can differ.
- `dot_general`: the tile kernel of render_matmul.py with (re, im) tiles and accumulators.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import UnsupportedOperationError
from ...fusion import index as ix
from ...fusion.kernel_ir import Kernel, KernelProgram, LibraryCall, Load, Store
from ...ir.complex_prims import as_complex, as_packed
from . import ctype, ops

RENDERED = ("reduce_sum", "reduce_prod", "dot_general")


def render_complex_step(kp: KernelProgram, step: LibraryCall, n: int, name: str) -> tuple[str, Any]:
    """The C text and the module step (a list of Launch, or a TileStep) of one
    `complex_library` step; UnsupportedOperationError naming the function when it has no
    GPU form yet."""
    prim = step.params["prim"]
    params = dict(step.params["prim_params"])
    layout = tuple(step.params["in_layout"])
    if prim == "reduce_sum" and layout == (True,):
        from .render import KernelWriter
        return KernelWriter(kp, sum_kernel(kp, step, tuple(params["axes"]))).render()
    if prim == "reduce_prod" and layout == (True,):
        return prod_kernel(kp, step, tuple(params["axes"]), name)
    if prim == "dot_general" and len(layout) == 2:
        from .render_matmul import render_dot_general
        return render_dot_general(kp, step, name, params, layout)
    raise UnsupportedOperationError(
        f"complex numpy.{prim.removeprefix('reduce_')} (step {n} of {kp.name}) has no CUDA implementation yet "
        f"(the CUDA backend renders complex arithmetic, abs, comparisons and {', '.join(RENDERED)}); run it with "
        "backend='cpu' (jitkernel never round-trips a cuda program through the host)")


def _reduction_shape(kp: KernelProgram, step: LibraryCall, axes: tuple[int, ...]) -> tuple[list[int], list[int], list[int]]:
    """The packed operand's complex shape, its kept and its reduced dimensions (checked
    against the output buffer, which is the kept shape + (2,))."""
    (src,), (dst,) = step.inputs, step.outputs
    shape = list(kp.buffers[src].shape[:-1])
    axes = tuple(a % len(shape) for a in axes) if shape else ()
    kept = [d for d in range(len(shape)) if d not in axes]
    out = tuple(kp.buffers[dst].shape)
    if out != tuple(shape[d] for d in kept) + (2,):
        raise UnsupportedOperationError(
            f"complex reduction {step.name}: output {out} is not the kept shape of {tuple(shape)} over {axes}")
    for n in shape:
        if not isinstance(n, (int, np.integer)):
            raise UnsupportedOperationError("a complex reduction with run-time extents is not supported by the CUDA "
                                            "backend yet")
    return shape, kept, list(axes)


def sum_kernel(kp: KernelProgram, step: LibraryCall, axes: tuple[int, ...]) -> Kernel:
    """The float Kernel of a complex sum: loops over the kept dims, the pair, then the reduced
    dims (reduced last, as fusion's kernels); one sum store per (kept point, part)."""
    shape, kept, red = _reduction_shape(kp, step, axes)
    (src,), (dst,) = step.inputs, step.outputs
    dt = kp.buffers[src].dtype
    domain = tuple(shape[d] for d in kept) + (2,) + tuple(shape[d] for d in red)
    loop_of = {d: i for i, d in enumerate(kept)}
    loop_of.update({d: len(kept) + 1 + i for i, d in enumerate(red)})
    pair = ix.var(len(kept))
    load = Load(src, ix.linearize([ix.var(loop_of[d]) for d in range(len(shape))] + [pair], shape + [2]), dt)
    out = ix.linearize([ix.var(i) for i in range(len(kept))] + [pair], [shape[d] for d in kept] + [2])
    return Kernel(step.name, domain, len(red), [Store(dst, out, load, "sum")], list(step.graph_ops))


def prod_kernel(kp: KernelProgram, step: LibraryCall, axes: tuple[int, ...], name: str) -> tuple[str, list]:
    """A complex product over `axes`: one block per kept point (grid-stride), a tree across the
    block. Launch kind "rows" (any block size that is a multiple of 32)."""
    from .render import Launch
    shape, kept, red = _reduction_shape(kp, step, axes)
    (src,), (dst,) = step.inputs, step.outputs
    dt = kp.buffers[src].dtype
    r = ctype.reg(dt)
    mul = lambda x, y: ops._mul(x, y, dt)  # noqa: E731  products rounded, never contracted
    strides = [int(np.prod(shape[d + 1:], dtype=np.int64)) for d in range(len(shape))]
    n_kept = int(np.prod([shape[d] for d in kept], dtype=np.int64))
    n_red = int(np.prod([shape[d] for d in red], dtype=np.int64))
    one, zero = ctype.literal(1.0, dt), ctype.literal(0.0, dt)

    def offset(flat: str, dims: list[int]) -> str:
        terms, inner = [], 1
        for d in reversed(dims):
            terms.append(f"(({flat} / {inner}LL) % {shape[d]}LL) * {strides[d]}LL")
            inner *= shape[d]
        return " + ".join(terms) or "0LL"

    def times(ar: str, ai: str, br: str, bi: str) -> list[str]:
        return [f"{{ const {r} jk_r = {mul(ar, br)} - {mul(ai, bi)}, jk_i = {mul(ar, bi)} + {mul(ai, br)};",
                f"  {ar} = jk_r; {ai} = jk_i; }}"]

    lines = [f"\n/* {step.name}: complex product over axes {tuple(red)} of {tuple(shape)} */",
             f'extern "C" __global__ void {name}(',
             f"    const {ctype.mem(dt)}* __restrict__ b{src},",
             f"    {ctype.mem(dt)}* __restrict__ b{dst},",
             "    unsigned int* __restrict__ jk_status) {",
             f"  __shared__ {r} jk_sr[32], jk_si[32];",
             "  const unsigned jk_lane = threadIdx.x & 31u, jk_warp = threadIdx.x >> 5;",
             f"  for (long long row = blockIdx.x; row < {n_kept}LL; row += gridDim.x) {{",
             f"    const long long base = {offset('row', kept)};",
             f"    {r} pr = {one}, pi = {zero};",
             f"    for (long long q = threadIdx.x; q < {n_red}LL; q += blockDim.x) {{",
             f"      const long long at = 2LL * (base + {offset('q', red)});",
             f"      const {r} zr = b{src}[at], zi = b{src}[at + 1LL];"]
    lines += ["      " + x for x in times("pr", "pi", "zr", "zi")]
    lines += ["    }",
              "    for (int jk_o = 16; jk_o > 0; jk_o >>= 1) {",
              f"      {r} qr = jk_shfl_down(pr, jk_o), qi = jk_shfl_down(pi, jk_o);"]
    lines += ["      " + x for x in times("pr", "pi", "qr", "qi")]
    lines += ["    }",
              "    if (jk_lane == 0) { jk_sr[jk_warp] = pr; jk_si[jk_warp] = pi; }",
              "    __syncthreads();",
              "    if (jk_warp == 0) {",
              f"      pr = jk_lane < (blockDim.x >> 5) ? jk_sr[jk_lane] : {one};",
              f"      pi = jk_lane < (blockDim.x >> 5) ? jk_si[jk_lane] : {zero};",
              "      for (int jk_o = 16; jk_o > 0; jk_o >>= 1) {",
              f"        {r} qr = jk_shfl_down(pr, jk_o), qi = jk_shfl_down(pi, jk_o);"]
    lines += ["        " + x for x in times("pr", "pi", "qr", "qi")]
    lines += ["      }",
              f"      if (jk_lane == 0) {{ b{dst}[2LL * row] = pr; b{dst}[2LL * row + 1LL] = pi; }}",
              "    }",
              "    __syncthreads();  /* the shared slots are reused by the next row */",
              "  }",
              "}"]
    return "\n".join(lines), [Launch(name, "rows", n_kept, [("buf", src), ("buf", dst), ("status",)])]


# -- the runtime side: complex arguments and results as views of float buffers --------------

def pack_arguments(kp: KernelProgram, arrays: list) -> list:
    """Host complex arguments as the float (..., 2) views the kernels read (no copy when the
    argument is C-contiguous and of the complex dtype the program was traced with)."""
    if not kp.complex_views:
        return arrays
    out = list(arrays)
    for i, bid in enumerate(kp.inputs):
        if bid in kp.complex_views and i < len(out):
            out[i] = as_packed(np.asarray(out[i], dtype=kp.complex_views[bid]))
    return out


def complex_results(kp: KernelProgram, outs: list) -> list:
    """Float (..., 2) result buffers as the complex arrays the caller sees (views)."""
    if not kp.complex_views:
        return outs
    return [as_complex(o) if bid in kp.complex_views else o for bid, o in zip(kp.outputs, outs)]

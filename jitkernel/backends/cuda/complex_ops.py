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
  ir/semantics.py; NaN propagation is IEEE's, as in NumPy's componentwise adds).
- `reduce_prod`: one block per kept point, threads multiply their share, then a tree across
  the block (shuffles and shared slots) with NumPy's reduce formula, products rounded
  (`re = ar*br - ai*bi`, `im = ar*bi + ai*br`, no fma). A tree, not NumPy's sequential order:
  results agree within rounding; where infinities meet zeros the NaN parts can differ.
- `reduce_max`/`reduce_min`, `argmax`/`argmin`: the same block tree over (value, position)
  pairs with NumPy's rule (TreeReduction): the tree picks NumPy's element.
- `dot_general`: the tile kernel of render_matmul.py with (re, im) tiles and accumulators.
- `accumulate` with add (cumsum): the float accumulation of the packed buffer along the same
  axis (accumulate.py), componentwise and in NumPy's order: NumPy's bits.
- `exp`, `log`, `sqrt`: NumPy calls the C library's cexp/clog/csqrt; the kernels follow glibc's
  algorithms branch for branch (C99 Annex G special cases, scaling near overflow/underflow,
  log1p near |z| = 1).
  x*x + y*y - 1 near |z| = 1 is glibc's __x2y2m1 (X2Y2M1_F/_D), shared with catan/catanh.
- `power`, the trigonometric and hyperbolic functions and their inverses, `log10`/`log2`/
  `log1p`/`expm1`/`exp2`, `rint`: complex_functions.py (npy_cpow, glibc's csin/csinh/ccosh/
  ctanh/casinh/cacos/cacosh/catanh/catan, NumPy's nc_* formulas).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import numpy as np

from ...errors import UnsupportedOperationError
from ...fusion import index as ix
from ...fusion.kernel_ir import Kernel, KernelProgram, LibraryCall, Load, Store
from ...ir.complex_prims import as_complex, as_packed
from . import ctype, ops
from .accumulate import render_accumulate
from .complex_functions import FUNCTIONS, render_function
from .complex_glibc import CEXP, CLOG, CSQRT, glibc_constants
from .kernel_writer import KernelWriter
from .launch import Launch
from .library_rules import library_rule
from .names import kernel_name
from .render_matmul import render_dot_general

RENDERED = ("exp", "log", "sqrt", "power", "sin", "cos", "tan", "sinh", "cosh", "tanh", "arcsin", "arccos", "arctan",
            "arcsinh", "arccosh", "arctanh", "log10", "log2", "log1p", "expm1", "exp2", "rint", "reduce_sum",
            "reduce_prod", "reduce_max", "reduce_min", "argmax", "argmin", "dot_general", "cumsum")


@library_rule("complex_library")
def render_complex_library(kp: KernelProgram, step: LibraryCall, n: int, placeholder: str) -> tuple[str, Any]:
    """A `complex_library` step, its kernels named after the step."""
    return render_complex_step(kp, step, n, kernel_name(placeholder, step.name))


def render_complex_step(kp: KernelProgram, step: LibraryCall, n: int, name: str) -> tuple[str, Any]:
    """The C text and the module step (a list of Launch, or a TileStep) of one
    `complex_library` step: the rule of its function (COMPLEX_RULES); UnsupportedOperationError
    naming the function when it has no GPU form yet."""
    return COMPLEX_RULES.get(step.params["prim"], _no_gpu_form)(kp, step, n, name)


def _no_gpu_form(kp: KernelProgram, step: LibraryCall, n: int, name: str) -> tuple[str, Any]:
    raise UnsupportedOperationError(
        f"complex numpy.{step.params['prim'].removeprefix('reduce_')} (step {n} of {kp.name}) has no CUDA "
        f"implementation yet (the CUDA backend renders complex arithmetic, abs, comparisons and {', '.join(RENDERED)}); "
        "run it with backend='cpu' (jitkernel never round-trips a cuda program through the host)")


def _one_packed_operand(step: LibraryCall) -> bool:
    return tuple(step.params["in_layout"]) == (True,)


def _render_sum(kp: KernelProgram, step: LibraryCall, n: int, name: str) -> tuple[str, Any]:
    if not _one_packed_operand(step):
        return _no_gpu_form(kp, step, n, name)
    axes = tuple(dict(step.params["prim_params"])["axes"])
    return KernelWriter(kp, sum_kernel(kp, step, axes)).render()


def _render_tree_reduction(kp: KernelProgram, step: LibraryCall, n: int, name: str) -> tuple[str, Any]:
    if not _one_packed_operand(step):
        return _no_gpu_form(kp, step, n, name)
    params = dict(step.params["prim_params"])
    axes = (params["axis"],) if "axis" in params else tuple(params["axes"])
    return TreeReduction(kp, step, step.params["prim"], axes, name).render()


def _render_elementwise(kp: KernelProgram, step: LibraryCall, n: int, name: str) -> tuple[str, Any]:
    same_shape = tuple(kp.buffers[step.inputs[0]].shape) == tuple(kp.buffers[step.outputs[0]].shape)
    if not (_one_packed_operand(step) and same_shape):
        return _no_gpu_form(kp, step, n, name)
    return elementwise_kernel(kp, step, step.params["prim"], name)


def _render_function(kp: KernelProgram, step: LibraryCall, n: int, name: str) -> tuple[str, Any]:
    return render_function(kp, step, step.params["prim"], n, name)


def _render_cumsum(kp: KernelProgram, step: LibraryCall, n: int, name: str) -> tuple[str, Any]:
    """Componentwise: the complex cumsum is the float cumsum of the packed buffer along the same
    axis (the pair axis rides along as the innermost of the lines), NumPy's bits."""
    params = dict(step.params["prim_params"])
    if not (params["ufunc"] == "add" and _one_packed_operand(step)):
        return _no_gpu_form(kp, step, n, name)
    real = np.dtype(params["dtype"]).type(0).real.dtype
    float_step = replace(step, prim="accumulate", params={"ufunc": "add", "axis": params["axis"], "dtype": real})
    return render_accumulate(kp, float_step, n, base=name)


def _render_dot_general(kp: KernelProgram, step: LibraryCall, n: int, name: str) -> tuple[str, Any]:
    layout = tuple(step.params["in_layout"])
    if len(layout) != 2:
        return _no_gpu_form(kp, step, n, name)
    return render_dot_general(kp, step, name, dict(step.params["prim_params"]), layout)


def _reduction_shape(kp: KernelProgram, step: LibraryCall, axes: tuple[int, ...],
                     arg: bool = False) -> tuple[list[int], list[int], list[int]]:
    """The packed operand's complex shape, its kept and its reduced dimensions (checked
    against the output buffer: the kept shape + (2,), or the kept shape for argmax/argmin)."""
    (src,), (dst,) = step.inputs, step.outputs
    shape = list(kp.buffers[src].shape[:-1])
    for n in shape:
        if not isinstance(n, (int, np.integer)):
            raise UnsupportedOperationError("a complex reduction with run-time extents is not supported by the CUDA "
                                            "backend yet")
    axes = tuple(a % len(shape) for a in axes) if shape else ()
    kept = [d for d in range(len(shape)) if d not in axes]
    out = tuple(kp.buffers[dst].shape)
    if out != tuple(shape[d] for d in kept) + (() if arg else (2,)):
        raise UnsupportedOperationError(
            f"complex reduction {step.name}: output {out} is not the kept shape of {tuple(shape)} over {axes}")
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


TREE_REDUCTIONS = ("reduce_prod", "reduce_max", "reduce_min", "argmax", "argmin")
_EMPTY = "9223372036854775807LL"  # the position of "no value yet": loses every comparison


class TreeReduction:
    """A complex reduction over `axes` as one block per kept point (grid-stride): threads
    combine their share in order, then a tree across the block (shuffles, one shared slot
    per warp). Launch kind "rows" (any block size that is a multiple of 32).

    prod: NumPy's reduce formula, products rounded (never contracted). max/min, argmax/argmin:
    (value, position) pairs; NumPy's rule (loops.c.src CGE/CLE, argfunc.c): the first element
    with a NaN part wins, else the lexicographically largest (smallest), the first of equals.
    The rule is associative with the position, so the tree gives NumPy's sequential answer."""

    def __init__(self, kp: KernelProgram, step: LibraryCall, prim: str, axes: tuple[int, ...], name: str) -> None:
        self.kp, self.step, self.prim, self.name = kp, step, prim, name
        self.arg = prim in ("argmax", "argmin")
        self.shape, self.kept, self.red = _reduction_shape(kp, step, axes, self.arg)
        self.dt = kp.buffers[step.inputs[0]].dtype
        self.r = ctype.reg(self.dt)
        self.strides = [int(np.prod(self.shape[d + 1:], dtype=np.int64)) for d in range(len(self.shape))]

    def offset(self, flat: str, dims: list[int]) -> str:
        terms, inner = [], 1
        for d in reversed(dims):
            terms.append(f"(({flat} / {inner}LL) % {self.shape[d]}LL) * {self.strides[d]}LL")
            inner *= self.shape[d]
        return " + ".join(terms) or "0LL"

    def identity(self) -> tuple[str, str]:
        if self.prim == "reduce_prod":
            return ctype.literal(1.0, self.dt), ctype.literal(0.0, self.dt)
        return ctype.literal(0.0, self.dt), ctype.literal(0.0, self.dt)

    def combine(self, ar: str, ai: str, ap: str, br: str, bi: str, bp: str) -> list[str]:
        """(ar, ai[, ap]) becomes its combination with (br, bi[, bp])."""
        if self.prim == "reduce_prod":
            mul = lambda x, y: ops._mul(x, y, self.dt)  # noqa: E731
            return [f"{{ const {self.r} jk_r = {mul(ar, br)} - {mul(ai, bi)}, jk_i = {mul(ar, bi)} + {mul(ai, br)};",
                    f"  {ar} = jk_r; {ai} = jk_i; }}"]
        cmp = ">" if self.prim in ("reduce_max", "argmax") else "<"
        b_nan, a_nan = f"(isnan({br}) || isnan({bi}))", f"(isnan({ar}) || isnan({ai}))"
        wins = f"({br} {cmp} {ar} || ({br} == {ar} && {bi} {cmp} {ai}))"
        ties = f"({br} == {ar} && {bi} == {ai} && {bp} < {ap})"
        better = (f"{bp} != {_EMPTY} && ({ap} == {_EMPTY} || ({b_nan} ? (!{a_nan} || {bp} < {ap}) : "
                  f"(!{a_nan} && ({wins} || {ties}))))")
        return [f"if ({better}) {{ {ar} = {br}; {ai} = {bi}; {ap} = {bp}; }}"]

    def render(self) -> tuple[str, list]:
        (src,), (dst,) = self.step.inputs, self.step.outputs
        r, name = self.r, self.name
        n_kept = int(np.prod([self.shape[d] for d in self.kept], dtype=np.int64))
        n_red = int(np.prod([self.shape[d] for d in self.red], dtype=np.int64))
        if n_red == 0 and self.prim != "reduce_prod":
            raise UnsupportedOperationError(f"complex numpy.{self.prim} of an empty array (NumPy raises ValueError)")
        pos = self.prim != "reduce_prod"
        one_r, one_i = self.identity()
        no_pos = _EMPTY if pos else "0LL"
        out_mem = ctype.mem(self.kp.buffers[dst].dtype)
        lines = [f"\n/* {self.step.name}: complex {self.prim} over axes {tuple(self.red)} of {tuple(self.shape)} */",
                 f'extern "C" __global__ void {name}(',
                 f"    const {ctype.mem(self.dt)}* __restrict__ b{src},",
                 f"    {out_mem}* __restrict__ b{dst},",
                 "    unsigned int* __restrict__ jk_status) {",
                 f"  __shared__ {r} jk_sr[32], jk_si[32];",
                 "  __shared__ long long jk_sp[32];",
                 "  const unsigned jk_lane = threadIdx.x & 31u, jk_warp = threadIdx.x >> 5;",
                 f"  for (long long row = blockIdx.x; row < {n_kept}LL; row += gridDim.x) {{",
                 f"    const long long base = {self.offset('row', self.kept)};",
                 f"    {r} pr = {one_r}, pi = {one_i};",
                 f"    long long pp = {no_pos};",
                 f"    for (long long q = threadIdx.x; q < {n_red}LL; q += blockDim.x) {{",
                 f"      const long long at = 2LL * (base + {self.offset('q', self.red)});",
                 f"      const {r} zr = b{src}[at], zi = b{src}[at + 1LL];",
                 "      const long long zp = q;"]
        lines += ["      " + x for x in self.combine("pr", "pi", "pp", "zr", "zi", "zp")]
        lines += ["    }",
                  "    for (int jk_o = 16; jk_o > 0; jk_o >>= 1) {",
                  f"      const {r} qr = jk_shfl_down(pr, jk_o), qi = jk_shfl_down(pi, jk_o);",
                  "      const long long qp = jk_shfl_down(pp, jk_o);"]
        lines += ["      " + x for x in self.combine("pr", "pi", "pp", "qr", "qi", "qp")]
        lines += ["    }",
                  "    if (jk_lane == 0) { jk_sr[jk_warp] = pr; jk_si[jk_warp] = pi; jk_sp[jk_warp] = pp; }",
                  "    __syncthreads();",
                  "    if (jk_warp == 0) {",
                  "      const bool jk_has = jk_lane < (blockDim.x >> 5);",
                  f"      pr = jk_has ? jk_sr[jk_lane] : {one_r};",
                  f"      pi = jk_has ? jk_si[jk_lane] : {one_i};",
                  f"      pp = jk_has ? jk_sp[jk_lane] : {no_pos};",
                  "      for (int jk_o = 16; jk_o > 0; jk_o >>= 1) {",
                  f"        const {r} qr = jk_shfl_down(pr, jk_o), qi = jk_shfl_down(pi, jk_o);",
                  "        const long long qp = jk_shfl_down(pp, jk_o);"]
        lines += ["        " + x for x in self.combine("pr", "pi", "pp", "qr", "qi", "qp")]
        store = f"b{dst}[row] = ({out_mem})pp;" if self.arg else f"b{dst}[2LL * row] = pr; b{dst}[2LL * row + 1LL] = pi;"
        lines += ["      }",
                  f"      if (jk_lane == 0) {{ {store} }}",
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


ELEMENTWISE = {"exp": CEXP, "sqrt": CSQRT, "log": CLOG}


def elementwise_kernel(kp: KernelProgram, step: LibraryCall, prim: str, name: str) -> tuple[str, list]:
    """A complex function applied to every element of a packed buffer: a grid-stride loop."""
    (src,), (dst,) = step.inputs, step.outputs
    dt = kp.buffers[src].dtype
    n = int(np.prod(kp.buffers[src].shape[:-1], dtype=np.int64))
    body = ELEMENTWISE[prim]
    for key, value in glibc_constants(dt).items():
        body = body.replace("{" + key + "}", value)
    r = ctype.reg(dt)
    lines = [f"\n/* {step.name}: complex numpy.{prim} (glibc's algorithm, C99 Annex G special cases) */",
             f'extern "C" __global__ void {name}(',
             f"    const {ctype.mem(dt)}* __restrict__ b{src},",
             f"    {ctype.mem(dt)}* __restrict__ b{dst},",
             "    unsigned int* __restrict__ jk_status) {",
             f"  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < {n}LL;",
             "       t += (long long)blockDim.x * gridDim.x) {",
             f"    const {r} x = b{src}[2LL * t], y = b{src}[2LL * t + 1LL];",
             f"    {r} re, im;"]
    lines += ["    " + x for x in body.strip().splitlines()]
    lines += [f"    b{dst}[2LL * t] = re; b{dst}[2LL * t + 1LL] = im;", "  }", "}"]
    return "\n".join(lines), [Launch(name, "elementwise", n, [("buf", src), ("buf", dst), ("status",)])]


# The rule of each complex function a `complex_library` step runs (step.params["prim"]).
ComplexRule = Callable[[KernelProgram, LibraryCall, int, str], tuple[str, Any]]
COMPLEX_RULES: dict[str, ComplexRule] = {
    "reduce_sum": _render_sum,
    **dict.fromkeys(TREE_REDUCTIONS, _render_tree_reduction),
    **dict.fromkeys(ELEMENTWISE, _render_elementwise),
    **dict.fromkeys(FUNCTIONS, _render_function),
    "accumulate": _render_cumsum,
    "dot_general": _render_dot_general,
}

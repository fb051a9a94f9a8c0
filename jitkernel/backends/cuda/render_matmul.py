"""`dot_general` as a generated tiled matmul kernel (docs/gpu.md, "Matmul on the GPU").

The CPU runs a `dot_general` LibraryCall through NumPy's matmul; on the GPU it is one kernel of
the program's translation unit. Its operands are the step's C-contiguous buffers as they are:
the dimension numbers are canonicalised to batch x M x K times batch x K x N in the index
arithmetic (each group of dimensions flattened by its own strides), so transposed operands
cost no host or device transpose. The result is the buffer of shape batch + lhs free + rhs
free (C order), i.e. batch x M x N.

The kernel: one block of `threads` threads computes a BM x BN tile of one batch's output
(grid-stride over batch x tiles, so any grid size is correct); per step of BK along K, the
block stages a BM x BK tile of the lhs and a BK x BN tile of the rhs in shared memory (zero
outside the matrix, so edges need no special case in the inner loop), then every thread
accumulates its TM x TN outputs in registers (register blocking: rows ty + i * BM/TM, columns
tx + j * BN/TN, so a warp reads consecutive shared words and writes consecutive outputs).
No atomics: each output is written by one thread, with one accumulation order, so the same
input gives the same bits on every run.

Accumulators, as NumPy's matmul: float32/float64 in their own type (fused multiply-adds, as
BLAS does), float16 in float32 rounded once at the end (NumPy's loop rounds after every step:
results agree within float16 rounding), integers in their own width with wrap-around (computed
in the unsigned type), bool as `any(a & b)`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import UnsupportedOperationError
from ...fusion.kernel_ir import KernelProgram, LibraryCall
from . import ctype
from .launch import Launch
from .library_rules import library_rule
from .matmul_step import TileStep
from .names import kernel_name


@dataclass(frozen=True)
class Tile:
    """A tile shape: BM x BN outputs per block, BK along K per shared-memory stage, TM x TN
    outputs per thread; (BM/TM) * (BN/TN) threads."""

    bm: int
    bn: int
    bk: int
    tm: int
    tn: int

    @property
    def threads(self) -> int:
        return (self.bm // self.tm) * (self.bn // self.tn)


# 128 x 128 tiles for large float32 products (8 x 8 outputs per thread: the arithmetic
# intensity a GPU needs); 64 x 64 otherwise (float64, or a small M or N that a 128 tile wastes).
LARGE = Tile(128, 128, 8, 8, 8)
SMALL = Tile(64, 64, 16, 4, 4)


def choose_tile(dt: np.dtype, m: int, n: int) -> Tile:
    if dt == np.float32 and m >= 512 and n >= 512:
        return LARGE
    return SMALL


@dataclass
class DotShape:
    """The canonical form of one dot_general: the sizes of batch, M, N, K, and per operand and
    group (batch, free, contracting) the (size, stride) pairs that flatten the group's index."""

    batch: int
    m: int
    n: int
    k: int
    lhs: dict[str, list[tuple[int, int]]]
    rhs: dict[str, list[tuple[int, int]]]


def _strides(shape: tuple[int, ...]) -> list[int]:
    out, s = [], 1
    for n in reversed(shape):
        out.append(s)
        s *= n
    return out[::-1]


def _group(shape: tuple[int, ...], dims: list[int]) -> list[tuple[int, int]]:
    """(size, stride) per dimension of `dims` (flattened in this order), size-1 dimensions
    dropped, neighbours that are one contiguous run merged (fewer divisions in the kernel)."""
    strides = _strides(shape)
    pairs = [(shape[d], strides[d]) for d in dims if shape[d] != 1]
    merged: list[tuple[int, int]] = []
    for size, stride in pairs:
        if merged and merged[-1][1] == stride * size:
            merged[-1] = (merged[-1][0] * size, stride)
        else:
            merged.append((size, stride))
    return merged


def canonical(lshape: tuple[int, ...], rshape: tuple[int, ...], params: dict) -> DotShape:
    """batch x M x K times batch x K x N from the dimension numbers (as dot_general_numpy)."""
    (lc, rc), (lb, rb) = params["contracting"], params["batch"]
    lfree = [d for d in range(len(lshape)) if d not in lc and d not in lb]
    rfree = [d for d in range(len(rshape)) if d not in rc and d not in rb]
    size = lambda shape, dims: int(np.prod([shape[d] for d in dims], dtype=np.int64))  # noqa: E731
    return DotShape(size(lshape, lb), size(lshape, lfree), size(rshape, rfree), size(lshape, lc),
                    {"b": _group(lshape, list(lb)), "f": _group(lshape, lfree), "c": _group(lshape, list(lc))},
                    {"b": _group(rshape, list(rb)), "f": _group(rshape, rfree), "c": _group(rshape, list(rc))})


def offset_expr(var: str, group: list[tuple[int, int]]) -> str:
    """The element offset of flat index `var` over a flattened group of dimensions."""
    if not group:
        return "0LL"
    terms, inner = [], 1
    for size, stride in reversed(group):
        e = var if inner == 1 else f"({var} / {inner}LL)"
        if inner * size != int(np.prod([s for s, _ in group], dtype=np.int64)):
            e = f"({e} % {size}LL)"
        terms.append(e if stride == 1 else f"{e} * {stride}LL")
        inner *= size
    return " + ".join(reversed(terms))


def unit_stride(group: list[tuple[int, int]]) -> bool:
    """Whether consecutive flat indices of the group are consecutive elements."""
    return len(group) == 1 and group[0][1] == 1


class Arith:
    """The C types and expressions of one dtype's products: the staging (shared) type, the
    accumulator and its update, and the store back to memory."""

    def __init__(self, dt: np.dtype) -> None:
        ctype.check_dtype(dt)
        self.dt = dt
        if dt.kind == "f":
            self.acc = "double" if dt.itemsize == 8 else "float"
            self.zero = "0.0" if dt.itemsize == 8 else "0.0f"
        elif dt.kind == "b":
            self.acc, self.zero = "unsigned int", "0u"
        else:
            # C's signed overflow is undefined and narrow types promote: wrap in unsigned.
            self.acc = ctype.wide_unsigned(dt)
            self.zero = "0ULL" if dt.itemsize == 8 else "0u"

    def load(self, e: str) -> str:
        if ctype.is_half(self.dt):
            return f"jk_h2f({e})"
        if self.dt.kind == "b":
            return f"(unsigned int)({e} != 0)"
        return f"({self.acc})({e})"

    def update(self, acc: str, a: str, b: str) -> str:
        if self.dt.kind == "f":
            return f"{acc} = {'fma' if self.dt.itemsize == 8 else 'fmaf'}({a}, {b}, {acc});"
        if self.dt.kind == "b":
            return f"{acc} |= {a} & {b};"
        return f"{acc} += {a} * {b};"

    def store(self, acc: str) -> str:
        if ctype.is_half(self.dt):
            return f"jk_f2h({acc})"
        if self.dt.kind == "b":
            return f"(unsigned char)({acc} != 0u)"
        return f"({ctype.mem(self.dt)})({acc})"


def check_step(kp: KernelProgram, step: LibraryCall) -> None:
    dt = kp.buffers[step.outputs[0]].dtype
    if dt.kind not in "biuf":
        raise UnsupportedOperationError(f"dot_general on {dt} is not supported by the CUDA backend yet")
    for bid in step.inputs + step.outputs:
        if not all(isinstance(n, (int, np.integer)) for n in kp.buffers[bid].shape):
            raise UnsupportedOperationError(
                "a dot_general with run-time extents is not supported by the CUDA backend yet")


@library_rule("dot_general")
def render_dot_general_step(kp: KernelProgram, step: LibraryCall, n: int, placeholder: str) -> tuple[str, TileStep]:
    """A real `dot_general` step: its tile kernel, named after the step."""
    return render_dot_general(kp, step, kernel_name(placeholder, step.name))


def render_dot_general(kp: KernelProgram, step: LibraryCall, name: str, params: dict | None = None,
                       packed: tuple[bool, bool] = (False, False)) -> tuple[str, TileStep]:
    """The C text of the tile kernel of `step` and its step of the module: a `TileStep`
    (matmul_step.py, the executor's "tiles" kind) holding one Launch of kind "tiles" (one block
    per output tile, grid-stride) with the kernel's fixed block size.

    A complex product (a `complex_library` step, complex_ops.py) passes the dot_general's
    `params` and which operands are packed complex buffers (float (..., 2)); its result is
    packed too. Complex products accumulate (re, im) pairs with fused multiply-adds (BLAS's
    cgemm/zgemm, which NumPy calls, does too: results agree within rounding)."""
    check_step(kp, step)
    lb, rb = step.inputs
    (ob,) = step.outputs
    dt = kp.buffers[ob].dtype
    cplx = any(packed)
    lshape, rshape = (tuple(kp.buffers[b].shape[:-1] if p else kp.buffers[b].shape) for b, p in zip((lb, rb), packed))
    s = canonical(lshape, rshape, step.params if params is None else params)
    t = SMALL if cplx else choose_tile(dt, s.m, s.n)
    tiles_m, tiles_n = -(-s.m // t.bm), -(-s.n // t.bn)
    n_tiles = s.batch * tiles_m * tiles_n
    ar = Arith(dt)
    mem = ctype.mem(dt)
    text = "\n".join(_kernel_lines(name, step, s, t, ar, mem, lb, rb, ob, tiles_m, tiles_n, n_tiles,
                                   packed if cplx else None, params or step.params))
    launch_params = [("buf", b) for b in dict.fromkeys((lb, rb, ob))] + [("status",)]
    return text, TileStep(Launch(name, "tiles", n_tiles, launch_params, block_size=t.threads))


def _kernel_lines(name: str, step: LibraryCall, s: DotShape, t: Tile, ar: Arith, mem: str, lb: int, rb: int,
                  ob: int, tiles_m: int, tiles_n: int, n_tiles: int, packed: tuple[bool, bool] | None,
                  params: dict) -> list[str]:
    """The kernel; `packed` (complex products): which operands are (re, im) pairs in memory."""
    cols = t.bn // t.tn  # threads along N
    rows = t.bm // t.tm
    (lc, rc), (lbat, rbat) = params["contracting"], params["batch"]
    graph = "; ".join(step.graph_ops)
    L, R = s.lhs, s.rhs
    parts = ["_re", "_im"] if packed else [""]
    lines = [
        f"\n/* {step.name}: {'complex ' if packed else ''}dot_general (contracting {tuple(lc)} x {tuple(rc)}, "
        f"batch {tuple(lbat)} x {tuple(rbat)}) as batch {s.batch} x M {s.m} x N {s.n} x K {s.k};",
        f"   {t.bm}x{t.bn} tiles, {t.bk} along K per stage, {t.tm}x{t.tn} outputs per thread, {t.threads} threads"
        + (f"\n   {graph}" if graph else "") + " */",
        f'extern "C" __global__ void {name}(',
        *[f"    const {mem}* __restrict__ b{b}," for b in dict.fromkeys((lb, rb))],  # x @ x: one argument
        f"    {mem}* __restrict__ b{ob},",
        "    unsigned int* __restrict__ jk_status) {",
        f"  /* launched with blockDim.x == {t.threads} (Launch.block_size) */",
    ]
    for p in parts:
        lines += [f"  __shared__ {ar.acc} jk_ta{p}[{t.bk}][{t.bm + 1}];  /* lhs tile, [k][m] (+1: no bank conflicts) */",
                  f"  __shared__ {ar.acc} jk_tb{p}[{t.bk}][{t.bn + 1}];  /* rhs tile, [k][n] */"]
    lines += [
        f"  const long long M = {s.m}LL, N = {s.n}LL, K = {s.k}LL;",
        f"  const int tx = (int)threadIdx.x % {cols}, ty = (int)threadIdx.x / {cols};",
        f"  for (long long tile = blockIdx.x; tile < {n_tiles}LL; tile += gridDim.x) {{",
        f"    const long long bt = tile / {tiles_m * tiles_n}LL;",
        f"    const long long m0 = (tile / {tiles_n}LL % {tiles_m}LL) * {t.bm}LL, n0 = (tile % {tiles_n}LL) * {t.bn}LL;",
        f"    const long long lbase = {offset_expr('bt', L['b'])}, rbase = {offset_expr('bt', R['b'])};",
    ]
    for p in parts:
        lines += [f"    {ar.acc} acc{p}[{t.tm}][{t.tn}];",
                  f"    for (int i = 0; i < {t.tm}; ++i) for (int j = 0; j < {t.tn}; ++j) acc{p}[i][j] = {ar.zero};"]
    lines.append(f"    for (long long k0 = 0; k0 < K; k0 += {t.bk}LL) {{")
    # Stage the tiles; the fastest-moving thread index follows the operand's unit stride, so
    # neighbouring threads read neighbouring elements (coalesced).
    lines += _stage("jk_ta", f"b{lb}", "lbase", L["f"], L["c"], "M", "m0", t.bm, t.bk, t.threads, ar,
                    k_fast=unit_stride(L["c"]), packed=None if packed is None else packed[0])
    lines += _stage("jk_tb", f"b{rb}", "rbase", R["f"], R["c"], "N", "n0", t.bn, t.bk, t.threads, ar,
                    k_fast=unit_stride(R["c"]) and not unit_stride(R["f"]), packed=None if packed is None else packed[1])
    lines += ["      __syncthreads();  /* both tiles staged */",
              f"      for (int kk = 0; kk < {t.bk}; ++kk) {{"]
    for p in parts:
        lines += [f"        {ar.acc} a{p}[{t.tm}], b{p}[{t.tn}];",
                  f"        for (int i = 0; i < {t.tm}; ++i) a{p}[i] = jk_ta{p}[kk][ty + i * {rows}];",
                  f"        for (int j = 0; j < {t.tn}; ++j) b{p}[j] = jk_tb{p}[kk][tx + j * {cols}];"]
    loop = f"        for (int i = 0; i < {t.tm}; ++i) for (int j = 0; j < {t.tn}; ++j) "
    if packed:
        f = "fma" if ar.acc == "double" else "fmaf"
        lines.append(loop + "{")
        lines += [f"          acc_re[i][j] = {f}(a_re[i], b_re[j], acc_re[i][j]);",
                  f"          acc_re[i][j] = {f}(-a_im[i], b_im[j], acc_re[i][j]);",
                  f"          acc_im[i][j] = {f}(a_re[i], b_im[j], acc_im[i][j]);",
                  f"          acc_im[i][j] = {f}(a_im[i], b_re[j], acc_im[i][j]);",
                  "        }"]
    else:
        lines.append(loop + ar.update("acc[i][j]", "a[i]", "b[j]"))
    lines += [
        "      }",
        "      __syncthreads();  /* the tiles are overwritten by the next stage */",
        "    }",
        f"    for (int i = 0; i < {t.tm}; ++i) {{",
        f"      const long long m = m0 + ty + i * {rows};",
        "      if (m >= M) continue;",
        f"      for (int j = 0; j < {t.tn}; ++j) {{",
        f"        const long long n = n0 + tx + j * {cols};",
    ]
    if packed:
        lines += ["        if (n < N) {",
                  f"          b{ob}[2LL * ((bt * M + m) * N + n)] = acc_re[i][j];",
                  f"          b{ob}[2LL * ((bt * M + m) * N + n) + 1LL] = acc_im[i][j];",
                  "        }"]
    else:
        lines.append(f"        if (n < N) b{ob}[(bt * M + m) * N + n] = {ar.store('acc[i][j]')};")
    lines += ["      }", "    }", "  }", "}"]
    return lines


def _stage(tile: str, buf: str, base: str, free: list, contract: list, extent: str, origin: str, bf: int, bk: int,
           threads: int, ar: Arith, k_fast: bool, packed: bool | None = None) -> list[str]:
    """Copy a bf x bk block (free index from `origin`, k from k0) into tile[k][f], zero outside
    the operand. `packed` (a complex product): True for a (re, im) operand, False for a real one
    (imaginary part 0); None for a real product."""
    if k_fast:
        split = f"const int kk = e % {bk}, ff = e / {bk};"
    else:
        split = f"const int ff = e % {bf}, kk = e / {bf};"
    index = f"{base} + {offset_expr('f', free)} + {offset_expr('k', contract)}"
    head = [f"      for (int e = threadIdx.x; e < {bf * bk}; e += {threads}) {{",
            f"        {split}",
            f"        const long long f = {origin} + ff, k = k0 + kk;",
            f"        const bool inside = f < {extent} && k < K;"]
    if packed is None:
        body = [f"        {tile}[kk][ff] = inside ? {ar.load(f'{buf}[{index}]')} : {ar.zero};"]
    elif packed:
        body = [f"        const long long at = inside ? 2LL * ({index}) : 0LL;",
                f"        {tile}_re[kk][ff] = inside ? {buf}[at] : {ar.zero};",
                f"        {tile}_im[kk][ff] = inside ? {buf}[at + 1LL] : {ar.zero};"]
    else:
        body = [f"        {tile}_re[kk][ff] = inside ? {buf}[{index}] : {ar.zero};",
                f"        {tile}_im[kk][ff] = {ar.zero};"]
    return head + body + ["      }"]

"""`accumulate` library steps on the GPU: cumsum, cumprod, `ufunc.accumulate` (docs/gpu.md,
"Accumulations on the GPU").

NumPy accumulates sequentially along the axis: out[0] = x[0], out[k] = op(out[k - 1], x[k]), each
element first cast to the result dtype, float16 rounded after every step. The kernels keep that
rule; the axis is split into *lines* (every point of the other axes), and there are two forms:

- **lines**: one thread per line, walking it in NumPy's order. The same bits as NumPy for every
  ufunc and dtype. Neighbouring threads take neighbouring lines, so for an axis other than the
  last their loads and stores are coalesced. Used when there are enough lines to fill the GPU
  (LINES_MIN), for run-time extents (a shape-generic program keeps one source) and for the
  ufuncs that cannot be regrouped.
- **chunks** (few, long lines: `np.cumsum` of a 1-D array): every line is cut into chunks of
  consecutive elements; kernel 1 reduces each chunk in order (one thread per chunk), kernel 2
  turns each line's chunk totals into running prefixes in order (one thread per line), kernel 3
  walks each chunk again from its prefix, writing the outputs. Three launches, no atomics, no
  inter-block communication inside a kernel: the same input gives the same bits on every run and
  for any grid. Only where the regrouping is exact: integers (wrap-around), bool, max/min
  (NaN propagates whichever way it is grouped) and the bitwise and logical ufuncs, so the
  result is NumPy's bit for bit. Float add and multiply are not regrouped: a regrouped float
  sum rounds differently from NumPy's sequential one, and the difference grows with the line
  (a float16 cumsum of 2,000 normal values regrouped was off by more than 1e-3 relative), so they
  keep the lines form and NumPy's bits, at the cost of one thread per line: a 1-D float cumsum
  runs on one GPU thread (CuPy and JAX use parallel scans with other rounding). Subtract,
  divide, power and the like are not associative and keep the lines form too.

A complex cumsum arrives as the float accumulation of its packed (..., 2) buffer (complex_ops.py).
A (ufunc, dtype) pair whose NumPy loop does not return the accumulation dtype itself, and other
complex accumulations (cumprod), raise UnsupportedOperationError naming the step.
"""
from __future__ import annotations

import numpy as np

from ...fusion.kernel_ir import KernelProgram, LibraryCall
from ...ir.primitives import PRIMITIVES
from . import ctype, ops
from .dynamic_params import Ext, extent, extent_product, _ll
from .library_kernels import grid_stride, kernel_signature
from .launch import Launch
from .library_rules import library_rule, unsupported_step
from .names import kernel_name
from .work_step import WorkStep

# Enough lines to keep the GPU busy with one thread each (an H200 holds ~270k resident threads;
# a few thousand lines of any length already fill it with the lines form's simple loop).
LINES_MIN = 4096
# In the chunks form: about this many threads in all, no chunk shorter than CHUNK_MIN elements.
CHUNK_THREADS = 1 << 16
CHUNK_MIN = 32
# Ufuncs whose regrouping is exact on these kinds of dtype (integers wrap around).
EXACT_REGROUPING = {"add": "biu", "multiply": "biu", "maximum": "biuf", "minimum": "biuf", "fmax": "biuf",
                    "fmin": "biuf", "logical_and": "biuf", "logical_or": "biuf", "logical_xor": "biuf",
                    "bitwise_and": "biu", "bitwise_or": "biu", "bitwise_xor": "biu"}


def _check(kp: KernelProgram, step: LibraryCall, n: int, xd: np.dtype, dt: np.dtype) -> None:
    ufunc = step.params["ufunc"]
    if ufunc not in PRIMITIVES:
        # A ufunc composed of other primitives (logaddexp, gcd, ...) has no scalar C expression.
        raise unsupported_step(kp, step, n, f" for numpy.{ufunc}, which jitkernel composes of other operations")
    if xd.kind == "c" or dt.kind == "c":
        raise unsupported_step(kp, step, n, " for complex numbers")
    for d in (xd, dt):
        ctype.check_dtype(d)
    try:
        loop = getattr(np, ufunc)(np.ones(1, dt), np.ones(1, dt)).dtype
    except TypeError as e:
        raise unsupported_step(kp, step, n, f" for numpy.{ufunc} on {dt} ({e})") from None
    if loop != dt:
        raise unsupported_step(kp, step, n, f" for numpy.{ufunc} on {dt}: its loop returns {loop}")


@library_rule("accumulate")
def render_accumulate(kp: KernelProgram, step: LibraryCall, n: int, placeholder: str = "",
                      base: str = "") -> tuple[str, WorkStep]:
    """The kernels of one accumulate step (module docstring), named `base` or after the step."""
    (x,), (out,) = step.inputs, step.outputs
    xd, dt = kp.buffers[x].dtype, kp.buffers[out].dtype
    _check(kp, step, n, xd, dt)
    ufunc, axis = step.params["ufunc"], step.params["axis"]
    shape = [extent(d) for d in kp.buffers[x].shape]
    length, inner = shape[axis], extent_product(shape[axis + 1:])
    lines_n = extent_product(shape[:axis] + shape[axis + 1:])
    base = base or kernel_name(placeholder, step.name)
    reg = ctype.reg(dt)

    def load(index: str) -> str:
        return ctype.load(f"b{x}[{index}]", xd)

    def at(line: str, k: str) -> str:
        return f"(({line}) / {_ll(inner)} * {_ll(length)} + ({k})) * {_ll(inner)} + ({line}) % {_ll(inner)}"

    def op(a: str, b: str) -> str:
        return ops.lower(ufunc, [a, b], [dt, dt], dt, [None, None])

    def cast(e: str) -> str:
        return ops.convert(e, xd, dt)

    def store(index: str, value: str) -> str:
        return ctype.store(f"b{out}[{index}]", value, dt)

    head = (f"\n/* {step.name}: numpy.{ufunc}.accumulate along axis {axis} of [{', '.join(f'{d}' for d in shape)}] "
            f"({xd} -> {dt}):")
    static = not any(isinstance(d, Ext) for d in shape)
    if int(extent_product(shape)) == 0:
        return head + " empty */", WorkStep([])
    if not static or int(lines_n) >= LINES_MIN or not _regroupable(ufunc, dt):
        sig, params = kernel_signature(kp, base, [x, out], {out})
        lines = [head + " one thread per line, in NumPy's order */", sig + " {",
                 *grid_stride(_ll(lines_n), "l"),
                 f"    {reg} acc = {cast(load(at('l', '0')))};",
                 f"    {store(at('l', '0'), 'acc')}",
                 f"    for (long long k = 1; k < {_ll(length)}; ++k) {{",
                 f"      acc = {op('acc', cast(load(at('l', 'k'))))};",
                 f"      {store(at('l', 'k'), 'acc')}",
                 "    }", "  }", "}"]
        return "\n".join(lines), WorkStep([Launch(base, "elementwise", int(lines_n), params)])
    # chunks: c chunks of s elements per line (the last one shorter)
    lines_n, length = int(lines_n), int(length)
    chunks = max(1, min(-(-CHUNK_THREADS // lines_n), -(-length // CHUNK_MIN)))
    size = -(-length // chunks)
    chunks = -(-length // size)
    total = lines_n * chunks
    work = [("w0", ("work", 0, "val"))]
    text = [head + f" {chunks} chunks of {size} per line: totals, prefixes, outputs */"]
    sig1, p1 = kernel_signature(kp, base + "_tot", [x], set(), [(f"{ctype.mem(dt)}* __restrict__ w0", work[0][1])])
    chunk_head = [*grid_stride(f"{total}LL"),
                  f"    const long long l = t / {chunks}LL, c = t % {chunks}LL, k0 = c * {size}LL;",
                  f"    const long long k1 = k0 + {size}LL < {length}LL ? k0 + {size}LL : {length}LL;"]
    text += [sig1 + " {"] + chunk_head + [
        f"    {reg} acc = {cast(load(at('l', 'k0')))};",
        f"    for (long long k = k0 + 1; k < k1; ++k) acc = {op('acc', cast(load(at('l', 'k'))))};",
        f"    {ctype.store('w0[t]', 'acc', dt)}", "  }", "}"]
    sig2, p2 = kernel_signature(kp, base + "_off", [], set(), [(f"{ctype.mem(dt)}* __restrict__ w0", work[0][1])])
    text += [sig2 + " {  /* each line's chunk totals -> the running result before each chunk */",
             *grid_stride(f"{lines_n}LL", "l"),
             f"    {reg} acc = {ctype.load(f'w0[l * {chunks}LL]', dt)};",
             f"    for (long long c = 1; c < {chunks}LL; ++c) {{",
             f"      const {reg} v = {ctype.load(f'w0[l * {chunks}LL + c]', dt)};",
             f"      {ctype.store(f'w0[l * {chunks}LL + c]', 'acc', dt)}",
             f"      acc = {op('acc', 'v')};",
             "    }", "  }", "}"]
    sig3, p3 = kernel_signature(kp, base + "_out", [x, out], {out},
                                [(f"const {ctype.mem(dt)}* __restrict__ w0", work[0][1])])
    text += [sig3 + " {"] + chunk_head + [
        f"    {reg} acc = {cast(load(at('l', 'k0')))};",
        f"    if (c > 0) acc = {op(ctype.load('w0[t]', dt), 'acc')};",
        f"    {store(at('l', 'k0'), 'acc')}",
        "    for (long long k = k0 + 1; k < k1; ++k) {",
        f"      acc = {op('acc', cast(load(at('l', 'k'))))};",
        f"      {store(at('l', 'k'), 'acc')}",
        "    }", "  }", "}"]
    launches = [Launch(base + "_tot", "elementwise", total, p1), Launch(base + "_off", "elementwise", lines_n, p2),
                Launch(base + "_out", "elementwise", total, p3)]
    return "\n".join(text), WorkStep(launches, [(0, dt, total)])


def _regroupable(ufunc: str, dt: np.dtype) -> bool:
    return dt.kind in EXACT_REGROUPING.get(ufunc, "")

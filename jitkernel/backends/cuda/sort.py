"""`np.sort` and `np.argsort` on the GPU (docs/gpu.md, "Sorting on the GPU"): a bitonic sorting
network over (value, position) pairs, every line of the sorted axis at once.

The axis is split into lines (every point of the other axes); each line is padded to P, the next
power of two, in a work buffer of keys and one of positions. Then log2(P) * (log2(P) + 1) / 2
launches of one compare-exchange kernel (its stage (k, j) passed by value: one thread per pair,
no shared state between threads of a stage), and a last kernel writes the values (sort) or the
positions (argsort) back along the axis. No atomics: the same input gives the same bits on every
run and for any grid.

The order compared is total: NaN after every number (NumPy's rule), padding after NaN, and equal
keys by position, so the network sorts *stably*. That is NumPy's answer for `argsort(kind=
"stable")` (and "mergesort"); its default argsort (introsort, or the SIMD sorts of NumPy 2 on
x86) orders equal elements in a machine-dependent way that a GPU cannot reproduce, so argsort
with another kind raises UnsupportedOperationError asking for kind="stable". `np.sort` returns the
same values whatever the kind (its equal elements are interchangeable; -0.0 and 0.0 keep their
input order). Complex values and run-time extents raise UnsupportedOperationError naming the
step.
"""
from __future__ import annotations

from ...fusion.kernel_ir import KernelProgram, LibraryCall
from . import ctype
from .dynamic_params import Ext, extent, extent_product
from .library_kernels import grid_stride, kernel_signature
from .launch import Launch
from .library_rules import library_rule, unsupported_step
from .names import kernel_name
from .work_step import WorkStep

STABLE_KINDS = ("stable", "mergesort")


@library_rule("sort", "argsort")
def render_sort(kp: KernelProgram, step: LibraryCall, n: int, placeholder: str) -> tuple[str, WorkStep]:
    """The kernels and launches of one sort or argsort step (module docstring)."""
    (x,), (out,) = step.inputs, step.outputs
    dt = kp.buffers[x].dtype
    if dt.kind == "c":
        raise unsupported_step(kp, step, n, " for complex numbers")
    ctype.check_dtype(dt)
    kind = step.params.get("kind")
    if step.prim == "argsort" and kind not in STABLE_KINDS:
        raise unsupported_step(kp, step, n, f" for kind={kind!r}: the GPU sorts stably, and NumPy's {kind or 'default'} "
                                        "argsort orders equal elements its own machine-dependent way; pass "
                                        "kind='stable' (NumPy's stable answer),")
    shape = [extent(d) for d in kp.buffers[x].shape]
    if any(isinstance(d, Ext) for d in shape):
        raise unsupported_step(kp, step, n, " for run-time extents")
    axis = step.params["axis"]
    length, inner = int(shape[axis]), int(extent_product(shape[axis + 1:]))
    lines = int(extent_product(shape[:axis] + shape[axis + 1:]))
    base = kernel_name(placeholder, step.name)
    head = f"\n/* {step.name}: numpy.{step.prim} along axis {axis} of {shape} ({dt}), a bitonic network */"
    if lines * length == 0:
        return head, WorkStep([])
    p = 1
    while p < length:
        p *= 2
    mem = ctype.mem(dt)
    work = [(f"{mem}* __restrict__ w0", ("work", 0, "val")), ("long long* __restrict__ w1", ("work", 1, "val"))]
    at = f"(l / {inner}LL * {length}LL + q) * {inner}LL + l % {inner}LL"
    sig0, p0 = kernel_signature(kp, base + "_load", [x], set(), work)
    text = [head, sig0 + " {  /* each line into the work buffers, padded to a power of two */"]
    text += grid_stride(f"{lines * p}LL") + [
        f"    const long long l = t / {p}LL, q = t % {p}LL;",
        "    w1[t] = q;  /* a position >= the line's length marks padding */",
        f"    if (q < {length}LL) w0[t] = b{x}[{at}];", "  }", "}"]
    sig1, _ = kernel_signature(kp, base + "_stage", [], set(),
                               work + [("const long long k", ("int", 0)), ("const long long j", ("int", 0))])
    a, b = ctype.load("w0[i]", dt), ctype.load("w0[m]", dt)
    greater = (f"(w1[m] >= {length}LL ? (w1[i] >= {length}LL && w1[i] > w1[m]) : w1[i] >= {length}LL ? true : "
               f"({a} != {a}) ? (({b} != {b}) ? w1[i] > w1[m] : true) : ({b} != {b}) ? false : "
               f"({a} > {b} || ({a} == {b} && w1[i] > w1[m])))") if dt.kind == "f" else (
               f"(w1[m] >= {length}LL ? (w1[i] >= {length}LL && w1[i] > w1[m]) : w1[i] >= {length}LL ? true : "
               f"({a} > {b} || ({a} == {b} && w1[i] > w1[m])))")
    text += [sig1 + " {  /* one compare-exchange stage (k, j) of the network: one thread per pair */"] + \
        grid_stride(f"{lines * p // 2}LL") + [
        f"    const long long l = t / {p // 2}LL, q = t % {p // 2}LL;",
        f"    const long long i = l * {p}LL + (q / j) * 2 * j + q % j, m = i + j;",
        "    const bool up = ((((q / j) * 2 * j + q % j) & k) == 0);",
        f"    const bool gt = {greater};",
        "    if (gt == up) {",
        f"      const {mem} v = w0[i]; w0[i] = w0[m]; w0[m] = v;",
        "      const long long s = w1[i]; w1[i] = w1[m]; w1[m] = s;",
        "    }", "  }", "}"]
    sig2, p2 = kernel_signature(kp, base + "_store", [out], {out}, work)
    value = "w1[t]" if step.prim == "argsort" else "w0[t]"
    text += [sig2 + " {  /* the sorted lines back along the axis */"] + grid_stride(f"{lines * p}LL") + [
        f"    const long long l = t / {p}LL, q = t % {p}LL;",
        f"    if (q < {length}LL) b{out}[{at}] = {value};", "  }", "}"]
    launches = [Launch(base + "_load", "elementwise", lines * p, p0)]
    k = 2
    while k <= p:
        j = k // 2
        while j >= 1:
            _, params = kernel_signature(kp, base + "_stage", [], set(),
                                         work + [("const long long k", ("int", k)), ("const long long j", ("int", j))])
            launches.append(Launch(base + "_stage", "elementwise", lines * p // 2, params))
            j //= 2
        k *= 2
    launches.append(Launch(base + "_store", "elementwise", lines * p, p2))
    return "\n".join(text), WorkStep(launches, [(0, dt, lines * p), (1, "int64", lines * p)])

"""`np.searchsorted` on the GPU (docs/gpu.md, "Sorting on the GPU"): one thread per searched
value, a binary search of the sorted 1-D array.

NumPy's rule: both arrays are compared in their common dtype (np.result_type), NaN sorts after
every number (`a < b || (b != b && a == a)`), side="left" gives the first i with not a[i] < v,
side="right" the first i with v < a[i]. With `sorter`, a[sorter[i]] is compared instead, and a
sorter entry outside [0, len(a)) raises NumPy's ValueError ("Sorter index out of range.")
through the status word. NumPy notices a bad entry only where its binary search visits it (so it
may return indices for an invalid sorter); here a first kernel checks every entry, so the GPU
never reads outside the array and an invalid sorter always raises. The array is assumed sorted,
as NumPy assumes it (not checked).
"""
from __future__ import annotations

import numpy as np

from ...fusion.kernel_ir import KernelProgram, LibraryCall
from . import ctype, ops
from .dynamic_params import extent, extent_product, _ll
from ..status import STATUS_SORTER  # its message is in STATUS_MESSAGES, as every runtime raises it
from .library_kernels import grid_stride, kernel_signature
from .launch import Launch
from .library_rules import library_rule, unsupported_step
from .names import kernel_name


def _value(ref: str, src: np.dtype, dst: np.dtype) -> str:
    return ops.convert(ctype.load(ref, src), src, dst)


def _less(a: str, b: str, dt: np.dtype) -> str:
    """NumPy's sort order: NaN after every number."""
    if dt.kind == "f":
        return f"({a} < {b} || ({b} != {b} && {a} == {a}))"
    return f"({a} < {b})"


@library_rule("searchsorted")
def render_searchsorted(kp: KernelProgram, step: LibraryCall, n: int, placeholder: str) -> tuple[str, list]:
    a, v = step.inputs[:2]
    sorter = step.inputs[2] if len(step.inputs) > 2 else None
    (out,) = step.outputs
    ad, vd = kp.buffers[a].dtype, kp.buffers[v].dtype
    if "c" in (ad.kind, vd.kind):
        raise unsupported_step(kp, step, n, " for complex numbers")
    common = np.result_type(ad, vd)
    for d in (ad, vd, common):
        ctype.check_dtype(d)
    size = extent(kp.buffers[a].shape[0])
    total = extent_product([extent(d) for d in kp.buffers[v].shape])
    base = kernel_name(placeholder, step.name)
    side = step.params["side"]
    reg = ctype.reg(common)
    text, launches = [f"\n/* {step.name}: numpy.searchsorted(side={side!r}) of {_ll(size)} sorted {ad} values */"], []
    at = "mid"
    if sorter is not None:  # NumPy checks every sorter entry first: one thread each
        csig, cparams = kernel_signature(kp, base + "_sorter", [sorter], set())
        text += [csig + " {"] + grid_stride(_ll(size)) + [
                 f"    const long long e = (long long)b{sorter}[t];",
                 f"    if (e < 0 || e >= {_ll(size)}) jk_status_or(jk_status, {STATUS_SORTER}u);",
                 "  }", "}"]
        launches.append(Launch(base + "_sorter", "elementwise", int(size), cparams))
        at = f"(long long)b{sorter}[mid]"
    bufs = [a, v] + ([sorter] if sorter is not None else []) + [out]
    sig, params = kernel_signature(kp, base, bufs, {out})
    lines = [sig + " {"] + grid_stride(_ll(total)) + [
             f"    const {reg} x = {_value(f'b{v}[t]', vd, common)};",
             f"    long long lo = 0, hi = {_ll(size)};"]
    if sorter is not None:
        lines.append(f"    if (jk_status[0] & {STATUS_SORTER}u) {{ b{out}[t] = 0; continue; }}  /* the call raises */")
    key = _value(f"b{a}[{at}]", ad, common)
    # left: the first i with not a[i] < x; right: the first i with x < a[i]
    goes_right = f"!{_less('x', 'y', common)}" if side == "right" else _less("y", "x", common)
    lines += ["    while (lo < hi) {",
              "      const long long mid = lo + (hi - lo) / 2;",
              f"      const {reg} y = {key};",
              f"      if ({goes_right}) lo = mid + 1; else hi = mid;",
              "    }",
              f"    b{out}[t] = lo;", "  }", "}"]
    launches.append(Launch(base, "elementwise", int(total), params))
    return "\n".join(text + lines), launches

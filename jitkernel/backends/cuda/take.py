"""`np.take`, `np.take_along_axis` and `take_static` (the gathers of np.repeat, np.delete) on
the GPU (docs/gpu.md, "Indexing and in-place updates on
the GPU"): one thread per output element (grid-stride), which reads one element of the array.

Indices follow NumPy: `mode="raise"` (and take_along_axis) wraps a negative index once and sets
the status word's index bit for anything still out of range, recording index, axis and size, so
the call raises NumPy's `IndexError` with its message (an erroneous element reads element 0 and
the result is discarded); `mode="wrap"` takes the index modulo the size (Python's modulo: always
in range); `mode="clip"` clamps it to [0, size - 1] (a negative index is 0, not counted from the
end). `axis=None` takes from the flattened array (the error names axis 0 and the total size, as
NumPy does). A non-empty take from an empty axis is NumPy's IndexError at trace time (the
primitive's shape rule asks NumPy), so it never reaches the renderer.
"""
from __future__ import annotations

from ...fusion.kernel_ir import KernelProgram, LibraryCall
from ..status import STATUS_INDEX
from . import ctype
from .dynamic_params import extent, extent_product, _ll
from .library_kernels import grid_stride, kernel_signature
from .launch import Launch
from .library_rules import library_rule, unsupported_step
from .names import kernel_name


def _checked(i: str, n: str, axis: int, mode: str) -> str:
    """The in-range index of raw index `i` (a long long) into an axis of `n` elements."""
    if mode == "wrap":
        return f"((({i}) % {n} + {n}) % {n})"
    if mode == "clip":
        return f"(({i}) < 0 ? 0LL : (({i}) >= {n} ? {n} - 1LL : ({i})))"
    return f"jk_index_check({i}, {n}, {n} - 1LL, {axis}LL, jk_status, {STATUS_INDEX}u)"


@library_rule("take", "take_along_axis", "take_static")
def render_take(kp: KernelProgram, step: LibraryCall, n: int, placeholder: str) -> tuple[str, list]:
    """The kernel and launch of one `take` or `take_along_axis` step."""
    a, idx = step.inputs
    (out,) = step.outputs
    for b in (a, idx, out):
        ctype.check_dtype(kp.buffers[b].dtype)
    if kp.buffers[idx].dtype.kind not in "iu":
        raise unsupported_step(kp, step, n, " for non-integer indices")
    a_shape = [extent(d) for d in kp.buffers[a].shape]
    i_shape = [extent(d) for d in kp.buffers[idx].shape]
    o_shape = [extent(d) for d in kp.buffers[out].shape]
    axis, mode = step.params.get("axis"), step.params.get("mode", "raise")
    if mode not in ("raise", "wrap", "clip"):
        raise unsupported_step(kp, step, n, f" for mode={mode!r}")
    base = kernel_name(placeholder, step.name)
    total = extent_product(o_shape)
    sig, params = kernel_signature(kp, base, [a, idx, out], {out})
    if axis is None:  # the flattened array; take_along_axis needs a 1-D index then
        a_shape, axis = [extent_product(a_shape)], 0
        if step.prim == "take_along_axis":
            i_shape = [extent_product(i_shape)]
    size = a_shape[axis]
    if int(total) and not int(size):
        raise unsupported_step(kp, step, n, " from an empty axis")  # NumPy raises at trace time
    dims = ", ".join(f"{d}" for d in a_shape)  # a run-time extent formats as its C text
    head = f"\n/* {step.name}: numpy.{step.prim} along axis {axis} of [{dims}], mode {mode} */"
    if step.prim in ("take", "take_static") and mode == "raise" and not int(total) and int(extent_product(i_shape)):
        # an empty result (an empty axis after `axis`): NumPy still checks every index
        csig, cparams = kernel_signature(kp, base + "_check", [idx], set())
        text = [head, csig + " {", "  if (blockIdx.x != 0 || threadIdx.x != 0) return;",
                f"  for (long long q = 0; q < {_ll(extent_product(i_shape))} && !(jk_status[0] & {STATUS_INDEX}u); ++q)",
                f"    {_checked(f'(long long)b{idx}[q]', _ll(size), axis, mode)};", "}"]
        return "\n".join(text), [Launch(base + "_check", "elementwise", 1, cparams)]
    lines = [head, sig + " {"] + grid_stride(_ll(total))
    if step.prim in ("take", "take_static"):  # take_static: np.repeat's, np.delete's gathers
        inner = extent_product(a_shape[axis + 1:])
        n_idx = extent_product(i_shape)
        lines += [f"    const long long o = t / ({_ll(n_idx)} * {_ll(inner)}), q = (t / {_ll(inner)}) % {_ll(n_idx)}, "
                  f"j = t % {_ll(inner)};",
                  f"    const long long i = {_checked(f'(long long)b{idx}[q]', _ll(size), axis, mode)};",
                  f"    b{out}[t] = b{a}[(o * {_ll(size)} + i) * {_ll(inner)} + j];"]
    else:
        if len(i_shape) != len(a_shape) or len(o_shape) != len(a_shape):
            raise unsupported_step(kp, step, n, " for these index dimensions")
        coords = [f"((t / {_ll(extent_product(o_shape[d + 1:]))}) % {_ll(o_shape[d])})" for d in range(len(o_shape))]
        i_at = _offset(coords, i_shape, o_shape)
        lines.append(f"    const long long i = {_checked(f'(long long)b{idx}[{i_at}]', _ll(size), axis, 'raise')};")
        coords[axis] = "i"
        a_at = _offset(coords, a_shape, [None if d == axis else o_shape[d] for d in range(len(o_shape))])
        lines.append(f"    b{out}[t] = b{a}[{a_at}];")
    lines += ["  }", "}"]
    return "\n".join(lines), [Launch(base, "elementwise", int(total), params)]


def _offset(coords: list[str], shape: list, target: list) -> str:
    """The C-order offset in an array of `shape` broadcast against `target` (a dimension of size
    1 where the target's is not takes coordinate 0) of the point with these coordinates."""
    terms = []
    for d, c in enumerate(coords):
        if int(shape[d]) == 1 and (target[d] is None or int(target[d]) != 1):
            continue
        terms.append(f"{c} * {_ll(extent_product(shape[d + 1:]))}")
    return " + ".join(terms) or "0LL"


"""Two matrix-vector products of one large matrix, run as one sweep over the matrix.

`A @ x` and `w @ A` of the same matrix (NPBench's atax, bicg and mvt; the two products of a
bi-conjugate-gradient step) are two BLAS calls, and each reads all of `A`. Once `A` is larger
than the cache that holds it between the calls, the second read costs as much as the first, and
the pair is bound by that traffic. This backend runs such a pair as one library step: a sweep
over blocks of rows small enough to stay in the L2 cache, where each block gives its part of
`A @ x` and then adds its `w_blk @ A_blk` to the column products while it is still cached.
`w` may be the first product itself (`(A @ x) @ A`, atax): each block's rows are computed
before they are used.

This is how the CPU runtime runs two of its library steps; the kernel program is unchanged, and
the pair is formed only when moving the later product to the earlier one's place changes nothing
another step sees (`pair_matvecs`). The products are NumPy's matmul on the same operands, by
blocks: each row product is one dot, as before, and the column products add the blocks' partial
products in order, a summation order of its own (BLAS does not promise one either), so values
agree with NumPy within floating-point tolerance, not bit for bit. A matrix smaller than
`PAIRED_MIN_BYTES` is multiplied whole, exactly as the two steps would.

>>> import numpy as np
>>> A = np.arange(12.0).reshape(3, 4)
>>> rows, cols = matvec_pair(A, np.ones((4, 1)), None, cols_of_rows=True)
>>> rows.ravel().tolist(), cols.ravel().tolist()
([6.0, 22.0, 38.0], [392.0, 458.0, 524.0, 590.0])
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...fusion import index
from ...fusion.kernel_ir import Kernel, KernelProgram, LibraryCall, Load
from ...fusion.loops import is_control, touched_buffers
from .render import Segment

# Below this size the matrix stays cached between the two products; the sweep would only add
# calls. Measured here (2-core VM, 4 MiB L2 per core, OpenBLAS single-threaded), 160 MB float64:
# two products 26.0 ms, the sweep 21.2 ms with 512 KiB blocks (256 KiB 21.8, 1 MiB 22.2).
PAIRED_MIN_BYTES = 8 << 20
BLOCK_BYTES = 512 << 10


def matvec_pair(matrix: np.ndarray, right: np.ndarray, left: np.ndarray | None, *,
                cols_of_rows: bool) -> tuple[np.ndarray, np.ndarray]:
    """(`matrix @ right`, `left @ matrix`) as (m, 1) and (1, n) arrays; `right` holds n values,
    `left` m values, or `cols_of_rows`: `left` is the first product itself."""
    m, n = matrix.shape
    x = right.reshape(n, 1)
    rows = np.empty((m, 1), np.result_type(matrix, x))
    w = rows.reshape(1, m) if cols_of_rows else left.reshape(1, m)  # a view: filled as rows are
    if matrix.nbytes < PAIRED_MIN_BYTES or m == 0:
        np.matmul(matrix, x, out=rows)
        return rows, np.matmul(w, matrix)
    cols = np.empty((1, n), np.result_type(w, matrix))
    part = np.empty_like(cols)
    step = max(1, BLOCK_BYTES // max(1, n * matrix.itemsize))
    for start in range(0, m, step):
        block = matrix[start:start + step]
        np.matmul(block, x, out=rows[start:start + step])
        np.matmul(w[:, start:start + step], block, out=cols if start == 0 else part)
        if start:
            cols += part
    return rows, cols


def pair_matvecs(kp: KernelProgram, steps: list) -> list:
    """`steps` with each pair of products of one matrix (`A @ v` and `w @ A`, in either order)
    replaced by one `matvec_pair` step at the first one's place, where that is safe: between
    the two, no step writes the matrix or the later product's vector, and none touches its
    result. A later vector that a step between makes as a plain copy of a value available at
    the first product (NumPy's free reshape of a vector, `p` -> `p[:, None]`, is such a copy
    here) is read from that value instead."""
    out = list(steps)
    i = 0
    while i < len(out):
        first = _matvec(kp, out[i])
        if first is not None:
            for j in range(i + 1, len(out)):
                pair = _paired(kp, out, i, j, first)
                if pair is not None:
                    out[i] = pair
                    del out[j]
                    break
        i += 1
    return out


def _matvec(kp: KernelProgram, step: Any) -> tuple[str, int, int] | None:
    """("rows", matrix, vector) for a real `matrix @ vector` step ((m, n) by (n, 1)),
    ("cols", matrix, vector) for `vector @ matrix` ((1, m) by (m, n)), else None."""
    if not isinstance(step, LibraryCall) or step.prim != "dot_general" or len(step.inputs) != 2:
        return None
    if step.params.get("batch") != ((), ()) or step.params.get("contracting") != ((1,), (0,)):
        return None
    a, b = (kp.buffers[x] for x in step.inputs)
    views = getattr(kp, "complex_views", {})
    if a.dtype != b.dtype or a.dtype not in (np.float32, np.float64) or a.id in views or b.id in views \
            or step.inputs[0] == step.inputs[1] or len(a.shape) != 2 or len(b.shape) != 2:
        return None
    if _is_one(b.shape[1]) and not _is_one(a.shape[0]):
        return ("rows", a.id, b.id)
    if _is_one(a.shape[0]) and not _is_one(b.shape[1]):
        return ("cols", b.id, a.id)
    return None


def _is_one(d: Any) -> bool:
    return isinstance(d, int) and d == 1


def _paired(kp: KernelProgram, steps: list, i: int, j: int, first: tuple) -> LibraryCall | None:
    later = _matvec(kp, steps[j])
    if later is None or later[1] != first[1] or later[0] == first[0]:
        return None
    mid = steps[i + 1:j]
    written = set().union(*(_writes(s) for s in mid))
    touched = set().union(*(_touched(s) for s in mid))
    (early_out,), (late_out,) = steps[i].outputs, steps[j].outputs
    matrix, vector = later[1], later[2]
    if matrix in written or late_out in touched or late_out in steps[i].inputs or late_out == early_out:
        return None
    source = vector
    if vector in written:
        source = _copied_from(kp, mid, vector)
        if source is None or source in written:
            return None
    cols_of_rows = source == early_out
    if cols_of_rows and first[0] != "rows":
        return None  # `(w @ A)` feeding `A @ ...` needs every column first: no single sweep
    if first[0] == "rows":
        rows_vec, cols_vec, rows_out, cols_out = first[2], source, early_out, late_out
    else:
        rows_vec, cols_vec, rows_out, cols_out = source, first[2], late_out, early_out
    inputs = [matrix, rows_vec] + ([] if cols_of_rows else [cols_vec])
    return LibraryCall(f"{steps[i].name}+{steps[j].name}", "matvec_pair", {"cols_of_rows": cols_of_rows},
                       inputs, [rows_out, cols_out], steps[i].graph_ops + steps[j].graph_ops)


def _kernels(step: Any) -> list | None:
    """The plain kernels of a native segment (None when it holds control steps)."""
    kernels = step.kernels if isinstance(step, Segment) else [step]
    return None if any(is_control(k) for k in kernels) else kernels


def _writes(step: Any) -> set[int]:
    """Buffers a step may write: a library step its inputs too (a scatter may write a dead
    input in place, in_place_updates.py); a control step everything it touches."""
    if isinstance(step, LibraryCall):
        return set(step.inputs) | set(step.outputs)
    kernels = _kernels(step)
    if kernels is None:
        return _touched(step)
    out: set[int] = set()
    for k in kernels:
        if isinstance(k, Kernel):
            out |= {st.buffer for st in k.stores}
        else:
            out |= touched_buffers(k)
    return out


def _touched(step: Any) -> set[int]:
    if isinstance(step, Segment):
        return set().union(*(touched_buffers(k) for k in step.kernels))
    return touched_buffers(step)


def _copied_from(kp: KernelProgram, mid: list, vector: int) -> int | None:
    """The buffer `vector` is a plain copy of, element for element, when exactly one store of
    the steps `mid` writes it and that store copies another buffer of its size, else None."""
    found = None
    for step in mid:
        kernels = None if isinstance(step, LibraryCall) else _kernels(step)
        if kernels is None:
            if vector in _writes(step):
                return None
            continue
        for k in kernels:
            if not isinstance(k, Kernel):
                if vector in touched_buffers(k):
                    return None
                continue
            for st in k.stores:
                if st.buffer != vector:
                    continue
                if found is not None or not _plain_copy(kp, k, st):
                    return None
                found = st.value.buffer
    return found


def _plain_copy(kp: KernelProgram, k: Kernel, st: Any) -> bool:
    """Whether store `st` of kernel `k` writes every element of its buffer with the element of
    another buffer of the same dtype and size at the same flat position."""
    src = st.value
    if st.reduce is not None or not isinstance(src, Load) or k.n_reduce or len(k.domain) != 1:
        return False
    dst, source = kp.buffers[st.buffer], kp.buffers[src.buffer]
    size = _static_size(dst.shape)
    return (size is not None and size == _static_size(source.shape) and k.domain[0] == size
            and st.offset == index.var(0) and src.offset == index.var(0)
            and source.dtype == dst.dtype and src.buffer != st.buffer)


def _static_size(shape: tuple) -> int | None:
    size = 1
    for d in shape:
        if not isinstance(d, int):
            return None
        size *= d
    return size

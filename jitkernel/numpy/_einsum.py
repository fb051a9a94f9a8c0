"""numpy.einsum lowered to the graph IR: no library call of its own.

1. NumPy parses the subscripts (both the string and the interleaved sublist forms; ellipses
   become letters, right-aligned as NumPy broadcasts them), on zero-memory stand-ins that carry
   the operands' shapes.
2. Each operand alone: a letter repeated in its subscripts takes the diagonal (the repeated
   axes are moved last, flattened and sliced with the stride of the diagonal: index maps, no
   copy), and letters no other operand and not the output uses are summed out.
3. The operands are contracted pairwise in the order `np.einsum_path(..., optimize='greedy')`
   chooses (what `np.einsum(optimize=True)` runs), each pair as one `dot_general` whose batch
   axes are the letters both share and still needed, contracting axes the letters both share
   and not needed any more.
4. One transpose puts the letters in the output's order.

Size-1 axes broadcast against the other operands' sizes of the same letter, as NumPy does.

>>> import numpy as np, jitkernel as jk
>>> a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
>>> bool(np.allclose(jk.jit(lambda a, b: np.einsum("ij,jk->ik", a, b))(a, b), a @ b))
True
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedOperationError
from ..ir import check_dtype
from ..trace.tracer import Tracer
from ..trace.operands import broadcast_to_shape, context_of, dtype_key, lift, WEAK_DEFAULT
from ._shape import reshape, transpose
from ._creation import copy

__all__ = ["einsum", "einsum_path"]


def _stand_in(x: Any) -> Any:
    """An array with x's shape and dtype that costs no memory (einsum's parser needs arrays)."""
    if isinstance(x, Tracer):
        return np.broadcast_to(np.zeros((), x.dtype), x.shape)
    return x


def _parse(args: tuple) -> tuple[list[str], str, list[Any]]:
    from numpy._core.einsumfunc import _parse_einsum_input
    if isinstance(args[0], str):
        stand_ins = (args[0],) + tuple(_stand_in(a) for a in args[1:])
        operands = list(args[1:])
    else:
        stand_ins = tuple(_stand_in(a) if k % 2 == 0 else a for k, a in enumerate(args))
        operands = list(args[0::2])[: (len(args) // 2)]
    inputs, output, _ = _parse_einsum_input(stand_ins)
    return inputs.split(","), output, operands


def _common_dtype(operands: list[Any], dtype: Any) -> np.dtype:
    keys = [dtype_key(o) for o in operands]
    strong = [k for k in keys if not isinstance(k, type)]
    dt = np.result_type(*strong) if strong else np.result_type(*[WEAK_DEFAULT[k] for k in keys])
    if dtype is None:
        return check_dtype(dt, "einsum")
    want = check_dtype(dtype, "the dtype= of einsum")
    for k in strong:
        if not np.can_cast(k, want, "safe"):
            raise TypeError(f"Cannot cast array data from {np.dtype(k)!r} to {want!r} according to the rule 'safe'")
    return want


def _sum_axes(t: Tracer, axes: list[int]) -> Tracer:
    """Sum over `axes` keeping the dtype (einsum accumulates in the operands' type; bool is or)."""
    if not axes:
        return t
    prim = "reduce_or" if t.dtype == np.bool_ else "reduce_sum"
    return t._ctx.bind1(prim, t, axes=tuple(sorted(axes)))


def _diagonal(t: Tracer, letters: str) -> tuple[Tracer, str]:
    """Take the diagonal of every letter repeated in `letters` (x[i, i] for 'ii')."""
    while True:
        repeated = next((c for c in letters if letters.count(c) > 1), None)
        if repeated is None:
            return t, letters
        pos = [k for k, c in enumerate(letters) if c == repeated]
        sizes = {t.shape[p] for p in pos}
        if len(sizes) > 1:
            a, b = (t.shape[p] for p in pos[:2])
            raise ValueError(f"dimensions in operand for collapsing index '{repeated}' don't match ({a} != {b})")
        n, k = t.shape[pos[0]], len(pos)
        rest = [d for d in range(t.ndim) if d not in pos]
        moved = transpose(t, tuple(rest + pos))
        flat = reshape(moved, tuple(t.shape[d] for d in rest) + (n ** k,))
        step = sum(n ** j for j in range(k))
        t = flat[(Ellipsis, slice(None, None, step))]
        letters = "".join(letters[d] for d in rest) + repeated


def _broadcast_letters(t: Tracer, letters: str, sizes: dict[str, int]) -> Tracer:
    shape = tuple(sizes[c] for c in letters)
    return t if t.shape == shape else broadcast_to_shape(t._ctx, t, shape)


def _contract_pair(a: tuple[Tracer, str], b: tuple[Tracer, str], keep: set[str],
                   sizes: dict[str, int]) -> tuple[Tracer, str]:
    (x, lx), (y, ly) = a, b
    x, y = _broadcast_letters(x, lx, sizes), _broadcast_letters(y, ly, sizes)
    # Letters only one side has and nothing later needs are summed out before the product.
    x = _sum_axes(x, [k for k, c in enumerate(lx) if c not in ly and c not in keep])
    lx = "".join(c for c in lx if c in ly or c in keep)
    y = _sum_axes(y, [k for k, c in enumerate(ly) if c not in lx and c not in keep])
    ly = "".join(c for c in ly if c in lx or c in keep)
    shared = [c for c in lx if c in ly]
    batch = [c for c in shared if c in keep]
    contract = [c for c in shared if c not in keep]
    out = x._ctx.bind1("dot_general", x, y,
                       contracting=(tuple(lx.index(c) for c in contract), tuple(ly.index(c) for c in contract)),
                       batch=(tuple(lx.index(c) for c in batch), tuple(ly.index(c) for c in batch)))
    letters = "".join(batch) + "".join(c for c in lx if c not in ly) + "".join(c for c in ly if c not in lx)
    return out, letters


def _path(subscripts: str, operands: list[Any], optimize: Any) -> list[tuple[int, ...]]:
    if len(operands) == 1:
        return [(0,)]
    if isinstance(optimize, (list, tuple)) and optimize and optimize[0] == "einsum_path":
        return [tuple(p) for p in optimize[1:]]
    path, _ = np.einsum_path(subscripts, *[_stand_in(o) for o in operands], optimize="greedy")
    return [tuple(p) for p in path[1:]]


def einsum(*operands: Any, out: Any = None, dtype: Any = None, order: str = "K", casting: str = "safe",
           optimize: Any = False) -> Any:
    """numpy.einsum: every subscript form (explicit and implicit output, ellipsis, repeated
    letters, the sublist form) as dot_general + transposes + reductions, contracted in
    np.einsum_path's greedy order whatever `optimize` says (a given path list is followed)."""
    ctx = context_of(*operands)
    if ctx is None:
        return np.einsum(*operands, out=out, dtype=dtype, order=order, casting=casting, optimize=optimize)
    if out is not None:
        raise UnsupportedOperationError("numpy.einsum: out= is not supported inside jit")
    if casting != "safe" and dtype is not None:
        raise UnsupportedOperationError("numpy.einsum: casting= other than 'safe' is not supported inside jit")
    inputs, output, arrays = _parse(operands)
    if len(inputs) != len(arrays):
        raise ValueError("more operands provided to einstein sum function than specified in the subscripts string")
    dt = _common_dtype(arrays, dtype)
    ts = [lift(ctx, a, dt) for a in arrays]
    sizes: dict[str, int] = {}
    for t, letters in zip(ts, inputs):
        if len(letters) != t.ndim:
            raise ValueError("operand has more dimensions than subscripts given in einstein sum, but no '...' ellipsis provided to broadcast the extra dimensions.")
        for c, n in zip(letters, t.shape):
            if sizes.get(c, 1) == 1:
                sizes[c] = n
            elif n not in (1, sizes[c]):
                raise ValueError(f"operands could not be broadcast together with remapped shapes: size of label '{c}' is {n} here and {sizes[c]} elsewhere")
    path = _path(",".join(inputs) + "->" + output, [*ts], optimize)
    work: list[tuple[Tracer, str]] = []
    for k, (t, letters) in enumerate(zip(ts, inputs)):
        t, letters = _diagonal(t, letters)
        others = set(output).union(*[set(s) for j, s in enumerate(inputs) if j != k])
        t = _sum_axes(t, [d for d, c in enumerate(letters) if c not in others])
        work.append((t, "".join(c for c in letters if c in others)))
    for step in path:
        group = [work.pop(p) for p in sorted(step, reverse=True)]
        acc = group[0]
        for j in range(1, len(group)):
            later = set(output).union(*[set(s) for _, s in work], *[set(s) for _, s in group[j + 1:]])
            acc = _contract_pair(acc, group[j], later, sizes)
        work.append(acc)
    (t, letters), = work
    t = _sum_axes(t, [d for d, c in enumerate(letters) if c not in output])
    letters = "".join(c for c in letters if c in output)
    t = _broadcast_letters(t, letters, sizes)
    perm = tuple(letters.index(c) for c in output)
    result = transpose(t, perm) if perm != tuple(range(len(perm))) else t
    if any(result.ir_var is x.ir_var for x in ts):
        result = copy(result)  # einsum returns a new array, never its operand
    return result


def einsum_path(*operands: Any, optimize: Any = "greedy", einsum_call: bool = False) -> Any:
    """numpy.einsum_path: the path depends on shapes only, so it is computed at trace time."""
    return np.einsum_path(*[_stand_in(o) for o in operands], optimize=optimize, einsum_call=einsum_call)

# Notes for the generated support table (jitkernel/numpy/support_table.py, branch arrayfns).
einsum.__jk_support__ = "supported: contracted in np.einsum_path's greedy order (optimize=True's) or a given path; out= unsupported"

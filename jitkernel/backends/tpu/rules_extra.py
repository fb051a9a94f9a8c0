"""Lowering of advanced indexing, sorted search and integer `ufunc.reduce` to `jax.lax`: gathers
`x[idx]`, the functional scatters `x[idx] = v`, `ufunc.at`, `np.put`, `np.putmask`, `np.place`,
`np.searchsorted`, and `ufunc.reduce` of integers (bitwise ufuncs, `subtract`, ...), so that a
program using them stays in the XLA computation instead of calling NumPy on the host.

NumPy's semantics are kept exactly; a case these rules cannot give exactly stays a host step
(host_steps.py), decided when the program is lowered:

- index errors: every index array is checked, array after array and each in C order, as NumPy
  checks them (`IndexError: index 7 is out of bounds for axis 0 with size 3`); nothing is
  checked when the broadcast index is empty, as in NumPy;
- repeated indices of an assignment: the last write in C order of the index wins. XLA's scatter
  leaves the order of duplicate updates unspecified, so each target keeps only the update whose
  position is the largest (a scatter-max of positions, which is order-free) and the scatter
  that writes is duplicate-free;
- `ufunc.at` accumulates every repeated index: lowered for integer `add`, `subtract`,
  `multiply`, `maximum`, `minimum` and the bitwise ufuncs (exact in any order) and float `add`
  and `subtract` (XLA's order of the repeated updates: within rounding of NumPy's sequential
  order, as XLA's sums; the same bits where XLA applies them in index order, as on its CPU);
- `searchsorted` follows NumPy's comparison (NaN sorts last, -0.0 equals 0.0); on an input that
  is not sorted NumPy's answer is that of its own bisection, which is replayed (a sequential
  loop) instead of the parallel one.

Host steps remain for boolean-array indices (data-dependent counts), uint64 index arrays,
empty indexed axes, values of another dtype than the target (NumPy's casting rules and errors
for `x[i] = 300` on int8), and complex values.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ...ir.index_prims import decode_index, gather_shape
from ...ir.types import AType
from .host_steps import lower_host_step
from .rules import lax_rule
from .rules_library import _checked_indices

_NUMERIC = "biuf"


def _index_arrays_ok(index_avals) -> bool:
    return all(a.dtype.kind in "iu" and a.dtype != np.uint64 for a in index_avals)


def _numpy_shape(x_shape: tuple, index: tuple, index_avals) -> tuple | None:
    """NumPy's shape of x[index], or None where NumPy raises for it (then the host step does)."""
    try:
        return gather_shape(x_shape, index, [AType(a.shape, a.dtype) for a in index_avals])
    except (IndexError, ValueError, TypeError):
        return None


def _jnp_shape(x_shape: tuple, index: tuple, index_avals) -> tuple:
    """The shape jax.numpy's indexing gives for x[index] (compared with NumPy's before lowering)."""
    def probe(x, *arrays):
        return x[decode_index(index, arrays)]
    specs = [jax.ShapeDtypeStruct(tuple(a.shape), a.dtype) for a in index_avals]
    return tuple(jax.eval_shape(probe, jax.ShapeDtypeStruct(x_shape, np.bool_), *specs).shape)


def _lowerable_index(x, index: tuple, arrays) -> tuple | None:
    """NumPy's result shape of x[index] when the lax lowering gives NumPy's answer, else None."""
    if x.size == 0 or any(e[0] == "bool" for e in index) or not _index_arrays_ok(arrays):
        return None
    shape = _numpy_shape(tuple(x.shape), index, arrays)
    if shape is None or _jnp_shape(tuple(x.shape), index, arrays) != shape:
        return None
    return shape


def _checked_index(ctx, x_shape: tuple, index: tuple, arrays, result_size: int) -> tuple:
    """The index with its arrays checked (NumPy's IndexError, arrays in order) and wrapped into
    [0, n); an empty broadcast index checks nothing, as NumPy's."""
    consuming = sum(e[0] in ("array", "int", "slice") for e in index)
    axis, out = 0, []
    for entry in index:
        tag = entry[0]
        if tag == "ellipsis":
            out.append(Ellipsis)
            axis += len(x_shape) - consuming
        elif tag == "none":
            out.append(None)
        elif tag == "int":
            out.append(entry[1])
            axis += 1
        elif tag == "slice":
            out.append(slice(*entry[1:]))
            axis += 1
        else:  # "array": the only other tag _lowerable_index lets through
            n = x_shape[axis]
            idx = arrays[entry[1]]
            if result_size:
                idx = _checked_indices(ctx, idx, n, axis)
            out.append(jnp.clip(idx.astype(jnp.int64), 0, n - 1))  # a failed call's garbage stays in bounds
            axis += 1
    return tuple(out)


def _positions(x_shape: tuple, index: tuple) -> "jax.Array":
    """The flat position in x of every element x[index] selects, in the result's C order."""
    return jnp.arange(math.prod(x_shape), dtype=jnp.int64).reshape(x_shape)[index].reshape(-1)


def _last_wins(targets, size: int):
    """Each target's last update only: earlier duplicates get distinct positions past the end
    (dropped by a scatter with mode="drop", and the scatter's indices stay unique). Order-free
    either way: few updates into a large target are stably sorted (the last of each run of
    equal targets is the latest update; no work of the target's size), many take the largest
    update number per target by a scatter-max."""
    m = targets.shape[0]
    order = jnp.arange(m, dtype=jnp.int64)
    if m <= 1:
        return targets
    if m < size:
        by_target = jnp.argsort(targets, stable=True)
        ranked = targets[by_target]
        last_of_run = jnp.concatenate([ranked[1:] != ranked[:-1], jnp.ones((1,), bool)])
        latest = jnp.zeros((m,), bool).at[by_target].set(last_of_run, unique_indices=True)
    else:
        latest = jnp.full((size,), -1, jnp.int64).at[targets].max(order)[targets] == order
    return jnp.where(latest, targets, size + order)


def _value_for(value, result_shape: tuple):
    """NumPy's broadcast of an assigned value to the indexing result (leading length-1 axes of
    the value beyond the result's rank are dropped, as NumPy's setitem does), or None."""
    shape = tuple(value.shape)
    while len(shape) > len(result_shape) and shape[0] == 1:
        shape = shape[1:]
    try:
        if np.broadcast_shapes(shape, result_shape) != tuple(result_shape):
            return None
    except ValueError:
        return None
    return jnp.broadcast_to(value.reshape(shape), result_shape)


def _same_dtype(eqn, *k: int) -> bool:
    dtypes = {np.dtype(eqn.inputs[i].aval.dtype) for i in k}
    return len(dtypes) == 1 and next(iter(dtypes)).kind in _NUMERIC


# ----------------------------------------------------------------------------- gather


@lax_rule("gather")
def _gather(ctx, eqn, x, *arrays):
    index = eqn.params["index"]
    shape = _lowerable_index(x, index, arrays)
    if shape is None:
        return lower_host_step(ctx, eqn, x, *arrays)
    safe = _checked_index(ctx, tuple(x.shape), index, arrays, math.prod(shape))
    return [x[safe]]


# ----------------------------------------------------------------------------- scatters


@lax_rule("scatter")
def _scatter(ctx, eqn, x, *rest):
    """x[index] = value, functional: NumPy's casting of the value needs its dtype to be x's
    (a weak Python scalar of another dtype can raise OverflowError: host step)."""
    *arrays, value = rest
    index = eqn.params["index"]
    shape = _lowerable_index(x, index, arrays)
    if shape is None or not _same_dtype(eqn, 0, len(eqn.inputs) - 1):
        return lower_host_step(ctx, eqn, x, *rest)
    values = _value_for(value, shape)
    if values is None:  # NumPy's "shape mismatch" ValueError, raised by the host step
        return lower_host_step(ctx, eqn, x, *rest)
    safe = _checked_index(ctx, tuple(x.shape), index, arrays, math.prod(shape))
    targets = _positions(tuple(x.shape), safe)
    if arrays:  # only index arrays can repeat a position
        targets = _last_wins(targets, x.size)
    flat = x.reshape(-1).at[targets].set(values.reshape(-1), mode="drop", unique_indices=True)
    return [flat.reshape(x.shape)]


# ufunc -> (jax scatter method, dtype kinds whose result does not depend on the update order)
_AT_METHODS = {"add": ("add", "iuf"), "subtract": ("add", "iuf"), "multiply": ("multiply", "iu"),
               "maximum": ("max", "iu"), "minimum": ("min", "iu")}
_AT_BITWISE = {"bitwise_and": jnp.bitwise_and, "bitwise_or": jnp.bitwise_or, "bitwise_xor": jnp.bitwise_xor}


@lax_rule("scatter_ufunc")
def _scatter_ufunc(ctx, eqn, x, *rest):
    """ufunc.at(x, index, value): every repeated index applies the ufunc again."""
    p = eqn.params
    ufunc, index = p["ufunc"], p["index"]
    kind = np.dtype(x.dtype).kind
    supported = (ufunc in _AT_METHODS and kind in _AT_METHODS[ufunc][1]) or (ufunc in _AT_BITWISE and kind in "iu")
    if not p["has_value"] or not supported or not _same_dtype(eqn, 0, len(eqn.inputs) - 1):
        return lower_host_step(ctx, eqn, x, *rest)
    *arrays, value = rest
    shape = _lowerable_index(x, index, arrays)
    values = None if shape is None else _value_for(value, shape)
    if values is None:
        return lower_host_step(ctx, eqn, x, *rest)
    safe = _checked_index(ctx, tuple(x.shape), index, arrays, math.prod(shape))
    targets = _positions(tuple(x.shape), safe)
    flat, values = x.reshape(-1), values.reshape(-1)
    if ufunc == "subtract":  # x - v1 - v2 is x + (-v1) + (-v2), exactly (floats) and modulo 2**n (integers)
        values = -values
    if ufunc in _AT_BITWISE:
        out = _bitwise_at(flat, targets, values, ufunc)
    else:
        out = getattr(flat.at[targets], _AT_METHODS[ufunc][0])(values)
    return [out.reshape(x.shape)]


def _bitwise_at(flat, targets, values, ufunc: str):
    """A bitwise ufunc.at, bit by bit: and/or of every update of a target are a min/max of each
    bit, xor is the parity of the count of set bits (all order-free)."""
    width = 8 * np.dtype(flat.dtype).itemsize
    unsigned = jnp.dtype(f"uint{width}")
    u_flat, u_values = lax.bitcast_convert_type(flat, unsigned), lax.bitcast_convert_type(values, unsigned)
    out = jnp.zeros_like(u_flat)
    for bit in range(width):
        mask = jnp.asarray(1 << bit, unsigned)
        mine, theirs = (u_flat & mask) != 0, ((u_values & mask) != 0).astype(jnp.int32)
        if ufunc == "bitwise_and":
            hit = jnp.ones(flat.shape, jnp.int32).at[targets].min(theirs)
            bit_set = mine & (hit == 1)
        elif ufunc == "bitwise_or":
            bit_set = mine | (jnp.zeros(flat.shape, jnp.int32).at[targets].max(theirs) == 1)
        else:
            bit_set = mine ^ (jnp.zeros(flat.shape, jnp.int32).at[targets].add(theirs) % 2 == 1)
        out = out | jnp.where(bit_set, mask, jnp.asarray(0, unsigned))
    return lax.bitcast_convert_type(out, flat.dtype)


@lax_rule("put")
def _put(ctx, eqn, a, ind, v):
    """np.put(a, ind, v, mode): flat indices, v repeated cyclically, the last duplicate wins."""
    mode = eqn.params["mode"]
    n = a.size
    if n == 0 or v.size == 0 or not _index_arrays_ok([ind]) or not _same_dtype(eqn, 0, 2):
        return lower_host_step(ctx, eqn, a, ind, v)
    idx = ind.reshape(-1).astype(jnp.int64)
    if mode == "raise":
        idx = jnp.clip(_checked_indices(ctx, idx, n, 0), 0, n - 1)
    elif mode == "wrap":
        idx = jnp.mod(idx, n)
    else:  # clip
        idx = jnp.clip(idx, 0, n - 1)
    values = v.reshape(-1)[jnp.arange(idx.shape[0]) % v.size]
    flat = a.reshape(-1).at[_last_wins(idx, n)].set(values, mode="drop", unique_indices=True)
    return [flat.reshape(a.shape)]


@lax_rule("putmask")
def _putmask(ctx, eqn, a, mask, values):
    """np.putmask: a.flat[i] = values.flat[i % values.size] where mask.flat[i] (exact: a select)."""
    if (values.size == 0 or mask.dtype != jnp.bool_ or tuple(mask.shape) != tuple(a.shape)
            or not _same_dtype(eqn, 0, 2)):
        return lower_host_step(ctx, eqn, a, mask, values)
    cyclic = values.reshape(-1)[jnp.arange(a.size) % values.size].reshape(a.shape)
    return [jnp.where(mask, cyclic, a)]


@lax_rule("place")
def _place(ctx, eqn, arr, mask, vals):
    """np.place: the k-th True position of mask gets vals.flat[k % vals.size]."""
    if vals.size == 0 or mask.dtype != jnp.bool_ or mask.size != arr.size or not _same_dtype(eqn, 0, 2):
        return lower_host_step(ctx, eqn, arr, mask, vals)
    m = mask.reshape(-1)
    k = jnp.cumsum(m.astype(jnp.int64)) - 1
    picked = vals.reshape(-1)[jnp.mod(k, vals.size)]
    return [jnp.where(m, picked, arr.reshape(-1)).reshape(arr.shape)]


# ----------------------------------------------------------------------------- searchsorted


def _numpy_less(a, b):
    """NumPy's sort order: NaN after every number, -0.0 equal to 0.0."""
    if jnp.issubdtype(a.dtype, jnp.floating):
        return (a < b) | (jnp.isnan(b) & ~jnp.isnan(a))
    if a.dtype == jnp.bool_:
        return ~a & b
    return a < b


@lax_rule("searchsorted")
def _searchsorted(ctx, eqn, a, v, *sorter):
    side = eqn.params["side"]
    if sorter or a.dtype != v.dtype or np.dtype(a.dtype).kind not in _NUMERIC:
        return lower_host_step(ctx, eqn, a, v, *sorter)
    n = a.shape[0]
    if n == 0 or v.size == 0:
        return [jnp.zeros(v.shape, jnp.int64)]
    # goes right of a[mid]: a[mid] < key (left), not key < a[mid] (right)
    right_of = (lambda x, key: _numpy_less(x, key)) if side == "left" else (lambda x, key: ~_numpy_less(key, x))
    keys = v.reshape(-1)
    is_sorted = ~jnp.any(_numpy_less(a[1:], a[:-1])) if n > 1 else jnp.bool_(True)
    found = lax.cond(is_sorted, lambda: _bisect_all(a, keys, right_of), lambda: _numpy_bisection(a, keys, right_of))
    return [found.reshape(v.shape)]


def _bisect_all(a, keys, right_of):
    """Every key's bisection at once, over a sorted `a` (its answer is unique then)."""
    n = a.shape[0]
    lo, hi = jnp.zeros(keys.shape, jnp.int64), jnp.full(keys.shape, n, jnp.int64)

    def step(_, bounds):
        lo, hi = bounds
        mid = lo + (hi - lo) // 2
        go_right = (lo < hi) & right_of(a[jnp.clip(mid, 0, n - 1)], keys)
        return jnp.where(go_right, mid + 1, lo), jnp.where((lo < hi) & ~go_right, mid, hi)
    lo, _ = lax.fori_loop(0, int(n).bit_length() + 1, step, (lo, hi))
    return lo


def _numpy_bisection(a, keys, right_of):
    """NumPy's binsearch replayed key after key: its bracket starts from the previous key's
    (npysort/binsearch.cpp), which decides the answer when `a` is not sorted."""
    n = a.shape[0]

    def one_key(carry, key):
        lo, hi, last = carry
        after_last = right_of(last, key)  # NumPy compares the keys with the side's own comparison
        lo, hi = jnp.where(after_last, lo, 0), jnp.where(after_last, n, jnp.minimum(hi + 1, n))

        def bisect(bounds):
            lo, hi = bounds
            mid = lo + (hi - lo) // 2
            go_right = right_of(a[mid], key)
            return jnp.where(go_right, mid + 1, lo), jnp.where(go_right, hi, mid)
        lo, hi = lax.while_loop(lambda b: b[0] < b[1], bisect, (lo, hi))
        return (lo, hi, key), lo
    start = (jnp.int64(0), jnp.int64(n), keys[0])
    _, found = lax.scan(one_key, start, keys)
    return found


# ----------------------------------------------------------------------------- ufunc.reduce

# Integer ufuncs whose reduction does not depend on the order (associative and commutative
# modulo 2**n): lax.reduce with the ufunc's identity.
_REDUCERS = {"add": (lax.add, 0), "multiply": (lax.mul, 1), "bitwise_and": (lax.bitwise_and, -1),
             "bitwise_or": (lax.bitwise_or, 0), "bitwise_xor": (lax.bitwise_xor, 0),
             "logical_and": (lax.bitwise_and, True), "logical_or": (lax.bitwise_or, False),
             "logical_xor": (lax.bitwise_xor, False)}


@lax_rule("ufunc_reduce")
def _ufunc_reduce(ctx, eqn, a):
    """ufunc.reduce of integers and bools, exactly: the order-free ufuncs as one lax.reduce,
    `subtract` along one axis as NumPy's left fold, x0 - x1 - ... == x0 - (x1 + ...) modulo
    2**n. Float reductions and the other ufuncs stay host steps (NumPy's sequential order)."""
    p = eqn.params
    ufunc, dtype = p["ufunc"], np.dtype(p["dtype"])
    axes = tuple(range(a.ndim)) if p["axes"] is None else tuple(p["axes"])
    kinds = "b" if ufunc.startswith("logical_") else "biu" if ufunc.startswith("bitwise_") else "iu"
    if (dtype.kind not in kinds or (ufunc not in _REDUCERS and ufunc != "subtract")
            or (ufunc == "subtract" and len(axes) != 1)):
        return lower_host_step(ctx, eqn, a)
    x = a.astype(dtype)
    if ufunc == "subtract":
        (axis,) = axes
        if x.shape[axis] == 0:
            return lower_host_step(ctx, eqn, a)
        first = lax.index_in_dim(x, 0, axis, keepdims=False)
        rest = lax.slice_in_dim(x, 1, x.shape[axis], axis=axis)
        out = first - jnp.sum(rest, axis=axis, dtype=dtype)
    else:
        op, identity = _REDUCERS[ufunc]
        out = lax.reduce(x, jnp.asarray(identity).astype(dtype), op, axes)
    if p["keepdims"]:
        out = jnp.expand_dims(out, axes)
    return [out.astype(dtype)]

"""The TPU lowering of advanced indexing and sorted search (backends/tpu/rules_extra.py) against
NumPy on backend "tpu-interpret": gathers, scatters with repeated and negative indices (the last
write wins), ufunc.at (every repeat accumulates), np.put / np.putmask / np.place, searchsorted
on sorted and unsorted inputs; NumPy's IndexError for an index out of bounds, the first one in
NumPy's order. Each test also checks that the primitive ran in the XLA computation, not as a
host step.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jitkernel as jk  # noqa: E402
from tpu_suite import TPU_INTERPRET, have_jax  # noqa: E402

pytestmark = pytest.mark.skipif(not have_jax(), reason="JAX is not installed (the test extra brings it)")

SETTINGS = settings(max_examples=30, deadline=None, derandomize=True, database=None)
DTYPES = [np.float64, np.float32, np.int32, np.int64, np.int8, np.bool_]


def _outcome(fn, args):
    """(results and final argument contents, or the exception's type and message)."""
    args = [np.copy(a) for a in args]
    try:
        out = fn(*args)
    except (IndexError, ValueError) as e:
        return type(e), str(e)
    return [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))] + args


def assert_lowered_like_numpy(fn, *args, prims: tuple[str, ...], float_rtol: float | None = None):
    """fn under jk.jit on tpu-interpret gives NumPy's results (exact), argument writes and
    exceptions, and none of `prims` ran as a host step."""
    jitted = jk.jit(fn, backend=TPU_INTERPRET)
    host_steps = jitted.lower(*[np.copy(a) for a in args]).compiled.executable.host_steps
    assert not set(prims) & set(host_steps), f"ran as host steps: {host_steps}"
    expected, got = _outcome(fn, args), _outcome(jitted, args)
    if isinstance(expected, tuple):
        assert got == expected
        return
    assert not isinstance(got, tuple), f"raised {got}, NumPy did not"
    for e, g in zip(expected, got):
        assert g.dtype == e.dtype and g.shape == e.shape
        if float_rtol is not None and e.dtype.kind == "f":
            np.testing.assert_allclose(g, e, rtol=float_rtol)
        else:
            np.testing.assert_array_equal(g, e)


# ----------------------------------------------------------------------------- index strategies


@st.composite
def arrays_of(draw, shape, dtype):
    if np.dtype(dtype) == np.bool_:
        return np.array(draw(st.lists(st.booleans(), min_size=int(np.prod(shape)), max_size=int(np.prod(shape)))),
                        bool).reshape(shape)
    values = draw(st.lists(st.integers(-100, 100), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    return np.array(values).astype(dtype).reshape(shape)


@st.composite
def indexed(draw, out_of_bounds: bool = False, newaxis: bool = True):
    """(x, a template of the index, its index arrays): arrays (at least 1-d: a 0-d one is a
    traced scalar) with repeats and negative values, mixed with slices, None, an Ellipsis and
    static integers."""
    x_shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    x = draw(arrays_of(x_shape, draw(st.sampled_from(DTYPES))))
    broadcast = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
    template, arrays, axis = [], [], 0
    use_ellipsis = draw(st.booleans())
    consumed = draw(st.integers(1, len(x_shape)))
    for k in range(consumed):
        if use_ellipsis and k == consumed - 1 and consumed < len(x_shape):
            template.append(("ellipsis",))
            axis = len(x_shape) - 1
        if newaxis and draw(st.integers(0, 5)) == 0:
            template.append(("none",))
        n = x_shape[axis]
        kind = draw(st.sampled_from(["array", "array", "slice", "int"]))
        if kind == "array":
            shape = tuple(d if draw(st.booleans()) else 1 for d in broadcast)[draw(st.integers(0, len(broadcast) - 1)):]
            idx = np.array(draw(st.lists(st.integers(-n, n - 1), min_size=int(np.prod(shape)),
                                         max_size=int(np.prod(shape)))), np.int64).reshape(shape)
            idx = idx.astype(draw(st.sampled_from([np.int64, np.int32, np.int16])))
            template.append(("array", len(arrays)))
            arrays.append(idx)
        elif kind == "slice":
            template.append(("slice", draw(st.sampled_from([None, 0, 1, -1])), draw(st.sampled_from([None, 3, -1])),
                             draw(st.sampled_from([None, 1, 2, -1]))))
        else:
            template.append(("int", draw(st.integers(-n, n - 1))))
        axis += 1
    if out_of_bounds and arrays:
        k = draw(st.integers(0, len(arrays) - 1))
        flat = arrays[k].reshape(-1)
        if flat.size:
            flat[draw(st.integers(0, flat.size - 1))] = draw(st.sampled_from([-50, 7, 40]))
    return x, tuple(template), arrays


def _build(template, arrays):
    out = []
    for entry in template:
        tag = entry[0]
        out.append({"array": lambda: arrays[entry[1]], "int": lambda: entry[1], "none": lambda: None,
                    "ellipsis": lambda: Ellipsis, "slice": lambda: slice(*entry[1:])}[tag]())
    return tuple(out)


# ----------------------------------------------------------------------------- gather and scatter


@SETTINGS
@given(case=indexed(), out_of_bounds=st.booleans(), data=st.data())
def test_gather_is_numpys_indexing(case, out_of_bounds, data):
    x, template, arrays = data.draw(indexed(out_of_bounds=True)) if out_of_bounds else case

    def gather(x, *arrays):
        return x[_build(template, arrays)]
    assert_lowered_like_numpy(gather, x, *arrays, prims=("gather",) if arrays else ())


@SETTINGS
@given(case=indexed(newaxis=False), scalar=st.booleans(), data=st.data())
def test_scatter_last_repeat_wins(case, scalar, data):
    x, template, arrays = case
    result_shape = x[_build(template, arrays)].shape
    value = data.draw(arrays_of(() if scalar else result_shape, x.dtype))

    def scatter(x, value, *arrays):
        x[_build(template, arrays)] = value
        return x
    assert_lowered_like_numpy(scatter, x, value, *arrays, prims=("scatter",) if arrays else ())


@SETTINGS
@given(case=indexed(out_of_bounds=True, newaxis=False))
def test_scatter_raises_numpys_index_error(case):
    x, template, arrays = case

    def scatter(x, *arrays):
        x[_build(template, arrays)] = x.dtype.type(1)
        return x
    assert_lowered_like_numpy(scatter, x, *arrays, prims=("scatter",) if arrays else ())


def test_scatter_repeated_rows_and_broadcast_value():
    def rows(x, i, v):
        x[i, 1:] = v
        return x
    i = np.array([2, -2, 0, 2, 2])
    # fewer updates than elements (ordered by a stable sort) and more (by a scatter-max)
    assert_lowered_like_numpy(rows, np.zeros((4, 3)), i, np.arange(10.0).reshape(5, 2), prims=("scatter",))
    assert_lowered_like_numpy(rows, np.zeros((4, 3)), np.tile(i, 3), np.arange(30.0).reshape(15, 2),
                              prims=("scatter",))
    assert_lowered_like_numpy(rows, np.zeros((4, 3)), i, np.array([[1.0, 2.0]]), prims=("scatter",))


_AT_CASES = [("add", np.int64), ("add", np.int8), ("add", np.float64), ("add", np.float32), ("subtract", np.uint8),
             ("subtract", np.float64), ("multiply", np.int32),
             ("maximum", np.int16), ("minimum", np.uint8), ("bitwise_and", np.int32), ("bitwise_or", np.uint16),
             ("bitwise_xor", np.int64)]


@SETTINGS
@given(ufunc_dtype=st.sampled_from(_AT_CASES), n=st.integers(1, 6), data=st.data())
def test_ufunc_at_accumulates_every_repeat(ufunc_dtype, n, data):
    ufunc, dtype = ufunc_dtype
    x = data.draw(arrays_of((n, 3), dtype))
    idx = np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=12)))
    value = data.draw(arrays_of((idx.size, 3), dtype))

    def at(x, idx, value):
        getattr(np, ufunc).at(x, idx, value)
        return x
    # float repeats accumulate in XLA's order: within rounding of NumPy's sequential order
    rtol = 1e-6 if np.dtype(dtype).kind == "f" else None
    with np.errstate(all="ignore"):
        assert_lowered_like_numpy(at, x, idx, value, prims=("scatter_ufunc",), float_rtol=rtol)


def test_ufunc_at_index_error_is_numpys():
    def at(x, i, j, v):
        np.add.at(x, (i, j), v)
        return x
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 3"):
        jk.jit(at, backend=TPU_INTERPRET)(np.zeros((3, 3)), np.array([1, 7]), np.array([-8, 0]), 1.0)


@SETTINGS
@given(n=st.integers(1, 8), mode=st.sampled_from(["raise", "wrap", "clip"]), data=st.data())
def test_put_flat_indices_cyclic_values(n, mode, data):
    a = data.draw(arrays_of((n,) if n % 2 else (2, n // 2 or 1), np.float64))
    bound = 2 * a.size if mode != "raise" else a.size + 1  # raise: sometimes NumPy's IndexError
    ind = np.array(data.draw(st.lists(st.integers(-bound, bound - 1), min_size=1, max_size=9)))
    v = data.draw(arrays_of((data.draw(st.integers(1, 4)),), np.float64))

    def put(a, ind, v):
        np.put(a, ind, v, mode=mode)
        return a
    assert_lowered_like_numpy(put, a, ind, v, prims=("put",))


@SETTINGS
@given(shape=st.sampled_from([(6,), (2, 3), (3, 1, 2)]), dtype=st.sampled_from(DTYPES), data=st.data())
def test_putmask_and_place(shape, dtype, data):
    a = data.draw(arrays_of(shape, dtype))
    mask = data.draw(arrays_of(shape, np.bool_))
    values = data.draw(arrays_of((data.draw(st.integers(1, 4)),), dtype))

    def putmask(a, mask, values):
        np.putmask(a, mask, values)
        return a

    def place(a, mask, values):
        np.place(a, mask, values)
        return a
    assert_lowered_like_numpy(putmask, a, mask, values, prims=("putmask",))
    assert_lowered_like_numpy(place, a, mask, values, prims=("place",))


# ----------------------------------------------------------------------------- searchsorted

_SPECIAL = [0.0, -0.0, 1.0, 1.0, 2.5, -3.0, np.nan, np.inf, -np.inf]


@SETTINGS
@given(values=st.lists(st.sampled_from(_SPECIAL), min_size=1, max_size=10), keys=st.lists(st.sampled_from(_SPECIAL),
       max_size=8), presorted=st.booleans(), side=st.sampled_from(["left", "right"]),
       dtype=st.sampled_from([np.float64, np.float32]))
def test_searchsorted_numpys_order_and_bisection(values, keys, presorted, side, dtype):
    """Sorted inputs (NaN last, -0.0 equal to 0.0) and unsorted ones, where NumPy's answer is
    its own bisection's, key after key."""
    a = np.array(values, dtype)
    if presorted:
        a = np.sort(a)
    assert_lowered_like_numpy(lambda a, v: np.searchsorted(a, v, side=side), a, np.array(keys, dtype),
                              prims=("searchsorted",))


@SETTINGS
@given(values=st.lists(st.integers(-5, 5), min_size=1, max_size=12), keys=st.lists(st.integers(-7, 7), min_size=1,
       max_size=10), side=st.sampled_from(["left", "right"]))
def test_searchsorted_integers(values, keys, side):
    a, v = np.array(values, np.int32), np.array(keys, np.int32).reshape(-1, 1)
    assert_lowered_like_numpy(lambda a, v: np.searchsorted(a, v, side=side), a, v, prims=("searchsorted",))
    assert_lowered_like_numpy(lambda a, v: np.searchsorted(a, v, side=side), np.sort(a), v, prims=("searchsorted",))


# ----------------------------------------------------------------------------- ufunc.reduce


@SETTINGS
@given(ufunc=st.sampled_from(["bitwise_and", "bitwise_or", "bitwise_xor", "subtract"]),
       dtype=st.sampled_from([np.int8, np.uint16, np.int32, np.int64, np.bool_]),
       shape=st.sampled_from([(5,), (3, 4), (2, 0, 3), (2, 3, 2)]), keepdims=st.booleans(), data=st.data())
def test_integer_ufunc_reduce(ufunc, dtype, shape, keepdims, data):
    if ufunc == "subtract" and dtype == np.bool_:
        dtype = np.int16  # NumPy refuses subtract on bools
    a = data.draw(arrays_of(shape, dtype))
    axis = data.draw(st.sampled_from([0, -1, None] if ufunc != "subtract" else [0, -1]))
    if ufunc == "subtract" and a.shape[axis] == 0:
        return  # no identity: NumPy's ValueError when tracing
    reduce = getattr(np, ufunc).reduce
    with np.errstate(all="ignore"):
        assert_lowered_like_numpy(lambda a: reduce(a, axis=axis, keepdims=keepdims), a, prims=("ufunc_reduce",))

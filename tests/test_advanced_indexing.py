"""Advanced indexing: integer-array gathers, functional scatters, ufunc.at,
np.take / take_along_axis / put / put_along_axis / putmask / place and boolean masks, each
against NumPy on both backends, with NumPy's errors (same exception type, IndexError raised
when the call runs for a traced index), plus hypothesis generators of random index expressions.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitkernel as jk
from jitkernel.numpy import _advanced as adv

from helpers import assert_matches_numpy, builtin_type, check, HOST_BACKENDS, numpy_result

CUDA_EMULATOR_SUITE = True  # the backend fixture adds "cuda-emulator" (tests/emulator_suite.py)

def _run_both(fn, *args, backend):
    """fn run by NumPy and jitted, each on its own copies of args: the same exception type, or
    equal results and equal final arguments (the jitted call writes its arguments back)."""
    np_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    jk_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    try:
        expected = numpy_result(fn, *np_args)
    except Exception as e:  # noqa: BLE001 - the jitted call must raise the same type
        expected_type = builtin_type(e)
        with pytest.raises(expected_type):
            jk.jit(fn, backend=backend)(*jk_args)
        return
    got = jk.jit(fn, backend=backend)(*jk_args)
    assert_matches_numpy(got, expected)
    for g, e in zip(jk_args, np_args):
        if isinstance(e, np.ndarray):  # the caller's arrays: same dtype, shape and contents
            assert g.dtype == e.dtype and g.shape == e.shape and np.array_equal(g, e, equal_nan=e.dtype.kind == "f"), (g, e)


SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None, print_blob=False)

A = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
M = np.arange(12, dtype=np.int32).reshape(3, 4)


# ----------------------------------------------------------------------------- gather

GATHERS = {
    "1d-list": (lambda x, i: x[[2, 0, 2, -1]], M[0]),
    "rows": (lambda x, i: x[i], M),
    "cols": (lambda x, i: x[:, i], M),
    "pair": (lambda x, i: x[i, i], M),
    "pair-broadcast": (lambda x, i: x[i[:, None], i[None, :]], M),
    "adjacent-middle": (lambda x, i: x[:, i, i], A),
    "separated": (lambda x, i: x[i, :, i], A),
    "int-and-array": (lambda x, i: x[0, :, i], A),
    "none-ellipsis": (lambda x, i: x[None, ..., i], A),
    "slice-steps": (lambda x, i: x[::-1, i, 1::2], A),
    "ix_": (lambda x, i: x[np.ix_([0, 2], [1, 3])], M),
    "arange": (lambda x, i: x[np.arange(3)[::-1]], M),
    "static-mask": (lambda x, i: x[np.array([True, False, True])], M),
    "static-2d-mask": (lambda x, i: x[M > 6], M),
    "mask-and-array": (lambda x, i: x[np.array([True, False]), :, i], A),
    "python-bool": (lambda x, i: x[True, i], M),
    "empty-list": (lambda x, i: x[[]], M),
    "traced-0d-with-array": (lambda x, i: x[i[:1], i[1]], M),
    "traced-list": (lambda x, i: x[[i[0], i[1], 0]], M),
    "0d-static-array": (lambda x, i: x[np.array(1)], M),
}


@pytest.mark.parametrize("name", list(GATHERS))
def test_gather_matches_numpy(name, backend):
    fn, x = GATHERS[name]
    check(fn, x, np.array([2, -1]), backend=backend)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64", "float16", "float32"])
@pytest.mark.parametrize("index_dtype", ["int8", "uint8", "int32", "uint64"])
def test_gather_dtypes(dtype, index_dtype, backend):
    x = (np.arange(12) % 5).astype(dtype).reshape(3, 4)
    check(lambda x, i: x[i, 1:] + x[:, i].sum(), x, np.array([2, 0, 1], index_dtype), backend=backend)


def test_gather_feeds_fused_kernels(backend):
    check(lambda x, i: np.tanh(x[i] * 2).sum(axis=0) + x[0], np.random.default_rng(0).random((6, 5)),
          np.array([5, 0, 0, 3]), backend=backend)


@pytest.mark.parametrize("index", [np.array([4]), np.array([-5]), np.array([[0], [7]])])
def test_out_of_bounds_traced_index_raises_index_error_at_run_time(index, backend):
    f = jk.jit(lambda x, i: x[:, i], backend=backend)
    assert_matches_numpy(f(M, np.array([0, -1])), M[:, np.array([0, -1])])  # compiled and working
    axis1 = int(index.ravel()[np.abs(index.ravel()).argmax()])
    with pytest.raises(IndexError, match=f"index {axis1} is out of bounds for axis 1 with size 4"):
        f(M, index)


@pytest.mark.parametrize("fn", [
    lambda x: x[np.array([3])], lambda x: x[[0, 1], [0]], lambda x: x[np.array([1.0])],
    lambda x: x[[0], [0], [0]], lambda x: x[np.array([True, False])],
], ids=["static-out-of-bounds", "shape-mismatch", "float-index", "too-many", "mask-length"])
def test_static_index_errors_match_numpy(fn, backend):
    check(fn, M[:3, :3], backend=backend)


def test_traced_float_index_raises_index_error(backend):
    with pytest.raises(IndexError, match="integer"):
        jk.jit(lambda x, i: x[i], backend=backend)(M, np.array([1.0]))


def test_traced_mask_read_has_a_data_dependent_length(backend):
    def f(x):
        return x[x > 3]  # (tests/test_data_dependent_shapes.py has the rest)
    _run_both(f, M, backend=backend)


@pytest.mark.parametrize("fn", [np.nonzero, np.flatnonzero, np.argwhere])
def test_data_dependent_functions(fn, backend):
    _run_both(lambda x: fn(x > 3), M, backend=backend)


def test_gather_is_a_copy_and_a_library_step():
    text = jk.jit(lambda x, i: x[i] + 1).lower(M, np.array([0])).as_text("kernels")
    assert "gather" in text


def test_gather_of_a_one_dimensional_array_is_a_load_inside_a_kernel():
    """`x[idx]` of a 1-D x fuses: each element loads x at its index, checked as NumPy checks it
    (a negative index wraps once; one still outside raises IndexError with NumPy's message,
    also from a kernel split across threads)."""
    fn = lambda x, i: x[i] * 2 + 1  # noqa: E731
    f = jk.jit(fn, backend="cpu")
    x = np.arange(10.0)
    idx = np.array([3, -1, 0, 9, -10])
    text = f.lower(x, idx).as_text("kernels")
    assert "take_at" in text and "library" not in text
    np.testing.assert_array_equal(f(x, idx), fn(x, idx))
    for bad in (np.array([1, 10]), np.array([-11, 0])):
        with pytest.raises(IndexError, match=f"index {bad[bad != bad.clip(-10, 9)][0]} is out of bounds for axis 0 with size 10"):
            f(x, bad)
    big = np.zeros(1 << 20, np.int64)  # split across threads: each thread's own status word
    big[777_777] = -11
    with pytest.raises(IndexError, match="index -11 is out of bounds for axis 0 with size 10"):
        f(x, big)
    big[777_777] = 4
    np.testing.assert_array_equal(f(x, big), fn(x, big))


def test_uint64_indices_of_fused_gathers_wrap_as_numpys():
    """NumPy converts an index array to intp: 2**64 - 1 is -1, the last element."""
    fn = lambda x, i: x[i]  # noqa: E731
    x = np.arange(5.0)
    idx = np.array([2**64 - 1, 2, 2**63 + 1], np.uint64)
    with pytest.raises(IndexError):
        fn(x, idx)
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 5"):
        jk.jit(fn)(x, idx)
    np.testing.assert_array_equal(jk.jit(fn)(x, idx[:2]), fn(x, idx[:2]))


@SETTINGS
@given(n=st.integers(1, 6), index=st.lists(st.integers(-8, 8), max_size=7),
       index_dtype=st.sampled_from(["int8", "int32", "int64", "uint16"]),
       dtype=st.sampled_from(["float64", "float32", "int32", "bool"]),
       use=st.sampled_from(["plain", "elementwise", "sum", "twice", "in_loop"]))
def test_random_gathers_of_one_dimensional_arrays_match_numpy(n, index, index_dtype, dtype, use):
    idx = np.array(index, np.int64)
    if np.dtype(index_dtype).kind == "u":
        idx = np.abs(idx)
    idx = idx.astype(index_dtype)
    x = (np.arange(n) * 3 % 7 - 2).astype(dtype)
    uses = {
        "plain": lambda x, i: x[i],
        "elementwise": lambda x, i: x[i] * x[i[::-1]] if x.dtype != bool else x[i] & ~x[i[::-1]],
        "sum": lambda x, i: x[i].sum(),
        "twice": lambda x, i: x[x[i].astype(np.int64) % x.size],
    }

    def in_loop(x, i):  # a body gathering from the array it writes: not updated in place
        y = x.copy()
        for k in range(i.size):
            y[k % y.size] = y[i[k:k + 1]].sum() + 1 if y.dtype != bool else not y[i[k:k + 1]].any()
        return y
    uses["in_loop"] = in_loop
    _run_both(uses[use], x, idx, backend="cpu")


# ----------------------------------------------------------------------------- take

@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("idx", [np.array([0, 2, -1]), np.array([[5, -7], [1, 0]]), np.array(2)],
                         ids=["1d", "2d-out-of-range", "0d"])
def test_take_matches_numpy(mode, axis, idx, backend):
    check(lambda a, i: np.take(a, i, axis=axis, mode=mode), M, idx, backend=backend)


def test_take_list_and_scalar_indices(backend):
    check(lambda a: np.take(a, [1, -1], axis=1) * 2, M, backend=backend)
    check(lambda a: np.take(a, 5), M, backend=backend)


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_take_along_axis_matches_numpy(axis, backend):
    x = np.random.default_rng(1).random((3, 4))
    idx = np.argsort(x, axis=axis) if axis is not None else np.argsort(x, axis=None)[::-1].copy()
    check(lambda a, i: np.take_along_axis(a, i, axis=axis), x, idx, backend=backend)
    check(lambda a, i: np.take_along_axis(a, i[:1] if axis is not None else i[:2], axis=axis), x, idx,
          backend=backend)


def test_take_along_axis_errors(backend):
    check(lambda a, i: np.take_along_axis(a, i, axis=1), M, np.array([0, 1]), backend=backend)  # ndim
    check(lambda a, i: np.take_along_axis(a, i, axis=1), M, np.array([[9]]), backend=backend)  # bounds


# ----------------------------------------------------------------------------- scatter


def _update(x, index, value):
    """What `x[index] = value` leaves in x, by NumPy."""
    out = np.array(x, copy=True)
    out[index] = value
    return out


@pytest.mark.parametrize("index,value", [
    ((np.array([0, 2, 0]),), np.array([[1], [2], [3]])),  # repeated index: the last value wins
    ((slice(None), np.array([3, -1])), 7),
    ((np.array([1, 2]), np.array([0, 3])), np.array([-1, -2])),
    ((np.array([[0], [2]]), np.array([1, 3])), np.array([10, 20])),
    ((np.array([True, False, True]),), np.array([5, 6, 7, 8])),
    ((np.array([0, 1]), slice(1, 3)), np.array([[1, 2], [3, 4]])),
], ids=["repeated", "cols-scalar", "pairs", "broadcast", "static-mask", "array-slice"])
def test_functional_scatter_matches_numpy(index, value, backend):
    def f(x, v):
        return adv.advanced_update(x, index, v)
    assert_matches_numpy(jk.jit(f, backend=backend)(M, value), _update(M, index, value))


def test_scatter_errors(backend):
    with pytest.raises(ValueError, match="shape mismatch"):
        jk.jit(lambda x: adv.advanced_update(x, (np.array([0, 1]),), np.ones(3)), backend=backend)(M)
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 0 with size 3"):
        jk.jit(lambda x, i: adv.advanced_update(x, (i,), 0), backend=backend)(M, np.array([4]))
    with pytest.raises(OverflowError):  # a Python int out of the array's range, as NumPy
        jk.jit(lambda x, i: adv.advanced_update(x, (i,), 300), backend=backend)(M.astype(np.int8), np.array([0]))
    with pytest.raises(OverflowError):  # ... also when it is a traced Python int argument
        jk.jit(lambda x, i, v: adv.advanced_update(x, (i,), v), backend=backend)(M.astype(np.int8), np.array([0]), 300)


def test_setitem_and_buffered_augmented_assignment(backend):
    def f(a, i, v):
        x = a * 1
        x[i] = v
        x[i, 0] += 10  # buffered: a repeated index is incremented once
        x[:, i[:1]] *= -1
        return x
    check(f, M.astype(np.float32), np.array([0, 2, 0]), 1.5, backend=backend)
    check(f, M, np.array([0, 2, 0]), np.array([[1], [2], [3]]), backend=backend)


def test_setitem_value_casts_as_numpy(backend):
    def f(a, i):
        x = a * 1
        x[i] = 2.75  # float into int: truncated, as NumPy's setitem
        return x
    check(f, M.astype(np.int16), np.array([1]), backend=backend)


@pytest.mark.parametrize("ufunc", [np.add, np.subtract, np.multiply, np.maximum, np.minimum, np.bitwise_or])
def test_ufunc_at_accumulates_repeated_indices(ufunc, backend):
    idx = np.array([0, 0, 2, 0, -1])
    vals = np.array([1, 2, 3, 4, 5], np.int32)
    expected = M.copy()
    ufunc.at(expected, (idx, 1), vals)
    got = jk.jit(lambda a, i, v: adv.ufunc_at_result(ufunc, a, (i, 1), v), backend=backend)(M, idx, vals)
    assert_matches_numpy(got, expected)


def test_unary_ufunc_at(backend):
    x = np.linspace(-1, 1, 6)
    expected = x.copy()
    np.negative.at(expected, [0, 0, 3])
    assert_matches_numpy(jk.jit(lambda a: adv.ufunc_at_result(np.negative, a, [0, 0, 3]), backend=backend)(x),
                         expected)


def test_ufunc_at_through_numpy_writes_back(backend):
    def f(a, i, v):
        x = a * 1
        np.add.at(x, i, v)
        return x
    check(f, np.zeros(4), np.array([0, 0, 3, 0]), 1.0, backend=backend)
    check(f, np.zeros((2, 3)), np.array([1, 1]), np.array([1.0, 2.0, 3.0]), backend=backend)


def test_ufunc_at_errors(backend):
    with pytest.raises(IndexError):
        jk.jit(lambda a, i: adv.ufunc_at_result(np.add, a, i, 1), backend=backend)(np.zeros(3), np.array([3]))
    with pytest.raises(TypeError):  # no bitwise_or loop for floats (NumPy's UFuncTypeError)
        np.bitwise_or.at(np.zeros(3), [0], 1)
    with pytest.raises(TypeError):
        jk.jit(lambda a, i: adv.ufunc_at_result(np.bitwise_or, a, i, 1), backend=backend)(np.zeros(3), np.array([0]))


# ----------------------------------------------------------------------------- put, put_along_axis, masks

@pytest.mark.parametrize("mode", ["raise", "wrap", "clip"])
def test_put_matches_numpy(mode, backend):
    for ind, v in [(np.array([0, 13, -2, 0]), np.array([1, 2, 3])), (np.array([5]), 9)]:
        expected = M.copy()
        try:
            np.put(expected, ind, v, mode=mode)
        except IndexError:
            with pytest.raises(IndexError):
                jk.jit(lambda a, i, v: adv.put_result(a, i, v, mode), backend=backend)(M, ind, v)
            continue
        got = jk.jit(lambda a, i, v: adv.put_result(a, i, v, mode), backend=backend)(M, ind, v)
        assert_matches_numpy(got, expected)


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_put_along_axis_matches_numpy(axis, backend):
    x = np.random.default_rng(2).random((3, 4))
    idx = np.argmax(x, axis=axis, keepdims=True) if axis is not None else np.array([0, 11, 5])
    expected = x.copy()
    np.put_along_axis(expected, idx, -1.0, axis=axis)
    got = jk.jit(lambda a, i: adv.put_along_axis_result(a, i, -1.0, axis), backend=backend)(x, idx)
    assert_matches_numpy(got, expected)


@pytest.mark.parametrize("values", [7, np.array([1, 2]), np.array([-1, -2, -3, -4, -5])], ids=["scalar", "cycle", "long"])
def test_putmask_and_place_match_numpy(values, backend):
    mask = (M % 3) == 1
    for x in [M, M.astype(np.float32)]:
        for functional, numpy_fn in [(adv.putmask_result, np.putmask), (adv.place_result, np.place)]:
            expected = x.copy()
            try:
                numpy_fn(expected, mask, values)
            except TypeError:  # np.place casts safely: int64 values into int32 raise
                with pytest.raises(TypeError):
                    jk.jit(lambda a, m, v: functional(a, m, v), backend=backend)(x, mask, values)
                continue
            got = jk.jit(lambda a, m, v: functional(a, m, v), backend=backend)(x, mask, values)
            assert_matches_numpy(got, expected)


def test_place_with_no_values_raises_as_numpy(backend):
    with pytest.raises(ValueError, match="empty"):
        np.place(M.copy(), M > 3, np.array([], np.int32))
    with pytest.raises(ValueError, match="empty"):
        jk.jit(lambda a, v: adv.place_result(a, a > 3, v), backend=backend)(M, np.array([], np.int32))


def test_mutating_functions_write_back(backend):
    def f(a, i, m):
        x = a * 1
        np.put(x, i, -1)
        np.putmask(x, m, 100)
        np.place(x, x == 5, [7, 8])
        np.put_along_axis(x, i.reshape(1, -1)[:, :1] % 4, 42, axis=1)
        return x
    check(f, M, np.array([0, 3]), M > 9, backend=backend)


def test_mask_assignment(backend):
    def f(a, v):
        x = a * 1
        x[x > 5] = v
        x[x < 2] += 10
        x[np.array([True, False, True])] *= 2
        return x
    check(f, M.astype(np.float64), 0.5, backend=backend)
    check(f, M, 3, backend=backend)
    check(f, M, np.array([1, 2, 3, 4]), backend=backend)


def test_mask_augmented_assignment_broadcasts_like_numpy(backend):
    def f(a, m, v):
        x = a * 1
        x[m] += v
        return x
    rows = np.array([True, False, True])
    check(f, M, rows, np.array([1, 2, 3, 4]), backend=backend)
    check(f, M, rows, np.array([[1, 2, 3, 4]]), backend=backend)
    check(f, M, M > 4, np.int32(3), backend=backend)
    check(f, M, M > 4, 2.5, backend=backend)  # int32 += float: NumPy's same_kind casting error


def test_mask_augmented_assignment_with_count_sized_value_is_unsupported(backend):
    def f(a, m, v):
        x = a * 1
        x[m] += v
        return x
    with pytest.raises(jk.UnsupportedOperationError, match="first dimension must be 1"):
        jk.jit(f, backend=backend)(M, np.array([True, False, True]), np.ones((2, 4), np.int32))


# ----------------------------------------------------------------------------- hypothesis


@st.composite
def index_expressions(draw):
    """A random array shape and an index of ints, slices, None, Ellipsis and integer arrays
    (broadcastable or not, in range, negative or, rarely, out of bounds), at least one array;
    sometimes one index too many."""
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(0, 4) if draw(st.integers(0, 7)) == 0 else st.integers(1, 4),
                                min_size=ndim, max_size=ndim)))
    nreal = draw(st.integers(1, ndim)) + (1 if draw(st.integers(0, 15)) == 0 else 0)
    forced = draw(st.integers(0, nreal - 1))  # this one is an array
    entries = []
    for d in range(nreal):
        n = shape[d] if d < ndim else 1
        kind = "array" if d == forced else draw(st.sampled_from(["int", "slice", "slice", "array"]))
        if kind == "int":
            entries.append(draw(st.integers(-n, n - 1) if draw(st.integers(0, 7)) and n else st.integers(-n - 1, n)))
        elif kind == "slice":
            bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
            entries.append(slice(draw(bound), draw(bound), draw(st.sampled_from([None, 1, 2, -1, -2]))))
        else:
            ashape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
            lo, hi = (-n, n - 1) if draw(st.integers(0, 7)) and n else (-n - 2, n + 1)
            values = draw(st.lists(st.integers(lo, hi), min_size=int(np.prod(ashape)), max_size=int(np.prod(ashape))))
            dtype = draw(st.sampled_from([np.int64, np.int32, np.int8, np.uint8]))
            if dtype == np.uint8:
                values = [v % max(n, 1) for v in values]
            entries.append(np.array(values).reshape(ashape).astype(dtype))
    for _ in range(draw(st.integers(0, 2))):
        entries.insert(draw(st.integers(0, len(entries))), None)
    if draw(st.booleans()):
        entries.insert(draw(st.integers(0, len(entries))), Ellipsis)
    return shape, tuple(entries)


def _traced_index_function(index):
    """f(x, *arrays) computing x[index] with the index arrays as traced arguments."""
    positions = [k for k, e in enumerate(index) if isinstance(e, np.ndarray)]

    def f(x, *arrays):
        ix = list(index)
        for k, a in zip(positions, arrays):
            ix[k] = a
        return x[tuple(ix)]
    return f, [index[k] for k in positions]


def _traced_ufunc_at(index, ufunc, value):
    """g(x, *arrays): a copy of x with `ufunc.at(y, index, value)` applied, the index arrays
    traced arguments."""
    positions = [k for k, e in enumerate(index) if isinstance(e, np.ndarray)]

    def g(x, *arrays):
        ix = list(index)
        for k, a in zip(positions, arrays):
            ix[k] = a
        y = x * 1
        ufunc.at(y, tuple(ix), value)
        return y
    return g, [index[k] for k in positions]


@SETTINGS
@given(expr=index_expressions(), traced=st.booleans(), backend=st.sampled_from(HOST_BACKENDS))
def test_random_index_expressions_match_numpy(expr, traced, backend):
    shape, index = expr
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    f, arrays = _traced_index_function(index) if traced else (lambda x: x[index], [])
    try:
        expected = x[index]
    except IndexError as e:  # the same type and NumPy's own words
        with pytest.raises(IndexError) as got:
            jk.jit(f, backend=backend)(x, *arrays)
        assert str(got.value) == str(e)
        return
    assert_matches_numpy(jk.jit(f, backend=backend)(x, *arrays), expected)


def scatter_value(x, index, data, mismatch: bool = True) -> np.ndarray:
    """A value to write at x[index]: the indexed shape with some leading dimensions dropped and
    some set to 1 (broadcastable), and with `mismatch` sometimes one that does not broadcast."""
    try:
        target_shape = x[index].shape
    except IndexError:
        target_shape = ()
    vshape = list(target_shape[data.draw(st.integers(0, len(target_shape))):])
    vshape = [1 if data.draw(st.booleans()) else n for n in vshape]
    if mismatch and data.draw(st.integers(0, 5)) == 0:
        vshape = vshape + [2]
    return np.arange(int(np.prod(vshape)), dtype=np.int16).reshape(vshape) - 50


@SETTINGS
@given(expr=index_expressions(), backend=st.sampled_from(HOST_BACKENDS), data=st.data())
def test_random_scatters_match_numpy(expr, backend, data):
    shape, index = expr
    x = np.arange(int(np.prod(shape)), dtype=np.int16).reshape(shape)
    value = scatter_value(x, index, data)
    f, arrays = _traced_index_function(index)

    def numpy_update(x, v, *arrays):
        out = x.copy()
        out[index] = v
        return out

    def jitted_update(x, v, *arrays):
        ix = list(index)
        for k, a in zip([k for k, e in enumerate(index) if isinstance(e, np.ndarray)], arrays):
            ix[k] = a
        return adv.advanced_update(x, tuple(ix), v)
    try:
        expected = numpy_update(x, value)
    except Exception as e:  # noqa: BLE001 - the jitted call must raise the same type
        with pytest.raises(type(e)):
            jk.jit(jitted_update, backend=backend)(x, value, *arrays)
        return
    assert_matches_numpy(jk.jit(jitted_update, backend=backend)(x, value, *arrays), expected)


# ----------------------------------------------------------------------------- arguments and views


def test_scatters_write_arguments_back(backend):
    def f(x, i, m):
        x[i] = -1
        np.add.at(x, i, 10)
        x[m] *= 3
        np.put_along_axis(x, i.reshape(-1, 1)[:3] % 4, 0, axis=1)
        return x.sum()
    _run_both(f, M.copy(), np.array([0, 2, 0]), M > 8, backend=backend)


def test_scatter_through_a_view_writes_the_base(backend):
    def f(x, i):
        v = x[1:]
        v[i, 0] = 99  # through the view
        w = x.T
        w[i] += 1  # x.T[i] is a column of x
        return v.sum(axis=1)
    _run_both(f, M.astype(np.float64), np.array([1, 0, 1]), backend=backend)


def test_gather_after_a_scatter_sees_it(backend):
    def f(x, i):
        y = np.zeros_like(x)
        y[i] = x[i] * 2
        return y[i[::-1]] + y.sum()
    _run_both(f, M, np.array([2, 0]), backend=backend)


def test_failed_call_leaves_arguments_unchanged(backend):
    def f(x, i):
        x[0] = 5
        x[i] = 7  # out of bounds: raises when the call runs
        return x
    x = M.copy()
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        jk.jit(f, backend=backend)(x, np.array([3]))
    assert_matches_numpy(x, M)


def test_mask_assignment_is_one_fused_select():
    def f(x, t):
        x[x > t] = t
        x[x < -t] += 1
    text = jk.jit(f).lower(np.zeros((4, 5)), 0.5).as_text("kernels")
    assert "library" not in text and text.count("kernel k") == 1, text


@st.composite
def mask_updates(draw):
    """x, a mask over its leading dimensions (sometimes of the wrong length), an operator and a
    value broadcastable to the selection for every count (or, for `=`, one value per True)."""
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    k = draw(st.integers(1, ndim))
    mshape = shape[:k] if draw(st.integers(0, 9)) else shape[:k - 1] + (shape[k - 1] + 1,)
    mask = np.array(draw(st.lists(st.booleans(), min_size=int(np.prod(mshape)), max_size=int(np.prod(mshape))))).reshape(mshape)
    op = draw(st.sampled_from(["=", "+=", "*=", "-="]))
    rest = shape[k:]
    vshape = [1 if draw(st.booleans()) else n for n in rest[draw(st.integers(0, len(rest))):]]
    if draw(st.booleans()):
        vshape = [1] + vshape
    if op == "=" and draw(st.integers(0, 3)) == 0:
        vshape = [int(mask.sum())] + list(rest)  # one value per True
    dtype = draw(st.sampled_from([np.int32, np.float64, np.uint8]))
    value = np.arange(int(np.prod(vshape)), dtype=dtype).reshape(vshape) + 1
    if draw(st.booleans()) and not vshape:
        value = draw(st.sampled_from([3, 2.5, True]))
    return shape, mask, op, value


@SETTINGS
@given(case=mask_updates(), traced_mask=st.booleans(), backend=st.sampled_from(HOST_BACKENDS))
def test_random_mask_updates_match_numpy(case, traced_mask, backend):
    shape, mask, op, value = case
    x = (np.arange(int(np.prod(shape))) % 7).astype(np.int16).reshape(shape)

    def f(x, m, v):
        m = m if traced_mask else mask
        if op == "=":
            x[m] = v
        elif op == "+=":
            x[m] += v
        elif op == "*=":
            x[m] *= v
        else:
            x[m] -= v
        return x * 1
    _run_both(f, x, mask, value, backend=backend)


def test_ndarray_methods(backend):
    def f(x, i):
        y = x.take(i, axis=1) + x.take(4)
        z = x * 1
        z.put(i, -7)
        return y, z
    _run_both(f, M, np.array([0, -1, 5]), backend=backend)
    _run_both(lambda x: x.nonzero(), M, backend=backend)


@SETTINGS
@given(expr=index_expressions(), ufunc=st.sampled_from([np.add, np.multiply, np.maximum, np.subtract]),
       backend=st.sampled_from(HOST_BACKENDS), scalar=st.booleans())
def test_random_ufunc_at_matches_numpy(expr, ufunc, backend, scalar):
    shape, index = expr
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape) % 5
    g, arrays = _traced_ufunc_at(index, ufunc, 3 if scalar else np.int32(-2))
    _run_both(g, x, *arrays, backend=backend)


@pytest.mark.usefixtures("no_static_int_fallback")
def test_traced_slice_bound_next_to_an_index_array_raises_clear_error(backend):
    def f(x, n, i):
        return x[:n, i]
    with pytest.raises(jk.UnsupportedOperationError, match=r"data-dependent length.*test_advanced_indexing.py:\d+"):
        jk.jit(f, backend=backend)(M, 2, np.array([0]))


def test_static_0d_integer_array_index_is_a_copy(backend):
    def f(x):
        v = x[np.array(1)]  # an advanced index in NumPy 2: a copy, not a view
        v[0] = -5
        x[np.array(2)] = 9
        x[np.array([0]), np.array(1)] = 4
        return x
    _run_both(f, M, backend=backend)


@pytest.mark.parametrize("second", [[1, 3], [True, False, False, True], []], ids=["ints", "mask", "empty"])
def test_ix_of_traced_indices(second, backend):
    check(lambda x, i: x[np.ix_(i, second)] * 2, M, np.array([2, 0, -1]), backend=backend)
    check(lambda x, i: x[np.ix_(i, i)], M[:, :3], np.array([2, 0]), backend=backend)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int64", "float16", "float64"])
@pytest.mark.parametrize("value", [2.5, 7, True, np.float32(-1.5), np.array([1, 0, 2], np.int8)],
                         ids=["py-float", "py-int", "py-bool", "f32", "i8-array"])
def test_update_casts_and_errors_as_numpy(dtype, value, backend):
    def f(x, i):
        y = x * 1
        y[i] = value  # setitem: unsafe cast
        y[i[:1]] += value  # tmp = y[i]; tmp += v (same_kind); y[i] = tmp
        y[y > 1] = value
        return y
    x = (np.arange(12) % 3).astype(dtype).reshape(4, 3)
    _run_both(f, x, np.array([3, 0, -1]), backend=backend)

    def g(x, i, v):  # the value traced (a Python scalar argument stays weakly typed)
        y = x * 1
        y[i] = v
        y[i[:1]] += v
        y[y > 1] = v
        return y
    _run_both(g, x, np.array([3, 0, -1]), value, backend=backend)


# ----------------------------------------------------------------------------- in-place library steps (cpu)


def _in_place_decisions(fn, *args):
    from jitkernel.backends.cpu.in_place_updates import in_place_impl
    from jitkernel.fusion import LibraryCall
    kp = jk.jit(fn).lower(*args).compiled.executable.kp
    return [(s.prim, in_place_impl(kp, s) is not None) for s in kp.steps if isinstance(s, LibraryCall)]


def test_scatters_into_dead_temporaries_write_in_place():
    def chain(x, i):
        y = x * 2
        y[i] = 0
        np.add.at(y, i, 1)
        return y
    assert _in_place_decisions(chain, np.ones(6), np.array([1, 1])) == [("scatter", True), ("scatter_ufunc", True)]
    _run_both(chain, np.ones(6), np.array([1, 1, -1]), backend="cpu")


def test_scatters_keep_targets_that_are_read_later_or_may_be_views():
    def read_later(x, i):
        y = x * 2
        z = adv.advanced_update(y, (i,), 0.0)
        return y + z  # y is read after the update: it must stay intact

    def argument_target(x, i):
        return adv.advanced_update(x, (i,), 0.0)  # the caller's array: never written by the step

    def view_of_argument(x, i):
        g = x[np.array(0)]  # a gather whose NumPy result may be a view of x
        return adv.advanced_update(g, (i,), -1.0)
    x, i = np.arange(6.0).reshape(2, 3), np.array([1, 1])
    assert _in_place_decisions(read_later, x, i) == [("scatter", False)]
    assert _in_place_decisions(argument_target, x, i) == [("scatter", False)]
    assert _in_place_decisions(view_of_argument, x, i) == [("gather", False), ("scatter", False)]
    for fn in (read_later, argument_target, view_of_argument):
        _run_both(fn, x, i, backend="cpu")


@pytest.mark.parametrize("form", ["gather", "scatter", "ufunc.at"])
def test_run_time_index_error_after_an_argument_update_leaves_it_unchanged(form, backend):
    def f(x, i):
        x *= 2  # an elementwise update of the argument, before the raising step
        if form == "gather":
            return x[i]
        if form == "scatter":
            x[i] = 5.0
        else:
            np.add.at(x, i, 1.0)
        return x
    x = np.arange(4.0)
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 4"):
        jk.jit(f, backend=backend)(x, np.array([1, 7]))
    assert_matches_numpy(x, np.arange(4.0))


def test_mask_augmented_assignment_with_an_expression_value(backend):
    def f(a, b):
        x = a * 1
        x[x[:, 0] > 3] += b * 2 - b[0]
        x[(x % 2) == 0] //= 3
        return x
    _run_both(f, M, np.arange(4, dtype=np.int32), backend=backend)


@SETTINGS
@given(data=st.data(), backend=st.sampled_from(HOST_BACKENDS))
def test_random_take_matches_numpy(data, backend):
    ndim = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    axis = data.draw(st.sampled_from([None] + list(range(-ndim, ndim))))
    mode = data.draw(st.sampled_from(["raise", "wrap", "clip"]))
    n = int(np.prod(shape)) if axis is None else shape[axis]
    ishape = tuple(data.draw(st.lists(st.integers(0, 3), min_size=0, max_size=2)))
    values = data.draw(st.lists(st.integers(-n - 2, n + 1), min_size=int(np.prod(ishape)), max_size=int(np.prod(ishape))))
    idx = np.array(values, dtype=np.int64).reshape(ishape)
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    _run_both(lambda x, i: np.take(x, i, axis=axis, mode=mode), x, idx, backend=backend)
    if axis is not None:
        along = np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))).reshape(shape)
        _run_both(lambda x, i: np.take_along_axis(x, i, axis=axis), x, along, backend=backend)
        _run_both(lambda x, i: (lambda d: (np.put_along_axis(d, i, -1.0, axis=axis), d)[1])(x * 1), x, along,
                  backend=backend)


def test_library_steps_read_arguments_before_they_are_overwritten(backend):
    def gather_then_write(x, i):
        y = x[i]
        x[:] = 0
        x += 1
        return y

    def scatter_then_write(x, i):
        z = adv.advanced_update(x, (i,), -1.0)
        x *= 3
        return z

    def ufunc_at_then_overwrite(x, y, i):
        np.add.at(y, i, x[i])
        x[...] = y[::-1]
        return x.sum()
    x, y, i = np.arange(5.0), np.ones(5), np.array([4, 0, 4])
    _run_both(gather_then_write, x, i, backend=backend)
    _run_both(scatter_then_write, x, i, backend=backend)
    _run_both(ufunc_at_then_overwrite, x, y, i, backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_an_unread_gather_or_scatter_with_a_bad_index_still_raises(backend):
    # NumPy evaluates every statement: `unused = x[idx]` raises for an out-of-bounds idx even
    # though nothing reads it, and so must the compiled function (and vmap's per-example x[i])
    def gather(x, i):
        unused = x[i]  # noqa: F841
        return x + 1

    def scatter(x, i):
        y = x.copy()
        y[i] = 0.0
        return x + 1

    for f in (gather, scatter):
        with pytest.raises(IndexError, match="out of bounds"):
            jk.jit(f, backend=backend)(np.ones(3), np.array([5]))
        np.testing.assert_array_equal(jk.jit(f, backend=backend)(np.ones(3), np.array([2])), np.full(3, 2.0))
    with pytest.raises(IndexError, match="out of bounds"):
        jk.vmap(gather, in_axes=(None, 0))(np.ones(3), np.array([5, 1]))

"""Array functions (numpy/_matrix.py, _manipulation.py, _statistics.py) against
NumPy on both backends: dtypes, shapes, negative axes, errors, run-time data checks; hypothesis
for pad, roll, repeat and tile."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from jitkernel.errors import UnsupportedOperationError

from helpers import check, HOST_BACKENDS, rng_for, sample
import emulator_suite

BACKENDS = HOST_BACKENDS + emulator_suite.emulator_backends()  # cuda-emulator where g++ is
DRAWN_BACKENDS = emulator_suite.DRAWN_BACKENDS


def _arg(dtype, shape, *key):
    return sample(rng_for("arrayfns", str(dtype), shape, *key), dtype, shape, -5, 5)


# ----------------------------------------------------------------------------- matrices

MATRIX_CASES = {
    "triu": lambda a: np.triu(a),
    "triu_k2": lambda a: np.triu(a, 2),
    "tril_km1": lambda a: np.tril(a, -1),
    "tril_1d": lambda a: np.tril(a[0]),
    "triu_batched": lambda a: np.triu(np.stack([a, a + 1])),
    "diag_matrix": lambda a: np.diag(a),
    "diag_matrix_k": lambda a: np.diag(a, -2),
    "diag_vector": lambda a: np.diag(a[0]),
    "diag_vector_k": lambda a: np.diag(a[0], 2),
    "diag_vector_negk": lambda a: np.diag(a[1], -3),
    "diagflat": lambda a: np.diagflat(a[:2], 1),
    "diagonal_offsets": lambda a: (np.diagonal(a, 1), np.diagonal(a, -1), np.diagonal(a, 9)),
    "diagonal_axes": lambda a: np.diagonal(np.stack([a, a]), 0, -1, 0),
    "method_diagonal": lambda a: a.diagonal(1) + 0,
    "trace": lambda a: np.trace(a),
    "trace_offset_dtype": lambda a: np.trace(a, -1, dtype=np.float32),
    "method_trace": lambda a: a.trace(2),
    "linalg_trace": lambda a: np.linalg.trace(np.stack([a, a]), offset=1),
    "linalg_diagonal": lambda a: np.linalg.diagonal(np.stack([a, a])),
    "matrix_transpose": lambda a: np.linalg.matrix_transpose(a),
    "meshgrid_xy": lambda a: np.meshgrid(a[0], a[1, :3]),
    "meshgrid_ij_sparse": lambda a: np.meshgrid(a[0], a[1, :3], a[2, :2], indexing="ij", sparse=True),
    "meshgrid_ij": lambda a: np.meshgrid(a[0], a[1, :3], indexing="ij"),
    "ndim_shape_size": lambda a: a * (np.ndim(a) + np.size(a) + np.size(a, -1) + np.shape(a)[0]),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float64", "int8", "bool"])
@pytest.mark.parametrize("name", sorted(MATRIX_CASES))
def test_matrix_functions(name, dtype, backend):
    check(MATRIX_CASES[name], _arg(dtype, (4, 5), name), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_matrix_errors(backend):
    m = np.ones((3, 3))
    for fn, arg in [(lambda a: np.diagonal(a, 0, 1, -1), m), (lambda a: np.diagonal(a, 0, 0, 2), m),
                    (lambda a: np.diagonal(a), m[0]), (lambda a: np.diag(a), np.ones((2, 2, 2))),
                    (lambda a: np.triu(a), np.ones(())), (lambda a: np.meshgrid(a, a, indexing="yx"), m[0])]:
        check(fn, arg, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_triangles_with_a_traced_k(backend):
    import jitkernel.numpy as jnp
    f = jk.jit(lambda a, k: (np.triu(a, k), np.tril(a, k), jnp.tri(4, 5, k, dtype=np.int32)), backend=backend)
    a = _arg("float64", (4, 5))
    for k in (-5, -1, 0, 2, 7):  # one compilation: k is a run-time value
        for got, expected in zip(f(a, k), (np.triu(a, k), np.tril(a, k), np.tri(4, 5, k, dtype=np.int32))):
            assert got.dtype == expected.dtype and np.array_equal(got, expected)


def test_triangles_and_diagonals_fuse():
    """No mask in memory, no division in the diagonal's index map: one loop each."""
    text = jk.jit(lambda a: np.triu(a, 1) * 2).lower(np.ones((5, 5))).as_text("kernels")
    assert text.count("kernel ") == 1 and "iota" in text
    text = jk.jit(lambda a: np.diagonal(a, 1) + 1).lower(np.ones((5, 6))).as_text("kernels")
    assert text.count("kernel ") == 1 and "7*i0 + 1" in text


LINSPACE_CASES = {
    "basic": lambda a, b: np.linspace(a, b, 7),
    "no_endpoint_retstep": lambda a, b: np.linspace(a, b, 5, endpoint=False, retstep=True),
    "vector_axis": lambda a, b: np.linspace(a * np.ones(3), b, 4, axis=-1),
    "int_dtype": lambda a, b: np.linspace(a, b * 10, 6, dtype=np.int64),
    "num1": lambda a, b: np.linspace(a, b, 1, retstep=True),
    "num0": lambda a, b: np.linspace(a, b, 0),
    "zero_step": lambda a, b: np.linspace(a, a, 4),
    "logspace": lambda a, b: np.logspace(a, b, 5),
    "logspace_base": lambda a, b: np.logspace(a, b, 4, base=2.0, endpoint=False),
    "logspace_array_base": lambda a, b: np.logspace(a, b, 3, base=np.array([2.0, 10.0]), axis=-1),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(LINSPACE_CASES))
def test_linspace_with_traced_end_points(name, backend):
    check(LINSPACE_CASES[name], np.float64(-1.5), np.float64(2.25), backend=backend)
    check(LINSPACE_CASES[name], np.float32(0.5), np.float32(3.0), backend=backend)
    check(LINSPACE_CASES[name], 1.0, 4.0, backend=backend)  # Python float arguments (weak)


def test_static_linspace_and_eye_are_constants():
    f = jk.jit(lambda x: x + np.linspace(0, 1, 5) + np.eye(5)[0] + np.identity(5, dtype=np.int8)[1])
    x = np.arange(5.0)
    np.testing.assert_array_equal(f(x), x + np.linspace(0, 1, 5) + np.eye(5)[0] + np.identity(5, np.int8)[1])


# ----------------------------------------------------------------------------- manipulation

MANIPULATION_CASES = {
    "repeat_flat": lambda a: np.repeat(a, 2),
    "repeat_axis": lambda a: np.repeat(a, 3, axis=-1),
    "repeat_counts": lambda a: np.repeat(a, [1, 0, 2, 1], axis=0),
    "repeat_many_counts": lambda a: np.repeat(a, [3, 1, 2, 0, 1, 2, 1, 3, 1, 2, 3, 1, 2, 0, 1, 1, 2, 2, 1, 3]),
    "method_repeat": lambda a: a.repeat(2, 1),
    "tile_int": lambda a: np.tile(a, 2),
    "tile_tuple": lambda a: np.tile(a, (2, 1, 3)),
    "tile_short": lambda a: np.tile(a[0], (3, 2)),
    "roll_flat": lambda a: np.roll(a, 3),
    "roll_axes": lambda a: np.roll(a, (1, -2), (0, 1)),
    "roll_same_axis_twice": lambda a: np.roll(a, (1, 2), (-1, -1)),
    "roll_big": lambda a: np.roll(a, -13, 1),
    "fliplr": lambda a: np.fliplr(a),
    "flipud": lambda a: np.flipud(a),
    "flip_axes": lambda a: (np.flip(a), np.flip(a, -1), np.flip(a, (0, 1))),
    "rot90": lambda a: (np.rot90(a), np.rot90(a, 2), np.rot90(a, -1), np.rot90(a, 1, (1, 0))),
    "pad_constant": lambda a: np.pad(a, ((1, 2), (3, 0)), constant_values=((7, 8), (9, 1))),
    "pad_int_width": lambda a: np.pad(a, 2),
    "pad_empty": lambda a: np.pad(a, 1, mode="empty").shape,
    "pad_edge": lambda a: np.pad(a, (2, 3), mode="edge"),
    "pad_reflect": lambda a: np.pad(a, (5, 7), mode="reflect"),
    "pad_symmetric": lambda a: np.pad(a, ((9, 1), (0, 6)), mode="symmetric"),
    "pad_wrap": lambda a: np.pad(a, (6, 11), mode="wrap"),
    "pad_reflect_odd": lambda a: np.pad(a, (5, 7), mode="reflect", reflect_type="odd"),
    "pad_symmetric_odd": lambda a: np.pad(a, (6, 8), mode="symmetric", reflect_type="odd"),
    "append_flat": lambda a: np.append(a, a[0]),
    "append_axis": lambda a: np.append(a, a, axis=1),
    "delete_int": lambda a: np.delete(a, 1, axis=1),
    "delete_list": lambda a: np.delete(a, [0, 3, 5, 7, 9, 11, 13, 15, 17]),
    "delete_slice": lambda a: np.delete(a, slice(0, 4, 2), -2),
    "delete_mask": lambda a: np.delete(a, np.array([True, False, False, True]), 0),
    "insert_scalar": lambda a: np.insert(a, 1, 7, axis=1),
    "insert_flat_list": lambda a: np.insert(a, [0, 3, 3, -1], a[0, :4]),
    "insert_row": lambda a: np.insert(a, 2, a[0], axis=0),
    "insert_columns": lambda a: np.insert(a, [1, 4], a[:, :1], axis=1),
    "insert_slice": lambda a: np.insert(a, slice(0, 4, 2), -a[:, 0:1] if a.dtype != np.bool_ else a[:, :1], axis=-1),
    "fftshift": lambda a: (np.fft.fftshift(a), np.fft.ifftshift(a, axes=1), np.fft.fftshift(a, axes=-1)),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float64", "uint8", "bool"])
@pytest.mark.parametrize("name", sorted(MANIPULATION_CASES))
def test_manipulation_functions(name, dtype, backend):
    fn = MANIPULATION_CASES[name]
    if name == "pad_empty":  # undefined contents in NumPy (zeros here): compare the shape only
        a = _arg(dtype, (4, 5))
        assert jk.jit(lambda a: np.pad(a, 1, mode="empty"), backend=backend)(a).shape == fn(a)
        return
    check(fn, _arg(dtype, (4, 5), name), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_manipulation_errors(backend):
    a = np.arange(6.0).reshape(2, 3)
    for fn in [lambda a: np.repeat(a, -1), lambda a: np.repeat(a, [1, 2], axis=1), lambda a: np.repeat(a, 1.5),
               lambda a: np.tile(a, -1), lambda a: np.roll(a, [[1]], [[0]]), lambda a: np.rot90(a, 1, (0, 0)),
               lambda a: np.rot90(a, 1, (0, 2)), lambda a: np.fliplr(a[0]), lambda a: np.flipud(a[0, 0]),
               lambda a: np.pad(a, -1), lambda a: np.pad(a, 1.5), lambda a: np.pad(a, 1, mode="bogus"),
               lambda a: np.pad(a, 1, mode="edge", constant_values=3), lambda a: np.pad(a[:, :0], 1, mode="wrap"),
               lambda a: np.delete(a, 5, axis=1), lambda a: np.insert(a, 9, 1.0, axis=1),
               lambda a: np.insert(a, [0, 1], a[:, :3], axis=1), lambda a: np.pad(a, 1, constant_values=-1.5),
               lambda a: np.pad(a.astype(np.uint8), 1, constant_values=-1)]:
        check(fn, a, backend=backend)


@pytest.mark.usefixtures("no_static_int_fallback")
def test_traced_layout_parameters_raise_clearly():
    a = np.arange(6.0)
    for fn in [lambda a, n: np.pad(a, n), lambda a, n: np.tile(a, n)]:
        with pytest.raises(UnsupportedOperationError, match="static"):
            jk.jit(fn)(a, 2)
    # a traced repeat count is read on the host and the program compiled for the length it gives
    # (tests/test_data_dependent_sets.py has the generator over axes and counts)
    for n in (2, 3):
        np.testing.assert_array_equal(jk.jit(lambda a, n: np.repeat(a, n))(a, n), np.repeat(a, n))
    # one traced index of delete / insert keeps a static shape (tests/test_data_dependent_sets.py)
    for fn in [lambda a, n: np.delete(a, n), lambda a, n: np.insert(a, n, 0.0)]:
        np.testing.assert_array_equal(jk.jit(fn)(a, 2), fn(a, 2))
    # np.roll takes a traced shift (tests/test_roll_traced_shift.py)
    np.testing.assert_array_equal(jk.jit(lambda a, n: np.roll(a, n))(a, 2), np.roll(a, 2))
    with pytest.raises(UnsupportedOperationError, match="linear_ramp"):
        jk.jit(lambda a: np.pad(a, 1, mode="linear_ramp"))(a)


def test_repeat_and_tile_are_index_maps():
    text = jk.jit(lambda a: np.tile(np.repeat(a, 2, 0), (1, 3)) + 1).lower(np.ones((4, 5))).as_text("kernels")
    assert text.count("kernel ") == 1


def test_many_runs_use_one_gather():
    counts = np.arange(40) % 3
    f = jk.jit(lambda a: np.repeat(a, counts) * 2)
    a = np.arange(40.0)
    np.testing.assert_array_equal(f(a), np.repeat(a, counts) * 2)
    assert "take_static" in f.lower(a).as_text("kernels")


_dtypes = st.sampled_from(["float32", "int16", "uint8", "bool"])
_shapes = st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple)


@settings(max_examples=40, deadline=None)
@given(shape=_shapes, dtype=_dtypes, data=st.data())
def test_hypothesis_pad(shape, dtype, data):
    widths = data.draw(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7)), min_size=len(shape), max_size=len(shape)))
    mode = data.draw(st.sampled_from(["constant", "edge", "reflect", "symmetric", "wrap"]))
    kw = {}
    if mode in ("reflect", "symmetric"):
        kw["reflect_type"] = data.draw(st.sampled_from(["even", "odd"]))
    if mode == "constant":
        kw["constant_values"] = data.draw(st.integers(0, 9))
    check(lambda a: np.pad(a, widths, mode=mode, **kw), _arg(dtype, shape, "pad"),
          backend=data.draw(st.sampled_from(DRAWN_BACKENDS)))


@settings(max_examples=40, deadline=None)
@given(shape=_shapes, dtype=_dtypes, data=st.data())
def test_hypothesis_roll_repeat_tile(shape, dtype, data):
    a = _arg(dtype, shape, "rrt")
    nd = len(shape)
    axes = data.draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=3))
    shifts = data.draw(st.lists(st.integers(-9, 9), min_size=len(axes), max_size=len(axes)))
    axis = data.draw(st.sampled_from([None] + list(range(-nd, nd))))
    n = a.size if axis is None else shape[axis]
    repeats = data.draw(st.one_of(st.integers(0, 3), st.lists(st.integers(0, 3), min_size=n, max_size=n)))
    reps = data.draw(st.lists(st.integers(0, 3), min_size=0, max_size=4).map(tuple))
    backend = data.draw(st.sampled_from(DRAWN_BACKENDS))
    check(lambda a: (np.roll(a, tuple(shifts), tuple(axes)), np.roll(a, shifts[0]),
                     np.repeat(a, repeats, axis), np.tile(a, reps)), a, backend=backend)


# ----------------------------------------------------------------------------- statistics

STAT_CASES = {
    "average": lambda x, y: np.average(x),
    "average_axis_weights": lambda x, y: np.average(x, axis=1, weights=y[0] + 1),
    "average_returned": lambda x, y: np.average(x, axis=0, weights=y * y + 1, returned=True),
    "average_keepdims": lambda x, y: np.average(x, axis=(0, -1), weights=y * y + 1, keepdims=True),
    "average_no_weights_returned": lambda x, y: np.average(x, axis=-1, returned=True),
    "cov": lambda x, y: np.cov(x),
    "cov_rowvar_bias": lambda x, y: (np.cov(x, rowvar=False), np.cov(x, bias=True), np.cov(x, ddof=2)),
    "cov_xy": lambda x, y: np.cov(x[0], y[1]),
    "cov_weights": lambda x, y: (np.cov(x, fweights=np.array([1, 2, 0, 3, 1])), np.cov(x, aweights=y[0] * y[0] + 1),
                                 np.cov(x, fweights=np.array([1, 2, 1, 3, 1]), aweights=y[1] * y[1] + 1, ddof=2)),
    "cov_dtype": lambda x, y: np.cov(x, dtype=np.float32),
    "cov_degenerate": lambda x, y: np.cov(x[:, :1]),
    "corrcoef": lambda x, y: (np.corrcoef(x), np.corrcoef(x[0], y[0]), np.corrcoef(x[0])),
    "ptp": lambda x, y: (np.ptp(x), np.ptp(x, axis=-1), np.ptp(x, 0, keepdims=True)),
    "divmod": lambda x, y: (np.divmod(x, y), divmod(x, y), np.divmod(x, 3)),
    "nansum_nanprod": lambda x, y: (np.nansum(x), np.nansum(x, 1), np.nanprod(x, 0)),
    "nanmax_nanmin": lambda x, y: (np.nanmax(x, 1), np.nanmin(x, 0), np.nanmax(x), np.nanmin(x, keepdims=True)),
    "nanmean": lambda x, y: (np.nanmean(x, 1), np.nanmean(x), np.nanmean(x, 0, keepdims=True)),
    "nanvar_nanstd": lambda x, y: (np.nanvar(x, 1), np.nanstd(x, 1, ddof=1), np.nanvar(x, ddof=4), np.nanvar(x, correction=1)),
    "nanargmax": lambda x, y: (np.nanargmax(x[:2], 1), np.nanargmin(x[:2]), np.nanargmin(x[:2], 0, keepdims=True)),
}


def _stat_args(dtype):
    x = _arg(dtype, (3, 5), "x")
    y = _arg(dtype, (3, 5), "y")
    if np.dtype(dtype).kind == "f":
        x[1, 2] = np.nan
        x[2, :] = np.nan  # an all-NaN row
    return x, y


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
@pytest.mark.parametrize("name", sorted(STAT_CASES))
def test_statistics(name, dtype, backend):
    x, y = _stat_args(dtype)
    if name.startswith("nan") or name in ("ptp", "divmod"):
        pass
    else:
        x = np.where(np.isnan(x), 0, x) if x.dtype.kind == "f" else x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(STAT_CASES[name], x, y, backend=backend, rtol=1e-4 if dtype == "float32" else None)


@pytest.mark.parametrize("backend", BACKENDS)
def test_run_time_data_errors(backend):
    """Errors NumPy raises on data are raised by the compiled call, every call."""
    f = jk.jit(lambda a, w: np.average(a, weights=w), backend=backend)
    a = np.arange(3.0)
    assert f(a, np.array([1.0, 0.0, 1.0])) == 1.0
    with pytest.raises(ZeroDivisionError, match="Weights sum to zero"):
        f(a, np.array([1.0, -1.0, 0.0]))
    g = jk.jit(lambda x: np.nanargmax(x, axis=1), backend=backend)
    np.testing.assert_array_equal(g(np.array([[1.0, np.nan], [3.0, 4.0]])), [0, 1])
    with pytest.raises(ValueError, match="All-NaN slice"):
        g(np.array([[1.0, 2.0], [np.nan, np.nan]]))
    h = jk.jit(lambda x, fw: np.cov(x, fweights=fw), backend=backend)
    x = np.arange(6.0).reshape(2, 3)
    with pytest.raises(ValueError, match="fweights cannot be negative"):
        h(x, np.array([1, -1, 2]))
    with pytest.raises(TypeError, match="fweights must be integer"):
        h(x, np.array([1.5, 1, 2]))


def test_divmod_special_values():
    ints = np.array([-7, 7, np.iinfo(np.int64).min, 0, 5], np.int64)
    by = np.array([2, -2, -1, 0, 0], np.int64)
    floats = np.array([-7.5, 7.5, -0.0, np.inf, np.nan, 1.0, -1.0], np.float64)
    fby = np.array([2.0, -2.0, 3.0, 2.0, 1.0, 0.0, np.inf], np.float64)
    for backend in BACKENDS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check(lambda a, b: np.divmod(a, b), ints, by, backend=backend)
            check(lambda a, b: np.divmod(a, b), floats, fby, backend=backend)
            check(lambda a, b: np.divmod(a, b), np.array([True, False]), np.array([True, True]), backend=backend)
            check(lambda a, b: np.divmod(a, b), np.array([7, 250, 0], np.uint8), np.array([2, 0, 3], np.uint8), backend=backend)
            check(lambda a, b: np.divmod(a, b), floats.astype(np.float16), fby.astype(np.float32), backend=backend)
            check(lambda a: (np.divmod(a, -3), divmod(a, 2.5), divmod(7, a)), np.array([-8, 9, 1], np.int16),
                  backend=backend)


ORDER_CASES = {
    "median": lambda a: (np.median(a), np.median(a, axis=0), np.median(a, -1, keepdims=True), np.median(a[:, :4], 1)),
    "median_axes": lambda a: np.median(a, axis=(0, 1)),
    "quantile_weak": lambda a: (np.quantile(a, 0.3), np.quantile(a, 0.75, axis=1), np.quantile(a, 1)),
    "quantile_arrays": lambda a: (np.quantile(a, [0.25, 0.5, 0.9], axis=0), np.quantile(a, np.float32(0.4)),
                                  np.quantile(a, np.array(0.5)), np.quantile(a, [0, 1], axis=-1, keepdims=True)),
    "percentile": lambda a: (np.percentile(a, 50), np.percentile(a, [10, 90], axis=1), np.percentile(a, 33.3, keepdims=True)),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int16"])
@pytest.mark.parametrize("name", sorted(ORDER_CASES))
def test_order_statistics(name, dtype, backend):
    a = _arg(dtype, (4, 5), name)
    check(ORDER_CASES[name], a, backend=backend)
    if a.dtype.kind == "f":
        a[1, 2] = np.nan  # a slice holding NaN gives NaN
        check(lambda a: (np.median(a, 0), np.quantile(a, [0.1, 0.5], axis=1), np.percentile(a, 50, axis=0)), a,
              backend=backend)


def test_order_statistics_errors():
    a = np.arange(5.0)
    with pytest.raises(ValueError, match="Quantiles must be in the range"):
        jk.jit(lambda a: np.quantile(a, 1.5))(a)
    with pytest.raises(ValueError, match="not a valid method"):
        jk.jit(lambda a: np.quantile(a, 0.5, method="nearer"))(a)
    with pytest.raises(UnsupportedOperationError, match="traced q"):
        jk.jit(lambda a, q: np.quantile(a, q))(a, 0.5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_var_std_ddof_and_correction(backend):
    x = _arg("float32", (4, 6))
    check(lambda a: (np.var(a, ddof=1), a.std(axis=0, ddof=2), np.var(a, 1, correction=1),
                     np.std(a, correction=3, keepdims=True)), x, backend=backend)
    check(lambda a: np.var(a, ddof=1, correction=1), x, backend=backend)  # NumPy's ValueError


def test_extension_names_are_reachable_both_ways():
    """np.<name> on a traced array and jitkernel.numpy.<name> reach the same implementation."""
    import jitkernel.numpy as jnp
    from jitkernel.numpy import _dispatch, _manipulation, _matrix, _statistics
    table = _dispatch._table()
    for module in (_matrix, _manipulation, _statistics):
        for name in module.__all__:
            assert getattr(jnp, name) is getattr(module, name), name
            if not isinstance(getattr(np, name), np.ufunc):  # np.divmod arrives by __array_ufunc__
                assert table[getattr(np, name)] is getattr(module, name), name
    a = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(jk.jit(lambda a: jnp.pad(jnp.triu(a), 1, mode="wrap"))(a),
                                  np.pad(np.triu(a), 1, mode="wrap"))


def _writes_into_results(x, y, a):
    X, Y = np.meshgrid(x, y)
    X[0, 0] = 5.0
    Y += 1
    r = np.repeat(x, 2)
    r[0] = -1
    t = np.triu(a)
    t[1, 1] = 9
    d = np.diag(a[0])
    d += 1
    p = np.pad(a, 1)
    p[0] = 7
    ro = np.roll(a, 1)
    ro[0] = 3
    ti = np.tile(a, 2)
    ti[0, 0] = -5
    return X, Y, r, t, d, p, ro, ti


@pytest.mark.parametrize("backend", BACKENDS)
def test_results_are_new_arrays_not_views_of_the_arguments(backend):
    """A write into a result of meshgrid, repeat, triu, diag, pad, roll, tile never reaches the
    arguments (NumPy returns new arrays)."""
    args = (np.arange(3.0), np.arange(2.0), np.arange(9.0).reshape(3, 3))
    mine = [a.copy() for a in args]
    got = jk.jit(_writes_into_results, backend=backend)(*mine)
    expected = _writes_into_results(*[a.copy() for a in args])
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
    for m, a in zip(mine, args):
        np.testing.assert_array_equal(m, a)

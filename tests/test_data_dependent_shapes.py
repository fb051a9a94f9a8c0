"""Data-dependent shapes: x[mask], np.nonzero, np.flatnonzero, np.argwhere,
np.where(cond), np.extract, np.compress, np.unique and slices with bounds read from arrays
(CSR), traced once for every count, against NumPy on both backends (numpy/_datadep.py)."""
from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from jitkernel import events
from jitkernel.errors import UnsupportedOperationError
from jitkernel.ir.symdim import SymbolicDimError
import emulator_suite
from helpers import HOST_BACKENDS

BACKENDS = HOST_BACKENDS + emulator_suite.emulator_backends()  # cuda-emulator where g++ is
DRAWN_BACKENDS = emulator_suite.DRAWN_BACKENDS
DTYPES = [np.float64, np.float32, np.int32, np.bool_, np.complex128]


def _values(dtype, n=8, seed=0):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(n) * 4
    if np.dtype(dtype).kind == "c":
        return (v + 1j * rng.standard_normal(n)).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return v > 0
    return v.astype(dtype)


def _masks(n=8):
    """Masks with 0, 1, some and all elements True."""
    one = np.zeros(n, bool)
    one[3] = True
    return [np.zeros(n, bool), one, np.arange(n) % 3 == 0, np.ones(n, bool)]


def assert_same(got, want, rtol=1e-6):
    """Same type structure, dtype, shape and values (NaN where NumPy has NaN)."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w, rtol)
        return
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype, (g.dtype, w.dtype)
    assert g.shape == w.shape, (g.shape, w.shape)
    if w.dtype.kind in "fc":
        np.testing.assert_allclose(g, w, rtol=rtol, atol=0, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, w)


def traces_of(f, calls):
    """Run every `calls` entry through `f` and count its traces and compiles."""
    seen = []
    unsubscribe = events.subscribe(seen.append)
    try:
        results = [f(*args) for args in calls]
    finally:
        unsubscribe()
    traces = [e for e in seen if isinstance(e, events.TraceEvent)]
    compiles = [e for e in seen if isinstance(e, events.CompileEvent)]
    return results, len(traces), len(compiles)


# ----------------------------------------------------------------------------- x[mask]


SELECTION_USES = {
    "returned": lambda x, m: x[m],
    "sum": lambda x, m: x[m].sum(),
    "sorted": lambda x, m: np.sort(x[m]),
    "elementwise": lambda x, m: x[m] * 2 + x[m],
    "count_and_first_axis": lambda x, m: (np.count_nonzero(m), x[m].astype(np.complex128) * 0.5),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("use", sorted(SELECTION_USES))
def test_mask_selection_for_every_count(backend, dtype, use):
    fn = SELECTION_USES[use]
    if use == "elementwise" and dtype == np.bool_:
        fn = lambda x, m: x[m] | ~x[m]  # noqa: E731 (bool has no * 2 + x)
    f = jk.jit(fn, backend=backend)
    x = _values(dtype)
    results, traces, _ = traces_of(f, [(x, m) for m in _masks()])
    for m, got in zip(_masks(), results):
        assert_same(got, fn(x, m))
    assert traces == 1  # one trace for the counts 0, 1, 3 and 8


@pytest.mark.parametrize("backend", BACKENDS)
def test_mean_max_min_of_selections_and_numpys_errors_for_empty_ones(backend):
    x = _values(np.float64)
    for name in ("mean", "max", "min", "std", "prod", "argmax", "median"):
        fn = lambda x, m, _n=name: getattr(np, _n)(x[m])  # noqa: E731
        f = jk.jit(fn, backend=backend)
        for m in _masks()[1:]:
            assert_same(f(x, m), fn(x, m))
    with pytest.raises(ValueError, match="zero-size array"):
        jk.jit(lambda x, m: x[m].max(), backend=backend)(x, _masks()[0])
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (NumPy warns "Mean of empty slice"; the compiled mean does not)
        assert np.isnan(jk.jit(lambda x, m: x[m].mean(), backend=backend)(x, _masks()[0]))
        assert np.isnan(jk.jit(lambda x, m: np.sort(x[m]).mean(), backend=backend)(x, _masks()[0]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_traced_mask_from_a_comparison_and_the_result_is_a_fresh_exact_array(backend):
    f = jk.jit(lambda x, t: x[x > t], backend=backend)
    x = np.linspace(-1.0, 1.0, 9)
    for t in (-2.0, 0.0, 0.9, 2.0):
        got = f(x, t)
        assert_same(got, x[x > t])
        assert got.flags.owndata and got.flags.writeable and got.flags.c_contiguous


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_dimensional_masks_and_row_selections(backend):
    X = np.random.default_rng(1).standard_normal((5, 3))
    cases = [
        lambda X: X[X > 0],                                   # 2-D mask: a 1-D result
        lambda X: X[X[:, 0] > 0],                             # rows
        lambda X: X[X[:, 0] > 0].sum(axis=0),
        lambda X: X[X[:, 0] > 0].sum(axis=1),                 # per selected row: still data-dependent
        lambda X: X[X[:, 0] > 0].mean(),
        lambda X: np.sort(X[X[:, 0] > 0], axis=0),
        lambda X: np.sort(X[X[:, 0] > 0]),                    # along each row
        lambda X: X[X[:, 0] > 0] + np.arange(3.0),
        lambda X: np.abs(X[X[:, 1] > 5]),                     # no row selected
    ]
    for fn in cases:
        assert_same(jk.jit(fn, backend=backend)(X), fn(X))


# ----------------------------------------------------------------------------- nonzero and friends


NONZERO_FUNCTIONS = {
    "nonzero_1d": lambda x: np.nonzero(x > 0),
    "nonzero_2d": lambda x: np.nonzero(x.reshape(2, 4) > 0),
    "method_nonzero": lambda x: (x > 0).nonzero(),
    "where_one_argument": lambda x: np.where(x.reshape(4, 2) > 0),
    "flatnonzero": lambda x: np.flatnonzero(x.reshape(2, 4) > 0),
    "argwhere_1d": lambda x: np.argwhere(x > 0),
    "argwhere_2d": lambda x: np.argwhere(x.reshape(2, 4) > 0),
    "extract": lambda x: np.extract(x > 0, x * 3),
    "extract_non_bool": lambda x: np.extract(np.floor(x), x),
    "compress_flat": lambda x: np.compress(x[:6] > 0, x.reshape(2, 4)),
    "compress_rows": lambda x: np.compress(x[:4] > 0, x.reshape(4, 2), axis=0),
    "method_compress": lambda x: x.reshape(4, 2).compress(x[:4] > 0, axis=0),
    "gather_by_flatnonzero": lambda x: x[np.flatnonzero(x > 0)] * 2,
    "gather_by_nonzero_2d": lambda x: x.reshape(2, 4)[np.nonzero(x.reshape(2, 4) > 0)],
    "rows_by_flatnonzero": lambda x: x.reshape(4, 2)[np.flatnonzero(x[:4] > 0)],
    "index_arithmetic": lambda x: np.flatnonzero(x > 0) * 10 + x[x > 0].astype(np.int64),
    "count_nonzero": lambda x: (np.count_nonzero(x > 0), np.count_nonzero(x.reshape(2, 4) > 0, axis=0)),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(NONZERO_FUNCTIONS))
def test_nonzero_family(backend, name):
    fn = NONZERO_FUNCTIONS[name]
    f = jk.jit(fn, backend=backend)
    inputs = [np.where(m, np.arange(1.0, 9.0), -np.arange(1.0, 9.0)) for m in _masks()]
    results, traces, _ = traces_of(f, [(x,) for x in inputs])
    for x, got in zip(inputs, results):
        assert_same(got, fn(x))
    assert traces == 1


UNIQUE_CASES = {
    "values": lambda x: np.unique(x),
    "all_returns": lambda x: np.unique(x, return_index=True, return_inverse=True, return_counts=True),
    "counts": lambda x: np.unique(x, return_counts=True),
    "of_2d": lambda x: np.unique(x.reshape(2, 4), return_inverse=True),
    "of_selection": lambda x: np.unique(x[x > 1]),
    "of_selection_inverse": lambda x: np.unique(x[x > 1], return_inverse=True, return_counts=True),
    "consumed": lambda x: np.unique(x).sum() + np.unique(x).max(),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(UNIQUE_CASES))
@pytest.mark.parametrize("dtype", [np.float64, np.int64], ids=lambda d: np.dtype(d).name)
def test_unique(backend, name, dtype):
    fn = UNIQUE_CASES[name]
    f = jk.jit(fn, backend=backend)
    inputs = [np.array(v, dtype) for v in ([3, 1, 2, 3, 1, 5, 0, 2], [2] * 8, [7, 6, 5, 4, 3, 2, 1, 0])]
    if np.dtype(dtype).kind == "f":
        inputs.append(np.array([np.nan, 1, np.nan, 2, 2, -0.0, 0.0, 9]))
    results, traces, _ = traces_of(f, [(x,) for x in inputs])
    for x, got in zip(inputs, results):
        assert_same(got, fn(x))
    assert traces == 1


# ----------------------------------------------------------------------------- updates


UPDATES = {
    "through_nonzero": lambda x, m: _set(x, np.nonzero(m), 0),
    "through_nonzero_2d": lambda x, m: _set(x.reshape(2, 4), np.nonzero(m.reshape(2, 4)), -1),
    "selection_into_mask": lambda x, m: _set(np.zeros_like(x), m, x[m] * 10),
    "through_flatnonzero": lambda x, m: _set(x, np.flatnonzero(m), x[m] + 1),
    "augmented_by_index": lambda x, m: _add(x, np.flatnonzero(m), 5),
    "sorted_back": lambda x, m: _set(x, m, np.sort(x[m])),
}


def _set(y, index, value):
    y = y.copy()
    y[index] = value
    return y


def _add(y, index, value):
    y = y.copy()
    y[index] += value
    return y


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(UPDATES))
def test_updates_through_data_dependent_indices(backend, name):
    fn = UPDATES[name]
    f = jk.jit(fn, backend=backend)
    x = _values(np.float64)
    results, traces, _ = traces_of(f, [(x, m) for m in _masks()])
    for m, got in zip(_masks(), results):
        assert_same(got, fn(x, m))
    assert traces == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_argument_written_through_nonzero_is_written_in_the_callers_array(backend):
    def f(y, m):
        y[np.nonzero(m)] = 0.0
        return y.sum()
    jf = jk.jit(f, backend=backend)
    for m in _masks():
        a, b = _values(np.float64), _values(np.float64)
        assert_same(jf(a, m), f(b, m))
        np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------- CSR


def spmv(A_row, A_col, A_val, x):
    y = np.empty(A_row.size - 1, A_val.dtype)
    for i in range(A_row.size - 1):
        y[i] = A_val[A_row[i]:A_row[i + 1]] @ x[A_col[A_row[i]:A_row[i + 1]]]
    return y


def _csr(dense):
    rows = [np.flatnonzero(r) for r in dense]
    A_row = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    A_col = np.concatenate(rows + [np.zeros(0, np.int64)]).astype(np.int64)
    return A_row, A_col, dense[dense != 0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_csr_spmv_as_written(backend):
    rng = np.random.default_rng(2)
    f = jk.jit(spmv, backend=backend)
    for density in (0.3, 0.0, 1.0):
        dense = rng.random((7, 7)) * (rng.random((7, 7)) < density)
        dense[2] = 0.0  # an empty row
        if density == 1.0:
            dense[2] = 1.0
        A_row, A_col, A_val = _csr(dense)
        x = rng.random(7)
        got = f(A_row, A_col, A_val, x)
        np.testing.assert_allclose(got, spmv(A_row, A_col, A_val, x), rtol=1e-12)


def test_csr_spmv_as_written_is_one_native_loop():
    """The windows, the gather `x[cols]` and the dot of a CSR row are graph operations in the
    body (passes/loop_gathers.py), the gathers loads inside its kernel: no library step."""
    A_row, A_col, A_val = _csr(np.eye(5) * 2.0)
    text = jk.jit(spmv).lower(A_row, A_col, A_val, np.ones(5)).as_text("kernels")
    assert "[native]" in text and "datadep" not in text and "library" not in text


def test_csr_column_out_of_bounds_raises_only_inside_a_row():
    """NumPy raises for a column index of a row outside x (with its message), not for entries
    of A_col that no row reads."""
    A_row, A_col, A_val = _csr(np.eye(5) * 2.0)
    x = np.arange(5.0)
    f = jk.jit(spmv)
    tail = np.concatenate([A_col, [99, -99]])  # read by no row
    np.testing.assert_array_equal(f(A_row, tail, np.concatenate([A_val, [1.0, 1.0]]), x), spmv(A_row, A_col, A_val, x))
    bad = A_col.copy()
    bad[3] = 7
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 5"):
        spmv(A_row, bad, A_val, x)
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 5"):
        f(A_row, bad, A_val, x)
    bad[3] = -5  # wraps once, as in NumPy
    np.testing.assert_array_equal(f(A_row, bad, A_val, x), spmv(A_row, bad, A_val, x))


_ROW_USES = {
    "matmul": lambda vals, x, cols: vals @ x[cols],
    "np.dot": lambda vals, x, cols: np.dot(x[cols], vals),
    "gathered_twice": lambda vals, x, cols: x[cols] @ x[cols],
    "sum_of_products": lambda vals, x, cols: (vals * x[cols]).sum(),  # a library step: still right
}
_ROW_DTYPES = [(np.float64, np.float64), (np.float32, np.float32), (np.int64, np.int64), (np.float32, np.float64)]


@settings(max_examples=50, deadline=None, derandomize=True, database=None)
@given(ptr=st.lists(st.integers(-4, 12), min_size=6, max_size=9),  # 5 rows or more: a loop, not unrolled
       cols=st.lists(st.integers(-6, 5), max_size=10),
       nx=st.integers(1, 5),
       use=st.sampled_from(sorted(_ROW_USES)),
       dtypes=st.sampled_from(_ROW_DTYPES),
       index_dtype=st.sampled_from([np.int64, np.int32, np.uint32]),
       seed=st.integers(0, 100))
def test_random_loops_whose_body_gathers_data_dependent_slices(ptr, cols, nx, use, dtypes, index_dtype, seed):
    """Loops over rows whose bounds are read from a pointer array (unsorted, negative, past the
    end: Python's slice rules), each row gathering x at its column indices (some out of bounds:
    NumPy's IndexError) and reducing, against NumPy running the same function."""
    def rows(ptr, cols, vals, x):
        y = np.zeros(ptr.size - 1, vals.dtype)
        for i in range(ptr.size - 1):
            c = cols[ptr[i]:ptr[i + 1]]
            v = vals[ptr[i]:ptr[i + 1]]
            y[i] = _ROW_USES[use](v, x, c)
        return y
    rng = np.random.default_rng(seed)
    vdt, xdt = dtypes
    ptr_a, cols_a = np.array(ptr), np.array(cols, np.int64)
    if np.dtype(index_dtype).kind == "u":
        ptr_a, cols_a = np.abs(ptr_a), np.abs(cols_a)
    ptr_a, cols_a = ptr_a.astype(index_dtype), cols_a.astype(index_dtype)
    vals = (rng.integers(-3, 4, len(cols)) if vdt == np.int64 else rng.standard_normal(len(cols))).astype(vdt)
    x = (rng.integers(-3, 4, nx) if xdt == np.int64 else rng.standard_normal(nx)).astype(xdt)
    f = jk.jit(rows)
    if use != "sum_of_products" and cols:  # (a window of an empty array stays a step)
        assert "[native]" in f.lower(ptr_a, cols_a, vals, x).as_text("kernels")
    try:
        want = rows(ptr_a, cols_a, vals, x)
    except IndexError as e:
        with pytest.raises(IndexError, match="out of bounds for axis 0 with size"):
            f(ptr_a, cols_a, vals, x)
        assert "out of bounds" in str(e)
        return
    assert_same(f(ptr_a, cols_a, vals, x), want, rtol=1e-5 if np.float32 in dtypes else 1e-12)


# ----------------------------------------------------------------------------- x[m] = f(y[m])


def test_masked_update_by_a_function_of_the_same_selection_is_one_select():
    """NPBench nbody's `inv_r3[inv_r3 > 0] = inv_r3[inv_r3 > 0]**(-1.5)` (the mask written
    twice) is `where(mask, inv_r3**-1.5, inv_r3)`: no selection step, no setitem step."""
    def f(a):
        r = a * a - 0.5
        r[r > 0] = r[r > 0] ** (-1.5)
        return r
    a = np.random.default_rng(1).standard_normal((6, 6))
    g = jk.jit(f)
    assert "datadep" not in g.lower(a).as_text("kernels")
    assert_same(g(a), f(a), rtol=1e-12)


_UPDATE_OPS = {"neg": np.negative, "abs": np.abs, "power": lambda v: np.abs(v) ** -1.5, "inverse": lambda v: 1.0 / v,
               "exp": np.exp, "affine": lambda v: v * 0.5 + 1.0}


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(ops=st.lists(st.sampled_from(sorted(_UPDATE_OPS)), max_size=3),
       threshold=st.floats(-2.5, 2.5),
       target=st.sampled_from(["same", "other", "other_mask", "float32_value", "row_mask"]),
       seed=st.integers(0, 1000))
def test_random_masked_updates_by_functions_of_selections(ops, threshold, target, seed):
    """`x[m] = f(y[m])` for elementwise chains `f`, against NumPy: by the selection's own mask
    (fused), and by another mask, another dtype or a mask over rows only (NumPy's step)."""
    def program(x, y):
        x = x.copy()
        m = (y[:, 0] > threshold) if target == "row_mask" else (y > threshold)
        v = y[m] if target != "other_mask" else y[y > threshold + 0.5]
        for name in ops:
            v = _UPDATE_OPS[name](v)
        if target == "float32_value":
            v = v.astype(np.float32)
        if target == "same":
            x, m = y.copy(), y > threshold
        x[m] = v  # another mask: NumPy's ValueError when the counts differ
        return x
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((4, 3)), rng.standard_normal((4, 3)) * 2
    try:
        want = program(x, y)
    except ValueError:
        want = None
    f = jk.jit(program)
    if want is None:
        with pytest.raises(ValueError):
            f(x, y)
        return
    assert_same(f(x, y), want, rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_slices_with_bounds_read_from_an_array_clamp_as_numpy(backend):
    fn = lambda x, b: (x[b[0]:b[1]].sum(), np.sort(x[b[0]:b[1]]), x[b[0]:].max())  # noqa: E731
    f = jk.jit(fn, backend=backend)
    x = _values(np.float64)
    for bounds in ([1, 5], [-3, 100], [6, 2], [-100, -7]):
        b = np.array(bounds)
        assert_same(f(x, b), fn(x, b))
    with pytest.raises(ValueError, match="zero-size array"):
        f(x, np.array([8, 8]))


# ----------------------------------------------------------------------------- one trace, the split


def test_one_trace_and_one_compile_for_twenty_counts():
    f = jk.jit(lambda x, t: x[x > t].sum())
    x = np.linspace(-1.0, 1.0, 19)
    thresholds = [2.0] + [float(v) - 0.01 for v in x[::-1]]  # counts 0, 1, ..., 19 (all)
    counts = [int((x > t).sum()) for t in thresholds]
    assert counts == list(range(20))
    results, traces, compiles = traces_of(f, [(x, t) for t in thresholds])
    for t, got in zip(thresholds, results):
        assert_same(got, x[x > t].sum())
    assert (traces, compiles) == (1, 1)


def test_the_split_is_shown_in_kernels_fusion_record_and_explain():
    def selected_mean(x):
        return np.sort(x[x > 0]).mean()  # (x[x > 0].mean() alone reduces x densely: no split)
    line = inspect.getsourcelines(selected_mean)[1] + 1
    f = jk.jit(selected_mean)
    x = np.arange(-3.0, 5.0)
    text = f.lower(x).as_text("kernels")
    assert f"split: x[mask] at {__file__}:{line}" in text and "data-dependent length <= 8" in text
    seen = []
    unsubscribe = events.subscribe(seen.append)
    try:
        jk.jit(selected_mean)(x)
    finally:
        unsubscribe()
    (fuse,) = [e for e in seen if isinstance(e, events.FuseEvent)]
    assert any("split: x[mask]" in g.get("split", "") for g in fuse.groups)
    from jitkernel.magics.line import explain
    f(x)
    assert f"data-dependent split: [split: x[mask] at {__file__}:{line}" in explain(f)


# ----------------------------------------------------------------------------- errors


def _raises_at_line(exc, fn, *args, match=None):
    line = inspect.getsourcelines(fn)[1]
    with pytest.raises(exc, match=match) as info:
        jk.jit(fn)(*args)
    assert f"{__file__}:{line}" in str(info.value)
    return str(info.value)


def test_len_of_a_selection_is_a_clear_error_naming_the_line():
    x = np.arange(5.0)
    message = _raises_at_line(SymbolicDimError, lambda x: np.zeros(len(x[x > 1])), x)
    assert "np.count_nonzero" in message
    _raises_at_line(SymbolicDimError, lambda x: np.ones(x[x > 1].shape[0]), x)


@pytest.mark.parametrize("fn", [
    lambda x: x[x > 1][0],                          # indexing a selection
    lambda x: x.reshape(1, 5)[:, (x > 1)],          # a mask on another axis
    lambda x: x[x > 1] + x[x > 1][::-1],            # (indexing a selection)
    lambda x: x[x > 1] + np.arange(5.0),            # needs the count to broadcast
    lambda x: x[x > 1] + x[:3][x[:3] > 0],          # two paddings
    lambda x: np.argpartition(x[x > 1], 1),         # a function without a rule
    lambda x: [v for v in x[x > 1]],                # iteration
    lambda x: x.reshape(5, 1)[x > 1].T,
], ids=["index", "other_axis", "reversed", "broadcast", "paddings", "function", "iteration", "transpose"])
def test_unsupported_uses_raise_naming_the_line(fn):
    _raises_at_line(UnsupportedOperationError, fn, np.arange(5.0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_run_time_errors_are_numpys(backend):
    x = np.arange(6.0)
    f = jk.jit(lambda x, m1, m2: x[m1] + x[m2], backend=backend)
    m1, m2 = x > 2, x > 3
    assert_same(f(x, m1, m1), x[m1] + x[m1])
    with pytest.raises(ValueError):
        f(x, m1, m2)
    g = jk.jit(lambda x, i, m: x[i[m]], backend=backend)
    assert_same(g(x, np.array([5, 0, -1]), np.array([True, False, True])), x[np.array([5, -1])])
    with pytest.raises(IndexError):
        g(x, np.array([9, 0, 1]), np.array([True, False, True]))


# ----------------------------------------------------------------------------- random programs


_UNARY = {"neg": np.negative, "abs": np.abs, "square": np.square, "sin": np.sin, "plus1": lambda v: v + 1.0,
          "scale": lambda v: v * 0.5, "clip": lambda v: np.clip(v, -1.0, 1.0)}
_TERMINALS = {"return": lambda v: v, "sum": np.sum, "max": np.max, "min": np.min, "mean": np.mean,
              "sort": np.sort, "cumsum": np.cumsum, "prod": np.prod, "argmin": np.argmin,
              "unique": np.unique, "where": lambda v: np.where(v > 0, v, 0.0)}


@settings(max_examples=30, deadline=None)
@given(before=st.lists(st.sampled_from(sorted(_UNARY)), max_size=2),
       after=st.lists(st.sampled_from(sorted(_UNARY)), max_size=3),
       terminal=st.sampled_from(sorted(_TERMINALS)),
       threshold=st.floats(-2.5, 2.5),
       dtype=st.sampled_from([np.float64, np.float32]),
       backend=st.sampled_from(DRAWN_BACKENDS),
       seed=st.integers(0, 1000))
def test_random_programs_mixing_a_selection_with_elementwise_ops_and_reductions(
        before, after, terminal, threshold, dtype, backend, seed):
    def program(x):
        for name in before:
            x = _UNARY[name](x)
        v = x[x > threshold]
        for name in after:
            v = _UNARY[name](v)
        return _TERMINALS[terminal](v)
    rng = np.random.default_rng(seed)
    f = jk.jit(program, backend=backend)
    for n in (0, 1, 7):
        x = (rng.standard_normal(7) * 2).astype(dtype)
        if n < 7:
            x[n:] = -9.0  # at most n selected (the unary ops may move values across the threshold)
        try:
            want = program(x)
        except ValueError as e:  # an empty max/min/argmin
            with pytest.raises(ValueError, match=str(e)[:20]):
                f(x)
            continue
        assert_same(f(x), want, rtol=1e-5 if dtype == np.float32 else 1e-9)


@pytest.mark.parametrize("backend", BACKENDS)
def test_reductions_of_selections_fuse_without_a_selection_step(backend):
    # (A float sum or mean along the selection is NumPy's sum of the selection itself, not fused:
    # tests/test_numpy_summation_order.py. Along a kept trailing axis it fuses.)
    fns = [lambda x, t: (x[x > t] * 2).astype(np.int64).sum(), lambda x, t: np.abs(x[x > t]).max(),
           lambda x, t: x[x > t].prod(), lambda x, t: (x[x > t] > 1).any(), lambda x, t: x[x > t].astype(np.int32).prod(),
           lambda x, t: x.reshape(4, 2)[x[::2] > t].sum(axis=0, keepdims=True),
           lambda x, t: x.reshape(4, 2)[x[::2] > t].mean(axis=0),
           lambda x, t: (x[x > t] - np.abs(x)[x > t] * 2).max(),  # one mask written twice
           lambda x, t: x.reshape(4, 2)[x.reshape(4, 2) > t].min()]
    x = np.array([0.5, 3.0, -1.0, 2.0, 7.0, -4.0, 1.5, 2.5])
    for fn in fns:
        f = jk.jit(fn, backend=backend)
        if backend == "cpu":
            text = f.lower(x, 0.0).as_text("kernels")
            assert "mask_select" not in text and "datadep" not in text
        for t in (-10.0, 0.0, 2.6, 6.0):
            assert_same(f(x, t), fn(x, t), rtol=1e-12)
    with pytest.raises(ValueError, match="zero-size array to reduction operation minimum"):
        jk.jit(fns[-1], backend=backend)(x, 10.0)


def test_fusion_plot_marks_the_split():
    from jitkernel.profiler.collector import Collector
    from jitkernel.profiler.plots import fusion
    from jitkernel.profiler.report import Report
    collector = Collector()  # (not the session's: other tests count its subscriptions)
    collector.start()
    try:
        jk.jit(lambda x: np.sort(x[x > 0]) + 1)(np.arange(-3.0, 5.0))
    finally:
        collector.stop()
    report = Report(collector.snapshot())
    groups = [g for st in report.functions for g in st.groups]
    splits = [g["split"] for g in groups if g.get("split")]
    assert len(splits) == 1 and splits[0].startswith("split: x[mask] at test_data_dependent_shapes.py:")
    assert fusion(report)._repr_png_().startswith(b"\x89PNG")


_PRODUCERS = {
    "mask": lambda x, m: x[m],
    "rows": lambda x, m: x.reshape(-1, 2)[m.reshape(-1, 2)[:, 0]],
    "mask_2d": lambda x, m: x.reshape(-1, 2)[m.reshape(-1, 2)],
    "flatnonzero_gather": lambda x, m: x[np.flatnonzero(m)],
    "nonzero_gather_2d": lambda x, m: x.reshape(-1, 2)[np.nonzero(m.reshape(-1, 2))],
    "extract": lambda x, m: np.extract(m, x),
    "compress_rows": lambda x, m: np.compress(m[::2], x.reshape(-1, 2), axis=0),
}
_CONSUMERS = {
    "return": lambda v, x, m: v,
    "sum0": lambda v, x, m: v.sum(axis=0),
    "max": lambda v, x, m: v.max(),
    "sorted": lambda v, x, m: np.sort(v, axis=0),
    "unique": lambda v, x, m: np.unique(v),
    "scatter_back": lambda v, x, m: _set(x, m, v * 3),  # (1-D producers of m's count only)
    "nonzero_zeroed": lambda v, x, m: _set(x, np.nonzero(m), 0),
}


@settings(max_examples=40, deadline=None)
@given(producer=st.sampled_from(sorted(_PRODUCERS)), consumer=st.sampled_from(sorted(_CONSUMERS)),
       op=st.sampled_from(sorted(_UNARY)), dtype=st.sampled_from([np.float64, np.int64, np.int16]),
       backend=st.sampled_from(DRAWN_BACKENDS), bits=st.lists(st.booleans(), min_size=3, max_size=3))
def test_random_producer_consumer_pairs(producer, consumer, op, dtype, backend, bits):
    if consumer == "scatter_back" and producer not in ("mask", "flatnonzero_gather", "extract"):
        consumer = "return"
    def program(x, m):
        v = _PRODUCERS[producer](x, m)
        if np.dtype(dtype).kind == "f":
            v = _UNARY[op](v)
        return _CONSUMERS[consumer](v, x, m)
    f = jk.jit(program, backend=backend)
    x = (np.arange(8) * 3 % 7 - 3).astype(dtype)
    masks = [np.zeros(8, bool), np.ones(8, bool), np.tile(np.array(bits * 3)[:8], 1)]
    for m in masks:
        try:
            want = program(x, m)
        except ValueError as e:  # the max of an empty selection
            with pytest.raises(ValueError, match=str(e)[:20]):
                f(x, m)
            continue
        assert_same(f(x, m), want, rtol=1e-9)


# ----------------------------------------------------------------------------- selections carried by loops and ifs


def _escape_times(c, steps, horizon):
    """NPBench mandelbrot2's pattern: the points still iterating shrink every step (their arrays
    compressed by a mask inside the loop), with an early break when none are left."""
    n = np.zeros(c.shape, np.int64)
    idx = np.arange(c.size)
    z = np.zeros(c.shape, np.complex128)
    for i in range(steps):
        if not len(z):
            break
        np.multiply(z, z, z)
        np.add(z, c, z)
        out = abs(z) > horizon
        n[idx[out]] = i + 1
        np.logical_not(out, out)
        z, idx, c = z[out], idx[out], c[out]
    return n, z.sum(), len(idx)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(0, 12), steps=st.integers(0, 9), horizon=st.sampled_from([0.5, 2.0, 50.0]),
       seed=st.integers(0, 99))
def test_selections_shrinking_in_a_loop_match_numpy(n, steps, horizon, seed):
    rng = np.random.default_rng(seed)
    c = (rng.uniform(-2, 1, n) + 1j * rng.uniform(-1.5, 1.5, n)).astype(np.complex128)
    want = _escape_times(c, steps, horizon)
    for backend in HOST_BACKENDS:
        got = jk.jit(_escape_times, static_argnums=(1, 2), backend=backend)(c, steps, horizon)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
        assert int(got[2]) == want[2]


def test_selection_in_a_traced_if(backend):
    def f(x, t):
        s = x[x > 0]
        if t > 0:
            s = s[s > t]
        return s, len(s)
    x = np.array([3.0, -1.0, 0.5, 7.0, 2.0])
    f_jit = jk.jit(f, backend=backend)
    for t in (-1.0, 1.0, 10.0):
        got, want = f_jit(x, t), f(x, t)
        np.testing.assert_array_equal(got[0], want[0])
        assert int(got[1]) == want[1]


def test_a_branch_that_turns_an_array_into_a_selection_raises():
    def f(x, t):
        s = x
        if t > 0:
            s = x[x > t]
        return s
    with pytest.raises(UnsupportedOperationError, match="data-dependent"):
        jk.jit(f)(np.arange(4.0), 1.0)


def test_ufunc_out_into_a_selection(backend):
    def f(x):
        s = x[x > 0]
        alias = s
        np.multiply(s, 2.0, s)
        np.add(s, s, out=s)
        m = s > 5
        np.logical_not(m, m)
        return alias, s[m], np.negative(s, out=s)
    x = np.array([3.0, -1.0, 0.5, 7.0, 2.0])
    for got, want in zip(jk.jit(f, backend=backend)(x), f(x.copy())):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(TypeError):  # NumPy's casting rule for out=: float into an int selection
        jk.jit(lambda x: np.multiply(x[x > 0], 1.5, out=x[x > 0]), backend=backend)(np.arange(3))


@settings(max_examples=10, deadline=None)
@given(n=st.integers(0, 40), seed=st.integers(0, 99))
def test_a_selection_shrinking_in_a_while_loop_matches_numpy(n, seed):
    def f(x):
        z = x[x > 0]
        k = 0
        while len(z) > 1:
            z = z[z > z.mean()]
            k += 1
        return z, k
    x = np.random.default_rng(seed).standard_normal(n)
    want = f(x)
    for backend in HOST_BACKENDS:
        got = jk.jit(f, backend=backend)(x)
        np.testing.assert_array_equal(got[0], want[0])
        assert int(got[1]) == want[1]

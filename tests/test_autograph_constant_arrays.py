"""NumPy arrays made inside a jitted function with NumPy's own functions (np.arange, np.mgrid,
np.linspace, np.array of literals: concrete while tracing) indexed by traced values and
stored into (autograph/constant_arrays.py, autograph/subscripts.py), against NumPy."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from jitkernel.errors import TracerArrayConversionError
from helpers import HOST_BACKENDS


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


# constant arrays of shape (3, 4) made inside the function, NumPy's own functions
_CONSTANTS = {
    "arange": lambda: np.arange(12).reshape(3, 4),
    "mgrid": lambda: np.mgrid[0:3, 0:4][1] * 1.5,
    "linspace": lambda: np.linspace(-1.0, 1.0, 12).reshape(3, 4),
    "literal": lambda: np.array([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], np.int32),
    "bools": lambda: np.arange(12).reshape(3, 4) % 3 == 0,
}

# index kinds made from the traced x (shape (3, 4), values in [0, 1))
_INDEXES = {
    "mask": lambda x: x > 0.5,
    "row_mask": lambda x: x[:, 0] > 0.5,
    "flat_indices": lambda x: (x.ravel() * 3).astype(np.int64) % 3,
    "argsort_rows": lambda x: np.argsort(x[:, 0]),
    "pair": lambda x: ((x[0] * 3).astype(np.int64) % 3, np.argsort(x[1])),
    "scalar_pair": lambda x: ((x[0, 0] * 3).astype(np.int64), (x[0, 1] * 4).astype(np.int64)),
    "column_gather": lambda x: (slice(None), np.argsort(x[0])),
}


def _read(const, index):
    def f(x):
        c = _CONSTANTS[const]()
        return c[_INDEXES[index](x)]
    return f


def _write(const, index):
    def f(x):
        c = _CONSTANTS[const]()
        c[_INDEXES[index](x)] = x.ravel()[0] * 10
        return c
    return f


def _add_write(const, index):
    def f(x):
        c = _CONSTANTS[const]()
        c[_INDEXES[index](x)] += True if const == "bools" else 2  # (a bool array += 2 is NumPy's TypeError)
        return c
    return f


_JITTED: dict = {}


@settings(max_examples=40, deadline=None)
@given(const=st.sampled_from(sorted(_CONSTANTS)), index=st.sampled_from(sorted(_INDEXES)),
       kind=st.sampled_from(["read", "write", "add"]), seed=st.integers(0, 999))
def test_constant_arrays_indexed_by_traced_values_match_numpy(const, index, kind, seed):
    x = np.random.default_rng(seed).random((3, 4))
    make = {"read": _read, "write": _write, "add": _add_write}[kind]
    fn = make(const, index)
    want = fn(x)
    for backend in HOST_BACKENDS:
        key = (const, index, kind, backend)
        if key not in _JITTED:
            _JITTED[key] = jk.jit(make(const, index), backend=backend)
        _same(_JITTED[key](x), want)


def test_mgrid_masked_without_control_flow(backend):
    def f(mask):
        X, Y = np.mgrid[0:4, 0:4]
        return X[mask], Y[mask] * 2
    mask = np.random.default_rng(0).random((4, 4)) > 0.4
    for got, want in zip(jk.jit(f, backend=backend)(mask), f(mask)):
        _same(got, want)


def test_a_constant_changed_after_a_traced_read_is_read_again():
    def f(i):
        c = np.arange(5)
        a = c[i]
        c[0] = 100  # a concrete write into the NumPy array: the next read sees it
        return a, c[i]
    i = np.array([0, 2])
    for got, want in zip(jk.jit(f)(i), f(i)):
        _same(got, want)


def test_store_into_a_constant_inside_a_loop():
    def f(x):
        c = np.arange(8.0)
        for k in range(6):
            c[np.argmax(x) % 8] += x[k]
        return c
    x = np.random.default_rng(1).random(8)
    _same(jk.jit(f)(x), f(x))


def test_views_and_shared_constants_keep_numpy_semantics_or_raise():
    def shared(x):
        c = np.arange(4.0)
        d = c  # NumPy's store would change d too
        c[x > 0] = x[0]
        return d
    with pytest.raises(TracerArrayConversionError, match="another variable"):
        jk.jit(shared)(np.ones(4))

    def view(x):
        c = np.arange(8.0)
        v = c[:4]
        v[x > 0] = 1.0
        return c
    with pytest.raises(TracerArrayConversionError, match="view"):
        jk.jit(view)(np.ones(4))

    def view_read(i):
        c = np.arange(6.0).reshape(2, 3)
        return c[i]  # a row of c: NumPy's view, not lifted (a write through it would be lost)
    with pytest.raises(TracerArrayConversionError):
        jk.jit(view_read)(np.array(1))


def test_lists_and_other_subscripts_are_python(backend):
    def f(x):
        table = [1.0, 2.0, 3.0]
        d = {"a": x}
        return d["a"] * table[1] + np.arange(3)[1]
    _same(jk.jit(f, backend=backend)(np.ones(2)), f(np.ones(2)))


def _methods(x, i):
    c = np.arange(6.0) * 1.5
    return (c.take(i), np.take(c, i), c[:3].repeat(i + 1), np.repeat(c[:3], i), c.dot(x), c.searchsorted(x * 6),
            c.compress(x > 0.5), c.clip(x, 3.0))


def test_read_only_methods_of_constants_with_traced_arguments(backend):
    x, i = np.random.default_rng(2).random(6), np.array([3, 1, 0])
    for got, want in zip(jk.jit(_methods, backend=backend)(x, i), _methods(x, i)):
        _same(got, want)


def test_writes_into_constants_through_functions_still_raise():
    def add_at(x, i):
        c = np.arange(6.0)
        np.add.at(c, i, x[:3])
        return c
    with pytest.raises(jk.JitError):
        jk.jit(add_at)(np.ones(6), np.array([0, 1, 1]))

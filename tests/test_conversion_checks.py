"""np.require and np.asarray_chkfinite of traced arrays inside jit (NumPy does not dispatch
them: trace/creation.py routes them): dtypes, requirements, NumPy's errors; a NaN or infinity
raises NumPy's ValueError when the call runs."""
from __future__ import annotations

import numpy as np
import pytest

import jitkernel as jk
from emulator_suite import emulator_backends
from helpers import HOST_BACKENDS, check


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda a: np.require(a), lambda a: np.require(a, np.float32), lambda a: np.require(a.T, requirements="C"),
    lambda a: np.require(a, np.int16, ["F", "A", "W"]), lambda a: np.require(a[:, 1:], requirements="OWNDATA"),
    lambda a: np.require(a, requirements=["E", "contiguous"]), lambda a: np.require(a, requirements="CF"),
    lambda a: np.require(a, requirements="X"),
    lambda a: np.asarray_chkfinite(a), lambda a: np.asarray_chkfinite(a, np.float32),
    lambda a: np.asarray_chkfinite(a.astype(np.int8)), lambda a: np.asarray_chkfinite(a > 1),
    lambda a: np.asarray_chkfinite(a / a[0, 0]),                        # inf and nan: run-time ValueError
    lambda a: np.asarray_chkfinite(np.log(a - 1)),                      # -inf
], ids=["require", "require-dtype", "require-C", "require-F", "require-O", "require-E", "require-CF",
        "require-bad-flag", "chkfinite", "chkfinite-f32", "chkfinite-int", "chkfinite-bool", "chkfinite-inf",
        "chkfinite-log"])
def test_forms(fn, backend):
    check(fn, np.arange(6.0).reshape(2, 3), backend=backend)


def test_require_owndata_copies_a_view():
    def f(a):
        b = a.copy()
        np.require(b[1:], requirements="O")[0] = -1.0
        np.require(b[:1])[0] = -2.0  # no requirements: the same array (a view of b)
        return b
    a = np.arange(3.0)
    np.testing.assert_array_equal(jk.jit(f)(a), f(a))


def test_chkfinite_error_names_the_cause():
    with pytest.raises(ValueError, match="array must not contain infs or NaNs"):
        jk.jit(lambda a: np.asarray_chkfinite(a * 2))(np.array([1.0, np.nan]))
    # finite on the next call: the check runs on every call
    np.testing.assert_array_equal(jk.jit(lambda a: np.asarray_chkfinite(a * 2))(np.array([1.0, 2.0])), [2.0, 4.0])


def test_grad_and_vmap():
    np.testing.assert_array_equal(jk.grad(lambda a: (np.asarray_chkfinite(a) ** 2).sum())(np.array([1.0, 3.0])), [2, 6])
    np.testing.assert_array_equal(jk.vmap(lambda a: np.asarray_chkfinite(a).sum())(np.ones((2, 3))), [3.0, 3.0])


@pytest.mark.parametrize("backend", emulator_backends())
def test_on_cuda_emulator(backend):
    check(lambda a: np.asarray_chkfinite(a / a[0]), np.arange(1.0, 4.0, dtype=np.float32), backend=backend)
    check(lambda a: np.asarray_chkfinite(a / a[0]), np.arange(0.0, 3.0, dtype=np.float32), backend=backend)


@pytest.mark.parametrize("fn", [lambda a: np.asarray_chkfinite(a), lambda a: np.require(a),
                                lambda a: np.require(a[1:], requirements="O"), lambda a: np.asarray_chkfinite(a, np.float32)],
                         ids=["chkfinite", "require", "require-O", "chkfinite-f32"])
def test_byte_order_as_numpy(fn):
    a = np.arange(4.0).astype(">f8")
    got, want = jk.jit(fn)(a), fn(a)
    assert got.dtype.str == want.dtype.str
    np.testing.assert_array_equal(got, want)

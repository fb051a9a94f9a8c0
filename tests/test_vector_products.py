"""np.vecdot, np.matvec and np.vecmat inside jit: NumPy's loop dtypes, batch broadcasting,
conjugation, axes=/axis=/keepdims=, its core-dimension errors, derivatives and vmap."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from emulator_suite import emulator_backends
from helpers import HOST_BACKENDS, builtin_type, check, rng_for, sample

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))
TOL = {np.dtype(np.float64): 1e-12, np.dtype(np.float32): 1e-5, np.dtype(np.complex128): 1e-12}


def _operands(name: str, batch1: tuple, batch2: tuple, m: int, n: int, dtype, seed: str) -> tuple:
    rng = rng_for(name, batch1, batch2, m, n, np.dtype(dtype).name, seed)

    def arr(shape):
        if np.dtype(dtype).kind == "c":
            return sample(rng, np.float64, shape) + 1j * sample(rng, np.float64, shape)
        return sample(rng, dtype, shape)
    core1, core2 = {"vecdot": ((n,), (n,)), "matvec": ((m, n), (n,)), "vecmat": ((n,), (n, m))}[name]
    return arr(batch1 + core1), arr(batch2 + core2)


def _close(got, want) -> None:
    assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape, (got, want)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=TOL[want.dtype], atol=TOL[want.dtype])


@SETTINGS
@given(name=st.sampled_from(["vecdot", "matvec", "vecmat"]),
       dtype=st.sampled_from([np.float64, np.float32, np.complex128, np.int8, np.int64, np.uint16, np.bool_]),
       batch=st.sampled_from([((), ()), ((3,), ()), ((), (2,)), ((2, 1), (3,)), ((4,), (4,))]),
       m=st.integers(1, 3), n=st.integers(0, 4), backend=st.sampled_from(HOST_BACKENDS))
def test_matches_numpy(name, dtype, batch, m, n, backend):
    x1, x2 = _operands(name, *batch, m, n, dtype, "hypothesis")
    uf = getattr(np, name)
    _close(jk.jit(lambda a, b: uf(a, b), backend=backend)(x1, x2), uf(x1, x2))


def _parts(z):
    """A complex result as its real and imaginary parts (helpers.check compares real dtypes)."""
    return np.real(z), np.imag(z)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda a, b: np.vecdot(a, b),
    lambda a, b: np.vecdot(a, b, axis=0),
    lambda a, b: np.vecdot(a, b, axis=-2, keepdims=True),
    lambda a, b: np.vecdot(a, b, axes=[1, 1, 0], keepdims=True),
    lambda a, b: np.vecdot(a, b, axes=[0, 0]),
    lambda a, b: np.matvec(a, b[0]),
    lambda a, b: np.matvec(a, b[:, 0], axes=[(1, 0), 0, 0]),
    lambda a, b: np.vecmat(b[0, :, 0], a),
    lambda a, b: np.vecmat(a[:, 0], b, axes=[1, (2, 1), 0]),
    lambda a, b: np.vecdot(a.astype(np.int8), b.astype(np.float32)),   # mixed dtypes: NumPy's loop
    lambda a, b: np.vecdot(a > 0, b > 0),                              # bool: or of ands
    lambda a, b: np.vecdot(a.astype(np.int8) * 50, b.astype(np.int8)),  # int8 wraps as NumPy's loop
    lambda a, b: _parts(np.vecdot(a + 1j * b, b - 2j * a)),           # conj of the first operand
    lambda a, b: _parts(np.matvec(a + 1j * b, b[0] - 2j)),            # no conj
    lambda a, b: _parts(np.vecmat(a[0, 0] + 1j, b[0] * 1j)),          # conj of the vector
], ids=["default", "axis0", "axis-keepdims", "axes-keepdims", "axes", "matvec", "matvec-axes", "vecmat",
        "vecmat-axes", "mixed", "bool", "int8-wrap", "vecdot-complex", "matvec-complex", "vecmat-complex"])
def test_forms(backend, fn):
    rng = rng_for("vector product forms")
    a = np.round(sample(rng, np.float64, (2, 4, 4)))
    b = np.round(sample(rng, np.float64, (2, 4, 4)))
    check(fn, a, b, backend=backend)


@pytest.mark.parametrize("fn, shapes", [
    (np.vecdot, ((3,), (4,))), (np.matvec, ((2, 3), (4,))), (np.vecmat, ((3,), (4, 2))),
    (np.matvec, ((3,), (3,))), (np.vecmat, ((3,), (3,))), (np.vecdot, ((2, 3), (4, 3))),
])
def test_shape_errors(fn, shapes):
    args = [np.ones(s) for s in shapes]
    with pytest.raises(ValueError) as numpy_error:
        fn(*args)
    with pytest.raises(ValueError) as ours:
        jk.jit(fn)(*args)
    if "core" in str(numpy_error.value):  # the core-dimension message is NumPy's, word for word
        assert str(ours.value) == str(numpy_error.value)


@pytest.mark.parametrize("kwargs", [dict(axis=0), dict(keepdims=True), dict(axes=[0, 0])])
def test_matvec_axis_request_errors_are_numpys(kwargs):
    a, v = np.ones((3, 3)), np.ones(3)
    with pytest.raises(Exception) as numpy_error:
        np.matvec(a, v, **kwargs)
    with pytest.raises(builtin_type(numpy_error.value), match=str(numpy_error.value)[:30].replace("(", r"\(")):
        jk.jit(lambda x, y: np.matvec(x, y, **kwargs))(a, v)


def test_unsupported_keyword_is_refused_by_name():
    with pytest.raises(jk.UnsupportedOperationError, match="dtype"):
        jk.jit(lambda a: np.vecdot(a, a, dtype=np.float32))(np.ones(3))


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_out_argument(backend):
    def f(a, v):
        out = np.zeros(a.shape[:-1])
        np.matvec(a, v, out=out)
        return out
    check(f, np.arange(12.0).reshape(3, 4), np.arange(4.0), backend=backend)


def test_derivatives_are_the_analytic_ones():
    rng = rng_for("vector product grads")
    a, v, w = sample(rng, np.float64, (3, 4)), sample(rng, np.float64, (4,)), sample(rng, np.float64, (3,))
    np.testing.assert_allclose(jk.grad(lambda x: np.vecdot(x, v))(v * 2), v, rtol=1e-12)
    # d/dA sum(w * A v) = outer(w, v); d/dv = A^T w
    np.testing.assert_allclose(jk.grad(lambda m: np.vecdot(w, np.matvec(m, v)))(a), np.outer(w, v), rtol=1e-12)
    np.testing.assert_allclose(jk.grad(lambda x: np.vecdot(w, np.matvec(a, x)))(v), a.T @ w, rtol=1e-12)
    # d/dw sum(vecmat(w, A) * v) = A v
    np.testing.assert_allclose(jk.grad(lambda x: np.vecdot(np.vecmat(x, a), v))(w), a @ v, rtol=1e-12)


def test_vmap():
    rng = rng_for("vector product vmap")
    a, v = sample(rng, np.float64, (5, 3, 4)), sample(rng, np.float64, (5, 4))
    np.testing.assert_allclose(jk.vmap(np.matvec)(a, v), np.matvec(a, v), rtol=1e-12)
    np.testing.assert_allclose(jk.vmap(np.vecdot)(v, v), np.vecdot(v, v), rtol=1e-12)
    np.testing.assert_allclose(jk.vmap(np.vecmat, in_axes=(None, 0))(v[0], a.transpose(0, 2, 1)),
                               np.vecmat(v[0], a.transpose(0, 2, 1)), rtol=1e-12)


@pytest.mark.parametrize("backend", emulator_backends())
def test_on_the_emulated_gpu(backend):
    rng = rng_for("vector products emulator")
    a, v = sample(rng, np.float32, (2, 3, 4)), sample(rng, np.float32, (4,))
    check(lambda x, y: (np.matvec(x, y), np.vecdot(x, x), np.vecmat(y, x.transpose(0, 2, 1))), a, v,
          backend=backend)

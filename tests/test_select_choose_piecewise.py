"""np.select, np.choose and np.piecewise inside jit: NumPy 2.4's dtypes (NEP 50 weak scalars),
broadcasting, precedence of the first true condition, choose's modes and run-time
ValueError, piecewise's n or n + 1 functions, errors, derivatives, vmap and the emulated GPU."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from emulator_suite import emulator_backends
from helpers import HOST_BACKENDS, check, raises_like_numpy, rng_for, sample

SETTINGS = settings(max_examples=20, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))
X = np.array([-3.0, -0.5, 0.0, 0.25, 1.0, 4.0, np.nan, np.inf])


# ----------------------------------------------------------------------------- select

@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda x: np.select([x < 0, x > 0.5], [-x, x * 10]),
    lambda x: np.select([x < 0, x < 1], [x, 2 * x], default=np.nan),      # first true wins
    lambda x: np.select([x < 0], [1], default=2.5),                         # weak scalars: float64
    lambda x: np.select([x < 0], [x.astype(np.float32)], default=2),        # float32 stays
    lambda x: np.select([x < 0], [np.int8(3)], default=300),                 # int8 + Python int
    lambda x: np.select([x < 0, x > 2], [x.astype(np.int16), x.astype(np.int32)], default=x[0]),
    lambda x: np.select([x[0] < 0], [x]),                                   # 0-d condition broadcasts
    lambda x: np.select([x[:, None] < 0], [x[None, :2]]),                   # 2-d result
    lambda x: np.select([x[0] < 0], [x[1]]),                                # 0-d: an ndarray
    lambda x: np.select([np.array([True, False] * 4)], [x]),                # a constant condition
], ids=["basic", "precedence", "weak", "float32", "int8-weak", "mixed", "0d-cond", "2d", "0d", "const-cond"])
def test_select(backend, fn):
    check(fn, X, backend=backend)


def test_select_errors_are_numpys():
    for fn in (lambda x: np.select([x < 0], [x, x]), lambda x: np.select([], []),
               lambda x: np.select([x], [x]), lambda x: np.select([x < 0], [x[:3]])):
        raises_like_numpy(fn, X)


@SETTINGS
@given(st.sampled_from([np.float64, np.float32, np.int32, np.uint8, np.bool_]), st.integers(1, 3),
       st.integers(0, 5))
def test_select_matches_numpy(dtype, ncases, seed):
    rng = rng_for("select", seed)
    data = [sample(rng, dtype, (3, 4)) for _ in range(ncases)]
    conds = [rng.integers(0, 2, (3, 4)).astype(bool) for _ in range(ncases)]
    fn = lambda c, d: np.select(list(c), list(d), default=d[0][0, 0])  # noqa: E731
    np.testing.assert_array_equal(jk.jit(fn)(tuple(conds), tuple(data)), fn(conds, data))


# ----------------------------------------------------------------------------- choose

@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda i, x: np.choose(i, [x, -x, 2.5]),
    lambda i, x: np.choose(i, [x.astype(np.int8), 300, 7]),          # Python int cast unsafely
    lambda i, x: np.choose(i + 2, [x, -x, 2.5], mode="wrap"),
    lambda i, x: np.choose(i - 2, [x, -x, 2.5], mode="wrap"),
    lambda i, x: np.choose(i * 3 - 2, [x, -x, 2.5], mode="clip"),
    lambda i, x: np.choose(i[:, None], [x[None, :3], x[None, 3:6] * 2, 0.0]),  # broadcasts
    lambda i, x: np.choose(i.astype(np.uint8), [x.astype(np.float32), x]),
    lambda i, x: np.choose(i[0], [x, x * 2, x * 3]),                  # 0-d index
    lambda i, x: np.choose(i % 2 == 1, [x, -x]),                      # bool index
    lambda i, x: np.choose(i, np.stack([x, -x, x * x])),              # an array of choices
], ids=["basic", "int8-weak", "wrap", "wrap-neg", "clip", "bcast", "uint8-index", "0d", "bool", "array"])
def test_choose(backend, fn):
    check(fn, np.array([0, 2, 1, 1, 0, 2, 2, 0]), X, backend=backend)


def test_choose_errors_are_numpys():
    i, x = np.array([0, 2, 1, 3, 0, 2, 2, 0]), X
    raises_like_numpy(lambda i, x: np.choose(i, [x, -x, 2.5]), i, x)       # run time: index 3
    raises_like_numpy(lambda i, x: np.choose(i - 1, [x, -x, 2.5, x]), i, x)  # run time: index -1
    raises_like_numpy(lambda i, x: np.choose(x, [x, -x]), i, x)            # float index: TypeError
    raises_like_numpy(lambda i, x: np.choose(i.astype(np.uint64), [x, -x]), i, x)
    raises_like_numpy(lambda i, x: np.choose(i, [x, -x], mode="nope"), i, x)
    with pytest.raises(ValueError, match="invalid entry in choice array"):
        jk.jit(lambda i, x: np.choose(i, [x, -x, 2.5]))(i, x)


def test_choose_into_out():
    def f(i, x, o):
        np.choose(i, [x, -x], out=o)
        return o
    i, x = np.array([0, 1, 1, 0]), X[:4]
    np.testing.assert_array_equal(jk.jit(f)(i, x, np.zeros(4)), f(i, x, np.zeros(4)))


# ----------------------------------------------------------------------------- piecewise

@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("fn", [
    lambda x: np.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v]),
    lambda x: np.piecewise(x, [x < 0, x > 1], [np.negative, np.sqrt, 0.5]),        # n + 1: otherwise
    lambda x: np.piecewise(x, [x < 0, x > 1], [-1, 1]),                              # constants
    lambda x: np.piecewise(x, x < 0, [np.log1p, np.log]),                           # one condition
    lambda x: np.piecewise(x, [x < 0], [lambda v, k: v * k], 3.0),                   # *args
    lambda x: np.piecewise(x, [x < 0], [lambda v, k=1: v + k], k=2.0),               # **kw
    lambda x: np.piecewise(x.astype(np.int64), [x < 0], [lambda v: v * 1.7, 9.9]),   # cast to x's dtype
    lambda x: np.piecewise(x.astype(np.float32), [x < 0], [lambda v: v * 2.0]),
    lambda x: np.piecewise(x[2:6].reshape(2, 2), [x[2:6].reshape(2, 2) > 0.1], [np.exp, 0.0]),
    lambda x: np.piecewise(x[4], [x[4] > 0], [np.sqrt, 7.0]),                        # 0-d x
], ids=["two", "otherwise", "constants", "single-cond", "args", "kw", "int-cast", "float32", "2d", "0d"])
def test_piecewise(backend, fn):
    check(fn, X, backend=backend)


def test_piecewise_wrong_number_of_functions():
    raises_like_numpy(lambda x: np.piecewise(x, [x < 0, x > 1], [np.sin]), X)


# ----------------------------------------------------------------------------- derivatives, vmap

def test_derivatives():
    x = np.array([-2.0, -0.5, 0.5, 3.0])
    f = lambda x: np.piecewise(x, [x < 0, x > 1], [np.square, np.sqrt, lambda v: 2 * v])  # noqa: E731
    analytic = np.array([2 * -2.0, 2 * -0.5, 2.0, 0.5 / np.sqrt(3.0)])
    np.testing.assert_allclose(jk.grad(lambda x: f(x).sum())(x), analytic, rtol=1e-12)
    np.testing.assert_allclose(jk.jacfwd(f)(x), np.diag(analytic), rtol=1e-12)
    np.testing.assert_allclose(jk.jacrev(f)(x), np.diag(analytic), rtol=1e-12)
    g = lambda x: np.select([x < 0, x > 1], [x ** 3, np.log(x)], default=0.5 * x)  # noqa: E731
    ga = np.array([3 * 4.0, 3 * 0.25, 0.5, 1 / 3.0])
    np.testing.assert_allclose(jk.jacfwd(g)(x), np.diag(ga), rtol=1e-12)
    np.testing.assert_allclose(jk.jacrev(g)(x), np.diag(ga), rtol=1e-12)
    h = lambda x: np.choose(np.array([1, 0, 1, 0]), [x * x, 3.0 * x])  # noqa: E731
    ha = np.array([3.0, 2 * -0.5, 3.0, 2 * 3.0])
    np.testing.assert_allclose(jk.jacrev(h)(x), np.diag(ha), rtol=1e-12)
    np.testing.assert_allclose(jk.jacfwd(h)(x), np.diag(ha), rtol=1e-12)


def test_vmap():
    x = np.stack([X[:4], X[4:]])
    f = lambda v: np.piecewise(v, [v < 0], [np.negative, np.square])  # noqa: E731
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(jk.vmap(f)(x), np.stack([f(r) for r in x]))
        g = lambda v: np.select([v < 0, v > 1], [v, -v], default=9.0)  # noqa: E731
        np.testing.assert_array_equal(jk.vmap(g)(x), np.stack([g(r) for r in x]))
    i = np.array([[0, 1, 1, 0], [1, 1, 0, 0]])
    np.testing.assert_array_equal(jk.vmap(lambda i, v: np.choose(i, [v, -v]))(i, x),
                                  np.stack([np.choose(a, [r, -r]) for a, r in zip(i, x)]))


@pytest.mark.parametrize("backend", emulator_backends())
def test_on_the_emulated_gpu(backend):
    x = X.astype(np.float32)
    check(lambda x: (np.select([x < 0, x > 1], [x, x * 2], default=-1.0),
                     np.choose(np.array([0, 1, 2, 0, 1, 2, 0, 1]), [x, -x, 2.5], mode="wrap"),
                     np.piecewise(x, [x < 0, x > 1], [np.negative, np.sqrt, 0.5])), x, backend=backend)

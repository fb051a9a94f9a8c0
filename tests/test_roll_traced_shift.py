"""np.roll with a traced shift inside jit: NumPy 2.4's result (bit for bit: a permutation) for
negative, large and float shifts, tuple shifts and several shifts of one axis, axis=None,
mixed static and traced shifts, errors; derivatives (a permutation: jacfwd == jacrev), vmap
over the data and over the shift, and the emulated GPU."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
import jitkernel.numpy  # noqa: F401  (jk.numpy.roll)
from emulator_suite import emulator_backends
from helpers import HOST_BACKENDS, check, rng_for, sample

SETTINGS = settings(max_examples=30, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))
X = np.arange(24.0).reshape(2, 3, 4)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("shift,axis", [
    (2, None), (-7, None), (0, None), (10**12, 1), (-(10**15) - 1, 2), (-3, 2), (4, 2), (5, -1),
    (np.int8(-3), 0), (np.uint16(7), 1), (1.7, 0), (-1.7, 2), (np.float32(2.9), 1), (True, 2),
    (np.array([1, -5]), (0, 2)), (np.array([1, 5]), (2, 2)), (np.array(3), (0, 1)),
], ids=lambda v: repr(v))
def test_one_traced_shift(backend, shift, axis):
    check(lambda x, s: np.roll(x, s, axis), X, shift, backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_tuple_and_mixed_shifts(backend):
    check(lambda x, a, b: np.roll(x, (a, b), (1, 2)), X, 1, -2, backend=backend)
    check(lambda x, a, b: np.roll(x, (a, b), (2, 2)), X, 1, 5, backend=backend)   # one axis: they add up
    check(lambda x, a: np.roll(x, (a, 3), (0, 2)), X, 1, backend=backend)           # static and traced
    check(lambda x, a: np.roll(x, [a, a], (0, 1)), X, -4, backend=backend)
    check(lambda x, a: np.roll(x, a, (0, 1, 2)), X, 5, backend=backend)             # one shift, three axes
    check(lambda x, a: np.roll(x[..., :0], a, 2), X, 3, backend=backend)            # empty axis
    check(lambda x, a: np.roll(x.astype(np.int16), a), X, -30, backend=backend)
    check(lambda x, a: np.roll(x[0, 0, 0], a), X, 3, backend=backend)              # 0-d


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_errors(backend):
    check(lambda x, s: np.roll(x, s, (0, 1)), X, np.array([1, 2, 3]), backend=backend)  # broadcast fails
    check(lambda x, s: np.roll(x, s, 0), X, np.ones((2, 2), np.int64), backend=backend)  # 2-d shift
    check(lambda x, s: np.roll(x, s, 3), X, 1, backend=backend)                           # AxisError
    with pytest.raises(TypeError):
        jk.jit(lambda x, s: np.roll(x, s))(X, 1j)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@SETTINGS
@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=3), data=st.data())
def test_matches_numpy(backend, shape, data):
    x = sample(rng_for("roll", shape), np.float32, tuple(shape))
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
    shift = data.draw(st.integers(-(2**40), 2**40) | st.integers(-12, 12))
    check(lambda x, s: np.roll(x, s, axis), x, np.int64(shift), backend=backend)


def test_grad_is_the_permutation():
    v = np.linspace(-1.0, 1.0, 7)
    f = lambda x, s: np.roll(x * x, s)  # noqa: E731
    for s in (0, 3, -9):
        fwd, rev = jk.jacfwd(f)(v, s), jk.jacrev(f)(v, s)
        np.testing.assert_array_equal(fwd, rev)
        np.testing.assert_array_equal(fwd, np.roll(np.diag(2 * v), s, axis=0))
    g = jk.grad(lambda x, s: np.sum(np.roll(x, s, 1) * np.arange(12.0).reshape(3, 4)))(v[:6].reshape(3, 2).repeat(2, 1), 1)
    np.testing.assert_array_equal(g, np.roll(np.arange(12.0).reshape(3, 4), -1, 1))


def test_vmap():
    v = np.arange(5.0)
    shifts = np.array([0, 1, 2, -1, 12])
    # NumPy dispatches np.roll on `a` only: a NumPy array with a traced shift takes jitkernel.numpy.roll
    np.testing.assert_array_equal(jk.vmap(lambda s: jk.numpy.roll(v, s))(shifts),
                                  np.stack([np.roll(v, s) for s in shifts]))
    rows = np.arange(10.0).reshape(2, 5)
    np.testing.assert_array_equal(jk.vmap(np.roll)(rows, np.array([1, -2])),
                                  np.stack([np.roll(rows[0], 1), np.roll(rows[1], -2)]))


@pytest.mark.parametrize("backend", emulator_backends())
def test_emulated_gpu(backend):
    check(lambda x, s: np.roll(x, s, 2), X, -3, backend=backend)
    check(lambda x, a, b: np.roll(x, (a, b), (0, 1)), X, 1, 7, backend=backend)

"""passes/identities.py: `x * 1`, `x / 1`, `x + (-0.0)`, `x - 0.0`, `-(-x)` (and the integer
forms) disappear from the optimised program and every value stays NumPy's bit for bit; the
look-alikes that are not identities (`x + 0.0`, complex `x * 1`) stay."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk
from jitkernel.passes import identities, optimize
from helpers import HOST_BACKENDS

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered", "ignore:overflow encountered")

SPECIAL = np.array([1.5, -0.0, 0.0, np.nan, np.inf, -np.inf, -2.25, 1e-45])


def values(dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return SPECIAL.astype(dtype)
    if dtype.kind == "b":
        return np.array([True, False, True])
    info = np.iinfo(dtype)
    return np.array([info.min, info.max, 0, 1, 7], dtype=dtype)


def optimized_prims(fun, x) -> list[str]:
    return [e.prim for e in optimize(jk.make_ir(fun)(x)).eqns]


def same_bits(got, want) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if got.dtype.kind == "f":
        return np.array_equal(got, want, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(want))
    return np.array_equal(got, want)


IDENTITIES = {
    "x * 1": lambda x: x * np.ones_like(x),
    "1 * x": lambda x: np.ones_like(x) * x,
    "x / 1": lambda x: x / np.ones_like(x),
    "x + -0.0": lambda x: x + np.full_like(x, -0.0),
    "-0.0 + x": lambda x: np.full_like(x, -0.0) + x,
    "x - 0.0": lambda x: x - np.zeros_like(x),
    "-(-x)": lambda x: -(-x),
}


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("name", sorted(IDENTITIES))
def test_float_identities_vanish_and_keep_every_bit(name, backend):
    fun = IDENTITIES[name]
    for dtype in (np.float32, np.float64):
        x = values(dtype)
        assert optimized_prims(fun, x) == [], name
        assert same_bits(jk.jit(fun, backend=backend)(x), fun(x)), (name, dtype)


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint16, np.bool_])
def test_integer_and_bool_identities(dtype):
    x = values(dtype)
    if np.dtype(dtype).kind == "b":
        funs = [lambda x: x * np.ones_like(x), lambda x: x + np.zeros_like(x)]  # and True, or False
    else:
        funs = [lambda x: x * np.ones_like(x), lambda x: x + np.zeros_like(x), lambda x: np.zeros_like(x) + x,
                lambda x: x - np.zeros_like(x), lambda x: -(-x)]
    for fun in funs:
        assert optimized_prims(fun, x) == []
        assert same_bits(jk.jit(fun)(x), fun(x))


def test_adding_positive_zero_is_not_an_identity():
    x = values(np.float64)
    for fun in (lambda x: x + np.zeros_like(x), lambda x: x - np.full_like(x, -0.0)):
        assert optimized_prims(fun, x) != []
        got = jk.jit(fun)(x)
        assert same_bits(got, fun(x)) and not np.signbit(got[1])  # -0.0 + 0.0 == +0.0


def test_complex_multiply_by_one_stays():
    x = np.array([complex(np.inf, 1.0), 1 + 2j])
    fun = lambda x: x * np.ones_like(x)  # noqa: E731 - (inf+1j)*(1+0j) has a NaN part
    assert "multiply" in optimized_prims(fun, x)
    np.testing.assert_array_equal(np.isnan(jk.jit(fun)(x)), np.isnan(fun(x)))


def test_broadcasting_multiply_by_one_stays():
    """`x * ones((3, 4))` for x of shape (4,) broadcasts: the result is not x."""
    x = np.arange(4.0)
    fun = lambda x: x * np.ones((3, 4))  # noqa: E731
    assert same_bits(jk.jit(fun)(x), fun(x))


def test_gradient_of_a_sum_has_no_seed_multiply():
    prog = optimize(jk.make_ir(jk.grad(lambda x: np.sum(np.sin(x) * 2.0)))(np.zeros(3)))
    assert "negative" not in [e.prim for e in prog.eqns]
    assert sum(e.prim == "multiply" for e in prog.eqns) == 1  # 2 * cos(x): the seed 1.0 is gone
    np.testing.assert_array_equal(jk.grad(lambda x: np.sum(np.sin(x) * 2.0))(np.zeros(3)), 2 * np.ones(3))


def test_the_pass_alone_leaves_other_programs_unchanged():
    prog = jk.make_ir(lambda x: np.sin(x) * 3.0 + 1.0)(np.ones(3))
    assert [e.prim for e in identities(prog).eqns] == [e.prim for e in prog.eqns]


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(sorted(IDENTITIES)), st.sampled_from([np.float32, np.float64]),
       st.lists(st.sampled_from(list(SPECIAL)), min_size=1, max_size=9))
def test_identities_hypothesis(name, dtype, elements):
    fun = IDENTITIES[name]
    x = np.array(elements, dtype=dtype)
    assert same_bits(jk.jit(fun, backend="interpret")(x), fun(x))


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_an_output_that_became_the_input_is_still_a_new_array(backend):
    """`x * 1` is `x` in the program; the caller still gets a fresh array, as from NumPy."""
    x = np.arange(4.0)
    y, z = jk.jit(lambda x: (x * 1.0, -(-x)), backend=backend)(x)
    assert not np.shares_memory(x, y) and not np.shares_memory(x, z) and not np.shares_memory(y, z)
    y[0] = 7.0
    assert x[0] == 0.0

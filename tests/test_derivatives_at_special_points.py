"""Derivatives at ties and singular points (docs/transformations.md, "Values at special points"):
a partial derivative that is exactly 0 (the operand `maximum` did not choose, the base of `x ** 0`)
gives exactly 0 whatever the (co)tangent, an infinite or NaN one included, instead of 0 * inf =
NaN; forward and reverse mode agree. JAX 0.10.2's values (measured, x64) are in the comments
where they differ."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jitkernel as jk

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, database=None, print_blob=False)
SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.0, np.inf, -np.inf, np.nan]
COTANGENTS = [1.0, -2.5, np.inf, -np.inf, np.nan]


def _nan_equal(got, expected):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))


# -- the reported cases, next to JAX ---------------------------------------------------------
def test_power_with_exponent_zero_has_derivative_zero_at_zero():
    # JAX: nan for a float exponent 0.0 (y * x ** (y - 1) = 0 * inf), 0 for an integer one
    assert jk.grad(lambda x: x ** 0)(np.float64(0.0)) == 0.0
    assert jk.grad(lambda x: x ** 0.0)(0.0) == 0.0
    assert jk.grad(lambda x: np.power(x, 0.0))(0.0) == 0.0
    np.testing.assert_array_equal(jk.grad(lambda x: np.sum(x ** 0))(np.zeros(2)), [0.0, 0.0])  # any rank
    assert jk.grad(jk.grad(lambda x: x ** 1))(0.0) == 0.0  # JAX: nan
    assert jk.grad(lambda x: x ** 1)(0.0) == 1.0
    assert jk.grad(lambda x: x ** 2)(0.0) == 0.0
    assert jk.grad(lambda x: x ** 0.5)(0.0) == np.inf  # as JAX and the math


@pytest.mark.parametrize("fn,a,b", [
    (np.fmin, [0.0, 1.0], [1.0, 0.0]), (np.minimum, [0.0, 1.0], [1.0, 0.0]),
    (np.fmax, [0.0, -1.0], [-1.0, 0.0]), (np.maximum, [0.0, -1.0], [-1.0, 0.0]),
    (lambda a, b: np.where(a > b, a, b), [0.0, -1.0], [-1.0, 0.0]),
])
def test_the_operand_not_chosen_gets_zero_under_an_infinite_cotangent(fn, a, b):
    # JAX: the same for fmin, fmax and where; nan for minimum and maximum (a multiply by 0)
    ga, gb = jk.grad(lambda a, b: np.sum(1 / fn(a, b)), argnums=(0, 1))(np.array(a), np.array(b))
    _nan_equal(ga, [-np.inf, 0.0])
    _nan_equal(gb, [0.0, -np.inf])


def test_clip_passes_nothing_from_the_clipped_side():
    np.testing.assert_array_equal(jk.grad(lambda a: np.sum(1 / np.clip(a, -1, 1)))(np.array([0.0, 2.0])),
                                  [-np.inf, 0.0])


def test_division_by_negative_zero_agrees_in_both_modes():
    # JAX's jacfwd gives nan, its jacrev -inf; the math (1 / y and -x / y**2 at y = -0.0) is -inf
    fwd = jk.jacfwd(lambda x, y: x / y, argnums=(0, 1))(1.0, -0.0)
    rev = jk.jacrev(lambda x, y: x / y, argnums=(0, 1))(1.0, -0.0)
    assert fwd == rev == (-np.inf, -np.inf)


def test_an_infinite_cotangent_through_tanh_stays_infinite():
    # d/dx 1 / tanh(x) = -1 / sinh(x)**2 is -inf at 0 (JAX: nan)
    got = jk.grad(lambda x: np.sum(1 / np.tanh(x)))(np.array([0.0, 1.0]))
    assert got[0] == -np.inf and np.isfinite(got[1])


# -- the class: a zero partial never meets the cotangent in a multiply ---------------------------
def _chosen(prim: str, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The weight of each operand in d out: 1 where chosen, 1/2 at a maximum/minimum tie, else 0."""
    with np.errstate(invalid="ignore"):
        out = getattr(np, prim)(a, b)
        if prim in ("maximum", "minimum"):  # JAX's _balanced_eq; a NaN result: 0 to both
            wa, wb = (a == out).astype(float), (b == out).astype(float)
            tie = (wa == 1) & (wb == 1)
            return np.where(tie, 0.5, wa), np.where(tie, 0.5, wb)
        first = ((a > b) if prim == "fmax" else (a < b)) | np.isnan(b)  # jnp.fmax/fmin's where
        return first.astype(float), (~first).astype(float)


@SETTINGS
@given(prim=st.sampled_from(["maximum", "minimum", "fmax", "fmin"]),
       a=st.lists(st.sampled_from(SPECIAL), min_size=4, max_size=4),
       b=st.lists(st.sampled_from(SPECIAL), min_size=4, max_size=4),
       c=st.lists(st.sampled_from(COTANGENTS), min_size=4, max_size=4))
def test_choosing_primitives_route_any_cotangent_to_the_chosen_operand(prim, a, b, c):
    a, b, c = np.array(a), np.array(b), np.array(c)
    fn = getattr(np, prim)
    wa, wb = _chosen(prim, a, b)
    with np.errstate(invalid="ignore"):
        expected = (np.where(wa > 0, c * wa, 0.0), np.where(wb > 0, c * wb, 0.0))
    got = jk.grad(lambda a, b: np.sum(fn(a, b) * c), argnums=(0, 1))(a, b)
    _nan_equal(got[0], expected[0])
    _nan_equal(got[1], expected[1])
    # forward mode: the tangent c through the same partials
    _, tangent = jk.jvp(lambda a, b: fn(a, b), (a, b), (c, np.zeros(4)))
    _nan_equal(tangent, expected[0])


@SETTINGS
@given(x=st.lists(st.sampled_from(SPECIAL), min_size=3, max_size=3),
       y=st.sampled_from([0, 0.0, 1, 1.0, 2, 0.5, -1.0]),
       c=st.lists(st.sampled_from(COTANGENTS), min_size=3, max_size=3),
       scalars=st.booleans(), operator=st.booleans())
def test_power_base_derivative_is_zero_for_exponent_zero_whatever_the_cotangent(x, y, c, scalars, operator):
    """Arrays and NumPy scalars, `x ** y` and `np.power(x, y)` (a NumPy scalar base takes NumPy's
    scalar power, no fast path: neither the rank nor the spelling may change the derivative)."""
    x, c = np.array(x), np.array(c)
    power = (lambda x: x ** y) if operator else (lambda x: np.power(x, y))
    if scalars:
        got = [jk.grad(lambda x, c=ci: power(x) * c)(np.float64(xi)) for xi, ci in zip(x, c)]
    else:
        got = jk.grad(lambda x: np.sum(power(x) * c))(x)
    with np.errstate(all="ignore"):
        # an array's x ** 0.5 is NumPy's sqrt fast path: its derivative at -0.0 is -inf (0.5 / sqrt(-0.0))
        partial = 0.5 / np.sqrt(x) if y == 0.5 and not scalars else y * np.power(x, y - 1.0)
        expected = np.zeros(3) if y == 0 else c * partial
    _nan_equal(got, expected)

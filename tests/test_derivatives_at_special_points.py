"""Derivatives at ties and singular points (docs/transformations.md, "Values at special points"):
a partial derivative that is exactly 0 (the operand `maximum` did not choose, the base of `x ** 0`)
gives exactly 0 whatever the (co)tangent, an infinite or NaN one included, instead of 0 * inf =
NaN; forward and reverse mode agree. JAX 0.10.2's values (measured, x64) are in the comments
where they differ."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

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


# -- forward and reverse mode agree at every special point ----------------------------------------
_UNARY = {"sqrt": np.sqrt, "abs": np.abs, "tanh": np.tanh, "exp": np.exp, "log": np.log, "sin": np.sin,
          "cbrt": np.cbrt, "reciprocal": lambda x: 1 / x, "square": np.square, "sign": np.sign, "floor": np.floor,
          "arctan": np.arctan, "expm1": np.expm1, "log1p": np.log1p, "sinh": np.sinh, "arcsin": np.arcsin}
_BINARY = {"divide": lambda a, b: a / b, "power": np.power, "maximum": np.maximum, "minimum": np.minimum,
           "fmax": np.fmax, "fmin": np.fmin, "hypot": np.hypot, "arctan2": np.arctan2, "multiply": np.multiply,
           "copysign": np.copysign, "fmod": np.fmod, "remainder": np.remainder,
           "where": lambda a, b: np.where(a > b, a, b)}


def _same_derivative(forward, reverse):
    """Equal, NaN and infinities exactly; finite values to the last bits (the two modes may run
    a libm function vectorised in one and scalar in the other)."""
    f, r = np.diag(np.atleast_2d(forward)), np.diag(np.atleast_2d(reverse))
    assert np.array_equal(np.isnan(f), np.isnan(r)) and np.array_equal(np.isinf(f), np.isinf(r))
    finite = np.isfinite(f)
    np.testing.assert_array_equal(f[~finite & ~np.isnan(f)], r[~finite & ~np.isnan(r)])
    np.testing.assert_allclose(f[finite], r[finite], rtol=1e-13, atol=0)


@pytest.mark.parametrize("name", sorted(_UNARY))
def test_jacfwd_and_jacrev_agree_at_special_points_unary(name):
    f = _UNARY[name]
    x = np.array(SPECIAL)
    with np.errstate(all="ignore"):
        _same_derivative(jk.jacfwd(lambda x: f(x))(x), jk.jacrev(lambda x: f(x))(x))


@pytest.mark.parametrize("name", sorted(_BINARY))
def test_jacfwd_and_jacrev_agree_at_special_points_binary(name):
    f = _BINARY[name]
    a = np.repeat(np.array(SPECIAL), len(SPECIAL))
    b = np.tile(np.array(SPECIAL), len(SPECIAL))
    with np.errstate(all="ignore"):
        fwd = jk.jacfwd(lambda a, b: f(a, b), argnums=(0, 1))(a, b)
        rev = jk.jacrev(lambda a, b: f(a, b), argnums=(0, 1))(a, b)
    for forward, reverse in zip(fwd, rev):
        _same_derivative(forward, reverse)


# -- ties: the values JAX 0.10.2 gives (measured, x64), which are ours too -------------------------
_X = np.array([3.0, 1.0, 3.0, 2.0, 1.0])
_W = np.array([1.0, 2.0, 4.0, 8.0, 16.0])


@pytest.mark.parametrize("name,fn,x,expected", [
    ("sort", lambda x: np.sum(np.sort(x) * _W), _X, [8, 1, 16, 4, 2]),  # stable: tied values keep their order
    ("sort descending", lambda x: np.sum(-np.sort(-x) * _W), _X, [1, 8, 2, 4, 16]),
    ("argsort gather", lambda x: np.sum(x[np.argsort(x)] * _W), _X, [8, 1, 16, 4, 2]),
    ("partition", lambda x: np.sum(np.partition(x, 2) * _W), _X, [8, 1, 16, 4, 2]),
    ("max", np.max, _X, [0.5, 0, 0.5, 0, 0]),
    ("min", np.min, _X, [0, 0.5, 0, 0, 0.5]),
    ("median", np.median, _X, [0, 0, 0, 1, 0]),
    ("maximum.accumulate", lambda x: np.sum(np.maximum.accumulate(x) * _W), _X, [17, 0, 14, 0, 0]),
    ("clip at its bounds", lambda x: np.sum(np.clip(x, 1.0, 2.0)), np.array([1.0, 2.0, 1.5, 0.5, 3.0]),
     [0.5, 0.5, 1, 0, 0]),
], ids=lambda v: v if isinstance(v, str) else "")
def test_gradients_at_ties_are_jax_values(name, fn, x, expected):
    np.testing.assert_array_equal(jk.grad(fn)(x), np.array(expected, dtype=np.float64))


# ----------------------------------------------------------------------------- second derivatives of composed functions

# Smooth functions written over other primitives, with a select at a special point (a tie, 0)
# whose derivative must not stop at the first order.
SMOOTH_COMPOSED = {
    "logaddexp": lambda x, y: np.logaddexp(x, y),
    "logaddexp2": lambda x, y: np.logaddexp2(x, y),
    "sinc": lambda x, y: np.sinc(x) * y,
    "float_power": lambda x, y: np.float_power(x * x + 0.5, y),
    "deg2rad": lambda x, y: np.deg2rad(x) * np.rad2deg(y),
    "ldexp": lambda x, y: np.ldexp(x * y, 3),
}


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(SMOOTH_COMPOSED)), st.floats(-3, 3), st.floats(-3, 3), st.sampled_from(["free", "tie", "zero"]))
@example("sinc", 5.1390488763649667e-70, 0.0, "free")  # the quotient's derivative lost to cancellation
@example("sinc", 1.192092896e-07, 1.0, "free")  # just above sqrt(eps): the second derivative 0.7% off
def test_hessian_of_composed_functions_is_the_derivative_of_the_gradient(name, x, y, where):
    """jk.hessian at ties (x == y) and zeros equals the central difference of jk.grad: a select
    of a constant (1/2 at a logaddexp tie, 1 at sinc's 0) once made the second derivative 0."""
    f = SMOOTH_COMPOSED[name]
    if where == "tie":
        y = x
    elif where == "zero":
        x = 0.0
    point = np.array([x, y])

    def g(v):
        return f(v[0], v[1])
    hess = jk.hessian(g)(point)
    grad = jk.grad(g)
    h = 1e-5
    numeric = np.stack([(grad(point + h * e) - grad(point - h * e)) / (2 * h) for e in np.eye(2)])
    np.testing.assert_allclose(hess, numeric, rtol=1e-5, atol=1e-5)


def test_sinc_derivatives_at_zero_to_fourth_order():
    d = np.sinc
    values = []
    for _ in range(5):
        values.append(float(d(0.0)) if not values else float(jk.jit(d)(0.0)))
        d = jk.grad(d)
    np.testing.assert_allclose(values, [1.0, 0.0, -np.pi ** 2 / 3, 0.0, np.pi ** 4 / 5], rtol=1e-12, atol=1e-12)


def test_logaddexp_hessian_at_a_tie():
    for v in (0.0, 1.5, -40.0):
        h = jk.hessian(lambda p: np.logaddexp(p[0], p[1]))(np.array([v, v]))
        np.testing.assert_allclose(h, [[0.25, -0.25], [-0.25, 0.25]], rtol=1e-12)
        h2 = jk.hessian(lambda p: np.logaddexp2(p[0], p[1]))(np.array([v, v]))
        np.testing.assert_allclose(h2, np.log(2) * np.array([[0.25, -0.25], [-0.25, 0.25]]), rtol=1e-12)


def test_power_mixed_second_derivative_at_exponent_zero():
    """d/dy d/dx x ** y = x ** (y-1) (1 + y log x) = 1/x at y = 0 (JAX: 0, its rule selects a
    constant 0 for d/dx there); at x = 0 it stays 0, never nan."""
    h = jk.hessian(lambda p: p[0] ** p[1])(np.array([2.0, 0.0]))
    np.testing.assert_allclose(h, [[0.0, 0.5], [0.5, np.log(2.0) ** 2]], rtol=1e-13)
    h0 = jk.hessian(lambda p: p[0] ** p[1])(np.array([0.0, 0.0]))
    assert np.isfinite(h0[0, 0]) and h0[0, 1] == 0.0
    assert jk.grad(lambda x: x ** 0.0)(0.0) == 0.0

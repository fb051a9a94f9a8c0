"""Fits the polynomials of jitkernel/backends/tpu/accurate_math.py and prints their float32
coefficients (constant term first) with the largest relative error of each on its interval.

    python scripts/fit_float32_math.py

Each polynomial approximates a smooth function g on an interval: the part of log1p, tanh, exp,
asinh, atanh or acosh left after its leading terms. The fit is a minimax fit of the relative error by
Lawson's iteratively reweighted least squares on 4000 Chebyshev nodes in float64; then the
coefficients are rounded to float32 one at a time from the constant term up, the others fitted
again after each rounding. g is computed in float64 from NumPy's functions, or from its Taylor
series near 0 where the subtraction of the leading terms would cancel.
"""
from __future__ import annotations

import math

import numpy as np


def _series(coefficients, x):
    return sum(c * x ** j for j, c in enumerate(coefficients))


def _piecewise(x, cut, near, far):
    x = np.asarray(x, np.float64)
    out = np.empty_like(x)
    small = np.abs(x) < cut
    out[small] = near(x[small])
    out[~small] = far(x[~small])
    return out


def log1p_q(f):
    """(log1p(f) - f) / f**2."""
    return _piecewise(f, 1e-3, lambda f: _series([(-1) ** (j + 1) / (j + 2) for j in range(12)], f),
                      lambda f: (np.log1p(f) - f) / (f * f))


def tanh_t(z):
    """(tanh(x) - x) / x**3 of z = x**2."""
    def far(z):
        x = np.sqrt(z)
        return (np.tanh(x) - x) / (x * z)
    return _piecewise(z, 1e-4, lambda z: _series([-1 / 3, 2 / 15, -17 / 315, 62 / 2835], z), far)


def asinh_s(z):
    """(asinh(x) - x) / x**3 of z = x**2."""
    def far(z):
        x = np.sqrt(z)
        return (np.arcsinh(x) - x) / (x * z)
    terms = [(-1) ** (n + 1) * math.factorial(2 * n + 2) / (4 ** (n + 1) * math.factorial(n + 1) ** 2 * (2 * n + 3))
             for n in range(8)]
    return _piecewise(z, 1e-3, lambda z: _series(terms, z), far)


def atanh_s(z):
    """(atanh(x) - x) / x**3 of z = x**2."""
    def far(z):
        x = np.sqrt(z)
        return (np.arctanh(x) - x) / (x * z)
    return _piecewise(z, 1e-3, lambda z: _series([1 / (2 * n + 3) for n in range(8)], z), far)


def acosh_c(t):
    """(acosh(1 + t) / sqrt(2t) - 1) / t."""
    terms = [(-1) ** (n + 1) * math.factorial(2 * n + 2) / (2 ** (3 * n + 3) * math.factorial(n + 1) ** 2 * (2 * n + 3))
             for n in range(10)]
    return _piecewise(t, 1e-2, lambda t: _series(terms, t),
                      lambda t: (np.log1p(t + np.sqrt(2 * t + t * t)) / np.sqrt(2 * t) - 1) / t)


def exp_e(r):
    """(exp(r) - 1 - r) / r**2."""
    return _piecewise(r, 1e-3, lambda r: _series([1 / math.factorial(j + 2) for j in range(10)], r),
                      lambda r: (np.expm1(r) - r) / (r * r))


def fit(g, lo: float, hi: float, degree: int, nodes: int = 4000, iterations: int = 60):
    """float32 coefficients (constant first) of a near-minimax relative fit of g on [lo, hi], and
    the largest relative error of the polynomial with them on a fine grid."""
    x = (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (np.arange(nodes) + 0.5) / nodes)
    y = g(x)
    vander = np.vander(x, degree + 1, increasing=True)
    fixed: list[float] = []
    for i in range(degree + 1):
        a = vander[:, i:] / y[:, None]
        b = (y - vander[:, :i] @ np.array(fixed)) / y if fixed else np.ones_like(y)
        w = np.full(nodes, 1 / nodes)
        for _ in range(iterations):  # Lawson: weights grow where the error is largest
            root = np.sqrt(w)
            c, *_ = np.linalg.lstsq(a * root[:, None], b * root, rcond=None)
            w *= np.abs(a @ c - b)
            w /= w.sum()
        fixed.append(float(np.float32(c[0])))
    grid = np.linspace(lo, hi, 200001)
    error = np.max(np.abs(np.polyval(fixed[::-1], grid) / g(grid) - 1))
    return fixed, error


# name: (g, interval, degree), as accurate_math.py uses them
POLYNOMIALS = {
    "_LOG1P_Q": (log1p_q, (math.sqrt(0.5) - 1, math.sqrt(2) - 1), 9),
    "_TANH_T": (tanh_t, (0.0, 1.0), 7),
    "_EXP_E": (exp_e, (-math.log(2) / 2, math.log(2) / 2), 5),
    "_ASINH_S": (asinh_s, (0.0, 0.25), 5),
    "_ATANH_S": (atanh_s, (0.0, 0.25), 6),
    "_ACOSH_C": (acosh_c, (0.0, 1.0), 7),
}


def main() -> None:
    for name, (g, (lo, hi), degree) in POLYNOMIALS.items():
        coefficients, error = fit(g, lo, hi, degree)
        print(f"{name} = {tuple(coefficients)}  # degree {degree} on [{lo:.6g}, {hi:.6g}], "
              f"relative error {error:.2g} (2**{math.log2(error):.1f})")


if __name__ == "__main__":
    main()

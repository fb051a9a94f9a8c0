"""`assert_matches`: assert_matches_numpy with complex leaves compared part by part (the rule of
tests/test_cuda_complex.py, shared by the tests of complex values on the GPU backends)."""
from __future__ import annotations

import numpy as np

from helpers import assert_matches_numpy


def assert_matches(got, expected, rtol: float | None = None) -> None:
    """Type, dtype and shape first; NaN and infinity positions exactly; values within rtol of the
    leaf's largest magnitude."""
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_matches(g, e, rtol)
        return
    if np.asarray(expected).dtype.kind != "c":
        assert_matches_numpy(got, expected, rtol=rtol)
        return
    assert isinstance(got, np.generic) == isinstance(expected, np.generic), (type(got), type(expected))
    g, e = np.asarray(got), np.asarray(expected)
    assert type(g) is type(e) and g.dtype == e.dtype and g.shape == e.shape, (g.dtype, g.shape, e.dtype, e.shape)
    finite = np.abs(e[np.isfinite(e)])
    tol = (rtol or 1e-6) * max(float(finite.max()) if finite.size else 1.0, 1e-30)
    for part in (np.real, np.imag):
        assert_matches_numpy(part(got), part(expected), rtol=rtol or 1e-6, atol=tol)

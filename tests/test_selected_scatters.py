"""Scatters through selections by a mask (`y[a[m], b[m]] = v[m]`, passes/selected_scatters.py):
one `setitem_selected` step computing the selections, NumPy's answers and errors on the cpu
backend and the interpreter, in loops whose state shrinks each trip (NPBench mandelbrot2)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jitkernel as jk


def _optimized(fn, *args) -> str:
    return jk.jit(fn).lower(*args).as_text("optimized")


def _outcome(fn, args, **jit):
    """The results (and the arguments after the call), or the exception type and message."""
    args = [a.copy() for a in args]
    try:
        with np.errstate(all="ignore"):
            out = (jk.jit(fn, **jit) if jit else fn)(*args)
    except IndexError as e:
        return ("IndexError", str(e))
    return (out if isinstance(out, tuple) else (out,)) + tuple(args)


def _same(got, expected):
    if isinstance(expected[0], str):
        assert got == expected
        return
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(g, e)


def escape_loop(z, c, xi, yi, tgt, cnt, *, iters, horizon, twod):
    """mandelbrot2's shape: state compacted by a mask each trip, scatters through the compacted
    coordinates, an early break once nothing is left."""
    for i in range(iters):
        if not len(z):
            break
        z = z * z + c
        if z.dtype.kind in "iu":
            z = z % 1000
        big = abs(z) > horizon
        if twod:
            cnt[xi[big], yi[big]] = i + 1
            tgt[xi[big], yi[big]] = z[big]
        else:
            cnt[xi[big]] = i + 1
            tgt[xi[big]] = z[big]
        big = np.logical_not(big)
        z = z[big]
        xi, yi = xi[big], yi[big]
        c = c[big]
    return tgt, cnt


VALUE_TARGETS = [("complex128", "complex128"), ("complex128", "complex64"), ("float64", "float64"),
                 ("float64", "float32"), ("float64", "int64"), ("int64", "int64"), ("int64", "float64"),
                 ("int32", "int16"), ("float32", "float64")]


@settings(max_examples=24, deadline=None, derandomize=True, database=None)
@given(st.sampled_from(VALUE_TARGETS), st.integers(1, 40), st.integers(0, 2**16), st.booleans(),
       st.sampled_from(["inside", "negative", "outside"]), st.integers(2, 12))
def test_shrinking_loops_with_scatters_match_numpy(types, n, seed, twod, indices, iters):
    vdt, tdt = map(np.dtype, types)
    rng = np.random.default_rng(seed)
    if vdt.kind == "c":
        c = (rng.uniform(-2, 1, n) + 1j * rng.uniform(-1.2, 1.2, n)).astype(vdt)
        horizon = 2.0
    elif vdt.kind == "f":
        c = rng.uniform(-2.5, 0.5, n).astype(vdt)
        horizon = 2.0
    else:
        c = rng.integers(-40, 40, n).astype(vdt)
        horizon = 500
    z = np.zeros(n, vdt)
    side = 6
    lo, hi = {"inside": (0, side), "negative": (-side, side), "outside": (-side, side + 1)}[indices]
    xi, yi = rng.integers(lo, hi, n), rng.integers(lo, hi, n)  # duplicates: last write wins
    shape = (side, side) if twod else (side,)
    tgt, cnt = np.zeros(shape, tdt), np.zeros(shape, np.int64)

    def fn(z, c, xi, yi, tgt, cnt):
        return escape_loop(z, c, xi, yi, tgt, cnt, iters=iters, horizon=horizon, twod=twod)

    args = (z, c, xi, yi, tgt, cnt)
    expected = _outcome(fn, args)
    _same(_outcome(fn, args, backend="cpu"), expected)
    _same(_outcome(fn, args, backend="interpret"), expected)
    assert "setitem_selected" in _optimized(fn, *args)
    if vdt == tdt:  # every selection and scatter a native loop over the count (native_selections)
        kernels = jk.jit(fn).lower(*args).as_text("kernels")
        assert "fn=setitem_selected" not in kernels and "fn=getitem" not in kernels


def test_mandelbrot2_shape_is_exact_and_fused():
    xn = yn = 24
    Xi, Yi = np.mgrid[0:xn, 0:yn]
    C = (np.linspace(-2.25, 0.75, xn)[Xi] + np.linspace(-1.25, 1.25, yn)[Yi] * 1j).ravel()

    def fn(C, Xi, Yi, N_, Z_):
        return escape_loop(np.zeros_like(C), C, Xi.ravel(), Yi.ravel(), Z_, N_, iters=30, horizon=2.0, twod=True)

    args = (C, Xi, Yi, np.zeros((xn, yn), np.int64), np.zeros((xn, yn), np.complex128))
    _same(_outcome(fn, args, backend="cpu"), _outcome(fn, args))
    text = _optimized(fn, *args)
    assert text.count("setitem_selected") == 4  # peeled first trip and loop body, two scatters each
    assert "fn='setitem'" not in text


def test_selection_read_elsewhere_is_kept():
    def fn(y, a, v):
        sel = a[v > 0]
        y[sel] = 1.0
        return y, sel

    args = (np.zeros(5), np.array([4, -1, 2, 2]), np.array([1.0, 2.0, -1.0, 3.0]))
    text = _optimized(fn, *args)
    assert "setitem_selected" not in text and "fn='setitem'" in text
    _same(_outcome(fn, args, backend="cpu"), _outcome(fn, args))


def test_raising_step_between_keeps_the_selection():
    """A selection may not move past a step that can raise (NumPy's first error must win)."""
    def fn(y, a, v, j):
        sel = a[v > 0]
        w = v[j]  # may raise IndexError
        y[sel] = w
        return y

    args = (np.zeros(5), np.array([4, -1, 2, 2]), np.array([1.0, 2.0, -1.0, 3.0]), np.array(7))
    assert "setitem_selected" not in _optimized(fn, *args)
    with pytest.raises(IndexError):
        jk.jit(fn)(*(a.copy() for a in args))


@pytest.mark.parametrize("backend", ["cpu", "interpret"])
def test_scatter_errors_and_casts_are_numpys(backend):
    def fn(y, a, b, v):
        m = v > 0
        y[a[m], b[m]] = v[m]
        return y

    v = np.array([1.7, -2.0, 3.9, 2.5])
    for a, b in [(np.array([0, 1, -1, -1]), np.array([2, 0, -3, -3])),  # wrap, duplicate: last wins
                 (np.array([0, 1, 3, 0]), np.array([0, 0, 0, 0])),  # 3 is out of bounds
                 (np.array([0, 1, 2, -4]), np.array([5, 0, 0, 0])),  # axis 0 is checked first
                 (np.array([0, 1, 2, 0]), np.array([0, 0, -4, 9]))]:  # then axis 1, in order
        for target in (np.int32, np.float64):  # a cast (the step), one dtype (a native loop)
            args = (np.zeros((3, 3), target), a, b, v)
            _same(_outcome(fn, args, backend=backend), _outcome(fn, args))


def test_static_results_never_share_memory_with_inputs():
    """datadep_call returns a setitem's fresh copy as it is, and copies anything that may be an
    input or a view of one."""
    from jitkernel.ir import primitives

    impl = primitives.get("datadep_call").impl
    x = np.zeros((2, 3))
    common = dict(ncounts=0, layout=(-1, -1, -1), where="")
    (out,) = impl(x, np.array(1.0), np.array([1, 0]), fn="setitem", kw=(("index", (("array", 0),)),),
                  outs=(("static", (2, 3), "float64"),), **common)
    assert not np.shares_memory(out, x) and out[1].sum() == 3 and x.sum() == 0
    (ravelled,) = impl(x, fn="call", kw=(("name", "ravel"),), outs=(("static", (6,), "float64"),),
                       ncounts=0, layout=(-1,), where="")
    assert not np.shares_memory(ravelled, x)


@pytest.mark.parametrize("backend", ["cpu", "interpret"])
def test_scatters_through_the_same_points_in_a_loop(backend):
    """Scatters through the same selected points one after the other (passes/native_selections.py
    checks the indices once and writes them in one loop): into two arrays, into the same array
    twice (the second writes the first's result), a value read from the first's result."""
    def fn(z, xi, a, b, n):
        for i in range(n):
            z = z * 0.5 + 1.0
            big = z > 1.5
            a[xi[big]] = i + 1
            b[xi[big]] = z[big]
            a[xi[big]] = 7  # the same array again, right after (a constant value)
            keep = ~big
            z = z[keep]
            xi = xi[keep]
        return a, b

    rng = np.random.default_rng(1)
    for xi in (rng.integers(0, 6, 9), np.array([0, 1, 2, 3, 9, 5, 0, 1, 2])):  # 9 is out of bounds
        args = (rng.uniform(0, 4, 9), xi, np.zeros(6, np.int64), np.zeros(6))
        _same(_outcome(lambda z, xi, a, b: fn(z, xi, a, b, 5), args, backend=backend),
              _outcome(lambda z, xi, a, b: fn(z, xi, a, b, 5), args))

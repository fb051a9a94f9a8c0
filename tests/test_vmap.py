"""vmap: every batching rule against a Python loop over examples (np.stack of the function run by
NumPy itself on each example), hypothesis-generated over batch sizes, in_axes (which arguments
are mapped, and along which axis, negative included), out_axes and dtypes, on the interpret
backend for the sweeps and the cpu backend for a representative subset; control flow;
compositions with grad; JAX's error messages (measured from JAX 0.10.2, recorded here).
"""
from __future__ import annotations

import re
import warnings
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import jitkernel as jk
from jitkernel.errors import UnsupportedOperationError
from jitkernel.transforms import BatchingError
from helpers import assert_matches_numpy, HOST_BACKENDS

SWEEP = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
F64, F32, I64, I32 = (np.dtype(n) for n in ("float64", "float32", "int64", "int32"))


def per_example(f: Callable, examples: list[list[Any]], mapped: list[bool]) -> Any:
    """The reference: f run by NumPy on each example, results stacked (an unmapped argument is
    example 0's value for every example)."""
    outs = []
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for ex in examples:
            outs.append(f(*[ex[j] if m else examples[0][j] for j, m in enumerate(mapped)]))
    if isinstance(outs[0], tuple):
        return tuple(np.stack([o[k] for o in outs]) for k in range(len(outs[0])))
    return np.stack(outs)


def run_case(f: Callable, examples: list[list[Any]], mapped: list[bool], axes: list[int], backend: str,
             out_axis: int = 0, rtol: float | None = None, atol: float | None = None) -> None:
    """vmap(f) over the examples stacked along `axes` (mapped arguments) against the loop."""
    args, in_axes = [], []
    for j, m in enumerate(mapped):
        if m:
            args.append(np.stack([ex[j] for ex in examples], axis=axes[j]))
            in_axes.append(axes[j])
        else:
            args.append(examples[0][j])
            in_axes.append(None)
    expected = per_example(f, examples, mapped)
    if isinstance(expected, tuple):
        out_axes: Any = 0
    else:
        out_axes = out_axis if out_axis < expected.ndim else 0
        expected = np.moveaxis(expected, 0, out_axes)
    got = jk.jit(jk.vmap(f, in_axes=tuple(in_axes), out_axes=out_axes), backend=backend)(*args)
    assert_close(got, expected, rtol=rtol, atol=atol)


def assert_close(got: Any, expected: Any, rtol: float | None = None, atol: float | None = None) -> None:
    """assert_matches_numpy, with complex leaves compared part by part (same dtype and shape)."""
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            assert_close(g, e, rtol, atol)
        return
    if np.asarray(expected).dtype.kind == "c":
        assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, got.shape, expected.dtype)
        part = np.float32 if expected.dtype == np.complex64 else np.float64
        tol = {"rtol": rtol or (1e-4 if part == np.float32 else 1e-10), "atol": atol or (1e-4 if part == np.float32 else 1e-10)}
        assert_matches_numpy(np.ascontiguousarray(got.real), np.ascontiguousarray(expected.real).astype(part), **tol)
        assert_matches_numpy(np.ascontiguousarray(got.imag), np.ascontiguousarray(expected.imag).astype(part), **tol)
        return
    assert_matches_numpy(got, expected, rtol=rtol, atol=atol)


# ----------------------------------------------------------------------------- the catalogue
# name -> (f, make(rng, dtype) -> one example's arguments, dtypes). Every batching rule is
# reached by at least one entry (the comment names it where the function does not).

def _rows(rng, dtype, shape=(3, 4)):
    x = rng.normal(size=shape) * 3
    return x.astype(dtype) if np.dtype(dtype).kind in "fc" else np.rint(x).astype(dtype)


def _spd(rng, dtype, n=3):
    a = rng.normal(size=(n, n))
    return (a @ a.T + n * np.eye(n)).astype(dtype)


def _setitem(x, i, v):
    y = x.copy()
    y[i] = v
    return y


def _setitem_columns(x, i, v):
    y = x.copy()
    y[:, i] = v  # advanced dimensions (2 of them) after a basic one: a non-trivial layout
    return y


def _add_at(x, i, v):
    y = x.copy()
    np.add.at(y, i, v)
    return y


def _col_update(x, i):
    y = x.copy()
    y[:, i] += 1
    return y


def _slice_update(x, v):
    y = x.copy()
    y[1:3, ::2] = v
    return y


def _put(x, i, v):
    y = x.copy()
    np.put(y, i, v)
    return y


def _put_wrap(x, i):
    y = x.copy()
    np.put(y, i, 5, mode="wrap")
    return y


def _put_along(x, i, v):
    y = x.copy()
    np.put_along_axis(y, i, v, axis=1)
    return y


def _put_along_flat(x, i, v):
    y = x.copy()
    np.put_along_axis(y, i, v, axis=None)
    return y


def _putmask(x, m, v):
    y = x.copy()
    np.putmask(y, m, v)
    return y


def _place(x, m, v):
    y = x.copy()
    np.place(y, m, v)
    return y


def _dyn_update(x, i, v):
    y = x.copy()
    y[i] = v
    return y


FLOATS = (F64, F32)
NUMERIC = (F64, F32, I64, I32)
I = lambda rng, n, size: rng.integers(0, n, size=size)  # noqa: E731

CASES: dict[str, tuple[Callable, Callable, tuple]] = {
    "elementwise": (lambda x, y: np.sin(x) * y + 1, lambda r, d: [_rows(r, d), _rows(r, d)], FLOATS),
    "integer_ops": (lambda x, y: (x // (np.abs(y) + 1)) ^ y, lambda r, d: [_rows(r, d), _rows(r, d)], (I64, I32)),
    "convert_compare": (lambda x, y: (x > y).astype(np.int8) + x.astype(np.int32),
                        lambda r, d: [_rows(r, d), _rows(r, d)], NUMERIC),
    "select": (lambda c, x, y: np.where(c, x, y),
               lambda r, d: [r.random((3, 4)) > 0.5, _rows(r, d), _rows(r, d)], NUMERIC),
    "broadcast_reshape_transpose": (lambda x, y: (x.T.reshape(-1)[:, None] * y[0, :2]) + y[0, 0],
                                    lambda r, d: [_rows(r, d), _rows(r, d)], NUMERIC),
    "reductions": (lambda x: (x.sum(axis=1), x.max(axis=0), np.prod(x, axis=(0, 1)), x.min()),
                   lambda r, d: [_rows(r, d)], NUMERIC),
    "bool_reductions": (lambda x: (np.all(x > 0, axis=0), np.any(x > 2)), lambda r, d: [_rows(r, d)], FLOATS),
    "argmax_argmin": (lambda x: (np.argmax(x, axis=1), np.argmin(x, axis=0), np.argmax(x)),
                      lambda r, d: [_rows(r, d)], NUMERIC),
    "slice": (lambda x: x[1:3, ::-2], lambda r, d: [_rows(r, d)], NUMERIC),
    "concatenate": (lambda x, y: np.concatenate([x, y[:, :2]], axis=1), lambda r, d: [_rows(r, d), _rows(r, d)],
                    NUMERIC),
    "update_slice": (_slice_update, lambda r, d: [_rows(r, d), _rows(r, d, (2, 2))], NUMERIC),
    "iota": (lambda x: x + np.arange(4), lambda r, d: [_rows(r, d)], NUMERIC),
    "matvec": (lambda w, x: w @ x, lambda r, d: [_rows(r, d), _rows(r, d, (4,))], FLOATS),
    "vecmat": (lambda x, w: x @ w, lambda r, d: [_rows(r, d, (3,)), _rows(r, d)], FLOATS),
    "matmul": (lambda a, b: a @ b.T, lambda r, d: [_rows(r, d), _rows(r, d, (2, 4))], FLOATS + (I64,)),
    "batched_matmul": (lambda a, b: np.matmul(a, b), lambda r, d: [_rows(r, d, (2, 3, 4)), _rows(r, d, (2, 4, 2))],
                       FLOATS),
    "dot_vectors": (lambda a, b: (np.dot(a, b), np.outer(a, b)), lambda r, d: [_rows(r, d, (4,)), _rows(r, d, (4,))],
                    FLOATS),
    "outer_product_matmul": (lambda a, b, c: (a[:, None] @ b[None, :], np.matmul(c[:, :, None], c[:, None, :]),
                                              np.einsum("i,jk->jik", a[:1], c)),
                             lambda r, d: [_rows(r, d, (3,)), _rows(r, d, (4,)), _rows(r, d, (2, 3))], NUMERIC),
    "einsum": (lambda a, b: np.einsum("ij,kj->ki", a, b), lambda r, d: [_rows(r, d), _rows(r, d, (2, 4))], FLOATS),
    "dynamic_slice": (lambda x, i: (x[i], x[-1 - i, 1]), lambda r, d: [_rows(r, d), r.integers(0, 3)], NUMERIC),
    "dynamic_update_slice": (_dyn_update, lambda r, d: [_rows(r, d), r.integers(-3, 3), _rows(r, d, (4,))], NUMERIC),
    "gather_rows": (lambda x, i: x[i], lambda r, d: [_rows(r, d), I(r, 3, (2, 2))], NUMERIC),
    "gather_columns": (lambda x, i: x[:, i], lambda r, d: [_rows(r, d), I(r, 4, (5,)) - 2], NUMERIC),
    "gather_separated": (lambda x, i, j: x[i, :, j], lambda r, d: [_rows(r, d, (3, 2, 4)), I(r, 3, (5,)), I(r, 4, (5,))],
                         NUMERIC),
    "gather_adjacent_int": (lambda x, i: x[:, i, 1], lambda r, d: [_rows(r, d, (2, 3, 4)), I(r, 3, (2, 3))], NUMERIC),
    "gather_none_ellipsis": (lambda x, i: x[None, ..., i], lambda r, d: [_rows(r, d), I(r, 4, (2,))], NUMERIC),
    "scatter": (_setitem, lambda r, d: [_rows(r, d), I(r, 3, (2,)), _rows(r, d, (2, 4))], NUMERIC),
    "scatter_scalar": (lambda x, i: _setitem(x, i, 7), lambda r, d: [_rows(r, d), I(r, 3, (2,))], NUMERIC),
    "scatter_columns_2d": (_setitem_columns, lambda r, d: [_rows(r, d), I(r, 4, (2, 2)), _rows(r, d, (3, 2, 2))],
                           NUMERIC),
    "searchsorted_nan": (lambda a, v: (np.searchsorted(np.sort(a), v), np.searchsorted(np.sort(a), v, side="right")),
                         lambda r, d: [np.where(r.random(6) > 0.6, np.nan, r.normal(size=6)).astype(d),
                                       np.where(r.random(4) > 0.6, np.nan, r.normal(size=4)).astype(d)], FLOATS),
    "scatter_columns": (_col_update, lambda r, d: [_rows(r, d), I(r, 4, (2,))], NUMERIC),
    "scatter_ufunc": (_add_at, lambda r, d: [_rows(r, d), I(r, 3, (4,)), _rows(r, d, (4, 4))], NUMERIC),
    "take": (lambda x, i: (np.take(x, i, axis=1), np.take(x, i), np.take(x, i + 2, axis=0, mode="wrap"),
                           np.take(x, i - 1, axis=1, mode="clip")), lambda r, d: [_rows(r, d), I(r, 3, (2, 2))],
             NUMERIC),
    "take_along_axis": (lambda x, i: (np.take_along_axis(x, i, axis=1), np.take_along_axis(x.ravel(), i[0], axis=None)),
                        lambda r, d: [_rows(r, d), I(r, 4, (3, 2))], NUMERIC),
    "put": (_put, lambda r, d: [_rows(r, d), I(r, 12, (3,)) - 6, _rows(r, d, (2,))], NUMERIC),
    "put_wrap": (_put_wrap, lambda r, d: [_rows(r, d), I(r, 30, (4,)) - 15], NUMERIC),
    "put_along_axis": (_put_along, lambda r, d: [_rows(r, d), I(r, 4, (3, 1)), _rows(r, d, (3, 1))], NUMERIC),
    "put_along_axis_flat": (_put_along_flat, lambda r, d: [_rows(r, d), I(r, 12, (5,)), _rows(r, d, (5,))], NUMERIC),
    "searchsorted_sorter": (lambda a, v: np.searchsorted(a, v, sorter=np.argsort(a, kind="stable")),
                            lambda r, d: [_rows(r, d, (6,)), _rows(r, d, (4,))], FLOATS),
    "cond_one_branch_batched": (lambda x, y, p: lax.cond(p > 0, lambda: x * 2, lambda: y + 1),
                                lambda r, d: [_rows(r, d, (3,)), _rows(r, d, (3,)), r.normal()], FLOATS),
    "putmask": (_putmask, lambda r, d: [_rows(r, d), r.random((3, 4)) > 0.5, _rows(r, d, (5,))], NUMERIC),
    "place": (_place, lambda r, d: [_rows(r, d), r.random((3, 4)) > 0.5, _rows(r, d, (3,))], NUMERIC),
    "sort": (lambda x: (np.sort(x, axis=0), np.argsort(x, axis=-1, kind="stable"), np.sort(x, axis=None)),
             lambda r, d: [_rows(r, d)], NUMERIC),
    "partition": (lambda x: np.partition(x, 1, axis=1)[:, :2].max(axis=1), lambda r, d: [_rows(r, d)], NUMERIC),
    "accumulate": (lambda x: (np.cumsum(x, axis=1), np.cumprod(x, axis=0), np.cumsum(x)), lambda r, d: [_rows(r, d)],
                   NUMERIC),
    "ufunc_reduce": (lambda x: (np.add.reduce(x, axis=1, keepdims=True), np.maximum.reduce(x, axis=None)),
                     lambda r, d: [_rows(r, d)], NUMERIC),
    "searchsorted": (lambda a, v: np.searchsorted(np.sort(a), v, side="left") + np.searchsorted(np.sort(a), v, side="right"),
                     lambda r, d: [_rows(r, d, (6,)), _rows(r, d, (2, 3))], NUMERIC),
    "bincount": (lambda x, w: (np.bincount(x, minlength=6), np.bincount(x, weights=w, minlength=6)),
                 lambda r, d: [I(r, 6, (7,)).astype(d), r.normal(size=7)], (I64, I32)),
    "digitize_interp": (lambda x, b: (np.digitize(x, np.sort(b)), np.interp(x, np.sort(b), np.arange(4.0))),
                        lambda r, d: [_rows(r, d, (5,)), _rows(r, d, (4,))], FLOATS),
    "histogram": (lambda x: np.histogram(x, bins=4, range=(-5, 5))[0], lambda r, d: [_rows(r, d, (9,))], FLOATS),
    "convolve": (lambda a, v: np.convolve(a, v), lambda r, d: [_rows(r, d, (5,)), _rows(r, d, (3,))], FLOATS),
    "linalg_square": (lambda a: (np.linalg.inv(a), np.linalg.det(a), np.linalg.slogdet(a)[1], np.linalg.cholesky(a),
                                 np.linalg.eigvalsh(a), np.linalg.pinv(a)), lambda r, d: [_spd(r, d)], FLOATS),
    "linalg_decompositions": (lambda a: (np.linalg.svd(a, compute_uv=False), np.abs(np.linalg.qr(a)[1]),
                                         np.linalg.eigh(a)[0]), lambda r, d: [_spd(r, d)], FLOATS),
    "linalg_solve_vector": (lambda a, b: np.linalg.solve(a, b), lambda r, d: [_spd(r, d), _rows(r, d, (3,))], FLOATS),
    "linalg_solve_stacked": (lambda a, b: np.linalg.solve(a, b), lambda r, d: [np.stack([_spd(r, d), _spd(r, d)]),
                                                                              _rows(r, d, (3,))], FLOATS),
    "linalg_solve_matrix": (lambda a, b: np.linalg.solve(a, b), lambda r, d: [_spd(r, d), _rows(r, d, (2, 3, 2))],
                            FLOATS),
    "linalg_lstsq": (lambda a, b: np.linalg.lstsq(a, b, rcond=None)[0], lambda r, d: [_rows(r, d, (5, 3)), _rows(r, d, (5,))],
                     FLOATS),
    "fft": (lambda x: (np.fft.fft(x, axis=0), np.fft.rfft(x), np.fft.fft2(x), np.fft.fftn(x)), lambda r, d: [_rows(r, d)],
            FLOATS),
    "complex": (lambda x, y: (x + 1j * y) * np.conj(x - 1j * y), lambda r, d: [_rows(r, d), _rows(r, d)], FLOATS),
    "complex_parts": (lambda z: (z.real, np.abs(z) + z.imag), lambda r, d: [(_rows(r, F64) + 1j * _rows(r, F64)).astype(
        np.complex64 if d == F32 else np.complex128)], FLOATS),
    "raise_if": (lambda x, w: np.average(x, weights=w), lambda r, d: [_rows(r, d, (4,)), r.random(4) + 0.5], FLOATS),
}

UNARY = ("negative", "absolute", "sign", "sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log1p", "log2", "log10",
         "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arctanh", "floor",
         "ceil", "trunc", "rint", "isnan", "isinf", "isfinite", "signbit", "square", "reciprocal")
BINARY = ("add", "subtract", "multiply", "divide", "floor_divide", "remainder", "fmod", "power", "maximum",
          "minimum", "fmax", "fmin", "arctan2", "hypot", "copysign", "equal", "not_equal", "less", "less_equal",
          "greater", "greater_equal", "logical_and", "logical_or", "logical_xor")
CASES.update({
    "unary_ufuncs": (lambda x: tuple(getattr(np, u)(x) for u in UNARY) + (np.arccosh(x + 1.5), np.logical_not(x > 0.5)),
                     lambda r, d: [r.uniform(0.05, 0.95, (2, 3)).astype(d)], FLOATS),
    "binary_ufuncs": (lambda x, y: tuple(getattr(np, u)(x, y) for u in BINARY),
                      lambda r, d: [r.uniform(0.1, 2, (2, 3)).astype(d), r.uniform(0.1, 2, (2, 3)).astype(d)], FLOATS),
    "bitwise_ufuncs": (lambda x, y: (x & y, x | y, x ^ y, ~x, x << (y & 3), x >> (y & 3)),
                       lambda r, d: [r.integers(0, 100, (2, 3)).astype(d), r.integers(0, 100, (2, 3)).astype(d)],
                       (I64, I32)),
    "ufunc_reduce_library": (lambda x: (np.bitwise_xor.reduce(x, axis=1), np.subtract.reduce(x, axis=0, keepdims=True),
                                        np.bitwise_or.reduce(x, axis=None)),
                             lambda r, d: [r.integers(0, 100, (3, 4)).astype(d)], (I64, I32)),
    "take_static": (lambda x: np.repeat(x, np.arange(20) % 3, axis=1), lambda r, d: [_rows(r, d, (3, 20))], NUMERIC),
    "argpartition": (lambda x: np.sort(np.take_along_axis(x, np.argpartition(x, 1, axis=1), axis=1)[:, :2], axis=1),
                     lambda r, d: [_rows(r, d)], NUMERIC),
    "make_complex": (lambda z: np.round(z, 1), lambda r, d: [(_rows(r, F64) + 1j * _rows(r, F64)).astype(
        np.complex64 if d == F32 else np.complex128)], FLOATS),
})

# control flow (jk.lax runs as plain Python on NumPy values, which is the reference)
lax = jk.lax


def _cond(x, p):
    return lax.cond(p > 0, lambda v: v * 2, lambda v: v - 1, x)


def _switch(x, k):
    return lax.switch(k, [lambda v: v + 1, lambda v: v * v, lambda v: -v], x)


def _while(x, limit):
    return lax.while_loop(lambda c: c[0] < limit, lambda c: (c[0] * 2 + 1, c[1] + 1), (x, 0))


def _while_becomes_batched(x):
    # the carry's second leaf starts unbatched (0.0) and the body makes it batched
    return lax.while_loop(lambda c: c[2] < 3, lambda c: (c[0], c[1] + c[0].sum(), c[2] + 1), (x, 0.0, 0))[1]


def _fori(x, n):
    return lax.fori_loop(0, n, lambda i, c: c * 0.5 + x[i % 3], x.sum())


def _fori_static(x):
    return lax.fori_loop(0, 3, lambda i, c: (c[0] + x[i], c[1] * 2), (np.zeros(4, x.dtype), 1.0))


def _scan(x, c0):
    return lax.scan(lambda c, xi: (c + xi.sum(), c * xi), c0, x)


def _scan_consts(x, w):
    return lax.scan(lambda c, xi: (c * w + xi, (c * w).sum()), np.zeros(4, x.dtype), x, reverse=True)


CASES.update({
    "cond": (_cond, lambda r, d: [_rows(r, d), r.normal()], FLOATS),
    "switch": (_switch, lambda r, d: [_rows(r, d), np.int32(r.integers(-2, 6))], FLOATS),
    "while_loop": (_while, lambda r, d: [np.abs(_rows(r, d, ())) + 0.1, np.array(r.uniform(1, 50), d)], FLOATS),
    "while_carry_becomes_batched": (_while_becomes_batched, lambda r, d: [_rows(r, d)], (F64,)),
    "fori_loop": (_fori, lambda r, d: [_rows(r, d, (3,)), r.integers(0, 5)], FLOATS),
    "fori_loop_static": (_fori_static, lambda r, d: [_rows(r, d)], FLOATS),
    "scan": (_scan, lambda r, d: [_rows(r, d), np.array(r.normal(), d)], FLOATS),
    "scan_consts": (_scan_consts, lambda r, d: [_rows(r, d), _rows(r, d, (4,))], FLOATS),
})


def _draw_mapping(data, n_args: int, ndims: list[int]) -> tuple[list[bool], list[int]]:
    mapped = data.draw(st.lists(st.booleans(), min_size=n_args, max_size=n_args).filter(any), label="mapped")
    axes = []
    for r in ndims:
        ax = data.draw(st.integers(0, r), label="axis")
        axes.append(ax - (r + 1) if data.draw(st.booleans(), label="negative") else ax)
    return mapped, axes


def _examples(make: Callable, dtype: np.dtype, size: int, seed: int) -> list[list[Any]]:
    return [[np.asarray(a) if not isinstance(a, np.generic) else a for a in make(np.random.default_rng(seed + k), dtype)]
            for k in range(size)]


def _tolerance(name: str, dtype: np.dtype) -> dict:
    if name.startswith(("linalg", "fft", "matmul", "outer", "batched_matmul", "einsum", "matvec", "vecmat", "dot")) or \
            name in ("scan", "scan_consts", "fori_loop", "while_carry_becomes_batched", "raise_if"):
        return {"rtol": 1e-4 if dtype == F32 else 1e-10, "atol": 1e-4 if dtype == F32 else 1e-10}
    return {}


@pytest.mark.parametrize("name", sorted(CASES))
@SWEEP
@given(data=st.data(), size=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_rule_matches_loop_over_examples(name, data, size, seed):
    f, make, dtypes = CASES[name]
    dtype = data.draw(st.sampled_from(dtypes), label="dtype")
    examples = _examples(make, dtype, size, seed)
    mapped, axes = _draw_mapping(data, len(examples[0]), [np.ndim(a) for a in examples[0]])
    out_axis = data.draw(st.integers(0, 2), label="out_axis")
    run_case(f, examples, mapped, axes, "interpret", out_axis, **_tolerance(name, dtype))


CPU_SUBSET = ("matvec", "gather_separated", "scatter_ufunc", "dynamic_slice", "cond", "while_loop", "scan",
              "linalg_solve_vector", "sort", "take", "while_carry_becomes_batched", "fori_loop_static", "histogram")


@pytest.mark.parametrize("name", CPU_SUBSET)
def test_rule_on_cpu(name):
    f, make, dtypes = CASES[name]
    examples = _examples(make, dtypes[0], 3, 7)
    n = len(examples[0])
    run_case(f, examples, [True] * n, [0] * n, "cpu", **_tolerance(name, dtypes[0]))
    if n > 1:  # the first argument shared by every example
        run_case(f, examples, [False] + [True] * (n - 1), [0] * n, "cpu", **_tolerance(name, dtypes[0]))


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_cond_with_a_shared_predicate_keeps_one_cond(backend):
    x = np.arange(6.0).reshape(3, 2)
    f = jk.jit(jk.vmap(_cond, in_axes=(0, None)), backend=backend)
    np.testing.assert_allclose(f(x, 1.0), x * 2)
    np.testing.assert_allclose(f(x, -1.0), x - 1)
    assert "cond[" in str(jk.make_ir(jk.vmap(_cond, in_axes=(0, None)))(x, 1.0))


@pytest.mark.parametrize("prim, params, make", [
    ("dot_sum", {"axes": (1,)}, lambda r: [r.normal(size=(3, 4))]),
    ("pad_fill", {}, lambda r: [r.random((3, 4)) > 0.5, r.normal(size=(3, 4)), r.normal(size=(3, 4))]),
    ("where_valid", {}, lambda r: [r.random((3, 4)) > 0.5, r.normal(size=(3, 4))]),
    ("stop_gradient", {}, lambda r: [r.normal(size=(2,))]),
    # negative axes, which the tracer normalises for sorting but passes to fft
    ("argsort", {"axis": -1, "kind": "stable"}, lambda r: [r.normal(size=(3, 4))]),
    ("fft", {"fn": "fft", "n": None, "axes": -2, "norm": None}, lambda r: [r.normal(size=(3, 4))]),
    ("fft", {"fn": "fftn", "n": None, "axes": None, "norm": "ortho"}, lambda r: [r.normal(size=(3, 4))]),
])
def test_primitives_only_lowering_emits(prim, params, make):
    """Primitives the tracer never emits (the lowering of symbolic lengths does), bound directly."""
    from jitkernel.ir.primitives import evaluate
    from jitkernel.transforms import ops
    examples = [make(np.random.default_rng(k)) for k in range(3)]
    n = len(examples[0])
    for mapped in ([True] * n, [False] + [True] * (n - 1))[:1 if n == 1 else 2]:
        args = [np.stack([ex[j] for ex in examples]) if m else examples[0][j] for j, m in enumerate(mapped)]
        f = jk.jit(jk.vmap(lambda *xs: ops.bind1(prim, *xs, **params), in_axes=tuple(0 if m else None for m in mapped)),
                   backend="interpret")
        expected = np.stack([evaluate(prim, [ex[j] if m else examples[0][j] for j, m in enumerate(mapped)], params)[0]
                             for ex in examples])
        np.testing.assert_allclose(f(*args), expected, rtol=1e-12)


def test_every_primitive_has_a_batching_rule():
    """A primitive the tracer can emit has a rule (or an explicit refusal); complex_library and
    fma exist only after lowering, iota has no inputs, stop_gradient is elementwise."""
    from jitkernel.ir.primitives import PRIMITIVES
    from jitkernel.transforms.batching import BATCH_RULES
    missing = sorted(set(PRIMITIVES) - set(BATCH_RULES) - {"iota", "complex_library"})
    assert missing == []


# ----------------------------------------------------------------------------- what the rules build


def test_vmap_of_matvec_is_one_matmul_without_broadcasting_the_matrix():
    w, x = np.ones((4, 3)), np.ones((5, 3))
    text = str(jk.make_ir(jk.vmap(lambda w, x: w @ x, in_axes=(None, 0)))(w, x))
    assert text.count("dot_general") == 1
    assert "f64[5,4,3]" not in text and "transpose" not in text


def test_unbatched_work_is_done_once():
    text = str(jk.make_ir(jk.vmap(lambda w, x: np.exp(w) * x, in_axes=(None, 0)))(np.ones(3), np.ones((5, 3))))
    assert "f64[3] = exp" in text


def test_batched_predicate_while_runs_until_every_example_is_done():
    f = jk.vmap(lambda x: lax.while_loop(lambda c: c[0] < 10.0, lambda c: (c[0] * 2 + 1, c[1] + 1), (x, 0))[1])
    np.testing.assert_array_equal(f(np.array([0.5, 3.0, 20.0, 9.0])), [3, 2, 0, 1])


def test_fori_loop_with_batched_bounds():
    f = jk.vmap(lambda n: lax.fori_loop(0, n, lambda i, c: c + i, 0))
    np.testing.assert_array_equal(f(np.array([0, 1, 4, -2])), [0, 0, 6, 0])


def test_cond_batched_index_runs_a_raising_branch_only_for_its_examples():
    """x[i] out of bounds in the branch an example does not take must not raise (each example
    runs its own branch: the branch can raise)."""
    x = np.arange(4.0)
    f = jk.vmap(lambda x, i: lax.cond(i < 4, lambda j: x[j], lambda j: -1.0, i), in_axes=(None, 0))
    np.testing.assert_array_equal(f(x, np.array([0, 3, 7, 100])), [0.0, 3.0, -1.0, -1.0])
    with pytest.raises(IndexError):
        jk.vmap(lambda x, i: lax.cond(i < 9, lambda j: x[j], lambda j: -1.0, i), in_axes=(None, 0))(x, np.array([0, 7]))


def test_loops_whose_body_can_raise_run_each_example_alone():
    """x[i] past the end of x would be read for an example that is already done if every
    example ran the body until the last one finishes: such loops run per example instead."""
    def summed(x, n):
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] + x[c[0]]), (0, 0.0))[1]

    def fori_summed(x, n):
        return lax.fori_loop(0, n, lambda i, c: c + x[i], 0.0)

    x, n = np.arange(4.0), np.array([0, 2, 4, 1])
    for f in (summed, fori_summed):
        got = jk.vmap(f, in_axes=(None, 0))(x, n)
        np.testing.assert_array_equal(got, [f(x, k) for k in n])
        text = str(jk.make_ir(jk.vmap(f, in_axes=(None, 0)))(x, n))
        assert "per_example" in text


def test_cond_batched_index_selects_without_a_loop_when_branches_cannot_raise():
    text = str(jk.make_ir(jk.vmap(_cond))(np.ones((3, 2)), np.array([1.0, -1.0, 2.0])))
    assert "cond" not in text.replace("vmap(_cond)", "") and "select" in text


def test_scan_carry_unbatched_at_input_becomes_batched():
    f = jk.vmap(lambda x: lax.scan(lambda c, xi: (c + xi, c), 0.0, x), in_axes=1)
    x = np.arange(12.0).reshape(4, 3)
    carry, ys = f(x)
    np.testing.assert_allclose(carry, x.sum(axis=0))
    np.testing.assert_allclose(ys, np.stack([np.concatenate([[0], np.cumsum(x[:, k])[:-1]]) for k in range(3)]))


# ----------------------------------------------------------------------------- API against JAX


def test_in_axes_pytrees_kwargs_and_out_axes():
    def f(d, y, *, z):
        return {"s": d["a"] * y + z, "t": d["b"].sum()}, y
    d = {"a": np.arange(6.0).reshape(2, 3), "b": np.ones((4, 2))}
    y, z = np.arange(3.0), np.ones((2, 3))
    out = jk.vmap(f, in_axes=({"a": 0, "b": 1}, None), out_axes=({"s": 1, "t": 0}, None))(d, y, z=z)
    np.testing.assert_allclose(out[0]["s"], (d["a"] * y + z).T)
    np.testing.assert_allclose(out[0]["t"], [4.0, 4.0])
    np.testing.assert_allclose(out[1], y)


def test_negative_axes_and_nested_vmap():
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_allclose(jk.vmap(lambda r: r.sum(), in_axes=-1)(x[0]), x[0].sum(axis=0))
    np.testing.assert_allclose(jk.vmap(lambda r: r * 2, out_axes=-1)(x[0]), (x[0] * 2).T)
    inner = jk.vmap(lambda row, b: row @ b, in_axes=(0, None))  # (3, 4), (4,) -> (3,)
    b = np.arange(20.0).reshape(5, 4)
    np.testing.assert_allclose(jk.vmap(inner, in_axes=(None, 0))(x[0], b), b @ x[0].T)
    np.testing.assert_allclose(jk.vmap(jk.vmap(lambda v: v.max()), in_axes=2)(x), x.max(axis=1).T)


def test_axis_size_without_mapped_inputs():
    out = jk.vmap(lambda x: x + 1, in_axes=None, axis_size=3)(np.ones(2))
    np.testing.assert_allclose(out, np.full((3, 2), 2.0))


def test_inconsistent_sizes_message_is_jax_s():
    with pytest.raises(ValueError, match=re.escape(
            "vmap got inconsistent sizes for array axes to be mapped:\n"
            "  * most axes (2 of them) had size 3, e.g. axis 0 of argument y of type float32[3];\n"
            "  * one axis had size 2: axis 0 of argument x of type float32[2]")):
        jk.vmap(lambda x, y, z: x + y)(np.ones(2, np.float32), np.ones(3, np.float32), np.ones(3, np.float32))
    with pytest.raises(ValueError, match=re.escape(
            "  * one axis had size 2: axis 1 of argument x['a'] of type float64[4,2];\n"
            "  * one axis had size 3: axis 0 of kwargs['k'] of type float64[3]")):
        jk.vmap(lambda x, k: x, in_axes=({"a": 1},))({"a": np.ones((4, 2))}, k=np.ones(3))
    with pytest.raises(ValueError, match=re.escape("  * the `axis_size` argument was 3;\n"
                                                   "  * one axis had size 2: axis 0 of argument x")):
        jk.vmap(lambda x: x, axis_size=3)(np.ones(2))


@pytest.mark.parametrize("call, error, message", [
    (lambda: jk.vmap(lambda x: x, out_axes=None)(np.ones(2)), ValueError,
     "at vmap out_axes, got axis spec None but output was batched on axis 0"),
    (lambda: jk.vmap(lambda x: x, out_axes=None)(np.ones(2)), ValueError,
     "vmap has mapped output but out_axes is None"),
    (lambda: jk.vmap(lambda x: x, in_axes=None)(np.ones(2)), ValueError,
     "vmap must have at least one non-None value in in_axes or axis_size must be specified"),
    (lambda: jk.vmap(lambda x: x, in_axes=1)(np.ones(2)), ValueError,
     "vmap was requested to map its argument along axis 1, which implies that its rank should be at least 2, "
     "but is only 1 (its shape is (2,))"),
    (lambda: jk.vmap(lambda x: x, in_axes=(0, 0))(np.ones(2)), ValueError,
     "vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional arguments passed "
     "to the function, but got len(in_axes)=2, len(args)=1"),
    (lambda: jk.vmap(lambda d: d["a"], in_axes={"a": 0}), TypeError,
     "vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional arguments passed "
     "to the function, but got {'a': 0}."),
    (lambda: jk.vmap(lambda x: x, in_axes=True), TypeError,
     "vmap in_axes must be an int, None, or a tuple of entries corresponding to the positional arguments passed "
     "to the function, but got True."),
    (lambda: jk.vmap(lambda x: x, in_axes=(0.5,)), TypeError,
     "vmap in_axes must be an int, None, or (nested) container with those types as leaves, but got (0.5,)."),
    (lambda: jk.vmap(lambda x: x, out_axes=2)(np.ones(2)), ValueError, "axis 2 is out of bounds for array of dimension 1"),
    (lambda: jk.vmap(lambda x: (x, x), out_axes=(0,))(np.ones(2)), ValueError,
     "vmap out_axes specification must be a tree prefix of the corresponding value"),
    (lambda: jk.vmap(lambda x: x, in_axes=0)(1.0), ValueError,
     "vmap was requested to map its argument along axis 0, which implies that its rank should be at least 1, "
     "but is only 0 (its shape is ())"),
])
def test_error_messages(call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call()


def test_out_axes_none_for_an_unmapped_output():
    out, same = jk.vmap(lambda x, w: (x * w, w.sum()), in_axes=(0, None), out_axes=(0, None))(np.ones((3, 2)), np.ones(2))
    assert out.shape == (3, 2) and float(same) == 2.0


def test_run_time_errors_of_examples():
    x = np.arange(4.0)
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 4"):
        jk.vmap(lambda x, i: x[i], in_axes=(None, 0))(x, np.array([1, 4]))
    with pytest.raises(IndexError):
        jk.vmap(lambda x, i: x[i])(np.ones((2, 3)), np.array([[0, 3], [1, 1]]))
    with pytest.raises(ValueError, match="no negative elements"):
        jk.vmap(lambda v: np.bincount(v, minlength=3))(np.array([[0, 1], [-1, 2]]))
    with pytest.raises(ValueError, match="minlength=3"):
        jk.vmap(lambda v: np.bincount(v, minlength=3))(np.array([[0, 1], [3, 2]]))
    with pytest.raises(ZeroDivisionError):
        jk.vmap(lambda v, w: np.average(v, weights=w))(np.ones((2, 2)), np.array([[1.0, 1.0], [0.0, 0.0]]))


def test_data_dependent_shapes_are_refused():
    with pytest.raises(UnsupportedOperationError, match="data-dependent shape"):
        jk.vmap(lambda x: x[x > 0])(np.ones((2, 3)))
    with pytest.raises(UnsupportedOperationError, match="vmap of datadep_"):
        jk.vmap(lambda x: x[x > 0].sum())(np.ones((2, 3)))


def test_batching_error_is_a_value_error():
    assert issubclass(BatchingError, ValueError)


# ----------------------------------------------------------------------------- with grad


def _loss(w, x, y):
    return np.sum(np.tanh(x @ w) * y)


def test_vmap_of_grad_per_example_gradients():
    rng = np.random.default_rng(1)
    w, x, y = rng.normal(size=(3, 2)), rng.normal(size=(5, 4, 3)), rng.normal(size=(5, 4, 2))
    got = jk.jit(jk.vmap(jk.grad(_loss), in_axes=(None, 0, 0)))(w, x, y)
    expected = np.stack([jk.grad(_loss)(w, x[k], y[k]) for k in range(5)])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    jk.check_grads(lambda w: _loss(w, x[0], y[0]), (w,), order=1, modes=("rev",))


def test_grad_of_vmap_sum():
    rng = np.random.default_rng(2)
    w, x = rng.normal(size=3), rng.normal(size=(6, 3))
    f = lambda w: jk.vmap(lambda xi: np.sum(np.sin(w * xi)), in_axes=0)(x).sum()  # noqa: E731
    expected = (np.cos(w * x) * x).sum(axis=0)
    np.testing.assert_allclose(jk.grad(f)(w), expected, rtol=1e-12)
    jk.check_grads(f, (w,), order=2, modes=("fwd", "rev"))


def test_vmap_of_jvp_and_of_hessian_diagonal():
    x = np.linspace(-1, 1, 4)
    out = jk.vmap(lambda v: jk.jvp(np.sin, (v,), (np.ones_like(v),))[1])(x)
    np.testing.assert_allclose(out, np.cos(x), rtol=1e-12)
    second = jk.vmap(jk.grad(jk.grad(lambda v: np.sin(v) * v)))(x)
    np.testing.assert_allclose(second, 2 * np.cos(x) - x * np.sin(x), rtol=1e-12)


# ----------------------------------------------------------------------------- generated indices


@st.composite
def index_structures(draw):
    """(x shape, entries, index array shapes): an index mixing slices, ints, None, an Ellipsis
    and broadcasting index arrays, as NumPy's indexing allows it."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    common = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    entries, array_shapes = [], []
    ellipsis_at = draw(st.one_of(st.none(), st.integers(0, len(shape))))
    ellipsis_len = draw(st.integers(0, len(shape) - ellipsis_at)) if ellipsis_at is not None else 0
    d = 0
    while d < len(shape):
        if ellipsis_at == d:
            entries.append(("ellipsis",))
            d += ellipsis_len
            ellipsis_at = None
            continue
        if draw(st.booleans()) and draw(st.booleans()):
            entries.append(("none",))
        kind = draw(st.sampled_from(["slice", "int", "array", "array"]))
        n = shape[d]
        if kind == "slice":
            entries.append(("slice", draw(st.integers(-n, n)), draw(st.integers(-n, n)),
                            draw(st.sampled_from([1, 2, -1]))))
        elif kind == "int":
            entries.append(("int", draw(st.integers(-n, n - 1))))
        else:
            k = draw(st.integers(0, len(common)))
            ashape = tuple(c if draw(st.booleans()) else 1 for c in common[len(common) - k:])
            entries.append(("array", len(array_shapes), n))
            array_shapes.append(ashape)
        d += 1
    if ellipsis_at is not None:
        entries.append(("ellipsis",))
    if draw(st.booleans()):
        entries.append(("none",))
    return shape, tuple(entries), array_shapes


def _numpy_index(entries, arrays):
    out = []
    for e in entries:
        out.append({"ellipsis": lambda: Ellipsis, "none": lambda: None, "int": lambda: e[1],
                    "slice": lambda: slice(*e[1:]), "array": lambda: arrays[e[1]]}[e[0]]())
    return tuple(out)


def _index_examples(structure, size, seed, with_value):
    shape, entries, array_shapes = structure
    rng = np.random.default_rng(seed)
    bounds = [e[2] for e in entries if e[0] == "array"]
    examples = []
    for _ in range(size):
        ex = [rng.normal(size=shape)] + [rng.integers(-n, n, size=s) for n, s in zip(bounds, array_shapes)]
        if with_value:
            probe = np.zeros(shape)[_numpy_index(entries, ex[1:])]
            ex.append(rng.normal(size=probe.shape))
        examples.append(ex)
    return examples


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(structure=index_structures(), data=st.data(), size=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_generated_gathers_and_scatters_match_loop(structure, data, size, seed):
    shape, entries, array_shapes = structure
    scatter = data.draw(st.booleans(), label="scatter")
    examples = _index_examples(structure, size, seed, scatter)
    if scatter:
        def f(x, *rest):
            y = x.copy()
            y[_numpy_index(entries, rest[:-1])] = rest[-1]
            return y
    else:
        def f(x, *arrays):
            return x[_numpy_index(entries, arrays)]
    try:  # only indices that jk.jit supports for one example
        jk.jit(f, backend="interpret")(*examples[0])
    except UnsupportedOperationError:
        assume(False)
    mapped, axes = _draw_mapping(data, len(examples[0]), [np.ndim(a) for a in examples[0]])
    run_case(f, examples, mapped, axes, "interpret")


def test_nested_vmap_of_control_flow():
    rng = np.random.default_rng(0)
    x, limit = np.abs(rng.normal(size=(3, 4))) + 0.1, rng.uniform(1, 50, size=(3, 4))
    value, count = jk.vmap(jk.vmap(_while))(x, limit)
    for i in range(3):
        for j in range(4):
            v, c = _while(x[i, j], limit[i, j])
            assert value[i, j] == v and count[i, j] == c
    xs, n = rng.normal(size=(2, 3, 3)), rng.integers(0, 5, size=(2, 3))
    np.testing.assert_allclose(jk.vmap(jk.vmap(_fori))(xs, n), [[_fori(xs[i, j], n[i, j]) for j in range(3)] for i in range(2)])
    big, p = rng.normal(size=(2, 3, 4, 2)), rng.normal(size=2)
    carry, ys = jk.vmap(jk.vmap(_scan, in_axes=(0, None)))(big, p)
    for i in range(2):
        for j in range(3):
            c, y = _scan(big[i, j], p[i])
            np.testing.assert_allclose(carry[i, j], c)
            np.testing.assert_allclose(ys[i, j], y)


@st.composite
def dot_general_problems(draw):
    """Per-example operand shapes and dimension numbers of a dot_general: batch, free and
    contracting dimensions in random positions (length-1 contractions included)."""
    size = st.integers(1, 3)
    nb, nc = draw(st.integers(0, 1)), draw(st.integers(0, 2))
    batch_sizes = [draw(size) for _ in range(nb)]
    contract_sizes = [draw(size) for _ in range(nc)]
    operands = []
    for _ in range(2):
        free = [draw(size) for _ in range(draw(st.integers(0, 2)))]
        kinds = [("b", k) for k in range(nb)] + [("c", k) for k in range(nc)] + [("f", k) for k in range(len(free))]
        order = draw(st.permutations(kinds))
        shape = tuple({"b": batch_sizes, "c": contract_sizes, "f": free}[t][k] for t, k in order)
        operands.append((shape, [order.index(("c", k)) for k in range(nc)], [order.index(("b", k)) for k in range(nb)]))
    (ls, lc, lb), (rs, rc, rb) = operands
    return ls, rs, {"contracting": (tuple(lc), tuple(rc)), "batch": (tuple(lb), tuple(rb))}


@settings(max_examples=40, deadline=None)
@given(problem=dot_general_problems(), data=st.data(), size=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_dot_general_dimension_numbers(problem, data, size, seed):
    from jitkernel.ir.primitives import evaluate
    from jitkernel.transforms import ops
    ls, rs, params = problem
    rng = np.random.default_rng(seed)
    examples = [[rng.normal(size=ls), rng.normal(size=rs)] for _ in range(size)]
    mapped, axes = _draw_mapping(data, 2, [len(ls), len(rs)])
    args = [np.stack([ex[j] for ex in examples], axis=axes[j]) if mapped[j] else examples[0][j] for j in range(2)]
    f = jk.jit(jk.vmap(lambda a, b: ops.bind1("dot_general", a, b, **params),
                       in_axes=tuple(axes[j] if mapped[j] else None for j in range(2))), backend="interpret")
    expected = np.stack([evaluate("dot_general", [ex[0] if mapped[0] else examples[0][0],
                                                  ex[1] if mapped[1] else examples[0][1]], params)[0] for ex in examples])
    np.testing.assert_allclose(f(*args), expected, rtol=1e-12, atol=1e-12)

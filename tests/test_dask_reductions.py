"""Reductions of `jk.jit` over Dask arrays keep NumPy's dtype and values.

A reduction over a chunked axis runs as per-block partials plus a tree combine
(jitkernel/distributed/partition.py). The partials and the combine accumulate in NumPy's
accumulator dtype (float16 sums and products in float32, rounded once at the end, as NumPy's
float16 loops do), so the Dask result has NumPy's dtype and, order of the additions aside, its
values, its overflow to inf and its NaNs. Zero-size chunks are dropped before partitioning.

The generator draws chunkings (zero-size and size-1 chunks included) x dtypes x reductions x
axes and compares with NumPy on the same data. Data are drawn so that every order of the
additions gives the same value (integers and powers of two, far from the dtype's overflow), so
sums and products compare exactly; var/std compare within a tolerance.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

from hypothesis import given, settings, strategies as st  # noqa: E402

import jitkernel as jk  # noqa: E402
from jitkernel.distributed import RechunkWarning, explain  # noqa: E402
from helpers import HOST_BACKENDS  # noqa: E402

DRAWN_BACKENDS = HOST_BACKENDS


@pytest.fixture(autouse=True)
def synchronous_scheduler():
    with dask.config.set(scheduler="synchronous"):
        yield


# NumPy's functions of these names, each called as np.<name>(x, axis=axis, keepdims=keepdims)
REDUCTIONS = ["sum", "prod", "mean", "var", "std", "nansum", "min", "max", "argmin", "argmax", "any", "all"]
DTYPES = [np.float16, np.float32, np.int8, np.uint8, np.bool_, np.int64]
# Reductions whose float results are rounded in an order-dependent way (a tolerance applies).
INEXACT = {"var", "std"}


@st.composite
def chunkings(draw, n: int) -> tuple[int, ...]:
    """A chunking of an axis of length n: cut points anywhere, repeated ones (zero-size chunks)
    and ones at the ends (a leading or trailing zero-size chunk) included."""
    cuts = sorted(draw(st.lists(st.sampled_from(range(n + 1)), max_size=4)))
    edges = [0, *cuts, n]
    return tuple(b - a for a, b in zip(edges, edges[1:]))


def values(draw, dtype: np.dtype, n: int, reduction: str) -> np.ndarray:
    """n values of `dtype` whose sums and products are exact in any order (see module doc)."""
    if dtype.kind == "b":
        return np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = (max(int(info.min), -2**40), min(int(info.max), 2**40))
        return np.array(draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)), dtype)
    specials = [np.nan, np.inf, -np.inf]
    if reduction == "prod":  # powers of two: exact products; inf * 0 is NaN in every order
        pool = st.sampled_from([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0])
    elif dtype == np.float16:  # integers: their float32 sums are exact; large ones overflow float16
        pool = st.one_of(st.integers(-60000, 60000).map(float), st.sampled_from([-6e4, -4e4, 4e4, 6e4]))
    else:
        pool = st.integers(-2**17, 2**17).map(float)
    with_specials = draw(st.booleans())
    element = st.one_of(pool, st.sampled_from(specials)) if with_specials else pool
    return np.array(draw(st.lists(element, min_size=n, max_size=n)), dtype)


@st.composite
def reduction_cases(draw, name: str, dtype: np.dtype):
    """(data, chunks, axis, keepdims, backend) for reduction `name` over `dtype`."""
    ndim = draw(st.integers(1, 2))
    shape = tuple(draw(st.lists(st.integers(1, 6 if ndim == 2 else 12), min_size=ndim, max_size=ndim)))
    chunks = tuple(draw(chunkings(n)) for n in shape)
    data = values(draw, dtype, int(np.prod(shape)), name).reshape(shape)
    axes = [None, *range(-ndim, ndim)] + ([(0, 1)] if ndim == 2 and not name.startswith("arg") else [])
    axis = draw(st.sampled_from(axes))
    keepdims = draw(st.booleans())
    return data, chunks, axis, keepdims, draw(st.sampled_from(DRAWN_BACKENDS))


def assert_numpy_result(got, ref, inexact: bool) -> None:
    """dtype and shape exactly NumPy's; NaN and inf positions equal; ints and bools exact; floats
    exact, or within a tolerance where the reduction rounds in an order-dependent way."""
    got, ref = np.asarray(got), np.asarray(ref)
    assert (got.dtype, got.shape) == (ref.dtype, ref.shape)
    if ref.dtype.kind != "f":
        np.testing.assert_array_equal(got, ref)
        return
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.where(np.isinf(got), got, 0), np.where(np.isinf(ref), ref, 0))
    finite = np.isfinite(ref) & np.isfinite(got)
    rtol = (1e-2 if ref.dtype == np.float16 else 1e-4) if inexact else 0
    np.testing.assert_allclose(got[finite], ref[finite], rtol=rtol, atol=0)


# Every (reduction, dtype) pair gets its own draws: one strategy over all of them left some
# pairs (float16 sums over several chunks) undrawn in hundreds of examples.
@pytest.mark.parametrize("dtype", [np.dtype(t).name for t in DTYPES])
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@settings(max_examples=12, deadline=None, derandomize=True, database=None)
@given(data=st.data())
def test_reductions_over_random_chunkings_match_numpy(name, dtype, data):
    data, chunks, axis, keepdims, backend = data.draw(reduction_cases(name, np.dtype(dtype)))
    numpy_reduce = getattr(np, name)

    def reduce(x):
        return numpy_reduce(x, axis=axis, keepdims=keepdims)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = reduce(data)
        warnings.simplefilter("ignore", RechunkWarning)
        got = jk.jit(reduce, backend=backend)(da.from_array(data, chunks=chunks))
        got = got.compute()
    assert_numpy_result(got, ref, name in INEXACT)


# -- the examples that found the class ----------------------------------------------------------
def test_float16_sum_across_chunks_is_numpys_not_nan():
    """Each block's float16 partial overflowed to +-inf and their sum was NaN; NumPy sums float16
    in float32 and gets 0.0."""
    x = np.array([60000, 60000, -60000, -60000], np.float16)
    got = jk.jit(lambda x: x.sum())(da.from_array(x, chunks=2)).compute()
    assert got.dtype == np.float16 and got == x.sum() == 0.0


@pytest.mark.parametrize("backend", DRAWN_BACKENDS)
@pytest.mark.parametrize("chunks", [((1, 4), (3,)), ((5,), (1, 1, 1)), ((2, 3), (2, 1))], ids=str)
def test_float16_sum_over_an_outer_axis_rounds_every_step_as_numpy(chunks, backend):
    """NumPy's float16 sum over axis 0 of a (5, 3) array rounds to float16 after every row
    (2048 + 1 + 1 stays 2048, 6e4 + 6e4 is inf): the reduced axis, and kept axes cut to size 1,
    are one block, with a RechunkWarning saying why."""
    x = np.zeros((5, 3), np.float16)
    x[:, 0] = [2048, 1, 0, 1, 0]
    x[:, 1] = [6e4, 6e4, -6e4, -6e4, 0]
    x[:, 2] = [1, 2, 3, 4, 5]
    with pytest.warns(RechunkWarning, match="rounds a float16 sum/product to float16 at every step"):
        got = jk.jit(lambda x: x.sum(0), backend=backend)(da.from_array(x, chunks=chunks)).compute()
    with np.errstate(over="ignore"):
        ref = x.sum(0)
    assert got.dtype == ref.dtype and np.array_equal(got, ref), (got, ref)
    assert ref[0] == 2048 and np.isinf(ref[1])


def test_float16_partials_are_float32_in_the_plan():
    text = explain(jk.jit(lambda x: x.sum()), da.ones(8, chunks=4, dtype=np.float16))
    assert "in float32 (NumPy's accumulator), rounded to float16 once" in text, text


def test_float16_matmul_over_a_chunked_contraction_accumulates_in_float32():
    a = np.full((1, 4), 60000, np.float16)
    b = np.array([[1], [1], [-1], [-1]], np.float16)
    got = jk.jit(lambda a, b: a @ b)(da.from_array(a, chunks=(1, 2)), da.from_array(b, chunks=(2, 1))).compute()
    ref = a @ b
    assert got.dtype == ref.dtype and np.array_equal(got, ref), (got, ref)


@pytest.mark.parametrize("backend", DRAWN_BACKENDS)
@pytest.mark.parametrize("name", ["argmax", "ravel", "sum", "cumsum"])
def test_zero_size_chunks_compute(name, backend):
    f = {"argmax": lambda a: np.argmax(a), "ravel": lambda a: a.ravel(), "sum": lambda a: a.sum(0),
         "cumsum": lambda a: np.cumsum(a, axis=0)}[name]
    x = np.arange(12.0).reshape(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RechunkWarning)
        got = jk.jit(f, backend=backend)(da.from_array(x, chunks=((1, 0, 2), (2, 0, 2)))).compute()
    np.testing.assert_array_equal(got, f(x))


def test_zero_size_axis_keeps_one_empty_chunk():
    x = np.zeros((0, 3))
    got = jk.jit(lambda a: a * 2)(da.from_array(x, chunks=((0,), (1, 2)))).compute()
    assert got.shape == (0, 3)

"""jitkernel.array_api, the Python array API standard's (2024.12) namespace: traced arrays hand it
out from `__array_namespace__`, array-API-style programs compile unchanged and match NumPy
(values, dtype, shape) on every host backend, the inspection object, and every name the standard
lists exists. The full public conformance suite runs from benchmarks/array_api_conformance.py."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from jitkernel import array_api

SETTINGS = settings(max_examples=15, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))

# The 2024.12 standard's names (array_api_stubs/_2024_12: each module's __all__).
STANDARD_NAMES = {
    "constants": ["e", "inf", "nan", "newaxis", "pi"],
    "creation": ["arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like", "linspace",
                 "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like"],
    "data types": ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type", "bool", "int8", "int16", "int32",
                   "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "complex64", "complex128"],
    "elementwise": ["abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and",
                    "bitwise_left_shift", "bitwise_invert", "bitwise_or", "bitwise_right_shift", "bitwise_xor", "ceil",
                    "clip", "conj", "copysign", "cos", "cosh", "divide", "equal", "exp", "expm1", "floor",
                    "floor_divide", "greater", "greater_equal", "hypot", "imag", "isfinite", "isinf", "isnan", "less",
                    "less_equal", "log", "log1p", "log2", "log10", "logaddexp", "logical_and", "logical_not",
                    "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative", "nextafter",
                    "not_equal", "positive", "pow", "real", "reciprocal", "remainder", "round", "sign", "signbit",
                    "sin", "sinh", "square", "sqrt", "subtract", "tan", "tanh", "trunc"],
    "indexing": ["take", "take_along_axis"],
    "info": ["__array_namespace_info__"],
    "linear algebra": ["matmul", "matrix_transpose", "tensordot", "vecdot"],
    "manipulation": ["broadcast_arrays", "broadcast_to", "concat", "expand_dims", "flip", "moveaxis", "permute_dims",
                     "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack"],
    "searching": ["argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where"],
    "sets": ["unique_all", "unique_counts", "unique_inverse", "unique_values"],
    "sorting": ["argsort", "sort"],
    "statistical": ["cumulative_sum", "cumulative_prod", "max", "mean", "min", "prod", "std", "sum", "var"],
    "utility": ["all", "any", "diff"],
}
LINALG_NAMES = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm",
                "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd",
                "svdvals", "tensordot", "trace", "vecdot", "vector_norm"]
FFT_NAMES = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq",
             "rfftfreq", "fftshift", "ifftshift"]


def _same(got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    np.testing.assert_allclose(got, want, rtol=2e-5 if got.dtype.itemsize <= 8 and got.dtype.kind in "fc" else 1e-12,
                               atol=1e-6)


@pytest.mark.parametrize("group", sorted(STANDARD_NAMES))
def test_every_standard_name_exists(group):
    missing = [n for n in STANDARD_NAMES[group] if not hasattr(array_api, n)]
    assert not missing, missing
    assert array_api.__array_api_version__ == "2024.12"


def test_every_extension_name_exists():
    assert [n for n in LINALG_NAMES if not hasattr(array_api.linalg, n)] == []
    assert [n for n in FFT_NAMES if not hasattr(array_api.fft, n)] == []


def test_array_namespace_inside_jit_is_the_namespace(backend):
    seen = {}

    def f(x):
        seen["xp"] = x.__array_namespace__()
        seen["versioned"] = x.__array_namespace__(api_version="2023.12")
        assert x.device == "cpu" and x.to_device("cpu") is x
        return seen["xp"].sum(x)

    assert float(jk.jit(f, backend=backend)(np.arange(4.0))) == 6.0
    assert seen["xp"] is array_api and seen["versioned"] is array_api


def test_array_namespace_refuses_unknown_versions():
    def f(x):
        return x.__array_namespace__(api_version="2099.12").sum(x)
    with pytest.raises(ValueError, match="2099.12"):
        jk.jit(f)(np.arange(3.0))


def standardize(x):
    """scikit-learn's style: the namespace from the array, then only its functions."""
    xp = x.__array_namespace__()
    mean = xp.mean(x, axis=0, keepdims=True)
    std = xp.std(x, axis=0, correction=1, keepdims=True)
    return (x - mean) / xp.where(std == 0, xp.asarray(1.0, dtype=x.dtype), std)


def softmax(x):
    xp = x.__array_namespace__()
    e = xp.exp(x - xp.max(x, axis=-1, keepdims=True))
    return e / xp.sum(e, axis=-1, keepdims=True)


def logsumexp(x):
    xp = x.__array_namespace__()
    m = xp.max(x, axis=-1)
    return m + xp.log(xp.sum(xp.exp(x - m[..., xp.newaxis]), axis=-1))


def linalg_and_fft(x):
    xp = x.__array_namespace__()
    gram = xp.matmul(xp.linalg.matrix_transpose(x), x) + xp.eye(x.shape[1], dtype=x.dtype)
    return (xp.linalg.vector_norm(x, axis=-1), xp.linalg.matrix_norm(gram), xp.linalg.svdvals(gram),
            xp.linalg.inv(gram), xp.linalg.trace(gram), xp.abs(xp.fft.rfft(x, axis=0)),
            xp.vecdot(x, x), xp.linalg.diagonal(gram))


def casts_and_joins(x):
    xp = x.__array_namespace__()
    y = xp.astype(x, xp.int32)
    return (xp.concat([x, x * 2], axis=0), y, xp.astype(y, xp.float32, copy=False),
            xp.permute_dims(x, (1, 0)), xp.cumulative_sum(y, axis=1, include_initial=True),
            xp.sort(x, axis=0, descending=True), xp.argsort(x, axis=0, descending=True),
            xp.clip(x, min=-1, max=1), xp.pow(x, 2), xp.atan2(x, 1.0), xp.sum(y), xp.unstack(x, axis=1)[0])


class _EagerArray(np.ndarray):
    """A NumPy array whose namespace is jitkernel.array_api (which runs NumPy outside jit): the
    reference for programs that use the standard's names NumPy's own namespace lacks (descending)."""

    def __array_namespace__(self, *, api_version=None):
        return array_api


PROGRAMS = [standardize, softmax, logsumexp, linalg_and_fft, casts_and_joins]


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.__name__ for p in PROGRAMS])
def test_array_api_programs_match_numpy(program, backend):
    x = np.linspace(-2.0, 3.0, 12, dtype=np.float32).reshape(4, 3) ** 2 - 1.5
    want = program(x.view(_EagerArray))
    got = jk.jit(program, backend=backend)(x)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        _same(g, w)


def test_array_api_compat_finds_the_namespace_inside_jit(backend):
    compat = pytest.importorskip("array_api_compat")

    def pairwise_distance(x, y):  # as array-api-compat users write it
        xp = compat.array_namespace(x, y)
        return xp.linalg.vector_norm(x[:, None, :] - y[None, :, :], axis=-1)

    x, y = np.arange(6.0).reshape(3, 2), np.ones((2, 2))
    assert compat.array_namespace(x) is not array_api  # NumPy arrays keep NumPy's namespace
    _same(jk.jit(pairwise_distance, backend=backend)(x, y), np.linalg.norm(x[:, None, :] - y[None, :, :], axis=-1))


def test_sum_of_int32_is_the_default_integer(backend):
    got = jk.jit(lambda x: array_api.sum(x), backend=backend)(np.arange(5, dtype=np.int32))
    assert np.asarray(got).dtype == np.int64 and int(got) == 10
    got = jk.jit(lambda x: array_api.prod(x), backend=backend)(np.arange(1, 4, dtype=np.uint8))
    assert np.asarray(got).dtype == np.uint64 and int(got) == 6


def test_unique_values_inside_jit(backend):
    x = np.array([3.0, 1.0, 3.0, np.nan, np.nan, 2.0])
    values = jk.jit(lambda x: array_api.unique_values(x), backend=backend)(x)
    np.testing.assert_array_equal(values, np.unique_values(x))  # NaNs distinct, as the standard says
    counts = jk.jit(lambda x: array_api.unique_counts(x), backend=backend)(np.array([2, 1, 2]))
    np.testing.assert_array_equal(counts[0], [1, 2])
    np.testing.assert_array_equal(counts[1], [1, 2])
    inverse = jk.jit(lambda x: array_api.unique_inverse(x)[1], backend=backend)(np.array([[2, 1], [2, 5]]))
    np.testing.assert_array_equal(inverse, [[1, 0], [1, 2]])


def test_created_arrays_take_writes_inside_jit(backend):
    # Array-API code fills arrays it creates (`out = xp.zeros(n); out[i] = ...`): inside jit the
    # creation functions return new traced arrays, as np.zeros does in the user's code.
    def fill(x):
        xp = x.__array_namespace__()
        z, o, a = xp.zeros(3, dtype=x.dtype), xp.ones_like(x, dtype=xp.int8), xp.asarray([0.0, 1.0])
        e, r = xp.full((2,), 3.0), xp.arange(3.0)
        z[0], o[1], a[0], e[1], r[2] = xp.sum(x), 9, x[2], x[1], x[0] * 7
        return z, o, a, e, r

    x = np.arange(3.0) + 1
    for got, want in zip(jk.jit(fill, backend=backend)(x), fill(x.view(_EagerArray))):
        _same(got, want)


def test_asarray_copy_inside_jit(backend):
    captured = np.arange(3.0)

    def f(x):
        copied = array_api.asarray(captured, copy=True)
        copied[0] = x[1]
        with pytest.raises(ValueError, match="copy=False"):
            array_api.asarray(x, dtype=array_api.float32, copy=False)
        return copied, array_api.asarray(x, copy=False)

    copied, same = jk.jit(f, backend=backend)(np.arange(3.0) + 10)
    np.testing.assert_array_equal(copied, [11.0, 1.0, 2.0])
    np.testing.assert_array_equal(same, [10.0, 11.0, 12.0])
    np.testing.assert_array_equal(captured, [0.0, 1.0, 2.0])


def test_data_dependent_repeat_compiles_for_the_length_it_gets():
    f = jk.jit(lambda x, r, axis: array_api.repeat(x, r, axis=axis), static_argnums=2)
    x = np.arange(6.0).reshape(2, 3)
    for r, axis in (([1, 2, 0], 1), ([3, 1, 1], 1), ([2, 0], 0), ([1, 0, 2, 1, 1, 4], None)):
        r = np.array(r)
        np.testing.assert_array_equal(f(x, r, axis), np.repeat(x, r, axis=axis))


def test_eager_calls_on_numpy_arrays_run_numpy():
    x = np.arange(6.0).reshape(2, 3)
    assert isinstance(array_api.sum(x), np.ndarray) and array_api.sum(x).shape == ()
    np.testing.assert_array_equal(array_api.linalg.matrix_transpose(x), x.T)
    np.testing.assert_array_equal(array_api.concat([x, x], axis=None), np.concat([x, x], axis=None))
    assert array_api.asarray([]).dtype == np.float64


def test_inspection_info():
    info = array_api.__array_namespace_info__()
    assert info.capabilities() == {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}
    assert info.default_device() == "cpu" and info.devices() == ["cpu"]
    assert info.default_dtypes() == {"real floating": np.float64, "complex floating": np.complex128,
                                     "integral": np.int64, "indexing": np.int64}
    assert len(info.dtypes()) == 13
    assert list(info.dtypes(kind="signed integer")) == ["int8", "int16", "int32", "int64"]
    assert list(info.dtypes(kind=("bool", "real floating"))) == ["bool", "float32", "float64"]
    with pytest.raises(ValueError, match="device"):
        info.dtypes(device="gpu")


def test_finfo_fields_are_python_numbers():
    fi = array_api.finfo(array_api.float32)
    assert isinstance(fi.eps, float) and fi.bits == 32 and fi.eps == float(np.finfo(np.float32).eps)
    assert array_api.isdtype(array_api.int8, "integral") and array_api.result_type(array_api.int8, 1) == np.int8


DTYPES = st.sampled_from([np.float32, np.float64, np.int32, np.int64, np.uint8])
SHAPES = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)
UNARY = {
    "sum": lambda xp, x: xp.sum(x, axis=0),
    "cumulative_sum": lambda xp, x: xp.cumulative_sum(x, axis=-1),
    "flip_concat": lambda xp, x: xp.concat([xp.flip(x, axis=0), x], axis=-1),
    "permute_dims": lambda xp, x: xp.permute_dims(x, tuple(reversed(range(x.ndim)))),
    "astype_float32": lambda xp, x: xp.astype(x, xp.float32),
    "argsort_descending": lambda xp, x: xp.argsort(x, axis=-1, descending=True),
    "max_keepdims": lambda xp, x: xp.max(x, axis=-1, keepdims=True),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_functions_match_numpy_over_shapes_and_dtypes(name, backend):
    fn = UNARY[name]

    @SETTINGS
    @given(shape=SHAPES, dtype=DTYPES, seed=st.integers(0, 2**16))
    def check(shape, dtype, seed):
        x = np.random.default_rng(seed).integers(0, 5, size=shape).astype(dtype)
        _same(jk.jit(lambda a: fn(array_api, a), backend=backend)(x), fn(array_api, x))
        if name != "argsort_descending":  # NumPy's namespace has no descending
            _same(fn(array_api, x), fn(np, x))
    check()

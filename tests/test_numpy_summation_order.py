"""Float reductions in NumPy's own order, bit for bit.

- Axes of extent 1: NumPy's iterator gives an axis of extent 1 stride 0 and coalesces
  it with its neighbours, so `(n, 1).sum(axis=0)` is the pairwise sum of n values, as
  `(n,).sum()` is, never an element-by-element accumulation. The generator draws shapes that
  mix axes of extent 1 with short and long axes (up to ~1e5 elements, so NumPy's pairwise
  blocks of 8 and 128 and its halving matter), every axis spelling and keepdims.
- Selections: a float `sum`/`mean` of `x[mask]` is NumPy's pairwise sum of exactly the
  selected values; reducing `np.where(mask, x, 0)` instead moves the values within the pairwise
  grouping, which changes the rounding and even the kind of answer (inf against 1e308). The
  generator draws values made to cancel and overflow, masks and lengths around the pairwise
  block sizes.

Every expectation is computed by the installed NumPy on C-contiguous input; results are
compared bit for bit (a NaN's sign bit is not promised: docs/numpy-support.md, "Accuracy").
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jitkernel as jk
from helpers import HOST_BACKENDS, outcome

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))
BACKENDS = HOST_BACKENDS  # cuda-emulator sums in a tree: a documented difference (docs/gpu.md)
FLOATS = [np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)]
# Lengths around NumPy's pairwise structure: 8 accumulators, leaves of 128, halving above.
PAIRWISE_LENGTHS = [7, 8, 9, 15, 16, 17, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1000, 1023, 1024, 1025,
                    4096, 4097, 10007, 65536, 100003]


def assert_same_bits(got, expected) -> None:
    """Same dtype, shape and bits; NaN where NumPy has NaN (its sign bit is not promised)."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert (got.dtype, got.shape) == (expected.dtype, expected.shape), (got, expected)
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(got), nan)
    assert np.where(nan, 0, got).tobytes() == np.where(nan, 0, expected).tobytes(), (got, expected)


def assert_like_numpy(f, *args, backend: str) -> None:
    expected = outcome(f, *args)
    got = outcome(jk.jit(f, backend=backend), *args)
    assert got[0] == expected[0], (got, expected)
    if expected[0] == "raise":
        assert issubclass(got[1], expected[1]), (got, expected)
    else:
        assert_same_bits(got[1], expected[1])


# ----------------------------------------------------------------------------- axes of extent 1

# NumPy's reductions whose float result follows its summation order (mean, var, std and the
# nan forms are sums; prod and cumsum are sequential), and max/min, which must not change.
REDUCTIONS = ["sum", "sum", "mean", "nansum", "nanmean", "var", "std", "prod", "max", "min", "cumsum"]
MAX_ELEMENTS = 200_000


@st.composite
def unit_axis_cases(draw):
    """(shape, axis argument, keepdims, reduction, dtype, seed): one or two axes of real
    extent (one of them long) with axes of extent 1 inserted anywhere, some of them reduced;
    the axis spelled as None, an int or a tuple, negative or not, in any order."""
    long = draw(st.sampled_from(PAIRWISE_LENGTHS))
    core = [long] + ([draw(st.sampled_from([2, 3, 5]))] if draw(st.booleans()) else [])
    if draw(st.booleans()):
        core.reverse()
    while math.prod(core) > MAX_ELEMENTS:
        core.pop()
    reduced_core = draw(st.lists(st.booleans(), min_size=len(core), max_size=len(core)).filter(any))
    shape, reduced = list(core), list(reduced_core)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(shape)))
        shape.insert(at, 1)
        reduced.insert(at, draw(st.booleans()))
    ndim = len(shape)
    axes = [d for d in range(ndim) if reduced[d]]
    name = draw(st.sampled_from(REDUCTIONS))
    if name == "cumsum":
        axis = draw(st.one_of(st.none(), st.sampled_from(axes)))
    elif len(axes) == ndim and draw(st.booleans()):
        axis = None
    else:
        spelled = [a - ndim if draw(st.booleans()) else a for a in draw(st.permutations(axes))]
        axis = spelled[0] if len(spelled) == 1 and draw(st.booleans()) else tuple(spelled)
    keepdims = draw(st.booleans()) and name != "cumsum"
    return tuple(shape), axis, keepdims, name, draw(st.sampled_from(FLOATS)), draw(st.integers(0, 2**32 - 1))


def unit_axis_values(shape, dtype, name, seed) -> np.ndarray:
    """Values of mixed magnitudes (their sum depends on the order); near 1 for products."""
    rng = np.random.default_rng(seed)
    if name == "prod":
        return (1 + rng.standard_normal(shape) / 64).astype(dtype)
    scale = 10.0 ** rng.integers(-3, 3 if dtype != np.float16 else 1, shape)
    return (rng.standard_normal(shape) * scale).astype(dtype)


def reduction(name, axis, keepdims):
    fn = getattr(np, name)
    if name == "cumsum":
        return lambda a: fn(a, axis=axis)
    return lambda a: fn(a, axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(SETTINGS, max_examples=60)
@given(case=unit_axis_cases())
def test_reductions_over_shapes_with_unit_axes_are_numpys_bit_for_bit(backend, case):
    shape, axis, keepdims, name, dtype, seed = case
    x = unit_axis_values(shape, dtype, name, seed)
    assert_like_numpy(reduction(name, axis, keepdims), x, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_column_of_a_million_sums_pairwise(backend):
    """The reported example: float32 (10**6, 1).sum(axis=0) was 500373.62, NumPy's 500387.7."""
    y = np.random.default_rng(0).random((10**6, 1), dtype=np.float32)
    for f in (lambda a: a.sum(axis=0), lambda a: a.mean(axis=0), lambda a: a.sum(axis=-2, keepdims=True),
              lambda a: a[None].sum(axis=(0, 1))):
        assert_like_numpy(f, y, backend=backend)


# ----------------------------------------------------------------------------- selections


def palette(dtype: np.dtype) -> np.ndarray:
    """Values whose sums cancel catastrophically or overflow depending on the grouping."""
    info = np.finfo(dtype)
    big = float(info.max)
    ulp_one = 2.0 / float(info.eps)  # adding 1 to this is lost
    return np.array([big, -big, big / 2, -big / 2, ulp_one, -ulp_one, 1.0, -1.0, 3.0, 0.5, float(info.tiny),
                     float(info.smallest_subnormal), -float(info.smallest_subnormal), 0.0, -0.0,
                     np.inf, -np.inf, np.nan], dtype=dtype)


@st.composite
def selection_cases(draw):
    dtype = draw(st.sampled_from(FLOATS))
    n = draw(st.one_of(st.sampled_from(PAIRWISE_LENGTHS[:-6] + [0, 1, 2, 3]), st.integers(9, 3000)))
    seed = draw(st.integers(0, 2**32 - 1))
    extreme = draw(st.sampled_from([0.05, 0.3, 0.0, 1.0]))  # share of palette values
    special = draw(st.sampled_from([False, False, True]))  # may the palette include inf and nan
    density = draw(st.sampled_from([0.5, 0.7, 0.9, 0.3, 0.1, 0.97, 0.0]))
    rng = np.random.default_rng(seed)
    pal = palette(dtype)
    if not special:
        pal = pal[np.isfinite(pal)]
    x = np.where(rng.random(n) < extreme, rng.choice(pal, n), rng.standard_normal(n) * 10.0 ** rng.integers(-2, 3, n))
    x = x.astype(dtype)
    mask = rng.random(n) < density
    return x, mask


SELECTION_REDUCTIONS = {
    "x[m].sum()": lambda x, m: x[m].sum(),
    "np.sum(x[m])": lambda x, m: np.sum(x[m]),
    "x[m].mean()": lambda x, m: x[m].mean(),
    "(x[m] * 2).sum()": lambda x, m: (x[m] * 2).sum(),
    "np.add.reduce(x[m])": lambda x, m: np.add.reduce(x[m]),
    "x[m].sum(dtype=float64)": lambda x, m: x[m].sum(dtype=np.float64),
    "x[x != 0].sum()": lambda x, m: x[x != 0].sum(),
    "x[m].prod()": lambda x, m: x[m].prod(),
    "np.nansum(x[m])": lambda x, m: np.nansum(x[m]),
    "x[m].max()": lambda x, m: x[m].max(),
    "x[m].min()": lambda x, m: x[m].min(),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("form", sorted(SELECTION_REDUCTIONS))
@settings(SETTINGS, max_examples=40)
@given(case=selection_cases())
def test_reductions_of_selections_are_numpys_bit_for_bit(backend, form, case):
    x, mask = case
    assert_like_numpy(SELECTION_REDUCTIONS[form], x, mask, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", FLOATS)
@settings(SETTINGS, max_examples=25)
@given(case=selection_cases(), rows=st.sampled_from([1, 2, 3, 9]))
def test_reductions_of_selected_rows_are_numpys_bit_for_bit(backend, dtype, case, rows):
    """A 1-D mask over the rows of a 2-D array: (count, k) selections reduced over every axis."""
    x, mask = case
    with np.errstate(all="ignore"):
        x2 = np.repeat(x.astype(dtype)[:, None], rows, axis=1) * np.arange(1, rows + 1, dtype=dtype)
    for f in (lambda a, m: a[m].sum(), lambda a, m: a[m].sum(axis=0), lambda a, m: a[m].mean(axis=0),
              lambda a, m: a[m].sum(axis=1)):
        assert_like_numpy(f, x2, mask, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_reported_selection_sums(backend):
    """Cancellation and overflow that NumPy's pairwise sum of the selection gives and the sum
    of the zero-filled array did not (found by the generator above)."""
    cases = [np.array([1e16, 3.0, 3.0, 1e308, 1e308, 0.0, -1e16, -1.0, -1e308, 3.0, 1.0, 1e-300, 3.0]),
             np.array([1.0, -1.0, -1e16, -1e308, 1e-300, 0.0, 1e308, 3.0, 0.0, -1e308, -1.0, 1.0, 1e308,
                       1e-300, 0.0, 1e16, 1e308])]
    for x in cases:
        assert_like_numpy(lambda a: a[a != 0].sum(), x, backend=backend)
        assert_like_numpy(lambda a: a[a != 0].mean(), x, backend=backend)


def test_float_sums_along_a_selection_sum_the_selection_itself():
    """The decision, visible in the kernels: a float sum along the selection takes the selection
    (NumPy's order); an integer sum, a max, or a float sum of selected rows along a kept axis
    (rows added element by element, where the zero rows change nothing) fuse densely."""
    x = np.linspace(-1.0, 1.0, 16)
    exact = [lambda a: a[a > 0].sum(), lambda a: a[a > 0].mean(), lambda a: a.reshape(8, 2)[a[::2] > 0].sum()]
    dense = [lambda a: a[a > 0].astype(np.int64).sum(), lambda a: a[a > 0].max(),
             lambda a: a.reshape(8, 2)[a[::2] > 0].sum(axis=0)]
    for f in exact + dense:
        text = jk.jit(f).lower(x).as_text("kernels")
        assert ("mask_select" in text) == (f in exact), text


def test_float_sums_of_selections_stay_differentiable():
    """The exact sum keeps the dense form's derivative (a sum is linear: its tangent does not
    depend on the order), so jk.grad of x[mask].sum() works, with NumPy's value."""
    x = np.array([1e16, 3.0, 3.0, 1e308, 1e308, 0.0, -1e16, -1.0, -1e308, 3.0, 1.0, 1e-300, 3.0])
    selected = (x != 0).astype(np.float64)
    cases = [(lambda a: a[a != 0].sum(), selected), (lambda a: a[a != 0].mean(), selected / selected.sum()),
             (lambda a: (a[a != 0] * 2).sum(dtype=np.float64), 2 * selected)]
    for f, gradient in cases:
        value, grad = jk.value_and_grad(f)(x)
        assert_same_bits(value, outcome(f, x)[1])
        np.testing.assert_array_equal(grad, gradient)

"""np.packbits and np.unpackbits inside jit: every axis, both bit orders, count (positive,
negative, past the end), integer and bool inputs, bit for bit against NumPy (uint8 results),
NumPy's errors (non-integer input, a non-uint8 unpackbits input, bad axis, bad bitorder, a
too-negative count), a round trip, vmap and the emulated GPU."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from emulator_suite import emulator_backends
from helpers import HOST_BACKENDS, check, raises_like_numpy, rng_for, sample

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None, print_blob=False,
                    suppress_health_check=list(HealthCheck))
PACK_DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.int64, np.uint64]


def _same_error(fn, *args):
    raises_like_numpy(fn, *args, same_message=True)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("dtype", PACK_DTYPES)
@pytest.mark.parametrize("kwargs", [{}, {"axis": 0}, {"axis": 1}, {"axis": -1, "bitorder": "little"},
                                    {"axis": None, "bitorder": "little"}])
def test_packbits(backend, dtype, kwargs):
    a = sample(rng_for("packbits", np.dtype(dtype).name), dtype, (3, 11), lo=-2, hi=2)
    check(lambda a: np.packbits(a, **kwargs), a, backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
@pytest.mark.parametrize("kwargs", [{}, {"axis": 0}, {"axis": 1, "count": 5}, {"axis": 1, "count": -3},
                                    {"count": 40}, {"count": 0}, {"axis": 0, "count": -24},
                                    {"axis": -1, "bitorder": "little", "count": 13}])
def test_unpackbits(backend, kwargs):
    a = rng_for("unpackbits").integers(0, 256, (3, 2), dtype=np.uint8)
    check(lambda a: np.unpackbits(a, **kwargs), a, backend=backend)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_zero_dim_and_empty(backend):
    check(lambda a: (np.packbits(a), np.packbits(a, axis=0)), np.array(3), backend=backend)
    check(lambda a: (np.unpackbits(a), np.unpackbits(a, axis=0, count=3)), np.array(5, np.uint8), backend=backend)
    check(lambda a: np.packbits(a, axis=0), np.zeros((0, 3), np.int32), backend=backend)
    check(lambda a: (np.unpackbits(a, axis=0), np.unpackbits(a, axis=1, count=0)), np.zeros((0, 3), np.uint8),
          backend=backend)


@given(shape=st.lists(st.integers(0, 9), min_size=1, max_size=3), seed=st.integers(0, 2 ** 16),
       dtype=st.sampled_from(PACK_DTYPES), axis_pick=st.integers(-4, 3), little=st.booleans(),
       count=st.one_of(st.none(), st.integers(-30, 30)))
@SETTINGS
def test_pack_and_unpack_match_numpy(shape, seed, dtype, axis_pick, little, count):
    """Any shape, axis (None too), bit order and count; NumPy's errors where it raises."""
    rng = np.random.default_rng(seed)
    a = sample(rng, dtype, tuple(shape), lo=-3, hi=3)
    axis = None if axis_pick < -len(shape) else axis_pick % len(shape) if axis_pick >= len(shape) else axis_pick
    order = "little" if little else "big"
    check(lambda a: np.packbits(a, axis=axis, bitorder=order), a, backend="cpu")
    u = rng.integers(0, 256, tuple(shape), dtype=np.uint8)
    if u.size == 0 and count is not None and count > 0:
        return  # NumPy 2.4 returns uninitialised memory there: test_empty_input_padded_with_zero_bits
    check(lambda u: np.unpackbits(u, axis=axis, count=count, bitorder=order), u, backend="cpu")


def test_empty_input_padded_with_zero_bits():
    """unpackbits of an empty input with count > 0: the count bits past the end are zero bits,
    as NumPy documents ("padded with zeros"); NumPy 2.4 itself returns uninitialised bytes
    there, so the reference is the documented zeros."""
    got = jk.jit(lambda u: np.unpackbits(u, axis=0, count=3))(np.zeros((0, 2), np.uint8))
    assert got.dtype == np.uint8 and got.shape == (3, 2)
    np.testing.assert_array_equal(got, np.zeros((3, 2), np.uint8))


@pytest.mark.parametrize("order", ["big", "little"])
def test_round_trip(order):
    a = rng_for("round-trip", order).integers(0, 2, (4, 13)).astype(np.uint8)
    fn = lambda a: np.unpackbits(np.packbits(a, axis=1, bitorder=order), axis=1, count=13, bitorder=order)  # noqa: E731
    np.testing.assert_array_equal(jk.jit(fn)(a), a)


def test_errors_are_numpys():
    _same_error(lambda a: np.packbits(a), np.ones(3))                          # float input
    _same_error(lambda a: np.packbits(a.astype(np.complex64)), np.ones(3))     # complex input
    _same_error(lambda a: np.unpackbits(a), np.ones(3, np.int64))              # not uint8
    _same_error(lambda a: np.unpackbits(a), np.ones(3, np.int8))
    _same_error(lambda a: np.packbits(a, axis=2), np.ones((2, 3), np.int32))   # AxisError
    _same_error(lambda a: np.unpackbits(a, axis=-3), np.ones((2, 3), np.uint8))
    _same_error(lambda a: np.packbits(a, bitorder="l"), np.ones(3, np.int32))  # NumPy's parsing
    _same_error(lambda a: np.unpackbits(a, bitorder="x"), np.ones(3, np.uint8))
    _same_error(lambda a: np.unpackbits(a, count=-25), np.ones(3, np.uint8))
    _same_error(lambda a: np.unpackbits(a, count=2.0), np.ones(3, np.uint8))
    _same_error(lambda a: np.packbits(a, axis=1.0), np.ones((2, 3), np.int32))


def test_bitorder_strings_are_read_as_numpy_reads_them():
    """packbits takes any string starting with 'big' as big; unpackbits any starting with 'b'."""
    a = np.array([1, 0, 0, 1, 1], np.uint8)
    for order in ("bigger", "little"):
        check(lambda a: np.packbits(a, bitorder=order), a, backend="cpu")
    for order in ("b", "lsb"):
        check(lambda a: np.unpackbits(a, bitorder=order), a, backend="cpu")


def test_vmap():
    a = rng_for("bits-vmap").integers(0, 2, (3, 10)).astype(np.bool_)
    np.testing.assert_array_equal(jk.vmap(np.packbits)(a), np.stack([np.packbits(r) for r in a]))
    p = np.packbits(a, axis=1)
    unpack = lambda r: np.unpackbits(r, count=10, bitorder="little")  # noqa: E731
    np.testing.assert_array_equal(jk.vmap(unpack)(p), np.stack([unpack(r) for r in p]))


@pytest.mark.parametrize("backend", emulator_backends())
def test_on_the_emulated_gpu(backend):
    a = rng_for("bits-gpu").integers(-2, 3, (3, 11)).astype(np.int32)
    check(lambda a: (np.packbits(a, axis=1), np.unpackbits(np.packbits(a, axis=0), axis=0, count=5, bitorder="little")),
          a, backend=backend)

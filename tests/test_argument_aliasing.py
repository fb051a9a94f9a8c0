"""Aliasing of arguments: a written argument that overlaps itself
is refused naming it (reads stay allowed); an argument the function also reads as a global or
closure array is read with its written values on every call; two views of one array that share
no element are not refused, while real overlaps still are (docs/numpy-support.md, "Views, copies
and argument layouts")."""
from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import jitkernel as jk
from emulator_suite import DRAWN_BACKENDS, emulator_backends

BACKENDS = DRAWN_BACKENDS + emulator_backends()


def _increment(a):
    a += 1.0
    return a.sum()


SELF_OVERLAPPING = {  # (buffer size, shape, byte strides) over a float64 buffer
    "zero_stride": (4, (3,), (0,)),
    "zero_stride_rows": (4, (3, 4), (0, 8)),
    "sliding_window": (6, (3, 4), (8, 8)),
    "half_item_stride": (4, (3,), (4,)),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", sorted(SELF_OVERLAPPING))
def test_a_written_self_overlapping_argument_is_refused_naming_it(backend, layout):
    size, shape, strides = SELF_OVERLAPPING[layout]
    buffer = np.zeros(size)
    with pytest.raises(jk.errors.UnsupportedOperationError, match="argument 'a' overlaps itself"):
        jk.jit(_increment, backend=backend)(as_strided(buffer, shape, strides))
    np.testing.assert_array_equal(buffer, np.zeros(size))  # nothing was written


@pytest.mark.parametrize("backend", DRAWN_BACKENDS)
def test_a_self_overlapping_argument_can_be_read(backend):
    a = as_strided(np.arange(6.), (3, 4), (8, 8))  # sliding windows
    np.testing.assert_array_equal(jk.jit(lambda a: a * 2.0 + a.sum(axis=0), backend=backend)(a),
                                  a * 2.0 + a.sum(axis=0))


@pytest.mark.parametrize("backend", DRAWN_BACKENDS)
def test_ordinary_strided_layouts_are_not_refused(backend):
    for a in [np.zeros((4, 6))[::2, 1::2], np.zeros((3, 4))[::-1, ::-1], np.zeros((3, 4)).T,
              as_strided(np.zeros(24), (3, 4), (8, 48)), np.zeros((5, 1, 3))[:, :, ::2]]:
        expected = a.copy()
        _increment(expected)
        jk.jit(_increment, backend=backend)(a)
        np.testing.assert_array_equal(a, expected)


G = np.arange(4.0)


def _writes_argument_reads_global(a):
    a += 1.0
    return G.sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_argument_read_as_a_global_reads_the_written_values(backend):
    """`def f(a): a += 1; return G.sum()` called as f(G): every call, the first included, and
    after a call with another array (the warm fast path) reads the written values, as NumPy."""
    global G
    G = np.arange(4.0)
    f = jk.jit(_writes_argument_reads_global, backend=backend)
    expected_g = np.arange(4.0)
    for call in range(3):
        assert f(G) == expected_g.sum() + 4.0
        expected_g += 1.0
        np.testing.assert_array_equal(G, expected_g)
    other = np.zeros(4)
    for call in range(2):  # G is not the argument: G is read as it was traced (a constant)
        f(other)
    assert f(G) == expected_g.sum() + 4.0


@pytest.mark.parametrize("backend", DRAWN_BACKENDS)
def test_an_argument_read_through_a_closure_reads_the_written_values(backend):
    H = np.ones(3)

    def f(a):
        a *= 2.0
        return H + 0.0

    jitted = jk.jit(f, backend=backend)
    np.testing.assert_array_equal(jitted(H), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(jitted(H), [4.0, 4.0, 4.0])
    np.testing.assert_array_equal(H, [4.0, 4.0, 4.0])


@pytest.mark.parametrize("backend", DRAWN_BACKENDS)
def test_a_written_argument_partly_overlapping_a_global_is_refused(backend):
    global G
    G = np.arange(4.0)
    with pytest.raises(jk.errors.UnsupportedOperationError, match="shares memory with 'G'"):
        jk.jit(_writes_argument_reads_global, backend=backend)(G[1:])
    np.testing.assert_array_equal(G, np.arange(4.0))


def _write_first_read_second(p, q):
    p += 1.0
    return q * 1.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_interleaved_views_that_share_no_element_are_accepted(backend):
    x = np.arange(8.0)
    expected = x.copy()
    want = _write_first_read_second(expected[::2], expected[1::2])
    got = jk.jit(_write_first_read_second, backend=backend)(x[::2], x[1::2])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(x, expected)
    y = np.arange(12.0).reshape(3, 4)  # columns 0, 2 and 1, 3 of one matrix
    jk.jit(_write_first_read_second, backend=backend)(y[:, ::2], y[:, 1::2])
    np.testing.assert_array_equal(y, np.arange(12.0).reshape(3, 4) + np.tile([1.0, 0.0], 6).reshape(3, 4))


@pytest.mark.parametrize("backend", DRAWN_BACKENDS)
@pytest.mark.parametrize("views", [lambda x: (x[:5], x[4:]), lambda x: (x[::2], x[::3]), lambda x: (x[1:], x[::-1])])
def test_views_that_really_overlap_are_still_refused(backend, views):
    x = np.arange(12.0)
    with pytest.raises(ValueError, match="overlapping views"):
        jk.jit(_write_first_read_second, backend=backend)(*views(x))
    np.testing.assert_array_equal(x, np.arange(12.0))

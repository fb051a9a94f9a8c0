"""A buffer written in parts by several kernels (a concatenate writes one part per operand, `pad`
and slice assignments write regions) and then read by a row kernel together with a reduction:
the row kernel may shrink a buffer to one row of stack scratch only when no step outside it reads
or writes that buffer (fusion/rows.py). Before, `np.concatenate([a, a], axis=1) + a.sum(axis=1,
keepdims=True)` crashed the CPU renderer (a scratch buffer another kernel wrote: KeyError).

The generator draws such chains (concatenate, stack, pad, slice writes, broadcasts) fused with
a keepdims reduction, plain and under vmap, and compares them with NumPy."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

import jitkernel as jk

SETTINGS = settings(max_examples=120, deadline=None, derandomize=True, database=None, print_blob=False)


def _build(kind: str, axis: int):
    def parts(a):
        if kind == "concatenate":
            return np.concatenate([a, a * 2], axis=axis)
        if kind == "stack_reshape":
            s = np.stack([a, a + 1], axis=axis + 1)
            return s.reshape(a.shape[:axis] + (2 * a.shape[axis],) + a.shape[axis + 1:])
        if kind == "pad":
            widths = [(0, 0)] * a.ndim
            widths[axis] = (1, 2)
            return np.pad(a, widths)
        if kind == "slice_write":
            shape = list(a.shape)
            shape[axis] *= 2
            out = np.zeros(shape, a.dtype)
            index = [slice(None)] * a.ndim
            index[axis] = slice(0, a.shape[axis])
            out[tuple(index)] = a
            index[axis] = slice(a.shape[axis], None)
            out[tuple(index)] = -a
            return out
        raise AssertionError(kind)
    return parts


def _program(kind: str, axis: int, reduce: str, reduce_axis: int):
    parts = _build(kind, axis)

    def f(a):
        p = parts(a)
        # a reduction of the operand over the axis the parts are joined along (broadcast back
        # over the joined axis), and one of the joined result over any axis
        across = getattr(np, reduce)(a, axis=axis, keepdims=True)
        within = getattr(np, reduce)(p, axis=reduce_axis, keepdims=True)
        return p + across - within
    return f


@SETTINGS
@given(kind=st.sampled_from(["concatenate", "stack_reshape", "pad", "slice_write"]),
       shape=st.sampled_from([(2, 2), (3, 4), (2, 3, 4), (1, 5)]),
       axis=st.integers(0, 2), reduce=st.sampled_from(["sum", "max", "mean"]), reduce_axis=st.integers(0, 2),
       batched=st.booleans())
def test_partial_writes_feeding_a_row_reduction_match_numpy(kind, shape, axis, reduce, reduce_axis, batched):
    axis, reduce_axis = axis % len(shape), reduce_axis % len(shape)
    f = _program(kind, axis, reduce, reduce_axis)
    x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) / 7 - 0.5
    if batched:
        xs = np.stack([x, x * 3, -x])
        np.testing.assert_allclose(jk.vmap(f)(xs), np.stack([f(t) for t in xs]), rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_allclose(jk.jit(f)(x), f(x), rtol=1e-12, atol=1e-12)


def test_the_reported_program():
    def f(x0):
        v12 = np.concatenate([x0, x0], axis=1)
        return v12 + 0.264 * np.sum(np.tanh(x0))
    xs = np.random.default_rng(0).random((4, 2, 2))
    np.testing.assert_allclose(jk.vmap(f, in_axes=(0,), out_axes=0)(xs), np.stack([f(t) for t in xs]), rtol=1e-12)
    g = lambda a: np.concatenate([a, a], axis=1) + np.sum(a, axis=1, keepdims=True)  # noqa: E731
    np.testing.assert_array_equal(jk.jit(g)(np.ones((2, 2))), g(np.ones((2, 2))))

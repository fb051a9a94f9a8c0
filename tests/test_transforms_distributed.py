"""grad and vmap over Dask arrays and ShardedArrays (distribution meets transformations).

A transformed function outside a trace is `jk.jit` of itself (transforms/core.py), so Dask and
sharded arguments take the same route as for any jitted function: the one traced program (here
the derivative or batched program) is partitioned over the blocks. These tests check that the
values are NumPy's/the hand-derived ones and the layout is the argument's.
"""
from __future__ import annotations

import numpy as np
import pytest

import jitkernel as jk
from jitkernel.sharding import Mesh, NamedSharding, P, cpu_devices

da = pytest.importorskip("dask.array")


def loss(x):
    return (np.sin(x) ** 2).sum()


def dloss(x):
    return 2 * np.sin(x) * np.cos(x)


@pytest.fixture
def x():
    return np.random.default_rng(0).standard_normal((9, 5))


def test_grad_over_a_dask_array_is_lazy_and_right(x):
    dx = da.from_array(x, chunks=(4, 3))  # uneven chunks on both axes
    g = jk.grad(loss)(dx)
    assert isinstance(g, da.Array) and g.shape == x.shape
    np.testing.assert_allclose(g.compute(), dloss(x), rtol=1e-13, atol=1e-15)


def test_value_and_grad_and_vmap_over_a_dask_array(x):
    dx = da.from_array(x, chunks=(4, 5))
    value, g = jk.value_and_grad(loss)(dx)
    np.testing.assert_allclose(value.compute(), loss(x), rtol=1e-13)
    np.testing.assert_allclose(g.compute(), dloss(x), rtol=1e-13, atol=1e-15)
    rows = jk.vmap(lambda r: np.tanh(r).sum() * r.max())(dx)
    np.testing.assert_allclose(rows.compute(), [np.tanh(r).sum() * r.max() for r in x], rtol=1e-13)


def test_per_example_gradients_over_a_dask_array(x):
    w = np.linspace(-1, 1, x.shape[1])
    per_example = jk.vmap(jk.grad(lambda w, r: np.tanh(r @ w) ** 2), in_axes=(None, 0))
    got = per_example(w, da.from_array(x, chunks=(2, 5))).compute()
    want = [2 * np.tanh(r @ w) * (1 - np.tanh(r @ w) ** 2) * r for r in x]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_grad_of_a_sharded_array_keeps_its_layout(x):
    sharding = NamedSharding(Mesh(np.array(cpu_devices(2)), ("d",)), P(None, "d"))
    x = x[:, :4]  # 4 columns split over 2 devices
    sx = jk.device_put(x, sharding)
    g = jk.grad(loss)(sx)
    assert isinstance(g, jk.ShardedArray) and g.sharding == sharding
    np.testing.assert_allclose(np.asarray(g), dloss(x), rtol=1e-13, atol=1e-15)
    v = jk.vmap(lambda r: np.tanh(r).sum())(sx)
    np.testing.assert_allclose(np.asarray(v), np.tanh(x).sum(1), rtol=1e-13)

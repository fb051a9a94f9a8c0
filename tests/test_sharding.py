"""jk.sharding: meshes, partition specs, sharded arrays, visualize_sharding.

The expected `devices_indices_map` results are JAX 0.10.2's, measured with
`XLA_FLAGS=--xla_force_host_platform_device_count=8` (jax.devices() = CpuDevice(id=0..7);
meshes built from them in order) and written here as literals: the tests do not import JAX.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import jitkernel as jk
from jitkernel.sharding import (DuplicateSpecError, IndivisibleError, Mesh, NamedSharding, P, PartitionSpec,
                                ShardedArray, cpu_devices)

S = slice
ALL = slice(None, None, None)


def mesh(shape, names):
    return Mesh(np.array(cpu_devices(int(np.prod(shape))), dtype=object).reshape(shape), names)


# (mesh shape, axis names, spec, array shape) -> {device id: slices}, in JAX's key order
JAX_MAPS = [
    ((4,), ("x",), P("x"), (8,),
     {0: (S(0, 2),), 1: (S(2, 4),), 2: (S(4, 6),), 3: (S(6, 8),)}, (2,)),
    ((4,), ("x",), P(None), (8,),
     {0: (ALL,), 1: (ALL,), 2: (ALL,), 3: (ALL,)}, (8,)),
    ((2, 2), ("x", "y"), P("x", "y"), (4, 6),
     {0: (S(0, 2), S(0, 3)), 1: (S(0, 2), S(3, 6)), 2: (S(2, 4), S(0, 3)), 3: (S(2, 4), S(3, 6))}, (2, 3)),
    ((2, 2), ("x", "y"), P("x", None), (4, 6),
     {0: (S(0, 2), ALL), 1: (S(0, 2), ALL), 2: (S(2, 4), ALL), 3: (S(2, 4), ALL)}, (2, 6)),
    ((2, 2), ("x", "y"), P(None, "x"), (4, 6),
     {0: (ALL, S(0, 3)), 1: (ALL, S(0, 3)), 2: (ALL, S(3, 6)), 3: (ALL, S(3, 6))}, (4, 3)),
    ((2, 2), ("x", "y"), P("y", "x"), (4, 6),
     {0: (S(0, 2), S(0, 3)), 1: (S(2, 4), S(0, 3)), 2: (S(0, 2), S(3, 6)), 3: (S(2, 4), S(3, 6))}, (2, 3)),
    ((2, 2), ("x", "y"), P(("x", "y")), (8, 3),
     {0: (S(0, 2), ALL), 1: (S(2, 4), ALL), 2: (S(4, 6), ALL), 3: (S(6, 8), ALL)}, (2, 3)),
    ((2, 2), ("x", "y"), P(("y", "x")), (8, 3),
     {0: (S(0, 2), ALL), 1: (S(4, 6), ALL), 2: (S(2, 4), ALL), 3: (S(6, 8), ALL)}, (2, 3)),
    ((2, 4), ("a", "b"), P("b", "a"), (8, 4),
     {0: (S(0, 2), S(0, 2)), 1: (S(2, 4), S(0, 2)), 2: (S(4, 6), S(0, 2)), 3: (S(6, 8), S(0, 2)),
      4: (S(0, 2), S(2, 4)), 5: (S(2, 4), S(2, 4)), 6: (S(4, 6), S(2, 4)), 7: (S(6, 8), S(2, 4))}, (2, 2)),
    ((2, 4), ("a", "b"), P("a"), (6, 5),
     {0: (S(0, 3), ALL), 1: (S(0, 3), ALL), 2: (S(0, 3), ALL), 3: (S(0, 3), ALL),
      4: (S(3, 6), ALL), 5: (S(3, 6), ALL), 6: (S(3, 6), ALL), 7: (S(3, 6), ALL)}, (3, 5)),
    ((2,), ("x",), P(), (3, 4), {0: (ALL, ALL), 1: (ALL, ALL)}, (3, 4)),
    ((2, 2), ("x", "y"), P("x", None, None), (4, 6),
     {0: (S(0, 2), ALL), 1: (S(0, 2), ALL), 2: (S(2, 4), ALL), 3: (S(2, 4), ALL)}, (2, 6)),
    ((2,), ("x",), P(), (), {0: (), 1: ()}, ()),
]


@pytest.mark.parametrize("mesh_shape, names, spec, shape, expected, shard_shape", JAX_MAPS)
def test_devices_indices_map_is_jaxs(mesh_shape, names, spec, shape, expected, shard_shape):
    s = NamedSharding(mesh(mesh_shape, names), spec)
    got = s.devices_indices_map(shape)
    assert [d.id for d in got] == list(expected)  # JAX's key order: the mesh's devices, flat
    assert {d.id: v for d, v in got.items()} == expected
    assert s.shard_shape(shape) == shard_shape


def test_devices_and_reprs():
    (cpu,) = jk.devices()
    assert (cpu.id, cpu.platform, cpu.kind, repr(cpu)) == (0, "cpu", "cpu", "CpuDevice(id=0)")
    m = mesh((2, 2), ("x", "y"))
    assert m.shape == {"x": 2, "y": 2} and m.size == 4 and m.devices.shape == (2, 2)
    assert repr(m) == "Mesh(axis_sizes=(2, 2), axis_names=('x', 'y'))"
    assert repr(P("x", None)) == "P('x', None)" and repr(P("x")) == "P('x',)" and repr(P()) == "P()"
    assert repr(P("x", ("a", "b"), None)) == "P('x', ('a', 'b'), None)"
    assert jk.sharding.P is PartitionSpec and P("x") != ("x",)  # as JAX: a spec is not a tuple
    assert repr(NamedSharding(m, P("x"))) == "NamedSharding(mesh=Mesh('x': 2, 'y': 2), spec=P('x',))"


def test_errors_are_jaxs():
    m = mesh((2, 2), ("x", "y"))
    with pytest.raises(DuplicateSpecError, match=r"P\('x', 'x'\) has duplicate entries for `x`"):
        NamedSharding(m, P("x", "x"))
    with pytest.raises(DuplicateSpecError, match="duplicate entries for `x`"):
        NamedSharding(m, P(("x", "y"), "x"))
    with pytest.raises(ValueError, match=r"Resource axis: z of P\('z',\) is not found in mesh: \('x', 'y'\)"):
        NamedSharding(m, P("z"))
    with pytest.raises(IndivisibleError, match=r"axis 0 is partitioned 4 times, but the dimension size is 10"):
        NamedSharding(mesh((4,), ("x",)), P("x")).devices_indices_map((10,))
    with pytest.raises(IndivisibleError, match=r"axis 1 is partitioned 2 times, but the dimension size is 3"):
        jk.device_put(np.zeros((8, 3)), NamedSharding(m, P("x", "y")))
    with pytest.raises(ValueError, match="only valid for values of rank at least 2, but was applied to a value of rank 1"):
        jk.device_put(np.zeros(4), NamedSharding(m, P("x", None)))
    with pytest.raises(ValueError, match=r"devices.ndim == 2 and len\(axis_names\) == 1"):
        Mesh(np.array(cpu_devices(4), dtype=object).reshape(2, 2), ("x",))
    with pytest.raises(ValueError, match="distinct"):
        Mesh(np.array(cpu_devices(1) * 2, dtype=object), ("x",))
    with pytest.raises(TypeError, match="None, a mesh axis name or a tuple"):
        P(3)


@pytest.mark.parametrize("spec", [P("x", "y"), P("y"), P(None, ("x", "y")), P()])
def test_device_put_round_trip_local(spec):
    x = np.arange(48, dtype=np.float32).reshape(4, 12)
    s = NamedSharding(mesh((2, 2), ("x", "y")), spec)
    a = jk.device_put(x, s)
    assert isinstance(a, ShardedArray) and (a.shape, a.dtype, a.sharding) == (x.shape, x.dtype, s)
    np.testing.assert_array_equal(np.asarray(a), x)
    assert len(a.addressable_shards) == 4
    for shard in a.addressable_shards:
        np.testing.assert_array_equal(shard.data, x[shard.index])
        assert shard.index == s.devices_indices_map(x.shape)[shard.device]
    d = a.to_dask()
    assert d.chunks == tuple((b,) * (n // b) for n, b in zip(x.shape, s.shard_shape(x.shape)))
    np.testing.assert_array_equal(d.compute(), x)
    assert "ShardedArray([[ 0.,  1.," in repr(a) and "spec=" in repr(a)


def test_device_put_without_sharding_is_numpy_on_the_cpu():
    out = jk.device_put([1.0, 2.0])
    assert type(out) is np.ndarray and out.tolist() == [1.0, 2.0]
    one = jk.device_put(np.arange(3), jk.devices()[0])
    assert one.sharding.is_fully_replicated() and np.asarray(one).tolist() == [0, 1, 2]


def test_jit_on_sharded_inputs_local():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    w = rng.standard_normal((6, 6)).astype(np.float32)
    s = NamedSharding(mesh((2, 2), ("x", "y")), P("x", "y"))
    f = jk.jit(lambda x, w: (np.tanh(x @ w) + x, (x * x).sum(axis=0)))
    y, r = f(jk.device_put(x, s), w)
    assert isinstance(y, ShardedArray) and y.sharding == s  # laid out like the first sharded argument
    np.testing.assert_allclose(np.asarray(y), np.tanh(x @ w) + x, rtol=1e-5, atol=1e-6)
    assert isinstance(r, ShardedArray) and r.sharding.mesh.size == 1  # other shapes: the first device alone
    assert r.sharding.mesh.devices.flat[0] == s.mesh.devices.flat[0]
    np.testing.assert_allclose(np.asarray(r), (x * x).sum(axis=0), rtol=1e-5)
    top, col = jk.jit(lambda x: (x[:4] * 2, x[:, :1]))(jk.device_put(x, s))
    assert top.sharding == s and top.sharding.shard_shape(top.shape) == (2, 3)  # (4, 6): still divisible
    assert col.sharding.mesh.size == 1  # (8, 1): "y" does not divide 1
    np.testing.assert_array_equal(np.asarray(top), x[:4] * 2)
    np.testing.assert_array_equal(np.asarray(col), x[:, :1])


def test_visualize_sharding_text_2x2_and_1d(capsys):
    m = mesh((2, 2), ("x", "y"))
    pic = jk.visualize_sharding(jk.device_put(np.zeros((4, 4)), NamedSharding(m, P("x", "y"))))
    expected = ("+---------+---------+\n"
                "|         |         |\n"
                "|  CPU 0  |  CPU 1  |\n"
                "|         |         |\n"
                "+---------+---------+\n"
                "|         |         |\n"
                "|  CPU 2  |  CPU 3  |\n"
                "|         |         |\n"
                "+---------+---------+")
    assert str(pic) == expected and capsys.readouterr().out == expected + "\n"
    rows = jk.visualize_sharding(jk.device_put(np.zeros((4, 4)), NamedSharding(m, P("x"))), show=False)
    assert str(rows).splitlines()[2] == "|  CPU 0,1  |"  # replicated over y: both devices named
    line = jk.visualize_sharding(jk.device_put(np.zeros(8), NamedSharding(mesh((4,), ("x",)), P("x"))), show=False)
    assert str(line).splitlines()[2] == "|  CPU 0  |  CPU 1  |  CPU 2  |  CPU 3  |"
    assert len(str(line).splitlines()) == 5
    png = pic._repr_png_()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000
    with pytest.raises(ValueError, match="1-d and 2-d"):
        jk.visualize_sharding(jk.device_put(np.zeros((2, 2, 2)), NamedSharding(m, P("x"))))


# -- a real LocalCluster (processes) ------------------------------------------------------------
@pytest.fixture(scope="module")
def client(tmp_path_factory):
    distributed = pytest.importorskip("distributed")
    saved = dict(os.environ)  # distributed sets variables for its workers here: all restored after
    os.environ["JITKERNEL_CACHE_DIR"] = str(tmp_path_factory.mktemp("worker-cache"))
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                       dashboard_address=None, protocol="tcp")
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()
        os.environ.clear()
        os.environ.update(saved)


def test_dask_devices_and_round_trip_on_workers(client):
    devs = jk.dask_devices(client)
    addresses = sorted(client.scheduler_info()["workers"])
    assert [d.address for d in devs] == addresses and [d.id for d in devs] == [0, 1]
    assert all(d.platform == "dask-worker" for d in devs) and devs == jk.dask_devices(client)
    assert repr(devs[0]) == f"DaskWorkerDevice(id=0, address={addresses[0]!r})"
    x = np.arange(24.0).reshape(6, 4)
    s = NamedSharding(Mesh(np.array(devs, dtype=object), ("w",)), P("w"))
    a = jk.device_put(x, s)
    where = client.who_has([sh.data for sh in a.addressable_shards])
    for sh in a.addressable_shards:  # each shard lives on its own worker
        assert list(where[sh.data.key]) == [sh.device.address]
    np.testing.assert_array_equal(np.asarray(a), x)
    np.testing.assert_array_equal(client.compute(a.to_dask()).result(timeout=120), x)
    assert a.to_dask().chunks == ((3, 3), (4,))
    rep = jk.device_put(x, NamedSharding(s.mesh, P()))  # replicated: one copy on each worker
    assert len({sh.data.key for sh in rep.addressable_shards}) == 2
    np.testing.assert_array_equal(np.asarray(rep), x)
    assert str(jk.visualize_sharding(a, show=False)).splitlines()[2] == "|  worker 0  |"


def test_jit_on_shards_on_workers(client):
    devs = jk.dask_devices(client)
    s = NamedSharding(Mesh(np.array(devs, dtype=object), ("w",)), P(None, "w"))
    x = np.random.default_rng(5).standard_normal((5, 8)).astype(np.float32)
    f = jk.jit(lambda x: (np.sin(x) * 2 + x.mean(), x.max()))
    y, m = f(jk.device_put(x, s))
    assert y.sharding == s
    where = client.who_has([sh.data for sh in y.addressable_shards])
    for sh in y.addressable_shards:
        assert sh.device.address in where[sh.data.key]
    np.testing.assert_allclose(np.asarray(y), np.sin(x) * 2 + x.mean(), rtol=1e-5, atol=1e-6)
    assert m.shape == () and float(np.asarray(m)) == x.max()

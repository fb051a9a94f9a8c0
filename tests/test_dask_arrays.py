"""jk.jit over Dask arrays (jitkernel/distributed/, docs/distributed.md).

Every result is compared with NumPy's on the concatenated (computed) arguments. Most tests run on
the threaded scheduler; a few run on a real 2-process `dask.distributed.LocalCluster` (loopback,
a temporary compile cache for its workers). Broad sweeps use backend="interpret" (no LLVM
compile); a representative subset uses the default cpu backend.
"""
from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

import jitkernel as jk  # noqa: E402
from jitkernel.distributed import RechunkWarning, explain, partitions  # noqa: E402
from jitkernel.distributed import worker  # noqa: E402
from jitkernel.distributed.partition import refine  # noqa: E402
from jitkernel.errors import UnsupportedOperationError  # noqa: E402

RNG = np.random.default_rng(11)


# Dask's threaded scheduler for every test of the module (the fixture is in conftest.py).
pytestmark = pytest.mark.usefixtures("threaded_scheduler")


def computed(tree):
    """The pytree of Dask arrays `tree`, computed (Dask arrays in, NumPy values out)."""
    return dask.compute(tree)[0]


def assert_same(got, ref, rtol=1e-5, atol=1e-6):
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    if ref.dtype.kind in "biu":
        np.testing.assert_array_equal(got, ref)
    else:
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)


def check(f, *args, backend="interpret", rtol=1e-5, atol=1e-6, expect_rechunk=False, **kwargs):
    """f jitted on Dask (and other) arguments == f on their computed values; returns the text of
    the partition."""
    jf = jk.jit(f, backend=backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = jf(*args, **kwargs)
    rechunks = [w for w in caught if issubclass(w.category, RechunkWarning)]
    assert bool(rechunks) == expect_rechunk, [str(w.message) for w in rechunks]
    leaves = out if isinstance(out, tuple) else (out,)
    assert all(isinstance(leaf, da.Array) for leaf in leaves)
    plain = [a.compute() if isinstance(a, da.Array) else a for a in args]
    ref = f(*plain, **kwargs)
    refs = ref if isinstance(ref, tuple) else (ref,)
    for g, r in zip(computed(leaves), refs):
        assert_same(g, r, rtol, atol)
    return partitions(jf)[-1]


X = RNG.standard_normal((13, 11)).astype(np.float32)
CHUNKINGS = [(4, 3), (5, 11), (13, 4), (13, 11)]  # uneven, rows only, columns only, one block


# -- elementwise and broadcasting -------------------------------------------------------------
def w1(x):
    return np.sin(x) * np.cos(x) + np.sin(x) ** 2


@pytest.mark.parametrize("chunks", CHUNKINGS)
def test_elementwise_is_one_blockwise_segment(chunks):
    text = check(w1, da.from_array(X, chunks=chunks), backend="cpu")
    assert "1 blockwise segment(s), 0 tree reduction(s)" in text and "rechunk" not in text


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_])
def test_dtypes(dtype):
    x = da.from_array((RNG.standard_normal((9, 7)) * 5).astype(dtype), chunks=(4, 3))
    if dtype == np.bool_:
        check(lambda x: (x ^ True) | x[::1], x)
    else:
        check(lambda x: x * 3 + (x > 0), x)
        check(lambda x: x // 2 if np.dtype(dtype).kind == "i" else x / 2, x)


def test_broadcasting_against_numpy_arrays_and_scalars():
    x = da.from_array(X, chunks=(4, 3))
    b = RNG.standard_normal(11).astype(np.float32)
    check(lambda x, b, s: x * b + s, x, b, 2.0, backend="cpu")
    check(lambda x, b: x - b[:, None], x, X[:, 0].copy())
    check(lambda x: x + np.arange(11, dtype=np.float32) + 1.5, x)  # constants and an iota


def test_broadcasting_between_dask_arrays_with_different_chunks():
    a = da.arange(12.0, chunks=4)
    b = da.arange(12.0, chunks=5)  # the common refinement: 4, 1, 3, 2, 2
    check(lambda a, b: a * b + 1, a, b)
    check(lambda a, b: a[:, None] * b[None, :], a, b)
    assert refine([(4, 4, 4), (5, 5, 2)], 12) == (4, 1, 3, 2, 2)
    assert refine([(0,)], 0) == (0,) and refine([(2, 0, 2)], 4) == (2, 2)


def test_pytree_keyword_and_static_arguments():
    a = da.arange(12.0, chunks=5)
    out = jk.jit(lambda d: {"s": d["p"] * d["q"], "t": d["p"].sum()})({"p": a, "q": np.full(12, 2.0)})
    assert isinstance(out["s"], da.Array) and isinstance(out["t"], da.Array)
    assert_same(out["s"].compute(), np.arange(12.0) * 2)
    assert_same(out["t"].compute(), np.arange(12.0).sum())
    assert_same(jk.jit(lambda x, y: x + y)(x=a, y=1.0).compute(), np.arange(12.0) + 1)
    assert_same(jk.jit(lambda x, n: x ** n, static_argnums=1)(a, 3).compute(), np.arange(12.0) ** 3)


def test_zero_size_and_single_chunk_arrays():
    z = da.zeros((0, 3), chunks=(2, 2), dtype=np.float32)
    check(lambda x: x * 2, z)
    check(lambda x: x.sum(0), z)
    check(lambda x: x.sum(1), z)
    one = da.from_array(X, chunks=X.shape)
    check(lambda x: (x * 2).sum(0) + x.max(), one)


# -- row kernels ------------------------------------------------------------------------------
def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layer_norm(x):
    m = x.mean(1, keepdims=True)
    v = ((x - m) ** 2).mean(1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5)


@pytest.mark.parametrize("f", [softmax, layer_norm])
def test_row_kernels_with_whole_rows_are_blockwise(f):
    text = check(f, da.from_array(X, chunks=(4, 11)), backend="cpu")
    assert "1 blockwise segment(s), 0 tree reduction(s)" in text


@pytest.mark.parametrize("f", [softmax, layer_norm])
def test_row_kernels_over_split_rows_use_tree_reductions(f):
    text = check(f, da.from_array(X, chunks=(4, 3)))
    assert "tree reduction (" in text and "rechunk" not in text


# -- reductions -------------------------------------------------------------------------------
REDUCTIONS = {
    "sum": lambda x, axis: x.sum(axis),
    "prod": lambda x, axis: (x * 0.1 + 1).prod(axis),
    "max": lambda x, axis: x.max(axis),
    "min": lambda x, axis: x.min(axis),
    "any": lambda x, axis: (x > 1.5).any(axis),
    "all": lambda x, axis: (x > -2.5).all(axis),
    "mean": lambda x, axis: x.mean(axis),
    "var": lambda x, axis: x.var(axis),
    "std": lambda x, axis: x.std(axis),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_reductions_over_chunked_and_unchunked_axes(name, axis):
    red = REDUCTIONS[name]
    for chunks in [(4, 3), (5, 11)]:
        text = check(lambda x: red(x, axis), da.from_array(X, chunks=chunks), rtol=2e-5, atol=1e-5)
        split = axis is None or axis == (0, 1) or axis == 0 or (axis == 1 and chunks[1] < 11)
        assert ("tree reduction (" in text) == split, text


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64])
def test_reductions_of_other_dtypes(dtype):
    x = da.from_array(np.arange(-40, 50).reshape(9, 10).astype(dtype), chunks=(4, 3))
    check(lambda x: (x.sum(), x.max(0), x.min(1), x.mean(), x.prod(0)), x, backend="cpu")


def test_many_partials_combine_in_a_tree():
    x = da.from_array(np.arange(1000.0), chunks=7)  # 143 partials, split_every levels
    text = check(lambda x: (x.sum(), x.max(), (x * x).mean()), x, backend="cpu")
    assert "143 partial(s)" in text


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
@pytest.mark.parametrize("chunks", [(4, 3), (13, 4), (1, 1)])
def test_argmax_argmin_over_chunked_axes(dtype, chunks):
    value = (X * 2).astype(dtype) if dtype != np.bool_ else X > 0.3
    if dtype == np.float32:
        value[3, 4] = value[9, 4] = 9.0  # a tie across blocks: the first one wins
        value[5, 7] = value[8, 7] = np.nan  # the first NaN wins, as in NumPy
    x = da.from_array(value, chunks=chunks)
    for f, axis in ((lambda x: x.argmax(0), 0), (lambda x: x.argmin(1), 1), (lambda x: np.argmax(x * 1, axis=1), 1)):
        with np.errstate(invalid="ignore"):
            text = check(f, x)
        assert ("arg reduction" in text) == (chunks[axis] < value.shape[axis]), text


def test_argmax_of_complex_rechunks_of_the_flattened_array_does_not():
    z = da.from_array(X + 1j * X[::-1], chunks=(4, 3))
    text = check(lambda z: z.argmax(0), z, expect_rechunk=True)
    assert "rechunk: argmax over chunked axis 0" in text
    text = check(lambda x: x.argmax(), da.from_array(X, chunks=(4, 3)))  # Dask's reshape, then the arg reduction
    assert "dask reshape" in text and "arg reduction" in text


# -- matmul -----------------------------------------------------------------------------------
W = RNG.standard_normal((11, 7)).astype(np.float32)


@pytest.mark.parametrize("ca,cb", [((4, 3), (3, 7)), ((13, 11), (11, 7)), ((5, 4), (4, 3)), ((13, 3), (4, 7))])
def test_matmul_with_chunked_contraction(ca, cb):
    text = check(lambda a, b: a @ b, da.from_array(X, chunks=ca), da.from_array(W, chunks=cb),
                 backend="cpu", rtol=1e-4, atol=1e-5)
    assert ("blockwise products + tree sum" in text) == (ca[1] < 11 or cb[0] < 11)


def test_two_reads_of_one_array_get_independent_letters():
    v = da.arange(10.0, chunks=3)
    text = check(lambda v: v[:, None] * v[None, :] + v.sum(), v)  # outer product: block (i, j) reads i and j
    assert "16 block task(s)" in text and "rechunk" not in text
    a, b = da.arange(12.0, chunks=4), da.ones(10, chunks=5)
    text = check(lambda a, b: (a.sum(), b.max()), a, b)  # independent inputs: 3 + 2 - 1 tasks (block 0 of each shared), not 3 x 2
    assert "4 block task(s)" in text


def test_matmul_variants():
    x = da.from_array(X, chunks=(4, 3))
    check(lambda x: x @ x.T, x, rtol=1e-4, atol=1e-5)
    check(lambda x: np.einsum("ij,ij->i", x, x), x, rtol=1e-4, atol=1e-5)
    check(lambda x, w: np.tanh(x @ w + 1).sum(1), x, W, rtol=1e-4, atol=1e-5)
    v = da.arange(10.0, chunks=3)
    check(lambda v: v @ v, v)


# -- what is not partitioned ------------------------------------------------------------------
@pytest.mark.parametrize("name,f", [
    ("slice", lambda x: x[1:] * 2),
    ("diff", lambda x: np.diff(np.exp(x), axis=0).sum(1)),
    ("strided and reversed", lambda x: x[2:11:3, ::-2] + 1),
    ("empty slice", lambda x: x[5:5] * 2),
    ("concatenate", lambda x: np.concatenate([x, x * 2], axis=0)),
    ("concatenate unchunked axis", lambda x: np.concatenate([np.exp(x), x], axis=1).sum(1)),
    ("reshape", lambda x: (x * 2).reshape(-1).sum()),
    ("x + x.T", lambda x: x[:11, :11] + x[:11, :11].T),
])
def test_slices_concatenations_reshapes_use_dask_and_stay_split(name, f):
    x = da.from_array(X, chunks=(4, 3))
    text = check(f, x)
    assert "rechunk:" not in text, text
    check(f, da.from_array(X, chunks=(4, 11)))


@pytest.mark.parametrize("name,f", [
    ("cumsum of all", lambda x: np.cumsum(x)),
    ("inv", lambda x: np.linalg.inv(x[:11] + 11 * np.eye(11, dtype=np.float32))),
    ("uneven reshape", lambda x: x.reshape(11, 13) + 1),  # Dask's reshape cannot: one block
    ("y + y.T of a computed y", lambda x: np.exp(x[:11, :11]) + np.exp(x[:11, :11]).T),
])
def test_unpartitioned_steps_rechunk_with_a_warning(name, f):
    text = check(f, da.from_array(X, chunks=(4, 3)), expect_rechunk=True)
    assert "rechunk:" in text
    check(f, da.from_array(X, chunks=X.shape))  # already one block: no warning


@pytest.mark.parametrize("name,f,axis", [
    ("sort", lambda x: np.sort(x, axis=0), 0),
    ("argsort", lambda x: np.argsort(x, axis=1), 1),
    ("cumsum", lambda x: np.cumsum(x * 2, axis=1), 1),
    ("partition", lambda x: np.partition(x, 2, axis=1), 1),
    ("rfft", lambda x: np.fft.rfft(x, axis=0), 0),
])
def test_steps_along_one_axis_keep_the_other_axes_split(name, f, axis):
    x = da.from_array(X, chunks=(4, 3))
    jf = jk.jit(f)
    with pytest.warns(RechunkWarning, match=f"along chunked axis/axes \\({axis},\\)"):
        y = jf(x)
    assert len(y.chunks[axis]) == 1 and len(y.chunks[1 - axis]) == 4  # the other axis: still 4 blocks
    assert_same(y.compute(), f(X), rtol=1e-4, atol=1e-4)
    whole = list(x.chunks)
    whole[axis] = (X.shape[axis],)
    check(f, x.rechunk(tuple(whole)), rtol=1e-4, atol=1e-4)  # that axis already whole: no warning


def test_work_before_a_rechunk_stays_blockwise():
    square = RNG.standard_normal((12, 12)) * 0.1 + np.eye(12)
    text = check(lambda x: np.linalg.inv(np.exp(x) * 2), da.from_array(square, chunks=(4, 3)), expect_rechunk=True,
                 rtol=1e-6, atol=1e-8)
    assert "2 blockwise segment(s)" in text, text
    first = [line for line in text.splitlines() if "segment 1" in line][0]
    assert "12 block task(s)" in first and "exp" in first, text


def test_control_flow_on_a_reduction_runs_per_block_and_one_on_chunked_data_rechunks():
    def f(x):
        if x.sum() > 10:  # autograph: cond on a reduction of every block (the combine's 0-d result)
            return x * 2
        return x - 1
    text = check(f, da.arange(12.0, chunks=4))
    assert "cond over f64[12] runs blockwise" in text and "rechunk" not in text
    g = lambda x: jk.lax.while_loop(lambda x: x.max() > 1, lambda x: x * 0.5, x)  # noqa: E731
    text = check(g, da.arange(12.0, chunks=4), expect_rechunk=True)  # tests/test_dask_control_flow.py
    assert "rechunk: while_loop (its predicate reduces over a chunked axis" in text


def test_errors():
    a = da.arange(12.0, chunks=5)

    def writes(x):
        x[0] = 1.0
        return x
    with pytest.raises(UnsupportedOperationError, match="writes its argument"):
        jk.jit(writes)(a)
    with pytest.raises(UnsupportedOperationError, match="depends on the data"):
        jk.jit(lambda x: x[x > 3])(a)
    with pytest.raises(UnsupportedOperationError, match="compute_chunk_sizes"):
        jk.jit(lambda x: x + 1)(a[a > 3])
    small = da.arange(10, dtype=np.int8, chunks=4)
    assert_same(jk.jit(lambda x, n: x + n)(small, 3).compute(), np.arange(10, dtype=np.int8) + 3)
    with pytest.raises(OverflowError, match="300 out of bounds for int8"):  # as NumPy, at the call
        jk.jit(lambda x, n: x + n)(small, 300)
    with pytest.raises(TypeError):  # a type error of the traced function surfaces at the call
        jk.jit(lambda x: x + "s")(a)


# -- laziness, compile reuse, explain -----------------------------------------------------------
def test_nothing_runs_until_compute():
    ran = []

    def source(block):
        ran.append(block.shape)
        return block

    x = da.from_array(X, chunks=(4, 3)).map_blocks(source, meta=np.empty((0, 0), X.dtype))
    f = jk.jit(lambda x: softmax(x) @ x.T)
    before = worker.stats()["blocks"]
    y = f(x)
    assert isinstance(y, da.Array) and not ran and worker.stats()["blocks"] == before
    assert_same(y.compute(), softmax(X) @ X.T, rtol=1e-4, atol=1e-5)
    assert ran and worker.stats()["blocks"] > before


def test_a_thousand_blocks_compile_a_handful_of_times_and_trace_once():
    traces = []

    def f(x):
        traces.append(1)
        return w1(x).sum(1) + x.max()

    jf = jk.jit(f)
    x = da.from_array(np.arange(10_003.0, dtype=np.float32).reshape(-1, 1) % 7, chunks=(10, 1))
    assert x.numblocks == (1001, 1)
    before = worker.stats()
    expected = f(x.compute())
    assert_same(jf(x).compute(), expected, rtol=1e-5)
    assert_same(jf(x).compute(), expected, rtol=1e-5)
    after = worker.stats()
    compiles = after["compiles"] - before["compiles"]
    # one shape-generic compile per segment (the 3-row edge block reuses the 10-row code) plus
    # the combine levels of the max (a level of 1 partial is a specialised shape of its own)
    assert compiles <= 6 and after["reuses"] - before["reuses"] >= 2, after
    assert after["blocks"] - before["blocks"] >= 4 * 1001
    assert len(traces) == 2  # the user's function: once by jk.jit, once by f(x.compute()) above


def _compiles_and_reuses(f, *args):
    before = worker.stats()
    results = [r.compute() for r in f(*args)]
    after = worker.stats()
    return results, after["compiles"] - before["compiles"], after["reuses"] - before["reuses"]


def test_edge_blocks_reuse_the_inner_blocks_machine_code():
    """Unsplit rows (a row kernel and elementwise work, one segment): every block shape runs on
    one shape-generic compile (the dynamic-shape machinery: a probe one larger along the
    chunked letters shows which constants are block sizes; the row length of 27 stays a
    compile-time constant)."""
    a = RNG.standard_normal((23, 27)).astype(np.float32)
    f = jk.jit(lambda x: (np.tanh(x) * 2 + softmax(x), np.exp(x).sum(1)))
    (y, s), compiles, reuses = _compiles_and_reuses(f, da.from_array(a, chunks=(4, 27)))  # rows 4,4,4,4,4,3
    assert_same(y, np.tanh(a) * 2 + softmax(a))
    assert_same(s, np.exp(a).sum(1))
    assert (compiles, reuses) == (1, 1)


@pytest.mark.parametrize("chunks", [(10, 10), (7, 5), (23, 4)])
def test_edge_blocks_compile_less_than_once_per_block_shape(chunks):
    """Chunked in both axes (partials, tree combines, reads of x along two letters): fewer
    compiles than with dynamic shapes off, and NumPy's values either way (a block shape whose
    kernel structure differs compiles, it never reuses wrongly)."""
    a = RNG.standard_normal((23, 27)).astype(np.float32)

    def f(x):
        return np.tanh(x) * 2 + x.sum(0), softmax(x), x[:, :1] * x[:1, :]
    want = [np.tanh(a) * 2 + a.sum(0), softmax(a), a[:, :1] * a[:1, :]]
    old = jk.config.dynamic_shapes
    try:
        jk.config.update("dynamic_shapes", False)
        specialised, compiles_off, _ = _compiles_and_reuses(jk.jit(f), da.from_array(a, chunks=chunks))
    finally:
        jk.config.update("dynamic_shapes", old)
    generic, compiles_on, reuses = _compiles_and_reuses(jk.jit(f), da.from_array(a, chunks=chunks))
    for got_off, got_on, expected in zip(specialised, generic, want):
        assert_same(got_off, expected)
        assert_same(got_on, expected)
    assert compiles_on < compiles_off and reuses > 0, (compiles_on, compiles_off, reuses)


def test_explain_and_jit_explain():
    f = jk.jit(lambda x, w: (softmax(x) @ w).sum())
    x, w = da.from_array(X, chunks=(4, 3)), da.from_array(W, chunks=(3, 7))
    text = explain(f, x, w)
    assert text.startswith("dask partition of <lambda>")
    assert "blockwise products + tree sum" in text and "per-block partials + tree combine" in text
    assert "input 0: f32[13,11] chunks (4 blocks of 1/4, 4 blocks of 2/3)" in text
    pytest.importorskip("IPython")
    from jitkernel.magics.line import explain as magic_explain
    f(x, w)
    assert "dask partition of <lambda>" in magic_explain(f)


def test_jitkernel_imports_and_runs_without_dask():
    code = ("import sys; sys.modules['dask'] = None\n"
            "import numpy as np, jitkernel as jk\n"
            "assert jk.jit(lambda x: x + 1, backend='interpret')(np.ones(2)).tolist() == [2.0, 2.0]\n"
            "assert 'jitkernel.distributed' not in sys.modules and 'dask.array' not in sys.modules\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)


# -- a real LocalCluster (processes): the local_cluster fixture (conftest.py) ------------------
def test_local_cluster_results_and_worker_compiles(local_cluster):
    client, _, cache = local_cluster
    assert client.run(lambda: os.environ["JITKERNEL_CACHE_DIR"]) == {w: cache for w in client.scheduler_info()["workers"]}
    x = da.from_array(np.arange(3003.0).reshape(-1, 3) % 11, chunks=(50, 3))  # 21 blocks: 2 shapes
    f = jk.jit(lambda x: (w1(x) * 2).sum(0) + x.mean())
    assert_same(client.compute(f(x)).result(timeout=120), f(x.compute()))
    stats = client.run(worker.stats)
    compiles = sum(s["compiles"] for s in stats.values())
    blocks = sum(s["blocks"] for s in stats.values())
    assert blocks >= 21 and compiles <= 2 * 8, stats  # per worker: a handful, not one per block


def test_local_cluster_second_worker_loads_the_persistent_cache(local_cluster):
    client, _, cache = local_cluster
    first, second = sorted(client.scheduler_info()["workers"])
    f = jk.jit(lambda a, b: np.tanh(a @ b))
    a, b = da.from_array(X, chunks=(4, 3)), da.from_array(W, chunks=(3, 7))
    expected = np.tanh(X @ W)
    assert_same(client.compute(f(a, b), workers=[first], allow_other_workers=False).result(timeout=120), expected,
                rtol=1e-4, atol=1e-5)
    before = client.run(worker.stats)[second]
    assert_same(client.compute(f(a, b), workers=[second], allow_other_workers=False).result(timeout=120), expected,
                rtol=1e-4, atol=1e-5)
    after = client.run(worker.stats)[second]
    new = after["compiles"] - before["compiles"]
    assert new > 0 and after["disk_hits"] - before["disk_hits"] == new, (before, after)


# -- random chunkings (hypothesis) --------------------------------------------------------------
from hypothesis import given, settings, strategies as st  # noqa: E402

PROGRAMS = {
    "w1 + row sum": lambda x: w1(x) + x.sum(-1, keepdims=True),
    "centered": lambda x: x - x.mean(0),
    "max of abs": lambda x: (np.abs(x).max(), x.min(-1)),
    "softmax last": lambda x: np.exp(x - x.max(-1, keepdims=True)) / np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True),
    "sum of squares": lambda x: (x * x).sum(),
    "var first": lambda x: x.var(0),
    "where": lambda x: np.where(x > 0, x, 0.5 * x).sum(0),
    "gram": lambda x: x.reshape(x.shape[0], -1).T @ x.reshape(x.shape[0], -1),
    "diff": lambda x: np.diff(np.exp(x), axis=0),
    "reversed": lambda x: x[::-1] * x,
    "concatenate": lambda x: np.concatenate([x, np.sin(x)], axis=0).max(0),
    "argmax": lambda x: (x.argmax(0), x.argmin(-1)),
    "flat argmax": lambda x: x.argmax(),
}


@st.composite
def chunked_arrays(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 7), min_size=ndim, max_size=ndim)))
    chunks = []
    for n in shape:
        sizes, left = [], n
        while left:
            c = draw(st.integers(1, left))
            sizes.append(c)
            left -= c
        chunks.append(tuple(sizes))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    return np.random.default_rng(draw(st.integers(0, 99))).standard_normal(shape).astype(dtype), tuple(chunks)


@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(data=chunked_arrays(), name=st.sampled_from(sorted(PROGRAMS)))
def test_random_chunkings_match_numpy(data, name):
    value, chunks = data
    f = PROGRAMS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RechunkWarning)  # the reshape of "gram" merges axes
        out = jk.jit(f, backend="interpret")(da.from_array(value, chunks=chunks))
    ref = f(value)
    for g, r in zip(computed(out if isinstance(out, tuple) else (out,)), ref if isinstance(ref, tuple) else (ref,)):
        assert_same(g, r, rtol=1e-4, atol=1e-5)


def test_benchmark_script_runs_and_checks_results(capsys):
    from benchmarks.dask_arrays import main
    assert main(["--sizes", "2e4", "--chunk", "5e3", "--repeat", "1"]) == 0  # no timing asserted
    out = capsys.readouterr().out
    assert all(f"{w} n=2e+04" in out for w in ("W1", "W2", "W3")) and "MISMATCH" not in out

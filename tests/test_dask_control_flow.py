"""Control flow over Dask arrays (jitkernel/distributed/control_flow.py): loops and branches whose
sub-programs are blockwise run per block inside the block program, without a RechunkWarning;
the others (a predicate that reads chunked data, a reduction or transpose across a chunked axis,
xs chunked along the scanned axis) rechunk to one block with the warning. Every result equals
NumPy's on uneven chunks (threaded scheduler)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
from hypothesis import given, settings, strategies as st  # noqa: E402

import jitkernel as jk  # noqa: E402
from helpers import local_cluster  # noqa: E402
from jitkernel.distributed import RechunkWarning, explain, partitions  # noqa: E402

RNG = np.random.default_rng(23)
X = RNG.standard_normal((13, 7)).astype(np.float32)


# Dask's threaded scheduler for every test of the module (the fixture is in conftest.py).
pytestmark = pytest.mark.usefixtures("threaded_scheduler")


def run(f, *args, backend="cpu"):
    """f jitted on `args`: (computed outputs, RechunkWarning messages, partition text)."""
    jf = jk.jit(f, backend=backend)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = jf(*args)
    leaves = out if isinstance(out, tuple) else (out,)
    assert all(isinstance(leaf, da.Array) for leaf in leaves)
    rechunks = [str(w.message) for w in caught if issubclass(w.category, RechunkWarning)]
    return dask.compute(leaves)[0], rechunks, partitions(jf)[-1], out


def assert_same(got, ref, rtol=1e-5, atol=1e-5):
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape and got.dtype == ref.dtype, (got.shape, got.dtype, ref.shape, ref.dtype)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)


def blockwise(rechunks, text):
    assert rechunks == [], rechunks
    assert "runs blockwise" in text, text


def split(n: int):
    """Uneven chunkings of an axis of length n."""
    return st.lists(st.integers(1, n), min_size=1, max_size=4).map(lambda cuts: _chunks(sorted(set(cuts)), n))


def _chunks(cuts, n):
    edges = [0] + [c for c in cuts if c < n] + [n]
    return tuple(b - a for a, b in zip(edges, edges[1:]))


# -- fori_loop ---------------------------------------------------------------------------------
def fori_counter(x, n):
    def body(i, carry):
        x, count = carry
        return x * 0.5 + np.sin(x) + i.astype(np.float32), count + 2
    return jk.lax.fori_loop(0, n, body, (x, np.int32(1)))


def fori_counter_ref(x, n):
    count = np.int32(1)
    for i in range(n):
        x, count = x * np.float32(0.5) + np.sin(x) + np.float32(i), count + np.int32(2)
    return x, count


@settings(max_examples=20, deadline=None)
@given(rows=split(13), cols=split(7), trips=st.integers(0, 5))
def test_fori_loop_with_a_counter_runs_per_block(rows, cols, trips):
    (x, count), rechunks, text, out = run(lambda x: fori_counter(x, trips), da.from_array(X, chunks=(rows, cols)))
    ref = fori_counter_ref(X, trips)
    assert_same(x, ref[0])
    assert int(count) == int(ref[1])
    assert out[0].chunks == (rows, cols)  # the loop's output keeps the input's chunks
    if len(rows) * len(cols) > 1:
        blockwise(rechunks, text)


def test_fori_loop_bounds_from_a_scalar_argument_and_from_a_reduction():
    dx = da.from_array(X, chunks=(4, 3))
    (x, count), rechunks, text, _ = run(lambda x, n: fori_counter(x, n), dx, np.int32(3))
    assert_same(x, fori_counter_ref(X, 3)[0])
    blockwise(rechunks, text)

    def from_reduction(x):  # the trip count is the tree combine's 0-d result, read by every block
        n = (np.abs(x).max() > 0).astype(np.int32) + 2
        return jk.lax.fori_loop(0, n, lambda i, x: x * 0.9 + 1.0, x)
    (got,), rechunks, text, _ = run(from_reduction, dx)
    ref = X.copy()
    for _ in range(3):
        ref = ref * np.float32(0.9) + np.float32(1.0)
    assert_same(got, ref)
    assert "tree reduction" in text
    blockwise(rechunks, text)


def test_row_work_along_an_unchunked_axis_in_the_body_is_blockwise():
    def normalise(x):
        return jk.lax.fori_loop(0, 3, lambda i, x: np.exp(x - x.max(axis=1, keepdims=True)) /
                                np.exp(x - x.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True), x)
    ref = X
    for _ in range(3):
        e = np.exp(ref - ref.max(axis=1, keepdims=True))
        ref = e / e.sum(axis=1, keepdims=True)
    (got,), rechunks, text, _ = run(normalise, da.from_array(X, chunks=((5, 5, 3), 7)))
    assert_same(got, ref)
    blockwise(rechunks, text)
    # the rows split: the reduction runs across a chunked axis inside the loop -> one block, warned
    (got,), rechunks, text, _ = run(normalise, da.from_array(X, chunks=(13, (4, 3))))
    assert_same(got, ref)
    assert len(rechunks) == 1 and "fori_loop (the body reduces over a chunked axis" in rechunks[0], rechunks


def test_a_body_that_transposes_its_carry_rechunks():
    sq = X[:7].copy()

    def f(x):
        return jk.lax.fori_loop(0, 2, lambda i, x: x.T * 0.5 + x, x)
    ref = sq
    for _ in range(2):
        ref = ref.T * np.float32(0.5) + ref
    (got,), rechunks, _, _ = run(f, da.from_array(sq, chunks=(3, 7)))
    assert_same(got, ref)
    assert len(rechunks) == 1 and "fori_loop" in rechunks[0]


def test_nested_loops_run_per_block():
    def f(x, y):
        def outer(i, carry):
            x, y = carry
            inner = jk.lax.fori_loop(0, 2, lambda j, x: x * 0.5 + y, x)
            return inner + 1.0, y * 0.9
        return jk.lax.fori_loop(0, 3, outer, (x, y))
    y = RNG.standard_normal(7).astype(np.float32)
    rx, ry = X, y
    for _ in range(3):
        inner = rx
        for _ in range(2):
            inner = inner * np.float32(0.5) + ry
        rx, ry = inner + np.float32(1.0), ry * np.float32(0.9)
    (gx, gy), rechunks, text, _ = run(f, da.from_array(X, chunks=((4, 6, 3), (2, 5))), da.from_array(y, chunks=(2, 5)))
    assert_same(gx, rx)
    assert_same(gy, ry)
    blockwise(rechunks, text)


# -- while_loop --------------------------------------------------------------------------------
def test_while_loop_on_a_scalar_counter_runs_per_block():
    def f(x, n):
        def body(carry):
            i, x = carry
            return i + 1, np.cos(x) * 1.5
        return jk.lax.while_loop(lambda c: c[0] < n, body, (np.int32(0), x))
    ref = X
    for _ in range(4):
        ref = np.cos(ref) * np.float32(1.5)
    (i, got), rechunks, text, _ = run(f, da.from_array(X, chunks=((6, 7), (3, 4))), np.int32(4))
    assert int(i) == 4
    assert_same(got, ref)
    blockwise(rechunks, text)


def test_while_loop_whose_predicate_reads_chunked_data_rechunks_and_is_right():
    def f(x):
        return jk.lax.while_loop(lambda x: np.abs(x).max() > 0.25, lambda x: x * 0.5, x)
    ref = X
    while np.abs(ref).max() > 0.25:  # the whole array decides: blocks cannot stop on their own
        ref = ref * np.float32(0.5)
    (got,), rechunks, text, out = run(f, da.from_array(X, chunks=(4, 3)))
    assert_same(got, ref)
    assert len(rechunks) == 1 and "while_loop (its predicate reduces over a chunked axis" in rechunks[0], rechunks
    assert "runs blockwise" not in text and "rechunk: while_loop" in text


# -- scan --------------------------------------------------------------------------------------
def test_scan_stacks_outputs_along_an_unchunked_axis():
    xs = RNG.standard_normal((5, 13)).astype(np.float32)  # scanned over axis 0, chunked along axis 1

    def f(c, xs):
        return jk.lax.scan(lambda c, x: (c * 0.5 + x, np.sin(c) + x), c, xs)
    c0 = X[:, 0].copy()
    c, ys = c0, []
    for t in range(5):
        ys.append(np.sin(c) + xs[t])
        c = c * np.float32(0.5) + xs[t]
    chunks = (4, 6, 3)
    (gc, gys), rechunks, text, out = run(f, da.from_array(c0, chunks=(chunks,)), da.from_array(xs, chunks=(5, chunks)))
    assert_same(gc, c)
    assert_same(gys, np.stack(ys))
    assert out[1].chunks == ((5,), chunks)
    blockwise(rechunks, text)
    # xs chunked along the scanned axis: one block, warned, still right
    (gc, gys), rechunks, _, _ = run(f, da.from_array(c0, chunks=(chunks,)), da.from_array(xs, chunks=((2, 3), chunks)))
    assert_same(gc, c)
    assert_same(gys, np.stack(ys))
    assert len(rechunks) == 1 and "scan (its xs are chunked along the scanned axis)" in rechunks[0]


# -- cond / switch -----------------------------------------------------------------------------
@pytest.mark.parametrize("flag", [True, False])
def test_cond_on_a_scalar_argument_runs_per_block(flag):
    def f(x, flag):
        return jk.lax.cond(flag, lambda x: np.sin(x) * 2.0, lambda x: x - 1.0, x)
    ref = np.sin(X) * np.float32(2.0) if flag else X - np.float32(1.0)
    (got,), rechunks, text, _ = run(f, da.from_array(X, chunks=((3, 10), (4, 3))), np.bool_(flag))
    assert_same(got, ref)
    blockwise(rechunks, text)


@pytest.mark.parametrize("shift", [-100.0, 0.0, 100.0])
def test_switch_on_an_index_from_a_reduction(shift):
    def f(x):
        index = (x.mean() > 0).astype(np.int32) + (x.mean() > 10).astype(np.int32)
        return jk.lax.switch(index, [lambda x: x * 2.0, lambda x: x + 3.0, lambda x: -x], x)
    x = X + np.float32(shift)
    m = x.mean()
    ref = [x * np.float32(2.0), x + np.float32(3.0), -x][int(m > 0) + int(m > 10)]
    (got,), rechunks, text, _ = run(f, da.from_array(x, chunks=(5, (2, 5))))
    assert_same(got, ref)
    assert "tree reduction" in text
    blockwise(rechunks, text)


# -- tracing, interpreter, explain -------------------------------------------------------------
def test_the_function_is_traced_once_and_explain_lists_the_blockwise_loop():
    traced = []

    def f(x):
        traced.append(1)
        return jk.lax.fori_loop(0, 3, lambda i, x: x * 0.5 + 1.0, x)
    jf = jk.jit(f, backend="cpu")
    dx = da.from_array(X, chunks=((4, 4, 5), 7))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RechunkWarning)
        out = jf(dx)
        again = jf(dx)
    ref = X
    for _ in range(3):
        ref = ref * np.float32(0.5) + np.float32(1.0)
    assert_same(out.compute(), ref)
    assert_same(again.compute(), ref)
    assert len(traced) == 1
    text = explain(jf, dx)
    assert "fori_loop over f32[13,7] runs blockwise" in text and "3 block task(s)" in text


def test_the_interpreter_backend_agrees():
    (x, count), rechunks, text, _ = run(lambda x: fori_counter(x, 3), da.from_array(X, chunks=(5, 4)),
                                        backend="interpret")
    ref = fori_counter_ref(X, 3)
    assert_same(x, ref[0])
    assert int(count) == int(ref[1])
    blockwise(rechunks, text)


# -- constants and carries that read chunked data ----------------------------------------------
W = RNG.standard_normal(7).astype(np.float32)


@pytest.mark.parametrize("kind", ["fori", "while", "scan"])
def test_numpy_constants_closed_over_in_the_body_are_split_like_operands(kind):
    if kind == "fori":
        def f(x):
            return jk.lax.fori_loop(0, 3, lambda i, x: x * 0.5 + W + np.arange(7, dtype=np.float32), x)
    elif kind == "while":
        def f(x):
            return jk.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 0.5 + W), (np.int32(0), x))[1]
    else:
        def f(x):
            return jk.lax.scan(lambda c, _: (c * 0.5 + W, c - W), x, None, length=3)
    ref = f(X)  # the eager loop, on NumPy values
    got, rechunks, text, _ = run(f, da.from_array(X, chunks=((4, 9), (3, 4))))
    for g, r in zip(got, ref if isinstance(ref, tuple) else (ref,)):
        assert_same(g, r)
    blockwise(rechunks, text)


def test_a_scalar_carry_summing_chunked_data_rechunks_and_is_right():
    def f(x):
        return jk.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 0.5, c[2] + c[1].sum()),
                                 (np.int32(0), x, np.float32(0)))
    ref = f(X)
    got, rechunks, text, _ = run(f, da.from_array(X, chunks=(4, 3)))
    for g, r in zip(got, ref):
        assert_same(g, r)
    assert len(rechunks) == 1 and "while_loop (the body reduces over a chunked axis" in rechunks[0], rechunks


# -- compiles and shipping ---------------------------------------------------------------------
def test_edge_blocks_of_a_loop_reuse_the_inner_blocks_machine_code():
    from jitkernel.distributed import worker
    x = RNG.standard_normal((1003, 8)).astype(np.float32)
    f = jk.jit(lambda x: jk.lax.fori_loop(0, 5, lambda i, x: np.tanh(x) * 1.5 + 0.1, x), backend="cpu")
    worker.reset_stats()
    got = f(da.from_array(x, chunks=(100, 8))).compute()
    ref = x
    for _ in range(5):
        ref = np.tanh(ref) * np.float32(1.5) + np.float32(0.1)
    assert_same(got, ref)
    stats = worker.stats()
    assert stats["blocks"] == 11 and stats["compiles"] + stats["reuses"] == 2 and stats["compiles"] == 1, stats


def test_the_block_program_of_a_loop_survives_pickling():
    """What a worker process receives: the graph pickled (the sub-programs' variables and their
    letters in one pickle), run by Dask's synchronous scheduler after unpickling."""
    import pickle
    from dask.local import get_sync

    def f(x, y):
        inner = lambda j, x: x * 0.5 + y  # noqa: E731
        return jk.lax.fori_loop(0, 2, lambda i, x: jk.lax.fori_loop(0, 2, inner, x) + 1.0, x)
    y = RNG.standard_normal(7).astype(np.float32)
    out = jk.jit(f, backend="cpu")(da.from_array(X, chunks=((6, 7), (3, 4))), da.from_array(y, chunks=((3, 4),)))
    graph = pickle.loads(pickle.dumps(dict(out.__dask_graph__())))
    blocks = get_sync(graph, out.__dask_keys__())
    got = np.block([list(row) for row in blocks])
    assert_same(got, f(X, y))


def test_a_blockwise_loop_on_a_local_cluster(tmp_path):
    """One real 1-process LocalCluster (loopback, a temporary compile cache for its worker): the
    block program with its loop reaches the worker process and runs there."""
    with local_cluster(str(tmp_path), n_workers=1) as (client, _, _):
        (x, count), rechunks, text, _ = run(lambda x: fori_counter(x, 3), da.from_array(X, chunks=(5, (3, 4))))
        ref = fori_counter_ref(X, 3)
        assert_same(x, ref[0])
        assert int(count) == int(ref[1])
        blockwise(rechunks, text)
        from jitkernel.distributed import worker
        (stats,) = client.run(worker.stats).values()
        assert stats["blocks"] == 6, stats  # 3 x 2 blocks ran in the worker process


@pytest.mark.parametrize("flag", [True, False])
def test_cond_branches_closing_over_numpy_arrays_are_split_like_operands(flag):
    v = RNG.standard_normal(7).astype(np.float32)

    def f(x, flag):
        return jk.lax.cond(flag, lambda x: x * W, lambda x: x - v + np.float32(1.0), x)
    ref = X * W if flag else X - v + np.float32(1.0)
    (got,), rechunks, text, _ = run(f, da.from_array(X, chunks=((3, 10), (4, 3))), np.bool_(flag))
    assert_same(got, ref)
    blockwise(rechunks, text)

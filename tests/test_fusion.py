"""Fusion decisions (what becomes one kernel) and the correctness of every fused shape:
elementwise chains, row kernels (softmax, layer norm, variance), column reductions,
broadcast-reduce without materialising the broadcast, multi-output programs."""
from __future__ import annotations

import numpy as np
import pytest

import jitkernel as jk
from helpers import assert_matches_numpy

CUDA_EMULATOR_SUITE = True  # the backend fixture adds "cuda-emulator" (tests/emulator_suite.py)


def _kernels(fn, *args):
    return jk.jit(fn, disk_cache=False).lower(*args).compiled.executable.kp


def w1(x):
    return np.sin(x) * np.cos(x) + np.sin(x) ** 2


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * g + b


def pairwise(x, y):
    return ((x[:, None] - y[None, :]) ** 2).sum(1)


def test_elementwise_chain_is_one_loop():
    kp = _kernels(w1, np.ones(1000, np.float32))
    assert len(kp.steps) == 1
    (k,) = kp.steps
    assert k.domain == (1000,) and not any(b.role == "temp" for b in kp.buffers.values())


def test_softmax_is_one_row_kernel_with_row_scratch():
    from jitkernel.fusion.kernel_ir import RowKernel
    kp = _kernels(softmax, np.ones((64, 48), np.float32))
    assert len(kp.steps) == 1 and isinstance(kp.steps[0], RowKernel)
    assert not any(b.role == "temp" and b.shape == (64, 48) for b in kp.buffers.values())
    assert any(b.role == "scratch" for b in kp.buffers.values())


def test_broadcast_reduce_never_materialises_the_broadcast():
    kp = _kernels(pairwise, np.ones(300, np.float32), np.ones(200, np.float32))
    assert len(kp.steps) == 1
    assert all(b.shape != (300, 200) for b in kp.buffers.values())


def test_expensive_row_vector_broadcast_over_rows_is_computed_once(backend):
    """`data / np.sqrt(var)` with `var` of a row's shape: the square roots get a buffer of the
    row's shape (one per column), not one per element of the matrix (the inner loop runs along
    the row, so LLVM cannot hoist them); a cheap row vector stays fused."""
    def scaled(data):
        std = np.sqrt(data.var(axis=0))
        return data / np.where(std <= 0.1, 1.0, std), data - data.mean(axis=0)
    data = np.random.default_rng(0).random((60, 50))
    got = jk.jit(scaled, backend=backend)(data)
    for g, e in zip(got, scaled(data)):
        assert_matches_numpy(g, e, rtol=1e-12, atol=1e-12)
    kp = _kernels(scaled, data)
    sqrt_domains = [k.domain for k in kp.steps if "sqrt" in str(k)]
    assert sqrt_domains and all(d == (50,) for d in sqrt_domains), sqrt_domains
    assert not any(b.role == "temp" and b.shape == (60, 50) for b in kp.buffers.values())


def test_transpose_and_slices_are_index_maps():
    kp = _kernels(lambda x: (x.T[::-1, 1:] * 2).sum(0), np.ones((5, 7), np.float32))
    assert len(kp.steps) == 1


def test_fusion_record_counts_bytes():
    prog_bytes = _kernels(w1, np.ones(1000, np.float32)).fusion_record
    assert prog_bytes[0]["bytes_read"] == 4000 and prog_bytes[0]["bytes_written"] == 4000
    assert "sin->f32[1000]" in prog_bytes[0]["ops"]


@pytest.mark.parametrize("shape", [(1, 1), (3, 1), (1, 5), (7, 33), (4, 6, 17), (2, 3, 4, 5), (0, 4), (4, 0)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_kernels_match_numpy(backend, shape, dtype):
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    g = rng.standard_normal(shape[-1:]).astype(dtype)
    b = rng.standard_normal(shape[-1:]).astype(dtype)
    with np.errstate(all="ignore"):
        if shape[-1] == 0:  # max over an empty row: NumPy raises, so must we
            with pytest.raises(ValueError, match="zero-size array"):
                softmax(x)
            with pytest.raises(ValueError, match="zero-size array"):
                jk.jit(softmax, backend=backend)(x)
        else:
            assert_matches_numpy(jk.jit(softmax, backend=backend)(x), softmax(x),
                                 rtol=1e-5 if dtype == np.float32 else None)
        assert_matches_numpy(jk.jit(layer_norm, backend=backend)(x, g, b), layer_norm(x, g, b),
                             rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-4 if dtype == np.float32 else 1e-10)
        f = jk.jit(lambda x: (x.var(-1), x.std(-1, keepdims=True), x.max(-1) - x.min(-1)), backend=backend)
        expected = (x.var(-1), x.std(-1, keepdims=True), x.max(-1) - x.min(-1)) if shape[-1] else None
        if expected is not None:
            assert_matches_numpy(f(x), expected, rtol=1e-4 if dtype == np.float32 else 1e-10,
                                 atol=1e-5 if dtype == np.float32 else 1e-10)


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int64, np.float16, np.float32, np.float64, np.bool_])
@pytest.mark.parametrize("shape,axis", [((6, 5), 0), ((4, 3, 5), (0, 1)), ((4, 3, 5), 1), ((3, 1, 4), 0), ((0, 3), 0)])
def test_column_reductions_match_numpy(backend, dtype, shape, axis):
    rng = np.random.default_rng(3)
    x = rng.integers(-5, 6, shape).astype(dtype) if dtype != np.bool_ else rng.random(shape) < 0.5
    for name in ("sum", "prod", "any", "all") + (("max", "min") if 0 not in shape else ()):
        fn = lambda a, name=name: getattr(np, name)(a, axis=axis)  # noqa: E731
        with np.errstate(all="ignore"):
            assert_matches_numpy(jk.jit(fn, backend=backend)(x), fn(x), rtol=2e-3 if dtype == np.float16 else None)


def test_pairwise_matches_numpy(backend):
    rng = np.random.default_rng(0)
    x, y = rng.random(257).astype(np.float32), rng.random(129).astype(np.float32)
    assert_matches_numpy(jk.jit(pairwise, backend=backend)(x, y), pairwise(x, y), rtol=1e-5)


def test_multi_output_and_shared_intermediates(backend):
    def f(x, w):
        h = np.tanh(x @ w)
        return h, (h * h).sum(axis=1), h.max(), h.T[::2]
    rng = np.random.default_rng(1)
    x, w = rng.random((9, 5)).astype(np.float32), rng.random((5, 7)).astype(np.float32)
    assert_matches_numpy(jk.jit(f, backend=backend)(x, w), f(x, w), rtol=1e-5)


def test_long_float32_sum_is_accurate():
    x = np.random.default_rng(0).random(1 << 20).astype(np.float32)
    got = jk.jit(lambda a: a.sum())(x)
    assert got.dtype == np.float32
    assert abs(float(got) - float(x.astype(np.float64).sum())) <= 1e-6 * float(x.sum())


@pytest.mark.parametrize("stage", ["ir", "optimized", "kernels", "llvm", "asm"])
def test_every_stage_has_text(stage):
    text = jk.jit(softmax).lower(np.ones((4, 8), np.float32)).as_text(stage)
    assert text and ("row kernel" in text if stage == "kernels" else True)
    if stage == "asm":
        assert "segment_0" in text


def test_unknown_stage_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown stage"):
        jk.jit(w1).lower(np.ones(3)).as_text("sass")


@pytest.mark.parametrize("threads", [2, 3])
def test_split_across_threads_matches_numpy(threads):
    old = jk.config.threads
    jk.config.update("threads", threads)
    try:
        rng = np.random.default_rng(4)
        x = rng.standard_normal((1031, 517)).astype(np.float32)
        g = rng.standard_normal(517).astype(np.float32)
        assert_matches_numpy(jk.jit(softmax)(x), softmax(x), rtol=1e-5)
        assert_matches_numpy(jk.jit(layer_norm)(x, g, g), layer_norm(x, g, g), rtol=1e-4, atol=1e-5)
        v = rng.standard_normal(1 << 19).astype(np.float32)
        assert_matches_numpy(jk.jit(w1)(v), w1(v))
        e = rng.integers(-1, 3, (700, 700)).astype(np.int64)
        e[699, 699] = -1  # the last thread's range raises NumPy's error
        with pytest.raises(ValueError, match="Integers to negative integer powers"):
            jk.jit(lambda a, b: a ** b)(np.full((700, 700), 2, np.int64), e)
    finally:
        jk.config.update("threads", old)


def test_sibling_kernels_share_one_loop(backend):
    x = np.random.default_rng(5).standard_normal((40, 30)).astype(np.float32)
    cases = [lambda x: (x + 1, x * 2), lambda x: (x.sum(), x.max(), x.argmin()),
             lambda x: (x.sum(1), x.max(1), x.mean(1))]
    for fn in cases:
        assert_matches_numpy(jk.jit(fn, backend=backend)(x), fn(x), rtol=1e-5)
        if backend == "cpu":
            assert len(_kernels(fn, x).steps) == 1


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.bool_])
def test_large_full_reductions_in_two_stages(threads, dtype):
    """Whole-array reductions of >= 2^20 elements run as chunk partials (split across threads)
    then a combine: same results as NumPy, and a length no chunk count divides stays one pass."""
    old = jk.config.threads
    jk.config.update("threads", threads)
    try:
        rng = np.random.default_rng(6)
        for n in (1 << 20, 3 * (1 << 19), (1 << 20) + 3):
            x = (rng.random(n) * 4).astype(dtype) if dtype != np.bool_ else rng.random(n) < 0.999
            fn = lambda a: (a.sum(), a.max(), a.min(), a.any(), a.all(), np.argmax(a))  # noqa: E731
            assert_matches_numpy(jk.jit(fn)(x), fn(x), rtol=1e-6 if dtype == np.float32 else None)
        kp = _kernels(lambda a: a.sum(), np.ones(1 << 20, np.float32))
        assert [k.name.rsplit("_", 1)[-1] for k in kp.steps] == ["partials", "combine"]
    finally:
        jk.config.update("threads", old)


def test_stored_value_feeding_a_reduction_is_one_loop(backend):
    """`z, z.sum()`: one loop computes z once, stores it and reduces it (no re-read of z)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 48)).astype(np.float32)

    def f(x):
        z = np.sin(x) * np.cos(x)
        return z, z.sum(), (z * 2).max()
    assert_matches_numpy(jk.jit(f, backend=backend)(x), f(x), rtol=1e-5)
    if backend == "cpu":
        (k,) = _kernels(f, x).steps
        assert sum(1 for s in k.stores if s.reduce) == 2 and sum(1 for s in k.stores if not s.reduce) == 1
    v = rng.standard_normal(1 << 20).astype(np.float32)
    g = lambda v: (np.tanh(v) * 2, (np.tanh(v) * 2).sum())  # noqa: E731
    assert_matches_numpy(jk.jit(g, backend=backend)(v), g(v), rtol=1e-5)
    if backend == "cpu":
        kp = _kernels(g, v)
        assert [k.name.rsplit("_", 1)[-1] for k in kp.steps] == ["partials", "combine"]
        assert not any(b.role == "temp" and b.shape == v.shape for b in kp.buffers.values())

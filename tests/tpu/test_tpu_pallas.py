"""Pallas TPU kernels for chains of elementwise steps (`tpu_fusion`, docs/tpu.md "Pallas kernels"),
run on "tpu-interpret" in Pallas's TPU interpret mode (and, where a TPU is present, the NumPy
comparisons on "tpu" too, compiled by Mosaic): NumPy's values and dtypes for every dtype a kernel
takes, ragged sizes, broadcasts and special values; what stays with XLA and why; the option itself.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import HealthCheck

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jitkernel as jk  # noqa: E402
from helpers import assert_matches_numpy, check, numpy_result, on_host  # noqa: E402
from test_differential import _check_program, programs  # noqa: E402  (its random program generator)
from tpu_suite import TPU_INTERPRET, have_jax  # noqa: E402

pytestmark = pytest.mark.skipif(not have_jax(), reason="JAX is not installed (the test extra brings it)")

RAGGED_SIZES = (0, 1, 127, 1025, 3 * 1024 + 5)


def _backends() -> list[str]:
    names = [TPU_INTERPRET]
    try:
        jk.backends.check_backend("tpu")
        names.append("tpu")
    except (jk.BackendUnavailableError, ImportError):
        pass
    return names


BACKENDS = _backends() if have_jax() else [TPU_INTERPRET]


@pytest.fixture
def fusion():
    """Set `tpu_fusion` for the test (restored after it)."""
    before = jk.config.tpu_fusion

    def set_mode(mode: str) -> None:
        jk.config.update("tpu_fusion", mode)
    yield set_mode
    jk.config.update("tpu_fusion", before)


@pytest.fixture
def pallas(fusion):
    fusion("pallas")


def _kernels(fn, *args, backend: str = TPU_INTERPRET) -> str:
    return jk.jit(fn, backend=backend).lower(*args).as_text("pallas")


def _rng(n: int) -> np.random.Generator:
    return np.random.default_rng(n)


# One chain per dtype a kernel takes, on inputs of that dtype (division by zero included).
CHAINS = {
    "float32": (lambda x, y: np.sin(x) * np.cos(y) + x * 2 - np.sqrt(np.abs(y)) / (y + 0.5),
                lambda n, r: (r.uniform(-4, 4, n).astype(np.float32), r.uniform(-4, 4, n).astype(np.float32))),
    "int32": (lambda a, b: (a * 3 + 7) // (b % 5) - a % (b - 2) + (a << 2) - np.maximum(a, b),
              lambda n, r: (r.integers(-1000, 1000, n, dtype=np.int32), r.integers(-20, 20, n, dtype=np.int32))),
    "bool": (lambda p, q: (p & ~q) | (p ^ q) == np.logical_not(q),
             lambda n, r: (r.integers(0, 2, n).astype(bool), r.integers(0, 2, n).astype(bool))),
    "float16": (lambda h, k: h * k + h - np.float16(0.5) * k / (k + np.float16(3)),
                lambda n, r: (r.uniform(-4, 4, n).astype(np.float16), r.uniform(0, 4, n).astype(np.float16))),
    "uint8": (lambda u, v: (u * 3 + 7) // v - (u >> 2) + (v << 3) % u,
              lambda n, r: (r.integers(0, 256, n, dtype=np.uint8), r.integers(0, 4, n, dtype=np.uint8))),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("size", RAGGED_SIZES)
@pytest.mark.parametrize("dtype", sorted(CHAINS))
def test_chains_match_numpy(pallas, dtype, size, backend):
    """Each dtype's chain, at ragged sizes, gives NumPy's values and dtype through one kernel."""
    fn, make = CHAINS[dtype]
    args = make(size, _rng(size))
    check(fn, *args, backend=backend)
    text = _kernels(fn, *args, backend=backend)
    if size and np.dtype(dtype).itemsize < 4:  # Mosaic on the v5e refused 8- and 16-bit blocks
        assert f"kernel 0: xla (a {np.dtype(dtype)} block: Mosaic on the v5e computes in 32-bit vectors)" in text, text
    elif size:
        assert "kernel 0: pallas" in text and "body: { lambda" in text, text
    else:
        assert text.startswith("no Pallas kernels"), text


@pytest.mark.parametrize("backend", BACKENDS)
def test_partial_last_block_and_several_blocks(pallas, backend):
    """An array of more rows than a block: a grid of blocks whose last one is partial, and the
    padding of a ragged size sliced off."""
    n = 2 * 1024 * 128 + 5
    x = _rng(1).uniform(-3, 3, n).astype(np.float32)
    fn = lambda x: np.sin(x) * x + 1  # noqa: E731
    check(fn, x, backend=backend)
    text = _kernels(fn, x, backend=backend)
    assert "viewed as (2049, 128), 123 elements of padding; blocks of (1024, 128), grid (3,)" in text, text


@pytest.mark.parametrize("backend", BACKENDS)
def test_strips_of_a_block(pallas, backend, monkeypatch):
    """With SUB_ROWS the body runs over each block in strips (a loop inside the kernel): the
    same answers, the partial last block included; a block that is not whole strips is computed
    at once."""
    from jitkernel.backends.tpu import pallas as renderer
    monkeypatch.setattr(renderer, "SUB_ROWS", 32)
    n = 2 * 1024 * 128 + 5
    x = _rng(9).uniform(-3, 3, n).astype(np.float32)
    fn = lambda x, s: np.sin(x) * np.cos(x) + s * x  # noqa: E731
    check(fn, x, np.float32(1.5), backend=backend)
    assert "grid (3,), parallel, computed in strips of 32 rows" in _kernels(fn, x, np.float32(1.5), backend=backend)
    u = np.arange(100_000).astype(np.uint8)  # 782 rows: one block, not whole strips
    check(lambda u: (u * 3) // 7 + (u > 3), u, backend=backend)
    assert "strips" not in _kernels(lambda u: (u * 3) // 7 + (u > 3), u, backend=backend)


def test_wide_rows_are_not_copied(pallas):
    """A last dim that is a multiple of 128 is the row itself (no flattening, no padding)."""
    m = _rng(2).random((40, 256), dtype=np.float32)
    check(lambda m: np.exp(m) * m - 1, m, backend=TPU_INTERPRET)
    assert "viewed as (40, 256); blocks of (40, 256)" in _kernels(lambda m: np.exp(m) * m - 1, m)


def test_broadcasts_of_scalars_and_rows(pallas):
    """A 0-d argument is a row read once, a constant a literal; a broadcast row (not a scalar) is
    computed by XLA and read as a block."""
    x = _rng(3).random((9, 130), dtype=np.float32)
    s = np.float32(2.5)
    check(lambda x, s: x * s + 1.5 - s, x, s, backend=TPU_INTERPRET)
    text = _kernels(lambda x, s: x * s + 1.5 - s, x, s)
    assert "scalars: f32[], f32[]" in text and "b:f32[1,128]" in text, text
    r = _rng(4).random(130, dtype=np.float32)
    check(lambda x, r: np.sin(x) * r + r, x, r, backend=TPU_INTERPRET)
    check(lambda x, t: (x > 0.5) & t, x, np.bool_(True), backend=TPU_INTERPRET)


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _layer_norm(x):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("strips", [0, 32])
def test_rows_and_columns_read_as_they_are(pallas, backend, strips, monkeypatch):
    """Where the last dim is the kernel's row, a bias row (`x + b`) is read once as (1, lanes) and
    a keepdims column (`x - x.max(axis=-1, keepdims=True)`) block by block as (rows, 1): XLA does
    not materialise their broadcasts. Softmax and layer norm match NumPy, strips or not."""
    from jitkernel.backends.tpu import pallas as renderer
    monkeypatch.setattr(renderer, "SUB_ROWS", strips)
    r = _rng(10)
    x, b = r.standard_normal((2100, 256)).astype(np.float32), r.standard_normal(256).astype(np.float32)
    check(_softmax, x, backend=backend, rtol=1e-5, atol=1e-7)
    assert "columns: f32[2100,1]" in _kernels(_softmax, x, backend=backend)
    check(_layer_norm, x, backend=backend, rtol=1e-4, atol=1e-5)
    bias = lambda x, b: np.sin(x + b) * 2  # noqa: E731
    check(bias, x, b, backend=backend)
    assert "rows: f32[256]" in _kernels(bias, x, b, backend=backend)
    x3 = r.standard_normal((3, 50, 128)).astype(np.float32)
    check(lambda x: x - x.max(-1, keepdims=True), x3, backend=backend)
    check(lambda x: x - x.max(0, keepdims=True), x3, backend=backend)  # neither: XLA broadcasts


SPECIALS = np.array([0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 3e38, -2.5, 7.0], np.float32)


@pytest.mark.parametrize("backend", BACKENDS)
def test_special_values(pallas, backend):
    """NaN, infinities and signed zeros follow NumPy: arithmetic, maximum/fmin's NaN rules,
    floor division and remainder of floats, casts to int32 (x86's rule), bool times inf."""
    x, y = SPECIALS, SPECIALS[::-1].copy()

    def fn(x, y):
        one = np.float32(1)  # the masks leave as float32: a kernel writes no bool block
        return (x * y, x / y, np.maximum(x, y), np.fmin(x, y), x + y, x - y, np.abs(x),
                np.signbit(x) * one, np.isnan(x * y) * one, (x > 0) * y,
                np.where(np.isfinite(x), x, 0).astype(np.int32))
    got = on_host(jk.jit(fn, backend=backend)(x, y))
    expected = numpy_result(fn, x, y)
    assert_matches_numpy(got, expected)
    for g, e in zip(got[:4] + got[6:7], expected[:4] + expected[6:7]):
        numbers = ~np.isnan(e)  # a NaN's sign is not NumPy's promise (x86 and the TPU differ)
        assert np.array_equal(np.signbit(g)[numbers], np.signbit(e)[numbers]), (g, e)  # -0.0 kept
    assert "kernel 0: pallas" in _kernels(fn, x, y, backend=backend)
    floor_ops = lambda x, y: (x // y, x % y, -x)  # noqa: E731  (negations: XLA, with NumPy's -0.0)
    got, expected = on_host(jk.jit(floor_ops, backend=backend)(x, y)), numpy_result(floor_ops, x, y)
    assert_matches_numpy(got, expected)
    for g, e in zip(got, expected):
        assert np.array_equal(np.signbit(g)[~np.isnan(e)], np.signbit(e)[~np.isnan(e)]), (g, e)
    assert "kernel 0: xla (Mosaic negates a float" in _kernels(floor_ops, x, y, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_integer_division_by_zero_and_shifts(pallas, backend):
    """Integer floor division and remainder by zero give 0, MIN // -1 wraps, shifts by the bit
    width or more: semantic_rules' answers inside the kernel."""
    a = np.array([7, -128, -7, 5, 3, -1, 100, 1], np.int8).astype(np.int32) * np.int32(2 ** 24)  # -128: MIN
    b = np.array([0, -1, 2, 0, 40, 33, -3, 31], np.int32)
    fn = lambda a, b: (a // b, a % b, np.fmod(a, b), a << b, a >> b, a // b * b)  # noqa: E731
    check(fn, a, b, backend=backend)
    assert "kernel 0: pallas" in _kernels(fn, a, b, backend=backend)


def test_intermediates_read_outside_are_outputs(pallas):
    """A value of the chain that a reduction (XLA's) also reads is one more output of the
    kernel; the reduction runs after the kernel."""
    x = _rng(5).random(2000, dtype=np.float32)
    fn = lambda x: (np.sin(x) * 3 + 1, (np.sin(x) * 3).sum())  # noqa: E731
    check(fn, x, backend=TPU_INTERPRET, rtol=1e-5)
    assert "outputs: f32[2000], f32[2000]" in _kernels(fn, x)


def test_interleaved_chains_of_two_shapes(pallas):
    """Two chains of different shapes written interleaved are two kernels, not six."""
    x, y = _rng(11).random(1000, dtype=np.float32), _rng(12).random(300, dtype=np.float32)

    def fn(x, y):
        a, b = np.sin(x), np.cos(y)
        c, d = a * 2 + x, b * 3 + y
        return c, d, c.sum() + d.sum()
    check(fn, x, y, backend=TPU_INTERPRET, rtol=1e-5)
    text = _kernels(fn, x, y)
    assert text.startswith("2 Pallas kernels of 2 elementwise chains"), text


def test_kernels_inside_loop_bodies(pallas):
    x = _rng(6).random(1000, dtype=np.float32)

    def fn(x):
        return jk.lax.fori_loop(0, 3, lambda i, x: np.cos(x) * 0.5 + x * 2, x)

    def reference(x):
        for _ in range(3):
            x = np.cos(x) * np.float32(0.5) + x * 2
        return x
    assert_matches_numpy(jk.jit(fn, backend=TPU_INTERPRET)(x), reference(x))
    assert "kernel 0: pallas" in _kernels(fn, x)


def test_what_stays_with_xla(pallas):
    """Steps Mosaic cannot lower (arcsin), steps computing in 64 bits (float32 -> uint32 goes
    through int64), float64 chains and integer power (its negative exponent raises) stay with
    XLA, with the reason, and still give NumPy's answer."""
    x = np.linspace(-1, 1, 300, dtype=np.float32)
    check(lambda x: np.arcsin(x) * 2, x, backend=TPU_INTERPRET)
    assert "kernel 0: xla (Mosaic cannot lower it" in _kernels(lambda x: np.arcsin(x) * 2, x)
    to_u32 = lambda x: (x * 100 + 100).astype(np.uint32) + 1  # noqa: E731
    check(to_u32, x, backend=TPU_INTERPRET)
    assert "kernel 0: xla (its steps compute in 64 bits" in _kernels(to_u32, x)
    check(lambda x: np.sin(x) * 2, x.astype(np.float64), backend=TPU_INTERPRET)
    assert _kernels(lambda x: np.sin(x) * 2, x.astype(np.float64)).startswith("no Pallas kernels")
    a = np.arange(10, dtype=np.int32)
    check(lambda a, b: a ** b, a, a, backend=TPU_INTERPRET)
    check(lambda a, b: a ** b, a, a - 3, backend=TPU_INTERPRET)  # NumPy's ValueError
    assert _kernels(lambda a, b: a ** b, a, a).startswith("no Pallas kernels")
    check(lambda x: np.tanh(x) * 2, x, backend=TPU_INTERPRET)
    assert "kernel 0: xla (Mosaic's tanh is an approximation" in _kernels(lambda x: np.tanh(x) * 2, x)
    check(lambda x: np.copysign(x, -x) + 1, x, backend=TPU_INTERPRET)
    check(lambda x: -np.sin(x), x, backend=TPU_INTERPRET)
    assert "kernel 0: xla (Mosaic negates a float as 0 - x" in _kernels(lambda x: -np.sin(x), x)
    assert "kernel 0: xla (Mosaic's copysign loses" in _kernels(lambda x: np.copysign(x, -x) + 1, x)


def test_xla_and_auto_modes(fusion):
    """"xla" renders no kernel; "auto" lists the chains and, by the rule measured on the v5e
    (XLA everywhere), leaves them with XLA, saying why."""
    x = _rng(7).random(1000, dtype=np.float32)
    w1 = lambda x: np.sin(x) * np.cos(x) + np.sin(x) ** 2  # noqa: E731
    fusion("xla")
    check(w1, x, backend=TPU_INTERPRET)
    assert _kernels(w1, x) == "no Pallas kernels (tpu_fusion='xla': XLA fuses every elementwise chain)"
    fusion("auto")
    check(w1, x, backend=TPU_INTERPRET)
    assert "kernel 0: xla (auto: on the v5e no chain was reliably faster as a Pallas kernel" in _kernels(w1, x)
    fusion("pallas")
    text = _kernels(w1, x)
    assert text.startswith("1 Pallas kernel of 1 elementwise chains (tpu_fusion='pallas')")
    assert "sin a" in text and "cos a" in text, text


def test_auto_follows_the_measured_rule(fusion, monkeypatch):
    """Were AUTO_RULE to hold numbers, "auto" would render the chains at or above them with
    Pallas, per chain, and leave the others to XLA."""
    from jitkernel.backends.tpu import options
    monkeypatch.setattr(options, "AUTO_RULE", options.AutoRule(min_elements=2000, min_expensive=1))
    fusion("auto")
    big, small = _rng(13).random(4000, dtype=np.float32), _rng(14).random(100, dtype=np.float32)
    fn = lambda x, y: (np.sin(x) * 2, np.sin(y) * 2, x * 3)  # noqa: E731
    check(fn, big, small, backend=TPU_INTERPRET)
    lines = [line for line in _kernels(fn, big, small).splitlines() if line.startswith("kernel")]
    assert lines == ["kernel 0: pallas (auto: AutoRule(min_elements=2000, min_expensive=1))",
                     "kernel 1: xla (auto: below AutoRule(min_elements=2000, min_expensive=1))"], lines


def test_the_option_checks_its_value(monkeypatch):
    with pytest.raises(ValueError, match="'tpu_fusion' must be one of 'pallas', 'xla', 'auto', got 'fast'"):
        jk.config.update("tpu_fusion", "fast")
    from jitkernel.backends.tpu.options import default_mode
    monkeypatch.setenv("JITKERNEL_TPU_FUSION", "pallas")
    assert default_mode() == "pallas"
    monkeypatch.setenv("JITKERNEL_TPU_FUSION", "fused")
    with pytest.raises(ValueError, match="JITKERNEL_TPU_FUSION must be one of"):
        default_mode()


def test_a_kernel_the_compile_refuses_falls_back_to_xla(pallas, monkeypatch):
    """Mosaic's compile runs on the chip only: a kernel its lowering took but its compile refuses
    leaves the program to XLA's fusion, with a warning and the reason in as_text("pallas")."""
    from jitkernel.backends.tpu.backend import TpuBackend
    real = TpuBackend._xla_compile

    def refuse(lowered_program, *rest):
        compiled = real(lowered_program, *rest)
        if lowered_program.lowering.pallas.rendered():
            raise RuntimeError("Mosaic failed to compile TPU kernel: (a test's refusal)")
        return compiled
    monkeypatch.setattr(TpuBackend, "_xla_compile", staticmethod(refuse))
    x = _rng(8).random(500, dtype=np.float32)
    with pytest.warns(RuntimeWarning, match="the chip's compile refused them"):
        check(lambda x: np.sin(x) * 2, x, backend=TPU_INTERPRET)
    with pytest.warns(RuntimeWarning):
        text = _kernels(lambda x: np.sin(x) * 2, x)
    assert text.startswith("no Pallas kernels: the chip's compile refused them (RuntimeError: Mosaic failed"), text


def test_as_text_pallas_is_a_stage_of_the_tpu_backends_only():
    x = np.ones(4, np.float32)
    with pytest.raises(ValueError, match="not available for the cpu backend"):
        jk.jit(lambda x: x * 2, backend="cpu").lower(x).as_text("pallas")


@settings(max_examples=40, deadline=None, derandomize=True, database=None, print_blob=False,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(data=programs(movement=False, reduction=False))
def test_random_elementwise_chains(pallas, data):
    """The differential suite's random chains (broadcasts, promotion, weak scalars, where,
    casts, special values, every dtype) with fusion="pallas"."""
    _check_program(*data, TPU_INTERPRET)


def test_block_indices_are_int32_under_64_bit_tracing():
    """Mosaic has no int64 block index: the index maps return int32 even though the lowering
    traces with jax.enable_x64 (a Python 0 became int64 and the chip refused every kernel)."""
    import jax
    import jax.numpy as jnp

    from jitkernel.backends.tpu.pallas import block_index, first_block
    with jax.enable_x64(True):
        for index_map in (block_index, first_block):
            jaxpr = jax.make_jaxpr(index_map)(jnp.int32(3))
            assert [v.aval.dtype for v in jaxpr.jaxpr.outvars] == [jnp.int32, jnp.int32]

"""The TPU backend against NumPy: on the real chip (backend "tpu", `make tpu-check` on the TPU
machine) and, everywhere JAX is installed, on backend "tpu-interpret" (the same lowering,
compiled by XLA for the CPU). The NumPy-equivalence modules that opt into the TPU suite
(tests/tpu_suite.py) run their own tests on "tpu-interpret" as well.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jitkernel as jk  # noqa: E402
from helpers import assert_matches_numpy, check, numpy_result, on_host  # noqa: E402
from tpu_suite import TPU_INTERPRET, have_jax, tpu_backends  # noqa: E402

pytestmark = pytest.mark.skipif(not have_jax(), reason="JAX is not installed (the test extra brings it)")


BACKENDS = tpu_backends()
RNG = np.random.default_rng(0)
SPECIALS = np.array([0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 1e-300, 3e38, 2.5])


def _loop_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i] * i
    return s


def _in_place(x):
    x[1:3] += 1
    x[::2] *= 2
    return x.sum()


def _while_newton(a):
    x = a
    while np.abs(x * x - a).max() > 1e-6:
        x = 0.5 * (x + a / x)
    return x


CASES = {
    "elementwise f32": (lambda x: np.sin(x) * np.cos(x) + np.sin(x) ** 2, RNG.random(1000, dtype=np.float32)),
    "elementwise f64": (lambda x: np.exp(-x) * np.log1p(x) / (1 + x * x), RNG.random(1000)),
    "specials": (lambda x, y: (x * y, x / y, np.maximum(x, y), np.fmin(x, y), x // y, x % y, x.astype(np.int32)),
                 SPECIALS, SPECIALS[::-1].copy()),
    "int division by zero": (lambda a, b: (a // b, a % b, np.fmod(a, b)), np.array([7, -128, -7, 5], np.int8),
                             np.array([0, -1, 2, 0], np.int8)),
    "shifts past the width": (lambda a, b: (a << b, a >> b), np.array([1, -8, 3], np.int64), np.array([70, 2, 64])),
    "bool times inf": (lambda m, x: (m * x, m / m), np.array([False, True, False]), np.array([np.inf, 1.0, np.nan])),
    "reductions": (lambda x: (x.sum(0), x.max(1), x.argmin(), np.prod(x[:3], 1), x.mean()), RNG.random((64, 33))),
    "int64 sums": (lambda x: (x * x).sum(), np.arange(100_000, dtype=np.int64)),
    "matmul f32": (lambda a, b: a @ b, RNG.random((64, 48), dtype=np.float32), RNG.random((48, 32), dtype=np.float32)),
    "matmul f64": (lambda a, b: a @ b, RNG.random((20, 30)), RNG.random((30, 10))),
    "softmax": (lambda x: np.exp(x - x.max(1, keepdims=True)) / np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True),
                RNG.random((16, 128), dtype=np.float32)),
    "cumsum and flip": (lambda x: np.cumsum(x) + x[::-1], np.arange(10.0)),
    "sort": (lambda x: np.sort(x)[2:5], RNG.random(20)),
    "python loop": (_loop_sum, RNG.random(12)),
    "while loop": (_while_newton, RNG.random(8) + 1),
    "fancy indexing": (lambda x, i: x[i] * 2, np.arange(10.0), np.array([0, 9, -1, 3])),
    "linalg f64": (lambda a: np.linalg.inv(a) @ np.ones(4), RNG.random((4, 4)) + 4 * np.eye(4)),
    "0-d float64 host step": (lambda a: np.linalg.det(a) + 1.0, RNG.random((4, 4)) + 4 * np.eye(4)),
    "complex": (lambda z: np.abs(z * z.conj() + 1j), RNG.random(16) + 1j * RNG.random(16)),
    "float16": (lambda h: (h * h + h).sum(), RNG.random(100).astype(np.float16)),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", list(CASES))
def test_matches_numpy(case, backend):
    fn, *args = CASES[case]
    with np.errstate(all="ignore"):
        expected = numpy_result(fn, *args)
        assert_matches_numpy(on_host(jk.jit(fn, backend=backend)(*args)), expected)


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(xs=st.lists(st.floats(width=32, allow_subnormal=False), min_size=1, max_size=16), data=st.data())
def test_float32_through_float64_is_narrowed_exactly(xs, data):
    """NumPy's float32 written through float64 (mean's division by an int64 count) computed in
    float32 on the TPU (backends/tpu/narrow.py), bit for bit NumPy's answer, and no float64 is
    left in the program (so it stays on the chip)."""
    from jitkernel.backends.tpu.backend import holds_float64
    from jitkernel.backends.tpu.narrow import narrow_float64
    from jitkernel.passes import optimize
    a = np.array(xs, np.float32)
    b = np.array(data.draw(st.lists(st.floats(width=32, allow_subnormal=False), min_size=a.size, max_size=a.size)),
                 np.float32)

    def f(a, b):
        wa, wb = a.astype(np.float64), b.astype(np.float64)
        return ((wa + wb).astype(np.float32), (wa - wb).astype(np.float32), (wa * wb).astype(np.float32),
                (wa / wb).astype(np.float32), np.sqrt(wa).astype(np.float32), (wa / 7.0).astype(np.float32))
    assert not holds_float64(narrow_float64(optimize(jk.make_ir(f)(a, b))))
    with np.errstate(all="ignore"):
        got, want = jk.jit(f, backend=TPU_INTERPRET)(a, b), f(a, b)
    for g, w in zip(got, want):
        # XLA flushes subnormals to zero, as the TPU does (docs/tpu.md): the one difference
        w = np.where(np.abs(w) < np.finfo(np.float32).tiny, np.copysign(np.float32(0), w), w)
        np.testing.assert_array_equal(g.view(np.uint32), w.view(np.uint32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_place_updates_write_back(backend):
    expected_x = np.arange(8.0)
    expected = _in_place(expected_x)
    x = np.arange(8.0)
    assert jk.jit(_in_place, backend=backend)(x) == expected
    np.testing.assert_array_equal(x, expected_x)  # the argument written, as NumPy writes it


@pytest.mark.parametrize("backend", BACKENDS)
def test_errors_are_numpys(backend):
    """NumPy's exception, with NumPy's message, raised after the call: a traced index out of
    bounds (a check inside the computation) and a host step's own error."""
    pick = jk.jit(lambda x, i: x[i], backend=backend)
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 5"):
        pick(np.arange(5.0), 7)
    assert pick(np.arange(5.0), -1) == 4.0
    take = jk.jit(lambda x, i: x[i], backend=backend)
    with pytest.raises(IndexError):
        take(np.arange(5.0), np.array([0, 9]))
    with pytest.raises(np.linalg.LinAlgError):
        jk.jit(np.linalg.inv, backend=backend)(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="Integers to negative integer powers"):
        jk.jit(lambda a, b: a ** b, backend=backend)(np.array([2, 3]), np.array([1, -1]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_first_error_in_program_order(backend):
    """Two failing checks: NumPy raises the first, so do we (the check state is threaded in
    program order, loops included)."""
    def f(x, i, j):
        a = x[i]
        b = np.linalg.inv(np.zeros((2, 2)))
        return a + b.sum()
    with pytest.raises(IndexError):
        jk.jit(f, backend=backend)(np.arange(3.0), 5, 0)


@pytest.mark.skipif("tpu" not in BACKENDS, reason="needs a TPU")
def test_float64_runs_on_the_host_with_a_note():
    """The TPU's float64 is float32 pairs with float32's exponent range: a float64 program runs
    on the host CPU (the same XLA lowering), said once, and keeps NumPy's range."""
    f = jk.jit(lambda x: x * 1e300, backend="tpu")
    with pytest.warns(RuntimeWarning, match="float32's exponent range"):
        out = f(np.array([3.0]))
    assert out[0] == 3e300


@pytest.mark.parametrize("backend", BACKENDS)
def test_hlo_stage_and_dtypes_kept(backend):
    """float64 stays float64 on the TPU (never JAX's 32-bit default), and `as_text("hlo")`
    shows the XLA computation."""
    f = jk.jit(lambda x: x * 2, backend=backend)
    out = f(np.ones(3))
    assert out.dtype == np.float64
    assert "f64" in f.lower(np.ones(3)).as_text("hlo")


_special_floats = st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 3.0, np.inf, -np.inf, np.nan, 1e308, -7.25])
_BINARY = ("add", "subtract", "multiply", "divide", "floor_divide", "remainder", "power", "maximum", "minimum",
           "fmax", "fmin", "arctan2", "hypot", "copysign", "equal", "less")
_DTYPES = ("bool", "int8", "uint8", "int32", "int64", "uint64", "float16", "float32", "float64")


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(name=st.sampled_from(_BINARY), da=st.sampled_from(_DTYPES), db=st.sampled_from(_DTYPES),
       xs=st.lists(_special_floats, min_size=4, max_size=4), ys=st.lists(_special_floats, min_size=4, max_size=4))
def test_special_values_in_mixed_dtypes(name, da, db, xs, ys):
    """The class of XLA rewrites that are exact only without NaN or infinity (convert(bool) * x
    became select(bool, x, 0)): binary ufuncs over mixed dtypes, bools and special values,
    against NumPy, on tpu-interpret."""
    uf = getattr(np, name)
    with np.errstate(all="ignore"):
        a = np.array(xs).astype(da) if da != "bool" else np.array(xs) != 0
        b = np.array(ys).astype(db) if db != "bool" else np.array(ys) != 0
        check(lambda a, b: (uf(a, b), uf(a * True, b)), a, b, backend=TPU_INTERPRET)


@pytest.mark.parametrize("backend", BACKENDS)
def test_debug_print_runs_at_run_time_in_order(backend, capfd):
    """jk.debug.print inside the XLA computation: each call, each loop iteration, in order."""
    def f(x):
        jk.debug.print("start {}", x[0])
        for i in range(3):
            x = x * 2
            jk.debug.print("step {}", x[0])
        return x
    g = jk.jit(f, backend=backend)
    g(np.ones(2, np.float32))
    g(np.full(2, 3, np.float32))
    lines = [line for line in capfd.readouterr().out.splitlines() if line]
    assert lines == ["start 1.0", "step 2.0", "step 4.0", "step 8.0", "start 3.0", "step 6.0", "step 12.0", "step 24.0"]


@pytest.mark.skipif("tpu" in BACKENDS, reason="a second process cannot open the TPU this one holds")
def test_jit_cell_and_environment_pick_the_tpu_backend(tmp_path, monkeypatch):
    """`%%jit -b tpu-interpret` in a real IPython shell compiles the cell's functions for the TPU
    lowering, and `as_text("hlo")` shows it; JITKERNEL_BACKEND names it for a whole process."""
    import subprocess

    from tests.ipython_shell import extension_shell, ok
    with extension_shell(tmp_path, monkeypatch) as ip:
        ok(ip, "%%jit -b tpu-interpret\ndef g(x):\n    return np.sin(x) * 2\ny = g(np.ones(3, np.float32))")
        assert next(iter(ip.user_ns["g"]._cache.values())).backend == "tpu-interpret"
        np.testing.assert_allclose(ip.user_ns["y"], np.sin(np.ones(3, np.float32)) * 2, rtol=1e-6)
        _, out, _ = ok(ip, "print(g.lower(np.ones(3, np.float32)).as_text('hlo'))")
        assert "stablehlo.sine" in out
    code = "import numpy as np, jitkernel as jk; f = jk.jit(lambda x: x + 1); f(np.ones(2)); " \
        "print(next(iter(f._cache.values())).backend)"
    env = dict(os.environ, JITKERNEL_BACKEND="tpu-interpret", JITKERNEL_CACHE_DIR=str(tmp_path / "c"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "tpu-interpret"


def test_programs_differing_in_an_unread_argument_do_not_share_an_executable(tmp_path, monkeypatch):
    """JAX leaves an unread argument out of the StableHLO text: the persistent cache's key holds
    the arguments too, so a cached executable is never called with another argument list."""
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(tmp_path))
    x = np.array([True, False])
    assert jk.jit(lambda a: np.abs(a), backend=TPU_INTERPRET)(x).tolist() == [True, False]
    assert jk.jit(lambda a, b: np.abs(b), backend=TPU_INTERPRET)(x, x).tolist() == [True, False]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_products_are_rounded_before_they_are_added(dtype):
    """NumPy rounds a * b before adding c; XLA's CPU code would fuse them into one multiply-add
    (23% of random float64 inputs differed). Bit for bit NumPy's, products in every position."""
    rng = np.random.default_rng(7)
    a, b, c = (rng.standard_normal(20_000).astype(dtype) for _ in range(3))

    def f(a, b, c):
        return a * b + c, a * b - c, c - a * b, (a * b) * c + a, np.sum(a * b + c)
    got = jk.jit(f, backend=TPU_INTERPRET)(a, b, c)
    want = f(a, b, c)
    for g, w in zip(got[:4], want[:4]):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_allclose(got[4], want[4], rtol=1e-5 if dtype == np.float32 else 1e-12)

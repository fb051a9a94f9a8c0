"""Complex numbers: complex64/complex128 against NumPy 2 on both backends.

Every elementwise function is compared value by value with NumPy called directly, over a grid
of special values (0, -0, +-inf, nan, tiny, huge, ordinary: the C99 Annex G table cases) in both
parts, exactly: the same bits for every finite or infinite part (the sign of zero included) and
NaN in the same places. The compiled backend computes arithmetic, abs, sign and comparisons
itself (passes/complex_lower.py) and must reproduce NumPy's complex loops bit for bit; the
rest runs NumPy's loops as library steps. Sums use NumPy's pairwise order per part, which may
round differently from NumPy's interleaved complex loop: compared with a tolerance."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import jitkernel as jk
from jitkernel.passes import optimize
from jitkernel.passes.complex_lower import lower_complex

CUDA_EMULATOR_SUITE = True  # the backend fixture adds "cuda-emulator" (tests/emulator_suite.py)
# Bit-for-bit NumPy order of complex sums and products is the CPU backend's; the GPU's reduction
# trees and matmul tiles agree within rounding (tests/test_cuda_complex.py checks that).
EXACT_ORDER = ("NumPy's exact summation order is the CPU backend's; on the GPU sums, products and matmul "
               "reduce in a tree (docs/gpu.md, 'Reduction order on the GPU')")

CDTYPES = [np.dtype(np.complex64), np.dtype(np.complex128)]
_PART = {np.dtype(np.complex64): np.float32, np.dtype(np.complex128): np.float64}


# ----------------------------------------------------------------------------- comparison

def _parts(x: np.ndarray) -> list[np.ndarray]:
    x = np.asarray(x)
    return [x.real, x.imag] if x.dtype.kind == "c" else [x]


def assert_same(got, expected, ulps: float = 0, what: str = "result") -> None:
    """Same kind (scalar/array), dtype, shape; NaN in the same places; every other value equal
    bit for bit including the sign of zero (ulps == 0), or within `ulps` units in the last place
    of the expected value."""
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected), (what, got, expected)
        for i, (g, e) in enumerate(zip(got, expected)):
            assert_same(g, e, ulps, f"{what}[{i}]")
        return
    if isinstance(expected, (bool, int, float, complex)) and not isinstance(expected, np.generic):
        expected = np.asarray(expected)[()]
    assert isinstance(got, np.generic) == isinstance(expected, np.generic), (what, type(got), type(expected))
    g, e = np.asarray(got), np.asarray(expected)
    assert g.dtype == e.dtype, f"{what}: dtype {g.dtype} != NumPy's {e.dtype}"
    assert g.shape == e.shape, f"{what}: shape {g.shape} != NumPy's {e.shape}"
    for name, gp, ep in zip(("real", "imag"), _parts(g), _parts(e)):
        if ep.dtype.kind in "biu":
            if not np.array_equal(gp, ep):
                i = tuple(int(k) for k in np.argwhere(gp != ep)[0]) if gp.ndim else ()
                raise AssertionError(f"{what}: {int(np.sum(gp != ep))} of {ep.size} values differ; first at "
                                     f"{i}: got {gp[i]!r}, NumPy {ep[i]!r}")
            continue
        gn, en = np.isnan(gp), np.isnan(ep)
        bad = gn != en
        with np.errstate(all="ignore"):
            if ulps == 0:
                bad |= ~en & ((gp != ep) | (np.signbit(gp) != np.signbit(ep)))
            else:
                tol = ulps * np.spacing(np.maximum(np.abs(ep), np.finfo(ep.dtype).tiny))
                inf = np.isinf(ep)
                bad |= ~en & inf & (gp != ep)
                bad |= ~en & ~inf & ~(np.abs(gp.astype(np.float64) - ep) <= tol)
        if bad.any():
            i = tuple(int(k) for k in np.argwhere(bad)[0]) if bad.ndim else ()
            raise AssertionError(f"{what} ({name} part): {int(np.sum(bad))} of {bad.size} values differ; "
                                 f"first at {i}: got {g[i]!r}, NumPy {e[i]!r}")


def numpy_of(fn, *args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def check(fn, *args, backend: str, ulps: float = 0):
    expected = numpy_of(fn, *args)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        got = jk.jit(fn, backend=backend)(*args)
    assert_same(got, expected, ulps)
    return got


# ----------------------------------------------------------------------------- values

def _specials(dt: np.dtype) -> list[float]:
    part = _PART[dt]
    fi = np.finfo(part)
    return [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, np.inf, -np.inf, np.nan, float(fi.tiny) / 4,
            -float(fi.smallest_normal), float(fi.max) / 2, -float(fi.max), 3.0e-3, 7.25]


def special_grid(dt: np.dtype) -> np.ndarray:
    """Every (re, im) pair of special parts: 225 complex values."""
    vals = _specials(dt)
    out = np.empty(len(vals) ** 2, dt)
    out.real = np.repeat(np.asarray(vals, _PART[dt]), len(vals))
    out.imag = np.tile(np.asarray(vals, _PART[dt]), len(vals))
    return out


def random_complex(dt: np.dtype, n: int, seed: int = 0, scale: float = 30.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mag = np.exp(rng.uniform(-scale, scale, n)) if dt == np.complex128 else np.exp(rng.uniform(-20, 20, n))
    z = (rng.standard_normal(n) + 1j * rng.standard_normal(n)) * mag
    return z.astype(dt)


def pair_grid(dt: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of special-grid values (50625 pairs)."""
    g = special_grid(dt)
    return np.repeat(g, g.size), np.tile(g, g.size)


# ----------------------------------------------------------------------------- dtypes, scalars

def test_dtypes_are_supported_and_printed():
    prog = jk.make_ir(lambda z, w: z + w)(np.ones(2, np.complex64), np.ones(2, np.complex128))
    text = str(prog)
    assert "c64[2]" in text and "c128[2]" in text
    with pytest.raises(TypeError, match="complex"):
        jk.jit(lambda x: x + 1)(np.ones(2, np.clongdouble))


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64, np.int8, np.int64, np.bool_])
def test_weak_complex_scalars_nep50(dt, backend):
    """1j * float32 is complex64; with int8 / int64 / bool NumPy picks complex128."""
    x = np.arange(4).astype(dt)
    check(lambda x: 1j * x, x, backend=backend)
    check(lambda x: x + 2j, x, backend=backend)
    check(lambda x: (x - (1.5 - 0.5j)) / 3j, x, backend=backend)


@pytest.mark.parametrize("dt", CDTYPES)
def test_mixed_real_complex_promotion(dt, backend):
    z = random_complex(dt, 16)
    for real in (np.float16, np.float32, np.float64, np.int32, np.uint8, np.bool_):
        r = np.arange(16).astype(real)
        check(lambda z, r: (z + r, r * z, z / (r + 1), z == r), z, r, backend=backend)
    check(lambda z: z * np.float64(2.5), z, backend=backend)   # a strong float64 scalar
    check(lambda z: z + np.complex64(1 - 1j), z, backend=backend)


def test_complex_python_scalar_argument_and_numpy_scalars(backend):
    z = random_complex(np.dtype(np.complex64), 8)
    f = jk.jit(lambda z, c: z * c + c, backend=backend)
    for c in (2 + 1j, -0.5j, complex(np.inf, 0)):
        assert_same(f(z, c), numpy_of(lambda: z * c + c))
    check(lambda c: np.sqrt(c) + 1, np.complex64(-4), backend=backend)
    check(lambda c: c * c, np.complex128(3 - 4j), backend=backend)
    assert_same(jk.jit(lambda c: c * 2, backend=backend)(1 + 1j), np.complex128(2 + 2j))


def test_iscomplexobj_and_type_tests(backend):
    z, x = random_complex(np.dtype(np.complex128), 4), np.ones(4)
    f = jk.jit(lambda a: np.iscomplexobj(a), backend=backend)
    assert bool(f(z)) and not bool(f(x))
    assert bool(jk.jit(lambda a: np.isrealobj(a), backend=backend)(x))
    z2 = np.array([1 + 0j, 2j, -0.0 + 0j, 1 + 1e-300j])
    check(lambda a: (np.iscomplex(a), np.isreal(a)), z2, backend=backend)
    check(lambda a: (np.iscomplex(a), np.isreal(a)), x, backend=backend)


# ----------------------------------------------------------------------------- parts, casts

@pytest.mark.parametrize("dt", CDTYPES)
def test_real_imag_conj_angle(dt, backend):
    g = special_grid(dt)
    check(lambda z: (np.real(z), np.imag(z), z.real, z.imag, np.conj(z), z.conj(), z.conjugate(),
                     np.conjugate(z)), g, backend=backend)
    check(lambda z: np.angle(z), g, backend=backend, ulps=4)
    check(lambda z: np.angle(z, deg=True), g, backend=backend, ulps=4)
    x = np.array([-1.0, 0.0, -0.0, 2.0], _PART[dt])
    check(lambda x: (np.real(x), np.imag(x), np.conj(x), np.angle(x)), x, backend=backend)
    check(lambda x: np.conj(x), np.arange(3, dtype=np.int8), backend=backend)


@pytest.mark.parametrize("dt", CDTYPES)
def test_casts(dt, backend):
    g = special_grid(dt)
    other = np.complex128 if dt == np.complex64 else np.complex64
    check(lambda z: (z.astype(other), z.astype(bool), z.astype(dt)), g, backend=backend)
    finite = random_complex(dt, 32, scale=3)
    check(lambda z: (z.astype(np.float32), z.astype(np.float64), z.astype(np.float16)), finite, backend=backend)
    check(lambda z: z.astype(np.int32), (finite * 0 + np.arange(32) - 16).astype(dt), backend=backend)
    for src in (np.bool_, np.int8, np.uint16, np.int64, np.float16, np.float32, np.float64):
        x = np.array([0, 1, 3, 127], src) if src != np.bool_ else np.array([True, False])
        check(lambda x: x.astype(dt), x, backend=backend)
    check(lambda x: x.astype(dt), np.array([np.nan, -np.inf, -0.0, 1e300]), backend=backend)


def test_complex_to_real_cast_warns_once_at_trace_time(backend):
    """NumPy warns ComplexWarning on every such cast; jitkernel warns when tracing (once per
    compiled signature) and the compiled calls are silent."""
    f = jk.jit(lambda z: z.astype(np.float64) + 1, backend=backend)
    z = np.array([1 + 2j])
    with pytest.warns(np.exceptions.ComplexWarning) as record:
        out = f(z)
    assert out[0] == 2.0
    assert any(__file__ in str(r.filename) for r in record)  # attributed to the user's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(z)
        jk.jit(lambda z: z.astype(bool), backend=backend)(z)  # no warning for bool, as NumPy


# ----------------------------------------------------------------------------- elementwise

UNARY = {
    "negative": np.negative, "conjugate": np.conjugate, "absolute": np.absolute, "square": np.square,
    "reciprocal": np.reciprocal, "sign": np.sign, "isnan": np.isnan, "isinf": np.isinf,
    "isfinite": np.isfinite, "logical_not": np.logical_not,
    "exp": np.exp, "log": np.log, "log10": np.log10, "log2": np.log2, "sqrt": np.sqrt,
    "expm1": np.expm1, "log1p": np.log1p, "exp2": np.exp2,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "arcsin": np.arcsin, "arccos": np.arccos,
    "arctan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "arcsinh": np.arcsinh,
    "arccosh": np.arccosh, "arctanh": np.arctanh, "abs()": abs, "neg-operator": lambda z: -z,
    "positive": np.positive,
}


@pytest.mark.parametrize("dt", CDTYPES, ids=["c64", "c128"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_special_values_exact(name, dt, backend):
    """The Annex G table: every special (re, im) pair, value by value and sign of zero."""
    fn = UNARY[name]
    # sign divides by hypot(re, im), which compiled code calls in libmvec's vector variant
    # (within 1 ulp of glibc's); its special cases (nan, inf, 0) are exact.
    ulps = 2 if name == "sign" and backend == "cpu" else 0
    check(lambda z: fn(z), special_grid(dt), backend=backend, ulps=ulps)
    check(lambda z: fn(z), random_complex(dt, 257, seed=3), backend=backend, ulps=ulps)


BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "power": np.power, "equal": np.equal, "not_equal": np.not_equal, "less": np.less,
    "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
    "maximum": np.maximum, "minimum": np.minimum, "fmax": np.fmax, "fmin": np.fmin,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "operators": lambda a, b: (a + b, a - b, a * b, a / b, a == b, a != b, a < b, a <= b, a > b, a >= b),
}


@pytest.mark.parametrize("dt", CDTYPES, ids=["c64", "c128"])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_special_values_exact(name, dt, backend):
    """Every pair of special values (inf/nan/signed zeros/huge/tiny in either part)."""
    fn = BINARY[name]
    a, b = pair_grid(dt)
    if name == "power":  # NumPy's complex power is slow on 50625 pairs: every other pair
        a, b = a[::7], b[::7]
    check(lambda a, b: fn(a, b), a, b, backend=backend)
    x, y = random_complex(dt, 301, seed=1), random_complex(dt, 301, seed=2)
    check(lambda a, b: fn(a, b), x, y, backend=backend)


@pytest.mark.parametrize("dt", CDTYPES, ids=["c64", "c128"])
def test_broadcast_scalar_operands(dt, backend):
    z = random_complex(dt, 64)
    for c in (1.5 - 2j, dt.type(3 + 0.25j), 0j, complex(np.inf, np.nan)):
        check(lambda z: (z * c, c * z, z / c, c / z, z - c, z == c), z, backend=backend)
    check(lambda z: z[:, None] * z[None, :8], z, backend=backend)


@pytest.mark.parametrize("dt", CDTYPES, ids=["c64", "c128"])
def test_power_operator_fast_paths(dt, backend):
    """`z ** 2` is np.square, `z ** -1` np.reciprocal, `z ** 0.5` np.sqrt, as NumPy's operator
    does for complex arrays (signs of zero and infinities differ from np.power)."""
    g = special_grid(dt)
    check(lambda z: (z ** 2, z ** -1, z ** 0.5, z ** 3, z ** 1.5, z ** (1 + 1j)), g, backend=backend)
    check(lambda z, p: z ** p, g, 2, backend=backend)
    check(lambda z, p: z ** p, g, 0.5, backend=backend)
    check(lambda z, p: z ** p, g, 3, backend=backend)
    check(lambda z: (np.power(z, 2), np.power(z, 0.5), np.power(2, z)), g, backend=backend)


# ----------------------------------------------------------------------------- reductions

@pytest.mark.parametrize("dt", CDTYPES, ids=["c64", "c128"])
@pytest.mark.parametrize("shape", [(6, 50), (3, 700), (1000,), (5,)])
def test_reductions_exact(dt, shape, backend):
    """sum/mean in NumPy's complex pairwise order, prod, max/min, argmax/argmin: bit for bit."""
    if backend == "cuda-emulator":
        pytest.skip(EXACT_ORDER)
    z = random_complex(dt, int(np.prod(shape)), seed=5, scale=2).reshape(shape)
    for axis in [None] + list(range(len(shape))):
        check(lambda z: (z.sum(axis=axis), z.mean(axis=axis), z.prod(axis=axis), np.max(z, axis=axis),
                         np.min(z, axis=axis), np.argmax(z, axis=axis), np.argmin(z, axis=axis)), z, backend=backend)
        check(lambda z: (z * 2j + 1).sum(axis=axis), z, backend=backend)  # a fused producer


@pytest.mark.parametrize("dt", CDTYPES, ids=["c64", "c128"])
def test_reduction_nan_rules(dt, backend):
    """max/min propagate a NaN in either part, argmax/argmin find the first NaN, ties break on
    the imaginary part (NumPy 2's lexicographic order)."""
    w = np.array([1 + 2j, 1 + 3j, complex(np.nan, 0), 2 - 1j, complex(2, np.nan), 2 - 1j], dt)
    check(lambda w: (w.max(), w.min(), w.argmax(), w.argmin(), w[:2].max(), w[:2].argmin(),
                     w[3:].max(), np.maximum.reduce(w[:2]), np.sum(w)), w, backend=backend)


# ----------------------------------------------------------------------------- linear algebra

@pytest.mark.parametrize("dt", CDTYPES, ids=["c64", "c128"])
def test_matmul_dot_vdot(dt, backend):
    if backend == "cuda-emulator":
        pytest.skip(EXACT_ORDER)
    a = random_complex(dt, 12, seed=1, scale=1).reshape(3, 4)
    b = random_complex(dt, 20, seed=2, scale=1).reshape(4, 5)
    v = random_complex(dt, 4, seed=3, scale=1)
    check(lambda a, b, v: (a @ b, np.dot(a, b), np.matmul(a, v), np.vdot(v, v), np.vdot(a, a),
                           v @ v, np.dot(v, v)), a, b, v, backend=backend)
    r = np.arange(20, dtype=np.float32).reshape(4, 5)
    check(lambda a, r: a @ r, a, r, backend=backend)


def test_sort_order_comparison_rule(backend):
    """NumPy 2 sorts complex lexicographically (real, then imaginary; NaNs last): the same rule
    as `<`, which is what a sort needs."""
    z = np.array([2 + 0j, 1 + 5j, 1 - 5j, complex(np.nan, 1), complex(1, np.nan), -3j])
    lt = jk.jit(lambda a, b: a[:, None] < b[None, :], backend=backend)(z, z)
    with np.errstate(invalid="ignore"):
        assert_same(lt, z[:, None] < z[None, :])


# ----------------------------------------------------------------------------- whole programs

def test_fused_program_has_no_complex_kernel():
    """The lowering leaves no complex value in the program: arguments and results are float
    (..., 2) views of the complex arrays, read and written by the fused kernel with stride 2."""
    z = random_complex(np.dtype(np.complex128), 64)
    prog = optimize(jk.make_ir(lambda z, x: (abs(z * z + 1j * x) + (z / (z + 1)).real, z * 2))(z, z.real.copy()))
    lowered, packed = lower_complex(prog)
    assert packed.inputs == {0: np.complex128} and packed.outputs == {1: np.complex128}
    for eqn in lowered.eqns:
        assert all(v.aval.dtype.kind != "c" for v in eqn.inputs + eqn.outputs), eqn.prim
    assert [str(v.aval) for v in lowered.invars] == ["f64[64,2]", "f64[64]"]
    kernels = jk.jit(lambda z: z * (1 + 2j) + z.conj()).lower(z).as_text("kernels")
    assert "library" not in kernels and "load %0[2*i0 + 1]" in kernels
    assert "complex_library" in jk.jit(lambda z: np.exp(z) * 2).lower(z).as_text("kernels")


def test_results_are_fresh_complex_arrays(backend):
    """A returned complex array is a view of the kernel's float buffer; the next call must not
    overwrite a result the caller still holds, and results are C-contiguous complex arrays."""
    f = jk.jit(lambda z: z * 2, backend=backend)
    z = random_complex(np.dtype(np.complex64), 16)
    first = f(z)
    second = f(z + 1)
    assert_same(first, z * 2)
    assert_same(second, (z + 1) * 2)
    assert first.flags.c_contiguous and first.dtype == np.complex64
    assert_same(jk.jit(lambda z: z, backend=backend)(z[::2]), z[::2].copy())


def test_stencil_like_program(backend):
    """A wave-function update (FFT-free Schrodinger step) as NumPy code is written."""
    rng = np.random.default_rng(0)
    psi = (rng.standard_normal(256) + 1j * rng.standard_normal(256))
    v = rng.uniform(0, 1, 256)

    def step(psi, v, dt):
        lap = psi[:-2] - 2 * psi[1:-1] + psi[2:]
        phase = np.exp(-1j * v[1:-1] * dt)
        out = (psi[1:-1] + 0.5j * dt * lap) * phase
        return out, np.abs(out) ** 2, np.vdot(out, out).real, np.angle(out).max()

    got = jk.jit(step, backend=backend)(psi, v, 0.01)
    exp = step(psi, v, 0.01)
    for g, e in zip(got, exp):
        np.testing.assert_allclose(g, e, rtol=1e-12)


# ----------------------------------------------------------------------------- hypothesis

_H_SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None, print_blob=False,
                       suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                              HealthCheck.data_too_large])

_H_UNARY = ["negative", "conjugate", "square", "reciprocal", "exp", "log", "sqrt", "sin",
            "tanh", "arcsinh", "expm1", "log1p", "absolute-back", "real-back", "imag-back"]
_H_BINARY = ["add", "subtract", "multiply", "divide", "maximum", "fmin", "power", "select-less"]
_H_SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310, 1e300, -1e300, 1.0, -1.0]


def _part_values(draw, n: int) -> np.ndarray:
    mode = draw(st.sampled_from(["normal", "specials", "extreme"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if mode == "normal":
        return rng.standard_normal(n) * 3
    if mode == "extreme":
        return rng.standard_normal(n) * np.exp(rng.uniform(-600, 600, n))
    vals = rng.standard_normal(n)
    mask = rng.uniform(size=n) < 0.5
    vals[mask] = rng.choice(np.asarray(_H_SPECIAL), size=int(mask.sum()))
    return vals


@st.composite
def complex_programs(draw):
    """1-3 complex inputs (the first (n,) or (k, n), the others (n,): broadcasting), sometimes a
    real input (promotion), a chain of 1-8 unary / binary ops, and sometimes a final reduction."""
    dt = np.dtype(draw(st.sampled_from(["complex64", "complex128"])))
    n = draw(st.integers(1, 40))
    shape0 = draw(st.sampled_from([(n,), (draw(st.integers(1, 4)), n)]))
    inputs = []
    for k in range(draw(st.integers(1, 3))):
        shape = shape0 if k == 0 else (n,)
        z = np.empty(shape, dt)
        with np.errstate(over="ignore"):  # beyond float32's range: +-inf, intended
            z.real = _part_values(draw, int(np.prod(shape))).reshape(shape)
            z.imag = _part_values(draw, int(np.prod(shape))).reshape(shape)
        inputs.append(z)
    if draw(st.booleans()):
        real_dt = draw(st.sampled_from([np.float32, np.float64, np.int16]))
        with np.errstate(over="ignore"):
            inputs.append(np.asarray(_part_values(draw, n) if real_dt != np.int16 else np.arange(n) - 5).astype(real_dt))
    ops = []
    for _ in range(draw(st.integers(1, 8))):
        if draw(st.booleans()):
            ops.append(("u", draw(st.sampled_from(_H_UNARY))))
        else:
            other = draw(st.one_of(st.integers(0, len(inputs) - 1), st.sampled_from([1j, 2.5, -0.5 + 3j])))
            ops.append(("b", draw(st.sampled_from(_H_BINARY)), other))
    reduction = draw(st.sampled_from([None, "sum", "prod", "max", "argmin", "mean"]))
    axis = draw(st.sampled_from([None, -1]))
    return dt, inputs, ops, (reduction, axis)


def _run_program(ops, reduction, *zs):
    z = zs[0]
    for op in ops:
        if op[0] == "u":
            name = op[1]
            if name.endswith("-back"):
                part = {"absolute-back": np.abs, "real-back": np.real, "imag-back": np.imag}[name](z)
                z = z * 0 + part  # back to complex, keeping the dtype
            else:
                z = getattr(np, name)(z)
        else:
            _, name, other = op
            w = zs[other] if isinstance(other, int) and not isinstance(other, bool) else other
            if name == "select-less":
                z = np.where(z < w, z, w * 1)
            else:
                z = getattr(np, name)(z, w)
    name, axis = reduction
    if name is not None:
        z = getattr(np, name)(z, axis=axis)
    return z


@_H_SETTINGS
@given(complex_programs())
def test_random_complex_programs_match_numpy(backend, prog):
    """Random chains of complex ops on values with inf/nan/+-0/huge/tiny parts, broadcasting,
    real operands and a final reduction. Every op is bit-exact with NumPy's loop, so the whole
    program must be (NaN positions and zero signs too)."""
    if backend == "cuda-emulator":
        pytest.skip(EXACT_ORDER)
    dt, inputs, ops, reduction = prog
    note(f"{dt} shapes={[z.shape for z in inputs]} ops={ops} reduction={reduction}")
    fn = lambda *zs: _run_program(ops, reduction, *zs)  # noqa: E731
    check(fn, *inputs, backend=backend)


def test_new_sizes_reuse_the_shape_generic_kernels():
    """Complex library steps carry no shapes in their params: a third size reuses the kernels."""
    f = jk.jit(lambda z, x: (np.exp(z) * x + z * z).sum() + abs(z).max())
    for n in (10, 20, 30, 40):
        z, x = random_complex(np.dtype(np.complex128), n, seed=n, scale=1), np.linspace(-1, 1, n)
        np.testing.assert_allclose(f(z, x), (np.exp(z) * x + z * z).sum() + abs(z).max(), rtol=1e-13)
    assert any("dynamic" in r for rec in f.recompilations() for r in rec.reasons)
    assert len(f.recompilations()) == 1  # 30 and 40 ran on the template made at 20


def test_var_std_of_complex_are_real(backend):
    z = random_complex(np.dtype(np.complex64), 40, seed=4, scale=1).reshape(4, 10)
    for axis in (None, 0, 1):
        got = jk.jit(lambda z: (np.var(z, axis=axis), np.std(z, axis=axis, ddof=1)), backend=backend)(z)
        exp = (np.var(z, axis=axis), np.std(z, axis=axis, ddof=1))
        for g, e in zip(got, exp):
            assert g.dtype == e.dtype == np.float32
            np.testing.assert_allclose(g, e, rtol=1e-5)


def test_writes_through_real_and_imag_views(backend):
    """z.real and z.imag are views of z, as in NumPy: assignments, slices of them and augmented
    operators write into z (an argument too), and later reads see the update."""
    z = np.array([1 + 1j, 2 - 1j, 3 + 0.5j, complex(np.inf, -0.0)])

    def parts(z):
        z = z.copy()
        z.real[:2] = 0
        z.imag[1:] += 10
        r = z.real
        r *= 2
        z.imag = -z.imag
        return z, z.real, z.imag

    check(parts, z, backend=backend)

    def argument(a):
        a.imag[0] = -7
        a.real[::2] = a.real[::2] + 100
        return a.real.sum()

    x, y = z.copy(), z.copy()
    assert_same(jk.jit(argument, backend=backend)(x), argument(y))
    assert_same(x, y)


def test_fma_reference_rounds_once():
    """The `fma` primitive's reference (compiled code uses llvm.fma): a * b + c rounded once."""
    from jitkernel.ir import primitives
    a = np.array([1 + 2.0**-30, 1e308, 3.0, np.inf])
    b = np.array([1 - 2.0**-30, 10.0, 1 / 3, 0.0])
    c = np.array([-1.0, -1e308, -1.0, 1.0])
    (out,) = primitives.evaluate("fma", [a, b, c], {})
    assert out[0] == -(2.0**-60)  # a*b - 1 exactly; the unfused product rounds it to 0
    assert out[1] == np.inf and np.isnan(out[3])
    assert out[2] == -(2.0**-54)  # 3 * fl(1/3) is 1 - 2**-54 exactly
    x, y = np.array([1 + 2.0**-13], np.float32), np.array([1 - 2.0**-13], np.float32)
    (out32,) = primitives.evaluate("fma", [x, y, np.array([-1.0], np.float32)], {})
    assert out32.dtype == np.float32 and out32[0] == np.float32(-(2.0**-26))


def test_subprograms_with_complex_values_run_as_library_steps(monkeypatch):
    """An equation whose sub-program (a loop body, a branch) computes with complex values is
    run by the interpreter as one library step, never handed to kernels unlowered. (A stand-in
    primitive applying its `body` once: the control-flow primitives live elsewhere.)"""
    from jitkernel.interpreter import eval_program
    from jitkernel.ir import Eqn, Program, Var, primitives
    from jitkernel.ir.types import AType
    # registered for this test only: a global stand-in would be a primitive without
    # transformation rules for every later test that checks the registry (test_vmap, test_grad_rules)
    monkeypatch.setitem(primitives.PRIMITIVES, "test_apply_body", primitives.Primitive(
        "test_apply_body", "structural", lambda avals, *, body: [v.aval for v in body.outvars],
        lambda *xs, body: eval_program(body, xs)))
    t = Var(AType((3,), np.float64))
    zc, e, r = (Var(AType((3,), np.complex128)) for _ in range(3))
    out = Var(AType((3,), np.float64))
    body = Program([t], [], [], [Eqn("convert", [t], [zc], {"dtype": np.dtype(np.complex128)}),
                                 Eqn("exp", [zc], [e]), Eqn("real", [e], [out])], [out], "body")
    x, y = Var(AType((3,), np.float64)), Var(AType((3,), np.float64))
    prog = Program([x], [], [], [Eqn("test_apply_body", [x], [y], {"body": body})], [y], "outer")
    lowered, _ = lower_complex(prog)
    assert [e.prim for e in lowered.eqns] == ["complex_library"]
    from jitkernel.fusion import schedule
    kp = schedule(prog)
    assert [type(s).__name__ for s in kp.steps] == ["LibraryCall"]
    xs = np.array([0.0, 1.0, -2.0])
    from jitkernel.backends.cpu import CpuBackend
    executable, _ = CpuBackend().compile(prog, name="outer", disk_cache=False)
    np.testing.assert_array_equal(executable([xs])[0], np.exp(xs.astype(complex)).real)


def test_other_complex_to_real_casts(backend):
    """jnp.asarray(z, float) and sum(dtype=float) warn as NumPy does; concatenate(dtype=float)
    of a complex array raises NumPy's TypeError (same_kind casting)."""
    import jitkernel.numpy as jnp
    z = np.array([1 + 2j, -3j])
    with pytest.warns(np.exceptions.ComplexWarning):
        out = jk.jit(lambda z: jnp.asarray(z, dtype=np.float32), backend=backend)(z)
    assert_same(out, numpy_of(lambda: np.asarray(z, dtype=np.float32)))
    with pytest.warns(np.exceptions.ComplexWarning):
        got = jk.jit(lambda z: np.sum(z, dtype=np.float64), backend=backend)(z)
    assert_same(got, numpy_of(lambda: np.sum(z, dtype=np.float64)))
    with pytest.raises(TypeError, match="same_kind"):
        jk.jit(lambda z: np.concatenate([z, z], dtype=np.float64), backend=backend)(z)
    check(lambda z: np.concatenate([z, z.real], dtype=np.complex64), z, backend=backend)


@pytest.mark.parametrize("dt", CDTYPES, ids=["c64", "c128"])
def test_round_rounds_each_part(dt, backend):
    """np.round(z, d) rounds the parts as floats (NumPy's PyArray_Round), not z * 100 / 100 in
    complex arithmetic (which multiplies by a rounded 0.01)."""
    z = random_complex(dt, 64, seed=7, scale=3) * 10
    for d in (0, 1, 2, -1):
        check(lambda z: np.round(z, d), z, backend=backend)
    check(lambda z: np.round(z, 3), special_grid(dt), backend=backend)


@pytest.mark.parametrize("dt", CDTYPES, ids=["c64", "c128"])
def test_composed_functions_on_special_values(dt, backend):
    """Functions the tracer composes from others (clip, all/any, where, mean) follow NumPy's own
    complex loops on every special value."""
    g = special_grid(dt)
    check(lambda z: (np.clip(z, -1 - 1j, 2 + 0.5j), np.all(z), np.any(z), np.all(z.reshape(15, 15), axis=1),
                     np.where(np.isfinite(z), z, 0), np.mean(z.reshape(15, 15), axis=0)), g, backend=backend)


# ----------------------------------------------------------------------------- loops

@st.composite
def complex_loop_programs(draw):
    """A loop (a traced trip count: never unrolled) whose body multiplies small complex matrices
    (`@` of static shapes, scaled by an element), reads a row at the loop index and accumulates
    into a carry updated in place: complex64 or complex128, with special parts sometimes."""
    dt = np.dtype(draw(st.sampled_from(["complex64", "complex128"])))
    n, k, m = (draw(st.integers(1, 4)) for _ in range(3))
    trips = draw(st.integers(1, 5))
    arrays = []
    for shape in [(trips, n, k), (k, m), (trips, n, m)]:
        z = np.empty(shape, dt)
        with np.errstate(over="ignore"):
            z.real = _part_values(draw, int(np.prod(shape))).reshape(shape)
            z.imag = _part_values(draw, int(np.prod(shape))).reshape(shape)
        arrays.append(z)
    form = draw(st.sampled_from(["matmul", "scaled", "chain", "elementwise"]))
    return dt, trips, form, arrays


def _loop_program(form):
    def fn(t, a, b, acc):
        acc = acc.copy()
        for i in range(t):
            if form == "matmul":
                acc[i] += a[i] @ b
            elif form == "scaled":
                acc[i] = (a[i] * a[i, 0, 0]) @ b - acc[i] * 1j
            elif form == "chain":
                acc[i] = (a[i] @ b) @ (b.T @ acc[i].T).T if b.shape[0] == b.shape[1] else a[i] @ b
            else:
                acc[i] = acc[i] * acc[i, 0, 0] + 1j * (a[i] @ b) / (1 + acc[i])
        return acc
    return fn


@_H_SETTINGS
@given(complex_loop_programs())
def test_random_complex_loops_match_numpy(prog):
    """Loop bodies computing with complex values run natively (their small products as fused
    reductions: NumPy's multiply per term, summed); elementwise results are exact, products agree
    within rounding (BLAS sums in another order), NaN and infinity positions agree."""
    dt, trips, form, (a, b, acc) = prog
    note(f"{dt} trips={trips} form={form} shapes={a.shape, b.shape, acc.shape}")
    fn = _loop_program(form)
    expected = numpy_of(fn, trips, a, b, acc)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = jk.jit(fn)(trips, a, b, acc)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    for part in (np.real, np.imag):
        g, e = part(got), part(expected)
        finite = np.isfinite(e) & np.isfinite(g)
        # a sum of huge terms in another order may overflow on one side only, or cancel differently
        assert np.array_equal(np.isnan(g) | ~finite, np.isnan(e) | ~finite)
        scale = np.max(np.abs(e[finite]), initial=1.0)
        np.testing.assert_allclose(g[finite], e[finite], rtol=1e-4 if dt == np.complex64 else 1e-9,
                                   atol=(1e-4 if dt == np.complex64 else 1e-9) * scale)


def test_complex_loop_bodies_are_native_without_library_steps():
    """A loop whose body multiplies 3x3 complex matrices and updates a complex carry in place is
    one native loop: no complex_library step, the carry as two float arrays (no packing per trip)."""
    a = random_complex(np.dtype(np.complex128), 4 * 9, seed=5, scale=1).reshape(4, 3, 3)
    b = random_complex(np.dtype(np.complex128), 9, seed=6, scale=1).reshape(3, 3)

    def fn(t, a, b):
        s = np.zeros((3, 3), np.complex128)
        for i in range(t):
            s += (a[i] @ b) @ a[i]
        return s

    f = jk.jit(fn)
    kernels = f.lower(4, a, b).as_text("kernels")
    assert "complex_library" not in kernels and "[native]" in kernels
    np.testing.assert_allclose(f(4, a, b), fn(4, a, b), rtol=1e-12)


@pytest.mark.parametrize("dt", CDTYPES, ids=["c64", "c128"])
def test_complex_loops_elementwise_exact(dt):
    """Elementwise complex arithmetic in a native loop is NumPy's, bit for bit, on special values
    (inf, nan, -0.0 parts): the same lowering as outside loops."""
    g = special_grid(dt)

    def fn(t, z):
        w = z.copy()
        for i in range(t):
            w = w * z + np.conj(w) / (z + 1) - abs(w)
        return w

    check(fn, 3, g, backend="cpu")


@pytest.mark.parametrize("dt", CDTYPES, ids=["c64", "c128"])
def test_power_by_constant_integer_exponents_exact(dt, backend):
    """np.power(z, n + 0j) with a constant integer n (|n| < 100) is computed in kernels as
    NumPy's nc_pow does (products without fused multiply-adds, 1 / z^|n| by the complex divide,
    its cases for n = 0 and z = 0), bit for bit on every special value; 2.5 stays NumPy's cpow."""
    g = special_grid(dt)
    for n in (-7, -3, -1, 0, 1, 2, 3, 4, 6, 11, 99, 100, 2.5):
        e = np.asarray(complex(n, 0), dt)
        check(lambda z: (np.power(z, e), np.power(z[::-1], e) * 2), g, backend=backend)
    z = random_complex(dt, 8, scale=1)
    lowered = jk.jit(lambda z: np.power(z, np.asarray(5 + 0j, dt))).lower(z).as_text("kernels")
    assert "complex_library" not in lowered

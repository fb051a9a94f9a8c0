"""Every elementwise ufunc of the primitive registry against NumPy over all 12 dtypes, shapes
(0-d, size-0, broadcasting, 1-4 dims) and layouts (transposed, negative strides), plus NEP 50
weak Python scalars, operators, where / clip / round / astype."""
from __future__ import annotations

import operator
import subprocess
import sys
import shutil
import textwrap

import numpy as np
import pytest

import jitkernel as jk
from jitkernel.ir.primitives import BINARY_UFUNCS, UNARY_UFUNCS

from helpers import (ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, assert_matches_numpy, check, full_range, numpy_result,
                     rng_for, sample)

CUDA_EMULATOR_SUITE = True  # tests/emulator_suite.py: the `backend` tests also run on cuda-emulator
TPU_SUITE = True  # and on tpu-interpret (tests/tpu_suite.py)

DTYPE_IDS = [str(d) for d in ALL_DTYPES]


def _rng(*key: object) -> np.random.Generator:
    return rng_for(*key)


# ----------------------------------------------------------------------------- input domains

def _unary_float_domain(name: str) -> tuple[float, float]:
    return {
        "sqrt": (0.01, 100.0), "log": (0.01, 100.0), "log2": (0.01, 100.0), "log10": (0.01, 100.0),
        "log1p": (-0.99, 100.0), "arcsin": (-1.0, 1.0), "arccos": (-1.0, 1.0),
        "arccosh": (1.0, 100.0), "arctanh": (-0.99, 0.99), "tan": (-1.4, 1.4),
        "exp": (-9.0, 9.0), "exp2": (-12.0, 12.0), "expm1": (-9.0, 9.0), "sinh": (-9.0, 9.0),
        "cosh": (-9.0, 9.0), "reciprocal": (0.1, 10.0),
    }.get(name, (-10.0, 10.0))


# Unary ufuncs whose integer result wraps or is exact for any integer input: test the full range.
_INT_FULL_RANGE_UNARY = {"negative", "absolute", "sign", "invert", "square", "floor", "ceil", "trunc",
                         "logical_not", "isnan", "isinf", "isfinite", "signbit", "rint"}

_FLOAT_SPECIALS = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 3.0, 0.25, 1e-3, 100.0]


def _unary_input(name: str, dtype: np.dtype, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if dtype.kind == "f":
        lo, hi = _unary_float_domain(name)
        x = sample(rng, dtype, shape, lo, hi)
        if name == "reciprocal":
            x = x * np.where(rng.integers(0, 2, size=shape) == 1, 1, -1).astype(dtype)
        return x
    if dtype.kind in "iu" and name == "reciprocal":
        # reciprocal(0) of an integer is undefined (NumPy gives INT_MIN on x86): avoid 0.
        vals = np.array([1, 2, 3, 100] + ([-1, -2, -3] if dtype.kind == "i" else []), dtype=dtype)
        return rng.choice(vals, size=shape)
    if dtype.kind in "iu" and name in _INT_FULL_RANGE_UNARY:
        return full_range(rng, dtype, shape)
    lo, hi = _unary_float_domain(name)
    return sample(rng, dtype, shape, lo, hi)


def _int_extremes(dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "b":
        return np.array([False, True])
    info = np.iinfo(dtype)
    vals = [info.min, info.min + 1, info.max, info.max - 1, 0, 1, 2, 3, 7]
    if dtype.kind == "i":
        vals += [-1, -2, -3, -7]
    return np.array(vals, dtype=dtype)


def _unary_specials(name: str, dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "f":
        return np.array(_FLOAT_SPECIALS, dtype=dtype)
    if name == "reciprocal" and dtype.kind in "iu":
        return np.array([1, 2, 3] + ([-1, -2] if dtype.kind == "i" else []), dtype=dtype)
    if name in _INT_FULL_RANGE_UNARY or dtype.kind == "b":
        return _int_extremes(dtype)
    return np.array([0, 1, 2, 3, 10, 100], dtype=dtype)


def _binary_inputs(name: str, dtype: np.dtype, shape_a: tuple[int, ...], shape_b: tuple[int, ...],
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    if dtype.kind == "b":
        return sample(rng, dtype, shape_a), sample(rng, dtype, shape_b)
    if dtype.kind == "f":
        if name == "power":
            return sample(rng, dtype, shape_a, 0.1, 4.0), sample(rng, dtype, shape_b, -3.0, 3.0)
        return sample(rng, dtype, shape_a, -10, 10), sample(rng, dtype, shape_b, -10, 10)
    a = full_range(rng, dtype, shape_a)
    if name == "power":
        # Integer power with a negative exponent raises in NumPy; non-negative ones wrap (defined).
        return a, sample(rng, dtype, shape_b, 0, 9)
    if name in ("left_shift", "right_shift"):
        # Shifting by >= the bit width is undefined in C; NumPy's result is platform-specific.
        return a, sample(rng, dtype, shape_b, 0, dtype.itemsize * 8 - 1)
    b = full_range(rng, dtype, shape_b)
    if name in ("floor_divide", "remainder", "fmod"):
        # Division by zero and INT_MIN // -1 are tested separately (in a subprocess).
        b = np.where(b == 0, np.ones_like(b), b)
        if dtype.kind == "i":
            b = np.where(b == -1, np.full_like(b, 3), b)
        # also small divisors, so that quotients are not all 0 / -1
        b = np.where(rng.integers(0, 2, size=b.shape) == 1, sample(rng, dtype, b.shape, 1, 7), b)
    return a, b


def _binary_specials(name: str, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    if dtype.kind == "f":
        v = np.array(_FLOAT_SPECIALS, dtype=dtype)
        return v[:, None], v[None, :]
    if dtype.kind == "b":
        v = np.array([False, True])
        return v[:, None], v[None, :]
    ext = _int_extremes(dtype)
    if name == "power":
        return ext[:, None], np.array([0, 1, 2, 3, 8], dtype=dtype)[None, :]
    if name in ("left_shift", "right_shift"):
        bits = dtype.itemsize * 8
        return ext[:, None], np.array([0, 1, bits // 2, bits - 1], dtype=dtype)[None, :]
    b = ext
    if name in ("floor_divide", "remainder", "fmod"):
        b = ext[(ext != 0) & ((ext != -1) if dtype.kind == "i" else True)]
    return ext[:, None], b[None, :]


def _layout_views(x: np.ndarray) -> dict[str, np.ndarray]:
    """Views of a (6, 10) array with shape (3, 5): transposed, negative strides, strided."""
    return {
        "transposed": x[:5, :3].T,  # (3, 5), F-contiguous-like strides
        "negative": x[::-2, ::-2],  # (3, 5), negative strides in both dims
        "strided": x[1::2, 1:10:2],  # (3, 5), non-contiguous
    }


# ----------------------------------------------------------------------------- unary sweep

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name", UNARY_UFUNCS)
def test_unary_ufunc(name, dtype, backend):
    uf = getattr(np, name)
    rng = _rng(name, dtype)
    x6 = _unary_input(name, dtype, (6, 10), rng)
    views = _layout_views(x6)
    args = (
        _unary_input(name, dtype, (3, 5), rng),  # 2-d contiguous
        _unary_input(name, dtype, (2, 1, 3, 2), rng),  # 4-d with a size-1 dim
        _unary_input(name, dtype, (), rng),  # 0-d array -> NumPy scalar result
        _unary_input(name, dtype, (0, 4), rng),  # size 0
        _unary_input(name, dtype, (7,), rng),  # 1-d
        views["transposed"], views["negative"], views["strided"],
        _unary_specials(name, dtype),
    )

    def f(*xs):
        return tuple(uf(x) for x in xs)

    check(f, *args, backend=backend)  # where NumPy has no loop (TypeError), jitkernel must raise it too


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.int16)], ids=str)
def test_unary_ufunc_numpy_scalar_argument(dtype, backend):
    """A NumPy scalar (np.generic, not a 0-d array) argument gives a NumPy scalar result."""
    x = dtype.type(3)

    def f(x):
        return np.negative(x), np.sqrt(x), np.square(x)
    check(f, x, backend=backend)


# ----------------------------------------------------------------------------- binary sweep

_BINARY_SHAPES = [((3, 5), (3, 5)), ((2, 3, 4), (4,)), ((4, 1), (1, 3)), ((), (3,)), ((0, 3), (3,)),
                  ((2, 1, 3, 1), (1, 4, 1, 2)), ((), ())]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name", BINARY_UFUNCS)
def test_binary_ufunc(name, dtype, backend):
    uf = getattr(np, name)
    rng = _rng(name, dtype)
    args = []
    for sa, sb in _BINARY_SHAPES:
        args += _binary_inputs(name, dtype, sa, sb, rng)
    a6, b6 = _binary_inputs(name, dtype, (6, 10), (6, 10), rng)
    va, vb = _layout_views(a6), _layout_views(b6)
    args += [va["transposed"], vb["negative"], va["negative"], vb["strided"]]
    args += _binary_specials(name, dtype)

    def f(*xs):
        return tuple(uf(xs[i], xs[i + 1]) for i in range(0, len(xs), 2))

    check(f, *args, backend=backend)  # where NumPy has no loop (TypeError), jitkernel must raise it too


_MIXED_UFUNCS = ("add", "subtract", "multiply", "divide", "maximum", "less", "equal", "bitwise_or",
                 "arctan2", "floor_divide")


@pytest.mark.parametrize("dt_b", ALL_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("dt_a", ALL_DTYPES, ids=DTYPE_IDS)
def test_binary_mixed_dtypes(dt_a, dt_b, backend):
    """Promotion between different array dtypes (int8 + uint8 -> int16, int64 + uint64 ->
    float64, float16 + int16 -> float32, ...) for a set of ufuncs."""
    rng = _rng("mixed", dt_a, dt_b)
    a = sample(rng, dt_a, (3, 4), 0, 100)
    b = sample(rng, dt_b, (4,), 1, 100)
    supported, unsupported = [], []
    for name in _MIXED_UFUNCS:
        try:
            numpy_result(getattr(np, name), a, b)
            supported.append(name)
        except TypeError:
            unsupported.append(name)

    def f(a, b):
        return {name: getattr(np, name)(a, b) for name in supported}
    check(f, a, b, backend=backend)
    for name in unsupported:
        with pytest.raises(TypeError):
            jk.jit(lambda a, b: getattr(np, name)(a, b), backend=backend)(a, b)


_DIV_ZERO_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import jitkernel as jk
    sys.path.insert(0, sys.argv[2])
    from helpers import assert_matches_numpy, numpy_result
    backend = sys.argv[1]
    for dt in [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]:
        info = np.iinfo(dt)
        a = np.array([info.min, info.max, 0, 1, 7, info.min, info.min], dtype=dt)
        b = np.array([0, 0, 0, 0, 0, 1, 2], dtype=dt)
        if info.min < 0:  # INT_MIN // -1 overflows: NumPy wraps to INT_MIN (remainder 0)
            a = np.append(a, np.array([info.min, -7, 7], dtype=dt))
            b = np.append(b, np.array([-1, -1, -1], dtype=dt))
        f = lambda a, b: (a // b, a % b, np.fmod(a, b), divmod(a, b), np.floor_divide(a, b[::-1]))
        assert_matches_numpy(jk.jit(f, backend=backend)(a, b), numpy_result(f, a, b))
    print("OK")
""")


def test_integer_division_by_zero(backend):
    """NumPy defines integer x // 0 == 0, x % 0 == 0 and INT_MIN // -1 == INT_MIN. Run in a
    subprocess: a backend that executes a hardware division traps (SIGFPE) and kills the process."""
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run([sys.executable, "-c", _DIV_ZERO_SCRIPT, backend, here], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("OK"), (
        f"exit status {proc.returncode} (negative: killed by that signal)\nstdout:\n{proc.stdout}\n"
        f"stderr:\n{proc.stderr[-4000:]}")


# ----------------------------------------------------------------------------- NEP 50 weak scalars

_WEAK_CASES = [
    # (dtype, python scalar, op)
    ("float32", 2.0, "mul"), ("float32", 2, "add"), ("float32", True, "add"), ("float16", 1.5, "add"),
    ("float16", 3, "mul"), ("int8", 3, "add"), ("int8", -100, "add"), ("int8", 127, "add"),
    ("int8", 1.5, "mul"), ("int8", True, "add"), ("uint8", 255, "add"), ("uint8", 3, "sub"),
    ("uint8", 2.0, "mul"), ("int32", 2, "truediv"), ("int32", 2, "floordiv"), ("int64", 2, "pow"),
    ("uint64", 2**64 - 1, "add"), ("int64", -(2**63), "sub"), ("bool", 1, "add"), ("bool", 1.0, "mul"),
    ("bool", True, "add"), ("float64", 1, "truediv"), ("uint16", 7, "mod"), ("float32", 1e300, "add"),
    ("int16", 3, "lt"), ("float32", 0.1, "eq"), ("uint32", 5, "and"), ("int8", 2, "lshift"),
]
_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
        "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "lt": operator.lt,
        "eq": operator.eq, "and": operator.and_, "lshift": operator.lshift}


@pytest.mark.parametrize("dtype,scalar,op", _WEAK_CASES, ids=[f"{d}-{s!r}-{o}" for d, s, o in _WEAK_CASES])
def test_python_scalar_literal_is_weak(dtype, scalar, op, backend):
    x = sample(_rng("weak", dtype), dtype, (2, 3), 0, 5)
    fn = _OPS[op]
    check(lambda x: fn(x, scalar), x, backend=backend)
    check(lambda x: fn(scalar, x), x, backend=backend)  # reflected


@pytest.mark.parametrize("dtype,scalar,op", _WEAK_CASES, ids=[f"{d}-{s!r}-{o}" for d, s, o in _WEAK_CASES])
def test_python_scalar_argument_is_weak(dtype, scalar, op, backend):
    """A Python scalar passed as an argument promotes like the literal: f(x_f32, 2.0) -> float32."""
    x = sample(_rng("weakarg", dtype), dtype, (2, 3), 0, 5)
    fn = _OPS[op]
    if not isinstance(scalar, bool) and isinstance(scalar, int) and not -2**63 <= scalar < 2**63:
        with pytest.raises(OverflowError):
            jk.jit(fn, backend=backend)(x, scalar)
        return
    check(fn, x, scalar, backend=backend)
    check(lambda s, x: fn(s, x), scalar, x, backend=backend)


def test_weak_scalar_examples(backend):
    x32 = np.linspace(-1, 1, 5, dtype=np.float32)
    x8 = np.arange(-2, 3, dtype=np.int8)
    i32 = np.arange(5, dtype=np.int32)
    assert jk.jit(lambda x: x * 2.0, backend=backend)(x32).dtype == np.float32
    assert jk.jit(lambda x: x + 3, backend=backend)(x8).dtype == np.int8
    assert jk.jit(lambda x: x / 2, backend=backend)(i32).dtype == np.float64
    assert jk.jit(lambda x, s: x * s, backend=backend)(x32, 2.0).dtype == np.float32
    assert jk.jit(lambda x, s: x + s, backend=backend)(x8, 3).dtype == np.int8
    # Two Python scalars: the default dtypes, and a NumPy scalar result.
    check(lambda a, b: a + b, 2, 3.5, backend=backend)
    check(lambda a, b: a * b, 2, 3, backend=backend)
    check(lambda a, b: a & b, True, False, backend=backend)
    check(lambda a: np.sin(a), 0.5, backend=backend)


@pytest.mark.parametrize("dtype,scalar", [("uint8", 300), ("uint8", -1), ("int8", 128), ("int8", -129),
                                          ("int16", 2**15), ("uint64", -1), ("int64", 2**63)])
def test_python_int_out_of_range_overflows(dtype, scalar, backend):
    x = np.arange(3, dtype=dtype)
    with pytest.raises(OverflowError):
        numpy_result(lambda x: x + scalar, x)
    with pytest.raises(OverflowError):
        jk.jit(lambda x: x + scalar, backend=backend)(x)
    with pytest.raises(OverflowError):
        jk.jit(lambda x: np.multiply(scalar, x), backend=backend)(x)


@pytest.mark.parametrize("value", [300, -1])
def test_python_int_argument_out_of_range_overflows(backend, value):
    """A Python int argument is a run-time value: its range is checked on each call against the
    integer dtype it is cast to, as NumPy does, on the first call and on warm calls alike."""
    x = np.arange(3, dtype=np.uint8)
    with pytest.raises(OverflowError):
        numpy_result(lambda x, s: x + s, x, value)
    f = jk.jit(lambda x, s: x + s, backend=backend)
    with pytest.raises(OverflowError, match=f"Python integer {value} out of bounds for uint8"):
        f(x, value)
    check(lambda x, s: x + s, x, 7, backend=backend)
    assert_matches_numpy(f(x, 7), x + 7)  # compiled and warm now
    with pytest.raises(OverflowError, match=f"Python integer {value} out of bounds for uint8"):
        f(x, value)


@pytest.mark.parametrize("scalar", [300, -1, 2**70, -(2**70)])
@pytest.mark.parametrize("cmp", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_comparison_with_out_of_range_python_int(cmp, scalar, backend):
    """NumPy 2 compares integer arrays with out-of-range Python ints by value (no OverflowError)."""
    fn = getattr(operator, cmp)
    x = np.array([0, 1, 200, 255], dtype=np.uint8)
    check(lambda x: fn(x, scalar), x, backend=backend)
    check(lambda x: fn(scalar, x), x, backend=backend)


# ----------------------------------------------------------------------------- operators

_BIN_OPERATORS = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and_", "or_", "xor",
                  "lshift", "rshift", "eq", "ne", "lt", "le", "gt", "ge"]


@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "uint16", "uint64", "float16", "float32", "float64"])
def test_operators(dtype, backend):
    dt = np.dtype(dtype)
    rng = _rng("operators", dt)
    if dt.kind == "f":
        a, b = sample(rng, dt, (3, 4), 0.5, 3), sample(rng, dt, (4,), 0.5, 3)
    elif dt.kind == "b":
        a, b = sample(rng, dt, (3, 4)), sample(rng, dt, (4,))
    else:
        a, b = sample(rng, dt, (3, 4), 0, 100), sample(rng, dt, (4,), 1, 5)
    const = np.arange(1, 5).astype(dt) if dt.kind != "b" else np.array([True, False, True, True])

    for opname in _BIN_OPERATORS:
        op = getattr(operator, opname)
        for fn in (lambda a, b: op(a, b),  # Tracer op Tracer
                   lambda a, b: op(b, a),  # broadcast the other way
                   lambda a, b: op(a, const),  # Tracer op captured ndarray
                   lambda a, b: op(const, a)):  # ndarray op Tracer: reflected through __array_ufunc__
            check(fn, a, b, backend=backend)
    for fn in (lambda a: -a, lambda a: +a, lambda a: abs(a), lambda a: ~a, lambda a: divmod(a, 3),
               lambda a: np.abs(a), lambda a: np.square(a)):
        check(fn, a, backend=backend)


def test_operator_chain_and_reflected_scalars(backend):
    x = np.linspace(0.5, 2, 12, dtype=np.float32).reshape(3, 4)
    y = np.arange(4, dtype=np.int16)
    check(lambda x, y: (2 - x) * (3 / x) + (1 // x) % 2 - 2 ** x + x ** 2 - (x > 1) * y, x, y, backend=backend)
    check(lambda y: (1 - y, 7 // (y + 1), 7 % (y + 1), 2 ** y, 1 << y, 256 >> y, 5 & y, 5 | y, 5 ^ y), y,
          backend=backend)


# ----------------------------------------------------------------------------- where / clip / round

def test_where(backend):
    rng = _rng("where")
    x32 = sample(rng, np.float32, (3, 4))
    x8 = sample(rng, np.int8, (4,))
    u8 = sample(rng, np.uint8, (3, 4), 0, 255)
    m = sample(rng, bool, (3, 1))
    check(lambda x: np.where(x > 0, x, -x), x32, backend=backend)
    check(lambda x, y: np.where(x > 0, x, y), x32, x8, backend=backend)  # f32 + i8 -> f32
    check(lambda x: np.where(x > 0, x, 0), x8, backend=backend)  # weak 0 stays int8
    check(lambda x: np.where(x > 0, 1.0, 2), x8, backend=backend)  # two weak scalars -> float64
    check(lambda x: np.where(x > 0, 1, 2), x8, backend=backend)  # -> int64
    check(lambda m, x: np.where(m, x, 0.5), m, x8, backend=backend)  # broadcast cond, int8 + weak float
    check(lambda x: np.where(x, 1, 0), x8, backend=backend)  # non-bool condition: truthiness
    check(lambda x: np.where(True, x, 2 * x), x32, backend=backend)
    check(lambda x: np.where(x > 100, x, -1), u8, backend=backend)  # NumPy casts -1 unsafely to uint8 here
    check(lambda c, x: np.where(c, x, x[::-1]), np.bool_(True), x32, backend=backend)


def test_clip(backend):
    rng = _rng("clip")
    x32 = sample(rng, np.float32, (3, 4))
    x32[0, 0] = np.nan
    x8 = sample(rng, np.int8, (5,), -100, 100)
    u8 = sample(rng, np.uint8, (5,), 0, 255)
    lo = sample(rng, np.float32, (4,), -5, 0)
    check(lambda x: np.clip(x, -1.0, 1.0), x32, backend=backend)
    check(lambda x: x.clip(0, 5), x32, backend=backend)
    check(lambda x, lo: np.clip(x, lo, 3), x32, lo, backend=backend)
    check(lambda x: np.clip(x, -3, 3), x8, backend=backend)
    check(lambda x: np.clip(x, None, 3), x8, backend=backend)
    check(lambda x: np.clip(x, -3, None), x8, backend=backend)
    check(lambda x: np.clip(x, 1.5, 2.5), x8, backend=backend)
    check(lambda x: np.clip(x, 10, 200), u8, backend=backend)
    check(lambda x: np.clip(x, min=2, max=9), x8, backend=backend)
    check(lambda x: np.clip(x, -1, 3), u8, backend=backend)  # NumPy 2 accepts an out-of-range Python bound
    check(lambda x: np.clip(x, -1, 300), u8, backend=backend)  # both bounds out of range: a copy
    check(lambda x: np.clip(x, -1000, 50), x8, backend=backend)
    check(lambda lo: np.clip(5, lo, 10), lo, backend=backend)  # a weak Python scalar as the clipped value
    check(lambda lo: np.clip(2.5, lo, lo + 1), lo, backend=backend)
    check(lambda a, lo: np.clip(a, lo, 3), 2.5, lo, backend=backend)  # ... also when passed as an argument
    for bad in (lambda x: np.clip(x, 300, 400), lambda x: np.clip(x, -5, -1)):  # bounds that would clip
        check(bad, u8, backend=backend)  # ... raise OverflowError in NumPy, and so in jitkernel


@pytest.mark.parametrize("decimals", [0, 1, 2, 3, -1, -2])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_round_floats(dtype, decimals, backend):
    rng = _rng("round", dtype, decimals)
    x = sample(rng, dtype, (4, 5), -500, 500)
    halves = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.0, -0.0, np.nan, np.inf, -np.inf, 25.0, 35.0, 150.0],
                      dtype=dtype)
    check(lambda x, h: (np.round(x, decimals), np.around(h, decimals), x.round(decimals)), x, halves,
          backend=backend)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint32", "int64"])
def test_round_integers(dtype, backend):
    x = sample(_rng("roundi", dtype), dtype, (6,), -100, 100)
    check(lambda x: (np.round(x), np.round(x, 2), x.round()), x, backend=backend)


def test_round_integer_negative_decimals_unsupported(backend):
    with pytest.raises(jk.UnsupportedOperationError):
        jk.jit(lambda x: np.round(x, -1), backend=backend)(np.arange(5, dtype=np.int32))


# ----------------------------------------------------------------------------- astype

def _astype_source(src: np.dtype, dst: np.dtype, rng: np.random.Generator) -> np.ndarray:
    shape = (3, 5)
    if src.kind == "f" and dst.kind in "iu":
        # float -> int is only defined for values in the target's range (and never for NaN/inf).
        info = np.iinfo(dst)
        lo, hi = max(-100.0, float(info.min)), min(100.0, float(info.max))
        x = sample(rng, src, shape, lo, hi)
        # and values near the ends of the target's range (still inside it once rounded to src),
        # e.g. float64 1.6e19 -> uint64 (above 2**63) and float32 -2.1e9 -> int32
        big = min(float(info.max) * 0.9, float(np.finfo(src).max))
        ends = [big, big / 3] + ([-big, -big / 7] if info.min < 0 else [0.0, 1.0])
        x.flat[:4] = np.array(ends, dtype=np.float64).astype(src)
        assert np.all(x.astype(np.float64) <= info.max) and np.all(x.astype(np.float64) >= info.min)
        return x
    if src.kind == "f":
        x = sample(rng, src, shape, -1000, 1000)
        with np.errstate(over="ignore"):
            x.flat[:6] = np.array([np.nan, np.inf, -np.inf, -0.0, 0.5, 70000.0]).astype(src)
        return x
    return full_range(rng, src, shape)


@pytest.mark.parametrize("src", ALL_DTYPES, ids=DTYPE_IDS)
def test_astype_all_pairs(src, backend):
    rng = _rng("astype", src)
    xs = {str(dst): _astype_source(src, dst, rng) for dst in ALL_DTYPES}

    def f(xs):
        out = {}
        for dst in ALL_DTYPES:
            x = xs[str(dst)]
            out[str(dst)] = x.astype(dst)
            out[str(dst) + "-T"] = x.T.astype(dst)
            out[str(dst) + "-np"] = np.astype(x, dst)
        return out
    check(f, xs, backend=backend)


def test_astype_0d_and_empty(backend):
    check(lambda a, b: (a.astype(np.int16), b.astype(np.float32), a.astype(bool)),
          np.array(3.7, np.float64), np.zeros((0, 3), np.uint8), backend=backend)


# ----------------------------------------------------------------------------- misc ufunc entry points

def test_ufunc_aliases_and_jnp_namespace(backend):
    import jitkernel.numpy as jnp
    x = np.linspace(0.1, 0.9, 6, dtype=np.float32)
    y = np.arange(1, 7, dtype=np.int32)
    check(lambda x, y: (np.true_divide(x, y), np.power(x, 2), np.mod(y, 4), np.absolute(-x),
                        np.arctan2(x, y), np.bitwise_not(y), np.positive(x)), x, y, backend=backend)
    got = jk.jit(lambda x, y: (jnp.acos(x), jnp.atan2(x, y), jnp.pow(x, 3), jnp.abs(-y)), backend=backend)(x, y)
    assert_matches_numpy(got, numpy_result(lambda: (np.arccos(x), np.arctan2(x, y), x ** 3, np.abs(-y))))


def test_ufunc_outer_and_reduce_methods(backend):
    x = np.arange(1, 4, dtype=np.float32)
    y = np.arange(1, 5, dtype=np.float32)
    m = np.arange(12, dtype=np.int32).reshape(3, 4)
    check(lambda x, y: np.multiply.outer(x, y), x, y, backend=backend)
    check(lambda x, y: np.add.outer(x, y), x, y, backend=backend)
    check(lambda m: (np.add.reduce(m), np.maximum.reduce(m, axis=1), np.multiply.reduce(m, axis=None)), m,
          backend=backend)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES[:2], ids=str)
def test_positive_and_bool_positive(dtype, backend):
    x = sample(_rng("positive", dtype), dtype, (4,))
    check(lambda x: np.positive(x), x, backend=backend)


def test_positive_of_bool_raises_typeerror(backend):
    with pytest.raises(TypeError):
        numpy_result(np.positive, np.array([True]))
    with pytest.raises(TypeError):
        jk.jit(lambda x: np.positive(x), backend=backend)(np.array([True]))


# ----------------------------------------------------------------------------- every exported name

import jitkernel.numpy as jnp  # noqa: E402

# One call per non-ufunc name of jitkernel.numpy.__all__, written against a module `m` that is
# numpy (dispatch through __array_function__ inside jit) or jitkernel.numpy (called directly).
_NON_UFUNC_CALLS = {
    "all": lambda m, x, y, i: m.all(x > 0.5, axis=0), "any": lambda m, x, y, i: m.any(x > 0.5, axis=1),
    "amax": lambda m, x, y, i: m.amax(x, axis=1), "amin": lambda m, x, y, i: m.amin(x),
    "max": lambda m, x, y, i: m.max(x, axis=0), "min": lambda m, x, y, i: m.min(i),
    "argmax": lambda m, x, y, i: m.argmax(x, axis=1), "argmin": lambda m, x, y, i: m.argmin(y),
    "mean": lambda m, x, y, i: m.mean(i, axis=0), "prod": lambda m, x, y, i: m.prod(x, axis=1),
    "std": lambda m, x, y, i: m.std(x, ddof=1), "sum": lambda m, x, y, i: m.sum(i, axis=-1),
    "var": lambda m, x, y, i: m.var(y, axis=0),
    "around": lambda m, x, y, i: m.around(x * 10, 1), "round": lambda m, x, y, i: m.round(x * 100, 1),
    "clip": lambda m, x, y, i: m.clip(x, 0.3, 0.6), "where": lambda m, x, y, i: m.where(x > y, x, i),
    "astype": lambda m, x, y, i: m.astype(x * 10, np.int16),
    "atleast_1d": lambda m, x, y, i: m.atleast_1d(x[0, 0]), "atleast_2d": lambda m, x, y, i: m.atleast_2d(x[0]),
    "broadcast_arrays": lambda m, x, y, i: tuple(m.broadcast_arrays(x[:, :1], y[0])),
    "broadcast_to": lambda m, x, y, i: m.broadcast_to(x[0], (2, 3, 4)),
    "concat": lambda m, x, y, i: m.concat([x, y]), "concatenate": lambda m, x, y, i: m.concatenate([x, i], axis=1),
    "expand_dims": lambda m, x, y, i: m.expand_dims(x, 1), "flip": lambda m, x, y, i: m.flip(x, 1),
    "hstack": lambda m, x, y, i: m.hstack([x, y]), "vstack": lambda m, x, y, i: m.vstack([x, y]),
    "stack": lambda m, x, y, i: m.stack([x, y], axis=1), "moveaxis": lambda m, x, y, i: m.moveaxis(x[None], 0, 2),
    "permute_dims": lambda m, x, y, i: m.permute_dims(x, (1, 0)), "ravel": lambda m, x, y, i: m.ravel(x),
    "reshape": lambda m, x, y, i: m.reshape(x, (2, -1)), "squeeze": lambda m, x, y, i: m.squeeze(x[:1]),
    "swapaxes": lambda m, x, y, i: m.swapaxes(x, 0, 1), "transpose": lambda m, x, y, i: m.transpose(x),
    "dot": lambda m, x, y, i: m.dot(x, y.T), "inner": lambda m, x, y, i: m.inner(x, y),
    "outer": lambda m, x, y, i: m.outer(x[0], y[1]), "vdot": lambda m, x, y, i: m.vdot(x, y),
    "arange": lambda m, x, y, i: x + m.arange(4, dtype=np.float32), "eye": lambda m, x, y, i: m.eye(3, 4) @ x.T,
    "full": lambda m, x, y, i: m.full((3, 4), 2, np.int8) + i, "identity": lambda m, x, y, i: m.identity(3) @ x,
    "linspace": lambda m, x, y, i: x * m.linspace(0, 1, 4), "ones": lambda m, x, y, i: x - m.ones(4),
    "zeros": lambda m, x, y, i: x + m.zeros((3, 1), np.float16), "empty": lambda m, x, y, i: m.empty((2, 3)).shape,
    "full_like": lambda m, x, y, i: m.full_like(x, 7), "ones_like": lambda m, x, y, i: m.ones_like(i),
    "zeros_like": lambda m, x, y, i: m.zeros_like(x, dtype=np.uint8), "empty_like": lambda m, x, y, i: m.empty_like(x).shape,
    "copy": lambda m, x, y, i: m.copy(x) + 1,
    "copyto": lambda m, x, y, i: (lambda d: (m.copyto(d, y, where=x > 0.5), d)[1])(x * 1),
    "put": lambda m, x, y, i: (lambda d: (m.put(d, [0, 5, -1], [9.0, 8.0]), d)[1])(x * 1),
    "take": lambda m, x, y, i: m.take(x, i % 5, axis=1, mode="wrap"),
    "take_along_axis": lambda m, x, y, i: m.take_along_axis(x, i % 4, axis=1),
    "put_along_axis": lambda m, x, y, i: (lambda d: (m.put_along_axis(d, i[:, :1] % 4, y[:, :1], 1), d)[1])(x * 1),
    "putmask": lambda m, x, y, i: (lambda d: (m.putmask(d, x > 0.5, y[0]), d)[1])(x * 1),
    "place": lambda m, x, y, i: (lambda d: (m.place(d, x > 0.5, [7.0, 8.0]), d)[1])(x * 1),
    # np.array / np.asarray cannot be overridden for a traced array (NumPy calls __array__):
    # inside jit they exist under jitkernel.numpy only.
    "array": lambda m, x, y, i: (jnp if m is np else m).array([x[0], y[0]]),
    "asarray": lambda m, x, y, i: (jnp if m is np else m).asarray(x, dtype=np.float64),
    "asanyarray": lambda m, x, y, i: m.asanyarray(x, dtype=np.float64),
    "ascontiguousarray": lambda m, x, y, i: m.ascontiguousarray(x.T),
    "asfortranarray": lambda m, x, y, i: m.asfortranarray(x[:, ::2]),
    "atleast_3d": lambda m, x, y, i: m.atleast_3d(x),
    # library functions (tests/test_library_functions.py covers them in depth)
    "sort": lambda m, x, y, i: m.sort(x, axis=0), "argsort": lambda m, x, y, i: m.argsort(i, kind="stable"),
    "partition": lambda m, x, y, i: m.partition(x, 1), "argpartition": lambda m, x, y, i: m.argpartition(y, 2, axis=0),
    "searchsorted": lambda m, x, y, i: m.searchsorted(m.sort(x[0]), y), "cumsum": lambda m, x, y, i: m.cumsum(i, axis=1),
    "cumprod": lambda m, x, y, i: m.cumprod(x), "nancumsum": lambda m, x, y, i: m.nancumsum(x / (x > 0.3)),
    "nancumprod": lambda m, x, y, i: m.nancumprod(y, axis=0),
    "cumulative_sum": lambda m, x, y, i: m.cumulative_sum(i, axis=0, include_initial=True),
    "cumulative_prod": lambda m, x, y, i: m.cumulative_prod(x[0]), "diff": lambda m, x, y, i: m.diff(i, n=2),
    "histogram": lambda m, x, y, i: m.histogram(x, bins=3, weights=y), "bincount": lambda m, x, y, i: m.bincount(i[0], minlength=51),
    "digitize": lambda m, x, y, i: m.digitize(x, np.array([0.2, 0.5, 0.7])),
    "einsum": lambda m, x, y, i: m.einsum("ij,kj->ik", x, y),
    "einsum_path": lambda m, x, y, i: x * len(m.einsum_path("ij,jk,kl->il", x, y.T, x, optimize="greedy")[0]),
    "tensordot": lambda m, x, y, i: m.tensordot(x, y, axes=([1], [1])),
    "convolve": lambda m, x, y, i: m.convolve(x[0], y[1]), "correlate": lambda m, x, y, i: m.correlate(x[0], y[1], "same"),
    "interp": lambda m, x, y, i: m.interp(x, np.array([0.0, 0.5, 1.0]), np.array([1.0, -1.0, 2.0])),
    "unique": lambda m, x, y, i: m.unique(np.array([3, 1, 3])) + x[0, :2],  # on a constant: NumPy's own
    # complex numbers (numpy/_complex.py; tests/test_complex.py has the full coverage)
    "real": lambda m, x, y, i: m.real(x + 1j * y), "imag": lambda m, x, y, i: m.imag(x - 2j * y),
    "angle": lambda m, x, y, i: m.angle(x - 1j * y), "iscomplexobj": lambda m, x, y, i: m.iscomplexobj(x * 1j),
    "isrealobj": lambda m, x, y, i: m.isrealobj(x), "iscomplex": lambda m, x, y, i: m.iscomplex(x + 0j * y),
    "isreal": lambda m, x, y, i: m.isreal(x + 1j * (y > 0.5)),
}


def _ufunc_call(name: str):
    uf = getattr(np, name)
    if name == "matmul":  # a gufunc
        return lambda m, x, y, i: m.matmul(x, y.T)
    if name in ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "invert", "bitwise_not",
                "bitwise_invert", "bitwise_left_shift", "bitwise_right_shift"):
        return lambda m, x, y, i: getattr(m, name)(*([i, i % 5][:uf.nin]))
    return lambda m, x, y, i: getattr(m, name)(*([x, y][:uf.nin]))


# Names exported by jitkernel.numpy's extension modules are covered by those modules' own test
# files (tests/test_array_functions.py, ...); a name listed above is checked here too.
_EXTENSION_NAMES = {n for module in jnp._EXTENSION_MODULES for n in module.__all__} - set(_NON_UFUNC_CALLS)
_CORE_NAMES = sorted(set(jnp.__all__) - _EXTENSION_NAMES)


def test_every_exported_name_is_covered():
    names = set(_CORE_NAMES)
    ufunc_names = {n for n in names if isinstance(getattr(np, n, None), np.ufunc)}
    assert names - ufunc_names == set(_NON_UFUNC_CALLS), (names - ufunc_names) ^ set(_NON_UFUNC_CALLS)


@pytest.mark.parametrize("name", _CORE_NAMES)
def test_every_exported_name(name, backend):
    """Each name of jitkernel.numpy.__all__ matches NumPy both as np.<name> on traced arrays and
    as jitkernel.numpy.<name>."""
    if name == "isnat":  # defined for datetimes only: NumPy's TypeError on every dtype a trace holds
        for fn in (np.isnat, jnp.isnat):
            with pytest.raises(TypeError, match="datetime64"):
                jk.jit(fn, backend=backend)(np.ones(3))
        return
    call = _NON_UFUNC_CALLS.get(name) or _ufunc_call(name)
    rng = rng_for("exported", name)
    x = sample(rng, np.float32, (3, 4), 0.1, 0.9)
    y = sample(rng, np.float32, (3, 4), 0.1, 0.9)
    i = sample(rng, np.int32, (3, 4), 1, 50)
    expected = numpy_result(call, np, x, y, i)
    got = jk.jit(lambda x, y, i: (call(np, x, y, i), call(jnp, x, y, i)), backend=backend)(x, y, i)
    assert_matches_numpy(got, (expected, expected))


def test_numpy_scalar_arguments_are_strong(backend):
    """NumPy scalars are not weak: f(x_f16, np.float32(2)) is float32, as in NumPy."""
    x16 = np.linspace(0, 1, 4, dtype=np.float16)
    x8 = np.arange(4, dtype=np.int8)
    check(lambda x, s: x * s, x16, np.float32(2), backend=backend)
    check(lambda x, s: x + s, x8, np.int64(3), backend=backend)
    check(lambda x, s: x + s, x8, np.uint8(200), backend=backend)
    check(lambda x, s: x / s, x8, np.float16(2), backend=backend)
    check(lambda x: x * np.float64(0.5), x16, backend=backend)
    check(lambda x: np.int16(300) + x, x8, backend=backend)


_CAST_SPECIALS = [np.nan, -np.nan, np.inf, -np.inf, 2.0**63, 2.0**64, 1e19, -2.0**63, -2.0**63 - 4096,
                  2.0**31, -2.0**31 - 1, 2.0**32, 300.0, -300.0, 65536.0, -1.0, -3.7, 1e30, -1e30, 4e9,
                  0.0, -0.0, 0.9, 127.5, -128.5]
_INT_DSTS = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)


def _numpy_one_value_casts(x: np.ndarray, dst: type) -> np.ndarray:
    """NumPy's cast of each element of `x` on its own (a one-element array: NumPy's scalar
    loop). Where NumPy's vector loops disagree with it (float -> uint32 of values outside the
    range), NumPy warns and its answer depends on the element's position in the array."""
    return np.concatenate([x[i:i + 1].astype(dst) for i in range(x.size)])


@pytest.mark.parametrize("backend", ["cpu", "interpret", "cuda-emulator"])
def test_float_to_int_casts_of_special_values(backend):
    """NaN, infinities and out-of-range floats cast to integers give NumPy's (x86's) values.
    LLVM's fptosi/fptoui make them poison, and the CPU backend once gave 2**64 - 1 where NumPy
    gives 2**63 (NaN -> uint64), so np.sum(x, dtype=np.uint64) of a float array with NaN
    differed. The arrays are longer than a vector, and the expected values are NumPy's cast of
    each value on its own, which is also its vector loops' answer except for float -> uint32
    outside the range (there NumPy's answer depends on the position and it warns; -3e9 ->
    1294967296 in a short array, 2**31 in a whole vector block; ir/semantics.float_to_int_plan)."""
    if backend == "cuda-emulator" and shutil.which("g++") is None and shutil.which("c++") is None:
        pytest.skip("backend='cuda-emulator' needs a host C++20 compiler (g++)")
    xs = [np.repeat(np.array(_CAST_SPECIALS).astype(s), 5) for s in (np.float16, np.float32, np.float64)]

    def casts(a, b, c):
        return tuple(x.astype(d) for x in (a, b, c) for d in _INT_DSTS)

    with np.errstate(invalid="ignore", over="ignore"):
        want = tuple(_numpy_one_value_casts(x, d) for x in xs for d in _INT_DSTS)
        vector_loops = casts(*xs)
        got = jk.jit(casts, backend=backend)(*xs)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w, err_msg=f"{xs[k // len(_INT_DSTS)].dtype} -> {w.dtype}")
        if w.dtype != np.uint32:  # NumPy's vector loops agree everywhere else
            np.testing.assert_array_equal(vector_loops[k], w)

"""The programs the CUDA renderer is checked on (tests/test_cuda_render.py compiles them all
with nvcc, tests/test_cuda_emulator.py runs them on the emulator against NumPy): ufuncs over
every dtype, broadcasting and views, reductions over every axis combination, argmax/argmin,
row kernels (softmax, layer norm, variance), float16, integer division by zero, NaN and
signed-zero rules, casts.

Each case is a `Case(name, fn, args, rtol)`; `module_of(case)` is its rendered CUDA module,
exactly as `backend="cuda-emulator"` renders it (same kernel program, same source)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest

import jitkernel as jk
from jitkernel.backends.cuda import nvcc, schedule_program

from helpers import full_range, rng_for, sample

FLOATS = [np.dtype(n) for n in ("float16", "float32", "float64")]
INTS = [np.dtype(n) for n in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")]

UNARY_FLOAT = ["negative", "absolute", "square", "reciprocal", "sign", "sqrt", "exp", "exp2", "log", "log2",
               "log10", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
               "arccosh", "arctanh", "expm1", "log1p", "cbrt", "floor", "ceil", "trunc", "rint", "isnan",
               "isinf", "isfinite", "signbit", "logical_not"]
UNARY_INT = ["negative", "absolute", "invert", "square", "sign", "logical_not", "isnan", "isfinite", "reciprocal"]
BINARY_FLOAT = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "fmod", "power", "maximum",
                "minimum", "fmax", "fmin", "arctan2", "hypot", "copysign", "equal", "not_equal", "less",
                "less_equal", "greater", "greater_equal", "logical_and", "logical_or", "logical_xor"]
BINARY_INT = ["add", "subtract", "multiply", "floor_divide", "remainder", "fmod", "maximum", "minimum",
              "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "equal", "not_equal",
              "less", "greater_equal", "logical_and", "logical_xor"]
AXES = [None, 0, 1, 2, (0, 1), (0, 2), (1, 2)]


@dataclass
class Case:
    name: str
    fn: Callable[..., Any]
    args: tuple
    rtol: float | None = None  # None: the dtype's default (tests/helpers.py FLOAT_TOL)
    zero_signs: bool = False  # also compare the sign of every zero (NumPy's max/min tie rule)

    def __repr__(self) -> str:
        return self.name


def _specials(dt: np.dtype, n: int, rng: np.random.Generator) -> np.ndarray:
    base = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -3.5, 1e-3, 0.999, -2.0])
    rest = rng.uniform(-4, 4, n - len(base))
    return np.concatenate([base, rest]).astype(dt)


def _ints(dt: np.dtype, n: int, rng: np.random.Generator) -> np.ndarray:
    info = np.iinfo(dt)
    base = np.array([0, 1, 2, 3, info.max, info.min, info.max - 1] + ([-1, -2, -7] if dt.kind == "i" else [7, 9, 11]),
                    dtype=dt)
    return np.concatenate([base, full_range(rng, dt, (n // 2,)),
                           sample(rng, dt, (n - len(base) - n // 2,), -9, 9)])


def _ufuncs(names: list[str]) -> Callable:
    fns = [getattr(np, n) for n in names]

    def f(*xs):
        return tuple(u(*xs) for u in fns)
    return f


def _unary_cases() -> list[Case]:
    out = []
    for dt in FLOATS:
        x = _specials(dt, 40, rng_for("cuda-unary", dt))
        out.append(Case(f"unary-{dt}", _ufuncs(UNARY_FLOAT), (x,)))
    for dt in INTS:
        x = _ints(dt, 40, rng_for("cuda-unary", dt))
        out.append(Case(f"unary-{dt}", _ufuncs(UNARY_INT), (x,)))
    b = np.array([True, False, True, True, False])
    out.append(Case("unary-bool", _ufuncs(["logical_not", "invert", "absolute", "isnan", "square"]), (b,)))
    return out


def _binary_cases() -> list[Case]:
    out = []
    for dt in FLOATS:
        rng = rng_for("cuda-binary", dt)
        x = _specials(dt, 30, rng)
        x, y = np.repeat(x, 30), np.tile(x, 30)  # every pair of special values
        out.append(Case(f"binary-{dt}", _ufuncs(BINARY_FLOAT), (x, y)))
    for dt in INTS:
        rng = rng_for("cuda-binary", dt)
        x = _ints(dt, 24, rng)
        x, y = np.repeat(x, 24), np.tile(x, 24)  # division by zero, MIN // -1, shifts by >= width
        out.append(Case(f"binary-{dt}", _ufuncs(BINARY_INT), (x, y)))
        e = sample(rng, dt, (x.size,), 0, 9)
        out.append(Case(f"power-{dt}", np.power, (x, e)))
    b = np.array([True, False, True, False]), np.array([True, True, False, False])
    out.append(Case("binary-bool", _ufuncs(["add", "multiply", "maximum", "minimum", "bitwise_xor",
                                            "logical_and", "less", "equal"]), b))
    return out


def _layout_cases() -> list[Case]:
    rng = rng_for("cuda-layout")
    a = rng.standard_normal((3, 1, 5)).astype(np.float32)
    b = rng.standard_normal((4, 1)).astype(np.float32)
    m = rng.standard_normal((6, 10))
    i = rng.integers(-5, 5, (6, 10)).astype(np.int32)
    return [
        Case("broadcast-3d", lambda a, b: a + b * 2, (a, b)),
        Case("transpose-slice", lambda m: m.T[::2, 1:] * 3 - m[1:, ::3].T.sum(), (m,)),
        Case("reshape", lambda m: (m.reshape(3, 20) + 1).reshape(60)[::-7], (m,)),
        Case("where-promote", lambda m, i: np.where(m > 0, m, i) + i / 3, (m, i)),
        Case("iota", lambda m: m * np.arange(10) + np.arange(6)[:, None], (m,)),
        Case("scalar-0d", lambda m: np.float64(2.5) * m[2, 3] + m, (m,)),
    ]


def _reduce_cases() -> list[Case]:
    out = []
    for dt in [np.dtype(n) for n in ("float32", "float64", "int32", "uint8", "float16")]:
        rng = rng_for("cuda-reduce", dt)
        x = sample(rng, dt, (3, 4, 5), -3, 3) if dt.kind != "u" else sample(rng, dt, (3, 4, 5), 0, 250)
        for axis in AXES:
            def f(x, axis=axis):
                out = (x.sum(axis=axis), x.max(axis=axis), x.min(axis=axis), x.prod(axis=axis))
                return out + ((x.mean(axis=axis),) if x.dtype.kind == "f" else ())  # trailing axes: row kernels
            out.append(Case(f"reduce-{dt}-axis{axis}", f, (x,), rtol=2e-3 if dt == np.float16 else 1e-5))
    b = rng_for("cuda-reduce-bool").integers(0, 2, (3, 4, 5)).astype(bool)
    for axis in AXES:
        out.append(Case(f"reduce-bool-axis{axis}", lambda x, axis=axis: (x.any(axis=axis), x.all(axis=axis),
                                                                       x.sum(axis=axis)), (b,)))
    rng = rng_for("cuda-reduce-big")
    big = rng.standard_normal(3000).astype(np.float32)
    rows = rng.standard_normal((7, 300))
    out += [
        Case("sum-tanh-fused", lambda a, b, c: np.sum(np.tanh(a * b + c)), (big, big[::-1].copy(), big * 0.5),
             rtol=1e-5),
        Case("whole-and-elementwise", lambda a: (a.max(), np.sin(a) * 2, a.argmin()), (big,)),
        Case("long-rows", lambda r: (r.sum(axis=1), r.max(axis=1), np.argmax(r, axis=1), (r * r).sum(axis=0)),
             (rows,)),
        Case("column-kinds", lambda t, w: (t.sum(axis=0), np.argmax(t, axis=0), t.max(axis=0), w.sum(axis=0),
                                           w.min(axis=(0, 1)), w.prod(axis=0)),
             (rng.standard_normal((300, 7)), rng.integers(-3, 4, (3, 70, 5)).astype(np.int16))),
        Case("empty", lambda x: (x.sum(), x.sum(axis=0), x.prod(axis=1), x.any(axis=0), x + 1, x.T.sum(axis=1)),
             (np.ones((0, 3), np.float32),)),
        Case("traced-index", lambda x, i, j: (x[i] * 2, x[i, j] + x[j, i], x[-i, 1:4].sum()),
             (rng.standard_normal((5, 6)), 2, -1)),
        Case("zero-d", lambda x, y: (x * y + 1, np.sin(x), (x > y).astype(np.int8)), (np.float64(2.0), np.array(3.0))),
        Case("int-wrap-sum", lambda x: (x.sum(dtype=np.int8), (x * x).sum(), x.prod(axis=1)),
             (rng.integers(-100, 100, (5, 40)).astype(np.int8),)),
    ]
    return out


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm(x, g, b):
    m = x.mean(axis=-1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * g + b


def _row_cases() -> list[Case]:
    rng = rng_for("cuda-rows")
    x = rng.standard_normal((9, 130)).astype(np.float32)
    g, b = rng.standard_normal(130).astype(np.float32), rng.standard_normal(130).astype(np.float32)
    x3 = rng.standard_normal((3, 4, 50))
    return [
        Case("softmax", softmax, (x,), rtol=1e-5),
        Case("layer-norm", layer_norm, (x, g, b), rtol=1e-4),
        Case("softmax-float16", softmax, (x[:, :40].astype(np.float16),), rtol=1e-2),
        Case("var-std-center", lambda x: (x.var(axis=-1), x.std(axis=(1, 2)), x - x.mean(axis=1, keepdims=True),
                                          np.argmax(x - x.mean(axis=-1, keepdims=True), axis=-1)), (x3,)),
    ]


def _arg_cases() -> list[Case]:
    out = []
    for dt in [np.dtype(n) for n in ("float16", "float32", "float64", "int64", "uint16")]:
        rng = rng_for("cuda-arg", dt)
        x = sample(rng, dt, (6, 70), 0, 5)  # few distinct values: many ties
        if dt.kind == "f":
            x[1, 5] = x[1, 9] = np.nan
            x[2, :] = np.nan
            x[4, 60] = np.inf
            x[5, :] = -np.inf
            x[5, 3] = np.nan

        def f(x):
            return (np.argmax(x), np.argmin(x), np.argmax(x, axis=0), np.argmin(x, axis=0),
                    np.argmax(x, axis=1), np.argmin(x, axis=1), x.max(axis=1), x.min(axis=0))
        out.append(Case(f"arg-{dt}", f, (x,)))
    return out


def _nan_and_zero_cases() -> list[Case]:
    out = []
    for dt in FLOATS:
        z = np.array([[0.0, -0.0, 0.0, -0.0], [-0.0, 0.0, -0.0, 0.0], [-0.0, -0.0, -0.0, -0.0],
                      [0.0, -0.0, -1.0, -0.0], [np.nan, 0.0, np.nan, 1.0]] * 20, dtype=dt)

        def f(z):
            return (z.max(axis=1), z.min(axis=1), z.max(axis=0), z[:4].max(), z[:4].min(),
                    np.maximum(z, z[::-1]), np.minimum(z, z[::-1]), np.fmax(z, 0.5), z.max())
        out.append(Case(f"nan-zero-{dt}", f, (z,), zero_signs=True))
    return out


def _cast_cases() -> list[Case]:
    rng = rng_for("cuda-cast")
    halfway = np.array([1 + 2.0 ** -11 + 2.0 ** -40, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 65519.9, 65520.0,
                        -2.0 ** -25, 2.0 ** -24 * 1.5, 1e-8, 70000.0, np.nan, -np.inf, -0.0])
    x = np.concatenate([halfway, rng.uniform(-100, 100, 20)])
    small = rng.uniform(-120, 120, 32)
    big_i = np.array([2 ** 62 + 1, -(2 ** 62) - 3, 65519, 65521, 2 ** 24 + 1, -7, 0], np.int64)
    u = np.array([2 ** 64 - 1, 2 ** 63 + 2 ** 11 + 1, 5, 0], np.uint64)
    dts = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32]
    return [
        Case("cast-f64-to-f16", lambda x: (x.astype(np.float16), x.astype(np.float32), x.astype(bool)), (x,)),
        Case("cast-float-to-int", lambda s: tuple(s.astype(d) for d in dts) + (np.abs(s).astype(np.uint64),
                                                                            s.astype(np.float16).astype(np.int32)),
             (small,)),
        Case("cast-int-to-float", lambda i, u: (i.astype(np.float16), i.astype(np.float32), i.astype(np.float64),
                                                u.astype(np.float64), u.astype(np.float32), i.astype(np.int8),
                                                u.astype(np.int16), (i > 0).astype(np.float32)), (big_i, u)),
        Case("float16-chain", lambda h: (h * h + h / 3 - 1, np.sqrt(np.abs(h)) * 1e4, h.sum(), h.mean()),
             (rng.uniform(-3, 3, 50).astype(np.float16),), rtol=5e-3),
    ]


def all_cases() -> list[Case]:
    return (_unary_cases() + _binary_cases() + _layout_cases() + _reduce_cases() + _row_cases() + _arg_cases()
            + _nan_and_zero_cases() + _cast_cases())


def kernel_program_for(fn: Callable, *args: Any):
    """The kernel program `backend="cuda-emulator"` renders for fn(*args) (nothing compiled)."""
    compiled = jk.jit(fn, backend="interpret").lower(*args).compiled
    return schedule_program(compiled.optimized, "corpus")  # as the cuda backends schedule


def module_for(fn: Callable, *args: Any) -> tuple:
    """(kernel program, rendered CudaModule) of fn(*args): what emulator.prebuild takes."""
    from jitkernel.backends.cuda.render import render_program
    kp = kernel_program_for(fn, *args)
    return kp, render_program(kp)


def kernel_program(case: Case):
    return kernel_program_for(case.fn, *case.args)


def module_of(case: Case):
    return module_for(case.fn, *case.args)[1]


needs_nvcc = pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc is not on PATH (set NVCC=/path/to/nvcc)")


def assert_compiles_with_nvcc(modules: list) -> bytes:
    """One nvcc run (sm_90, ptxas -O0: the check is the source) over the distinct translation
    units of `modules` (include guards let them share one file); the cubin holds every launch's
    kernel, nested ones (loops, library steps) included."""
    from jitkernel.backends.cuda import flow
    distinct = list({m.tag: m for m in modules}.values())  # cases of one program render one source
    source = distinct[0].prelude + "\n".join(m.kernels for m in distinct)
    cubin = nvcc.cubin(source, options=("-Xptxas", "-O0"))
    assert cubin[:4] == b"\x7fELF"
    for m in distinct:
        for launch in flow.iter_launches(m.launches):
            assert launch.name.encode() in cubin, launch.name
    return cubin


def assert_zero_signs(got: Any, expected: Any) -> None:
    """Every zero of `expected` has the same sign in `got` (leaf by leaf)."""
    if isinstance(expected, tuple):
        for g, e in zip(got, expected):
            assert_zero_signs(g, e)
        return
    e, g = np.asarray(expected), np.asarray(got)
    if e.dtype.kind == "f":
        zero = e == 0
        np.testing.assert_array_equal(np.signbit(g[zero]), np.signbit(e[zero]))


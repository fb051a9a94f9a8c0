"""The NumPy decisions written once in backends/semantic_rules.py, checked on every backend that
translates them (cpu: LLVM, interpret: the NumPy reference interpreter, cuda-emulator: the
rendered CUDA C on the host) against NumPy, at the values where they decide something (MIN, -1,
0, NaN, infinities, signed zeros, shifts by >= the width), and shown to be read by both
renderers: a rule changed in semantic_rules changes both backends' answers."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import jitkernel as jk
from cuda_corpus import Case, assert_compiles_with_nvcc, assert_zero_signs, module_of, needs_nvcc
from helpers import assert_matches_numpy, numpy_result
from jitkernel.backends import semantic_rules
from jitkernel.backends.cuda import emulator

HAVE_CXX = shutil.which("g++") is not None or shutil.which("c++") is not None
BACKENDS = ["cpu", "interpret", pytest.param("cuda-emulator", marks=pytest.mark.skipif(
    not HAVE_CXX, reason="backend='cuda-emulator' needs a host C++20 compiler (g++)"))]
INTS = [np.dtype(n) for n in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")]
FLOATS = [np.dtype(n) for n in ("float16", "float32", "float64")]
N = 24


def int_rules(x, y, e):
    """Every shared integer rule; `e` holds non-negative exponents."""
    return (x // y, x % y, np.fmod(x, y), x << y, x >> y, x ** e, np.sign(x), np.reciprocal(x))


def float_rules(x, y):
    # fmax/fmin are not here: NumPy's own loops disagree on equal zeros between an array's SIMD
    # body and its tail (test_cuda_ufunc_values.py checks them on arrays NumPy treats alike)
    return x // y, x % y, np.maximum(x, y), np.minimum(x, y), np.sign(x)


def _int_args(dt: np.dtype) -> tuple:
    return np.zeros(N, dt), np.ones(N, dt), np.ones(N, dt)


def _rule_cases() -> list[Case]:
    cases = [Case(f"int-{dt}", int_rules, _int_args(dt)) for dt in INTS]
    return cases + [Case(f"float-{dt}", float_rules, (np.zeros(N, dt), np.ones(N, dt))) for dt in FLOATS]


@pytest.fixture(scope="module", autouse=True)
def prebuilt() -> None:
    """One host-compiler run for every emulated program of the module."""
    if HAVE_CXX:
        emulator.prebuild([module_of(c) for c in _rule_cases()])


@needs_nvcc
def test_the_rules_as_cuda_compile_with_nvcc() -> None:
    """Every rule's C helper for every dtype (the 64-step integer power included), in one
    translation unit as the emulator bundles them (include guards), compiles for sm_90."""
    modules = [module_of(c) for c in _rule_cases()]
    source = modules[0].prelude + "\n".join(m.kernels for m in modules)
    for prim in ("floor_divide", "remainder", "fmod", "left_shift", "right_shift", "power", "sign", "reciprocal"):
        assert all(f"jk_{prim}_{dt.name}(" in source for dt in INTS), prim
    assert_compiles_with_nvcc(modules)


@pytest.fixture(scope="module")
def compiled():
    """jk.jit objects per (rules, backend), compiled once for the module."""
    cache: dict = {}
    yield lambda fn, backend: cache.setdefault((fn, backend), jk.jit(fn, backend=backend))
    cache.clear()


def _int_values(dt: np.dtype) -> st.SearchStrategy:
    info = np.iinfo(dt)
    width = 8 * dt.itemsize
    special = [0, 1, 2, info.min, info.max, info.min + 1, width - 1, width, width + 1, 3 * width]
    if dt.kind == "i":
        special += [-1, -2, -width]
    return st.one_of(st.sampled_from(special), st.integers(int(info.min), int(info.max)))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", INTS, ids=str)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_integer_rules_match_numpy(dt: np.dtype, backend: str, compiled, data) -> None:
    """//, %, fmod by 0 and MIN by -1, shifts by >= the width and by negative amounts, power
    (wrapping), sign and reciprocal (1 / 0 included), for any values of every integer dtype."""
    x = data.draw(hnp.arrays(dt, N, elements=_int_values(dt)))
    y = data.draw(hnp.arrays(dt, N, elements=_int_values(dt)))
    e = data.draw(hnp.arrays(dt, N, elements=st.integers(0, 8 * dt.itemsize + 3)))
    assert_matches_numpy(compiled(int_rules, backend)(x, y, e), numpy_result(int_rules, x, y, e))


_FLOAT_SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -3.0, 7.5, 1e-3, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dt", FLOATS, ids=str)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_float_rules_match_numpy(dt: np.dtype, backend: str, compiled, data) -> None:
    """npy_divmod's // and % (signs of zero results, x // 0, x % 0, infinities), NaN-propagating
    maximum/minimum with NumPy's rule for equal zeros, sign of NaN and of zeros: results and the
    sign of every zero as NumPy's."""
    big = float(np.finfo(dt).max)
    elems = st.one_of(st.sampled_from(_FLOAT_SPECIALS),
                      st.floats(-big, big, allow_nan=False, width=8 * dt.itemsize))
    x = data.draw(hnp.arrays(dt, N, elements=elems))
    y = data.draw(hnp.arrays(dt, N, elements=elems))
    got, expected = compiled(float_rules, backend)(x, y), numpy_result(float_rules, x, y)
    assert_matches_numpy(got, expected, rtol=0.0, atol=0.0)
    assert_zero_signs(got, expected)


@pytest.mark.parametrize("backend", BACKENDS)
def test_negative_integer_power_raises_numpys_value_error(backend: str) -> None:
    x, e = np.array([2, 3, 4], np.int32), np.array([1, -1, 2], np.int32)
    with pytest.raises(ValueError, match="Integers to negative integer powers are not allowed"):
        jk.jit(lambda a, b: a ** b, backend=backend)(x, e)


@pytest.mark.parametrize("dt", INTS + FLOATS, ids=str)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_rules_run_in_python_agree_with_numpy(dt: np.dtype, data) -> None:
    """The rules themselves, run on NumPy scalars (semantic_rules.PythonOps): the reference the
    translators are checked against is the rule, and the rule is NumPy's."""
    elems = _int_values(dt) if dt.kind in "iu" else st.sampled_from(_FLOAT_SPECIALS)
    x, y = data.draw(elems), data.draw(elems)
    x, y = dt.type(x), dt.type(y)
    table = semantic_rules.INT_RULES if dt.kind in "iu" else semantic_rules.FLOAT_RULES
    for prim, (_, binary) in table.items():
        if prim == "power" and (y < 0 or y > 70):
            continue
        g = semantic_rules.PythonOps(dt)
        rule = semantic_rules.rule_for(prim, dt)
        with np.errstate(all="ignore"):
            got = rule(g, x, y) if binary or prim == "power" else rule(g, x)
            ufunc = {"fmod": np.fmod}.get(prim, getattr(np, prim))
            expected = ufunc(x, y) if binary or prim == "power" else ufunc(x)
            if prim in ("fmax", "fmin"):  # NumPy's scalar loop calls libm (which keeps +0.0 of equal
                expected = ufunc(np.full(32, x), np.full(32, y))[0]  # zeros): the rule is its array loop's
        got = dt.type(got)
        if dt.kind == "f" and dt.itemsize == 2:
            got = np.float16(got)
        assert (np.isnan(got) and np.isnan(expected)) or (got == expected and np.signbit(got) == np.signbit(expected)), \
            (prim, x, y, got, expected)


_BROKEN_RULES = r"""
import numpy as np, jitkernel as jk
from jitkernel.backends import semantic_rules as sr

# every shared rule answers NumPy's result plus one: a rule read by a backend changes its answer
def plus_one(rule):
    def broken(g, *args):
        return g.add(rule(g, *args), g.const(1))
    return broken
for fn in {fn for table in (sr.INT_RULES, sr.FLOAT_RULES) for fn, _ in table.values()}:
    setattr(sr, fn.__name__, plus_one(fn))

cases = {
    "int32": (lambda x, y, e: (x // y, x % y, np.fmod(x, y), x << y, x >> y, x ** e, np.sign(x), np.reciprocal(x)),
              (np.array([7, -7, -2**31, 5], np.int32), np.array([2, 0, -1, 40], np.int32),
               np.array([3, 0, 1, 2], np.int32))),
    "float64": (lambda x, y: (x // y, x % y, np.maximum(x, y), np.minimum(x, y), np.sign(x), np.fmax(x, y),
                              np.fmin(x, y)),
                (np.array([7.5, -7.5, np.nan, 0.0]), np.array([2.0, 0.5, 1.0, -0.0]))),
}
for name, (fn, args) in cases.items():
    with np.errstate(all="ignore"):
        expected = fn(*args)
    for backend in BACKENDS:
        got = jk.jit(fn, backend=backend)(*args)
        for k, (g, e) in enumerate(zip(got, expected)):
            ok = np.array_equal(np.asarray(g), e + e.dtype.type(1), equal_nan=True)
            print(name, backend, k, "changed" if ok else f"NOT CHANGED {g} vs {e}")
"""


@pytest.mark.skipif(not HAVE_CXX, reason="the CUDA side runs on the emulator, which needs g++")
def test_each_shared_rule_is_read_by_both_backends(tmp_path) -> None:
    """In a fresh interpreter every rule of semantic_rules is replaced by one answering NumPy's
    result plus one; the CPU backend and the rendered CUDA C (on the emulator) both answer plus
    one for every rule: neither keeps a copy of its own. The interpreter runs NumPy itself and
    does not change (it is the reference)."""
    script = "BACKENDS = ['cpu', 'cuda-emulator']\n" + textwrap.dedent(_BROKEN_RULES)
    env = {**os.environ, "JITKERNEL_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 * (8 + 7), proc.stdout
    assert all(line.endswith("changed") for line in lines), proc.stdout

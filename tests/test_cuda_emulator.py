"""backend="cuda-emulator": the CUDA translation unit of each program, compiled for the host
with the shim header and run on NumPy arrays, must match NumPy (dtype, shape, values; the sign
of zeros where NumPy's tie rules decide it). Every program of the module is compiled in one
host-compiler run (emulator.prebuild), so the module costs one build, not one per program."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import jitkernel as jk
from cuda_corpus import Case, all_cases, assert_zero_signs, kernel_program, module_of
from helpers import assert_matches_numpy, numpy_result
from jitkernel.backends.cuda import emulator
from jitkernel.backends.cuda.render import render_program

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="backend='cuda-emulator' needs a host C++20 compiler (g++)")

CASES = all_cases()
INT_DIV_DTYPES = [np.dtype(n) for n in ("int8", "int32", "int64", "uint32")]


def int_division(x, y):
    return x // y, x % y, np.fmod(x, y)


def rows_max_min_arg(z):
    return (z.max(axis=1), z.min(axis=1), np.argmax(z, axis=1), np.argmin(z, axis=1), z.max(), z.min(),
            np.argmax(z), np.argmin(z))


def _hypothesis_cases() -> list[Case]:
    out = [Case(f"intdiv-{dt}", int_division, (np.zeros(64, dt), np.ones(64, dt))) for dt in INT_DIV_DTYPES]
    out += [Case(f"maxmin-{dt}", rows_max_min_arg, (np.zeros((5, 40), dt),)) for dt in ("float16", "float32")]
    return out


@pytest.fixture(scope="module", autouse=True)
def prebuilt() -> None:
    emulator.prebuild([module_of(c) for c in CASES + _hypothesis_cases()])


def run(fn, *args):
    return jk.jit(fn, backend="cuda-emulator")(*args)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_corpus_matches_numpy(case: Case) -> None:
    got = run(case.fn, *case.args)
    expected = numpy_result(case.fn, *case.args)
    assert_matches_numpy(got, expected, rtol=case.rtol)
    if case.zero_signs:
        assert_zero_signs(got, expected)


@pytest.mark.parametrize("dt", INT_DIV_DTYPES, ids=str)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_integer_division_by_zero_and_overflow(dt: np.dtype, data) -> None:
    """x // 0 == x % 0 == 0, MIN // -1 == MIN, Python's sign rule: for any int arrays."""
    info = np.iinfo(dt)
    special = st.sampled_from([0, 1, -1 if dt.kind == "i" else 2, info.min, info.max])
    elems = st.one_of(special, st.integers(int(info.min), int(info.max)))
    x = data.draw(hnp.arrays(dt, 64, elements=elems))
    y = data.draw(hnp.arrays(dt, 64, elements=elems))
    assert_matches_numpy(run(int_division, x, y), numpy_result(int_division, x, y))


@pytest.mark.parametrize("dt", ["float16", "float32"])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_max_min_arg_rules(dt: str, cpu_reference, data) -> None:
    """NaN propagation and first-index argmax/argmin as NumPy, whatever the mix of NaN,
    infinities, signed zeros and ties in the rows; which zero a max/min reduction keeps as the
    CPU backend (NumPy's rule applied in order: ir/semantics.py). NumPy's own answer for
    the sign of a zero maximum of a long contiguous row depends on its SIMD loops (docs/gpu.md)."""
    elems = st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0, np.inf, -np.inf, np.nan])
    z = data.draw(hnp.arrays(np.dtype(dt), (5, 40), elements=elems))
    got, expected = run(rows_max_min_arg, z), numpy_result(rows_max_min_arg, z)
    assert_matches_numpy(got, expected)
    assert_zero_signs(got, cpu_reference(z))


@pytest.fixture(scope="module")
def cpu_reference():
    f = jk.jit(rows_max_min_arg)  # compiled once for the module, freed with it (not at exit)
    yield f
    del f


def _programs(case: Case, policies: list[emulator.LaunchPolicy]) -> list:
    kp = kernel_program(case)
    module = render_program(kp)
    lib = emulator.library(module)
    return [emulator.EmulatedProgram(kp, module, lib, p) for p in policies]


@pytest.mark.parametrize("name", ["long-rows", "whole-and-elementwise", "arg-float32", "reduce-int32-axis(0, 2)",
                                  "nan-zero-float32", "sum-tanh-fused", "layer-norm", "var-std-center"])
def test_results_do_not_depend_on_the_launch_shape(name: str) -> None:
    """Any block size that is a multiple of 32 and any grid give NumPy's answer (the kernels
    have no inter-block communication and no assumption on blockDim)."""
    case = next(c for c in CASES if c.name == name)
    expected = numpy_result(case.fn, *case.args)
    expected = expected if isinstance(expected, tuple) else (expected,)
    policies = [emulator.LaunchPolicy(32, 1), emulator.LaunchPolicy(96, 7), emulator.LaunchPolicy(256, 2)]
    for program in _programs(case, policies):
        outs = tuple(o[()] if o.ndim == 0 else o for o in program(list(case.args)))
        assert_matches_numpy(outs, expected, rtol=case.rtol)
        assert_zero_signs(outs, expected)


def test_whole_reductions_are_deterministic() -> None:
    """Two-stage reductions, no atomics: the same input and launch shape give the same bits."""
    case = next(c for c in CASES if c.name == "sum-tanh-fused")
    (program,) = _programs(case, [emulator.LaunchPolicy(64, 5)])
    first = program(list(case.args))[0].tobytes()
    assert all(program(list(case.args))[0].tobytes() == first for _ in range(3))


def test_negative_integer_power_raises_like_numpy() -> None:
    x = np.arange(4, dtype=np.int64)
    with pytest.raises(ValueError, match="Integers to negative integer powers are not allowed"):
        np.power(x, np.array([1, -1, 2, 3]))
    with pytest.raises(ValueError, match="Integers to negative integer powers are not allowed"):
        run(np.power, x, np.array([1, -1, 2, 3]))


@pytest.mark.parametrize("index", [4, -5, 10**12])
def test_traced_index_out_of_bounds_raises_numpys_index_error(index: int) -> None:
    x = np.arange(12.0).reshape(4, 3)
    with pytest.raises(IndexError) as expected:
        x[index]
    with pytest.raises(IndexError, match=f"^{expected.value}$"):
        run(lambda x, i: x[i], x, index)


def test_arguments_are_not_modified_and_a_returned_argument_is_the_callers_array() -> None:
    x = np.arange(6.0)
    out = run(lambda a: a, x)
    assert np.shares_memory(out, x) and np.array_equal(out, x)  # NumPy's `f(x) is x`: the same memory
    y = run(lambda a: a * 2, x)
    assert np.array_equal(x, np.arange(6.0)) and np.array_equal(y, 2 * x)


def test_compile_error_names_the_compiler_and_saves_the_source(tmp_path) -> None:
    bad = render_program(kernel_program(CASES[0]))
    bad.kernels += "\nthis is not C++;\n"
    bad.tag = "broken"
    with pytest.raises(jk.CompileError, match=r"host compiler rejected .*\(saved at "):
        emulator.library(bad, disk_cache=False)


def test_jit_cell_magic_runs_on_the_emulator(tmp_path, monkeypatch, capsys) -> None:
    """`%%jit -b cuda-emulator` and `%jit_ir --stage cuda` in a notebook."""
    interactive = pytest.importorskip("IPython.core.interactiveshell")
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(tmp_path / "cache"))
    backend = jk.config.default_backend
    shell = interactive.InteractiveShell.instance()
    try:
        assert shell.extension_manager.load_extension("jitkernel") is None
        shell.run_cell("import numpy as np")
        assert shell.run_cell("%%jit -b cuda-emulator\ndef k(v):\n    return np.sin(v).sum(), v.max()\n").success
        got = shell.run_cell("k(np.arange(100.0))").result
        np.testing.assert_allclose(got, (np.sin(np.arange(100.0)).sum(), 99.0), rtol=1e-12)
        assert shell.run_cell("%jit_ir k --stage cuda").success
        assert 'extern "C" __global__ void jk_' in capsys.readouterr().out
    finally:
        shell.extension_manager.unload_extension("jitkernel")
        interactive.InteractiveShell.clear_instance()
        jk.config.update("default_backend", backend)


def test_a_missing_barrier_gives_a_wrong_answer_not_a_silent_pass() -> None:
    """The emulator checks synchronisation: without the barrier between the warps' shared
    writes and warp 0's reads, the row sums come out wrong (deterministically)."""
    case = next(c for c in CASES if c.name == "long-rows")
    kp = kernel_program(case)
    module = render_program(kp)
    expected = numpy_result(case.fn, *case.args)
    first = module.kernels.index("    __syncthreads();\n")
    module.kernels = module.kernels[:first] + module.kernels[first:].replace("    __syncthreads();\n", "\n", 1)
    module.tag += "_no_barrier"
    program = emulator.EmulatedProgram(kp, module, emulator.library(module), emulator.LaunchPolicy())
    got = program(list(case.args))[0]
    assert not np.allclose(got, expected[0])

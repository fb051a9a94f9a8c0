"""The emulator's batch build and the suite's dry run with stand-ins (emulator.batch_build,
emulator.record_modules(stand_in=True), emulator.StandInProgram, tests/emulator_suite.py): a test runs on through all of its programs
in one pass without a compiler run, every program it builds is prebuilt before the real run,
and a stand-in never answers for the emulator outside the dry run."""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

import jitkernel as jk
from jitkernel.backends.cuda import emulator

pytest_plugins = ["pytester"]

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="backend='cuda-emulator' needs a host C++20 compiler (g++)")


def _no_compiler(*args, **kwargs):
    raise AssertionError("the host compiler ran")


def test_stand_in_pass_records_every_program_without_a_compiler_run(monkeypatch) -> None:
    x = np.linspace(-2, 2, 7, dtype=np.float32)
    fns = [lambda a: a * 3 - 1, lambda a: np.tanh(a).sum(), lambda a: (a > 0, a.astype(np.int8))]
    monkeypatch.setattr(emulator, "_compile", _no_compiler)
    with emulator.record_modules(stand_in=True) as modules:
        results = [jk.jit(fn, backend="cuda-emulator")(x) for fn in fns]  # runs on past the first
    assert len(modules) == 3
    np.testing.assert_allclose(results[0], x * 3 - 1)
    np.testing.assert_allclose(results[1], np.tanh(x).sum(), rtol=1e-6)
    np.testing.assert_array_equal(results[2][1], x.astype(np.int8))


def test_a_stand_in_called_after_the_dry_run_is_the_emulated_program(monkeypatch) -> None:
    """A jitted function compiled during the dry run and called after it (a module-level jitted
    function) runs the real emulated program, built then; the interpreter never answers."""
    x = np.arange(6, dtype=np.int16)
    f = jk.jit(lambda a: a * a + 7, backend="cuda-emulator")
    with emulator.record_modules(stand_in=True) as modules:
        f(x)
    assert len(modules) == 1
    from jitkernel import interpreter

    def not_the_interpreter(*args, **kwargs):
        raise AssertionError("the stand-in answered outside the dry run")
    monkeypatch.setattr(interpreter, "eval_program", not_the_interpreter)
    np.testing.assert_array_equal(f(x), x * x + 7)
    (compiled,) = f._cache.values()
    assert isinstance(compiled.executable, emulator.StandInProgram) and compiled.executable.emulated is not None


def test_batch_build_builds_the_recorded_programs_in_one_compiler_run(monkeypatch) -> None:
    """Several programs called inside `batch_build()` answer as NumPy does, are recorded, and
    are built by one compiler run when the block ends; called again they build nothing."""
    x = np.linspace(-1, 1, 9)
    fns = [jk.jit(lambda a, k=k: np.cos(a) * k - a.min(), backend="cuda-emulator") for k in (5, 6, 7)]
    runs = []
    compile_once = emulator._compile
    monkeypatch.setattr(emulator, "_compile", lambda *a: runs.append(a[-1]) or compile_once(*a))
    with emulator.batch_build(disk_cache=False, workers=1) as modules:
        inside = [f(x) for f in fns]
        assert runs == []  # nothing is built inside the block
    assert len(modules) == 3 and len(runs) == 1
    for f, k, got in zip(fns, (5, 6, 7), inside):
        np.testing.assert_allclose(got, np.cos(x) * k - x.min(), rtol=1e-12)
        np.testing.assert_allclose(f(x), np.cos(x) * k - x.min(), rtol=1e-12)
    assert len(runs) == 1


MANY_PROGRAMS = '''
import numpy as np
import operator
from hypothesis import HealthCheck, given, settings, strategies as st
import jitkernel as jk
from jitkernel.backends.cuda import emulator

CUDA_EMULATOR_SUITE = True


def _no_build(monkeypatch, backend):
    if backend == "cuda-emulator":  # every program must have been prebuilt by the dry run
        monkeypatch.setattr(emulator, "_compile", lambda *a: (_ for _ in ()).throw(AssertionError("built alone")))


def test_many_programs(backend, monkeypatch):
    _no_build(monkeypatch, backend)
    x = np.arange(1, 6, dtype=np.int32)
    for op in (operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod, operator.xor,
               operator.lshift, operator.rshift, operator.lt, operator.eq):
        np.testing.assert_array_equal(jk.jit(lambda a, op=op: op(a, 3), backend=backend)(x), op(x, 3))


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 40))
def test_drawn_shapes(backend, monkeypatch, n):
    _no_build(monkeypatch, backend)
    x = np.arange(n, dtype=np.float64)
    np.testing.assert_allclose(jk.jit(lambda a: np.sin(a) + a.sum(), backend=backend)(x), np.sin(x) + x.sum())
'''


def test_the_suite_prebuilds_a_test_with_many_programs_and_drawn_shapes(pytester, monkeypatch) -> None:
    """An opted-in module whose emulator items build 10 programs in one test and one program
    per hypothesis example: all are prebuilt (a build during the real run fails the test)."""
    from pathlib import Path
    here = Path(__file__).parent
    root = str(Path(jk.__file__).parent.parent)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    for name in ("conftest.py", "emulator_suite.py", "tpu_suite.py", "helpers.py"):  # the conftest imports helpers
        pytester.makepyfile(**{name[:-3]: (here / name).read_text()})
    pytester.makepyfile(test_many=MANY_PROGRAMS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rf", "-q")
    result.assert_outcomes(passed=6)

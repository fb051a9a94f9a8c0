"""The emulator's build machinery for the equivalence suite: the precompiled head of every
host build (emulator_pch.py), the recording of modules for a batch build and the refusal tag
(recording.py, emulator.py), and prebuild's parallel chunks (emulator.py)."""
from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import cache
from jitkernel.backends.cuda import emulator, emulator_pch

pytest_plugins = ["pytester"]

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the emulator's precompiled head needs g++")


def _version() -> str:
    return emulator._compiler_version(emulator.compiler())


def test_builds_use_the_precompiled_head(tmp_path) -> None:
    """The head is precompiled once into the cache and g++ takes the .gch (`-H` prints `!`)."""
    header = emulator_pch.header_for(emulator.compiler(), _version(), emulator.CXX_FLAGS, emulator.HEAD)
    assert header is not None and header.read_text() == emulator.HEAD
    assert header.with_name(header.name + ".gch").stat().st_size > 0
    src = tmp_path / "k.cpp"
    src.write_text('extern "C" int jk_probe() { return jk_emu::launch != nullptr; }\n')
    proc = subprocess.run([emulator.compiler(), *emulator.CXX_FLAGS, "-include", str(header), "-H", str(src),
                           "-o", str(tmp_path / "k.so")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[0].startswith("! ") and proc.stderr.splitlines()[0].endswith(".gch")


def test_a_corrupt_gch_is_rebuilt_and_builds_work(temp_cache_dir, monkeypatch) -> None:
    """A .gch that does not match its record (truncated, or written by something else) is
    rebuilt before g++ is handed it, and builds with the head work."""
    monkeypatch.setattr(emulator_pch, "_ready", {})
    header = emulator_pch.header_for(emulator.compiler(), _version(), emulator.CXX_FLAGS, emulator.HEAD)
    gch = header.with_name(header.name + ".gch")
    good = gch.read_bytes()
    gch.write_bytes(good[: len(good) // 2])
    monkeypatch.setattr(emulator_pch, "_ready", {})  # a new process
    assert emulator_pch.header_for(emulator.compiler(), _version(), emulator.CXX_FLAGS, emulator.HEAD) == header
    assert gch.stat().st_size > len(good) // 2 and cache.load_file(str(gch.relative_to(temp_cache_dir))) == gch
    src = temp_cache_dir.parent / "k.cpp"
    src.write_text('extern "C" int jk_probe() { return 1; }\n')
    proc = subprocess.run([emulator.compiler(), *emulator.CXX_FLAGS, "-include", str(header), str(src),
                           "-o", str(temp_cache_dir.parent / "k.so")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_switch_turns_it_off(monkeypatch) -> None:
    monkeypatch.setenv("JITKERNEL_EMULATOR_PCH", "0")
    assert emulator_pch.header_for(emulator.compiler(), _version(), emulator.CXX_FLAGS, emulator.HEAD) is None
    monkeypatch.setenv("JITKERNEL_EMULATOR_PCH", "1")
    assert not emulator_pch.enabled("clang version 17.0.0")


def test_a_build_with_the_head_matches_numpy() -> None:
    x = np.linspace(0, 3, 301).astype(np.float32)
    got = jk.jit(lambda a: (np.tanh(a) * 3).sum(), backend="cuda-emulator", disk_cache=False)(x)
    np.testing.assert_allclose(got, (np.tanh(x) * 3).sum(), rtol=1e-5)


def test_recording_without_stand_ins_stops_past_except_exception() -> None:
    """The stop is a BaseException: `pytest.raises(Exception)` (and the library's own
    `except Exception`) never swallows it; outside `record_modules()` nothing is intercepted."""
    x = np.arange(7, dtype=np.int32)
    with emulator.record_modules(stand_in=False) as modules:
        with pytest.raises(emulator.RenderedOnly):
            try:
                jk.jit(lambda a: a * 3 - 1, backend="cuda-emulator")(x)
            except Exception:  # noqa: BLE001 - must not be reached
                pytest.fail("Rendered was caught as an Exception")
    assert len(modules) == 1 and "__global__" in modules[0].kernels
    np.testing.assert_array_equal(jk.jit(lambda a: a * 3 - 1, backend="cuda-emulator")(x), x * 3 - 1)


def test_renderer_refusals_are_tagged_and_trace_errors_are_not() -> None:
    x = np.ones((3, 3))
    with pytest.raises(jk.UnsupportedOperationError) as refused:
        jk.jit(lambda a: np.linalg.inv(a), backend="cuda-emulator")(x)
    assert getattr(refused.value, "renderer_refusal", False)
    with pytest.raises(jk.UnsupportedOperationError) as traced:
        jk.jit(lambda a: np.max(a, initial=0.0), backend="cuda-emulator")(x)
    assert not getattr(traced.value, "renderer_refusal", False)


def test_prebuild_in_parallel_chunks_serves_every_program() -> None:
    fns = [lambda a, k=k: np.sin(a) * k + a.max() for k in range(1, 6)]
    x = np.linspace(0, 1, 50)
    modules = []
    for fn in fns:
        with emulator.record_modules(stand_in=False) as rec, pytest.raises(emulator.RenderedOnly):
            jk.jit(fn, backend="cuda-emulator")(x)
        modules += rec
    chunks = emulator._chunks(modules, 2)
    assert len(chunks) >= 2 and [m for c in chunks for m in c] == modules
    emulator.prebuild(modules, workers=2)
    libs = {id(emulator._prebuilt[m.tag]) for m in modules}
    assert len(libs) == len(chunks)  # one library per chunk
    for fn in fns:  # found prebuilt: recording does not stop them any more
        with emulator.record_modules(stand_in=False) as rec:
            np.testing.assert_allclose(jk.jit(fn, backend="cuda-emulator")(x), fn(x), rtol=1e-12)
        assert rec == []


SUITE_MODULE = '''
import numpy as np
import jitkernel as jk
from jitkernel.backends.cuda import emulator

CUDA_EMULATOR_SUITE = True


def test_two_programs(backend, monkeypatch):
    if backend == "cuda-emulator":  # both programs must have been prebuilt by the dry runs
        monkeypatch.setattr(emulator, "_compile", lambda *a: (_ for _ in ()).throw(AssertionError("built alone")))
    x = np.arange(5.0)
    np.testing.assert_array_equal(jk.jit(lambda a: a + 1, backend=backend)(x), x + 1)
    np.testing.assert_array_equal(jk.jit(lambda a: a * 2, backend=backend)(x), x * 2)


def test_refused_by_the_renderer(backend):
    np.testing.assert_allclose(jk.jit(np.linalg.inv, backend=backend)(np.eye(3) * 2), np.eye(3) / 2)


def test_other_differences_fail(backend):
    assert backend != "cuda-emulator", "a difference from NumPy"


def test_refusals_grouped_as_hypothesis_reports_them(backend):
    # hypothesis reports several distinct failing examples as one exception group
    x = np.eye(3) * 2
    errors = []
    for fn in (np.linalg.inv, lambda a: np.fft.fft(a).real):
        try:
            np.testing.assert_allclose(jk.jit(fn, backend=backend)(x), fn(x), atol=1e-12)
        except Exception as e:
            errors.append(e)
    if errors:
        raise BaseExceptionGroup("distinct failures", errors)
'''


def test_the_suite_runs_opted_in_modules_on_the_emulator(pytester, monkeypatch) -> None:
    """An opted-in module: items on three backends, a test's two programs both prebuilt (a
    compile during the real run fails it), a renderer refusal skipped on the emulator only (also
    when hypothesis groups several refused examples), any other failure kept."""
    from pathlib import Path
    here = Path(__file__).parent
    root = str(Path(jk.__file__).parent.parent)  # the subprocess imports this very jitkernel
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    for name in ("conftest.py", "emulator_suite.py", "tpu_suite.py", "helpers.py"):  # the conftest imports helpers
        pytester.makepyfile(**{name[:-3]: (here / name).read_text()})
    pytester.makepyfile(test_opted_in=SUITE_MODULE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rsf", "-q")
    result.assert_outcomes(passed=9, skipped=2, failed=1)
    result.stdout.fnmatch_lines(["*SKIPPED*the CUDA renderer refuses this program*",
                                 "*FAILED*test_other_differences_fail?cuda-emulator?*"])


def test_a_cleared_cache_rebuilds_the_head_instead_of_including_a_missing_file(tmp_path, monkeypatch):
    import shutil
    import numpy as np
    import jitkernel as jk
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(tmp_path / "a"))
    x = np.arange(6.0)
    np.testing.assert_allclose(jk.jit(lambda v: v * 3 + 1, backend="cuda-emulator")(x), x * 3 + 1)
    shutil.rmtree(tmp_path / "a")  # as `%jit_cache --clear` or a removed temporary cache does
    np.testing.assert_allclose(jk.jit(lambda v: v * 5 - 2, backend="cuda-emulator")(x), x * 5 - 2)

"""The cubin step of backend="cuda" (pycuda_device.cubin_for): the real nvcc for sm_90 and the
persistent cache, no driver needed."""
from __future__ import annotations

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import cache, events
from jitkernel.backends.cuda import nvcc
from jitkernel.backends.cuda.pycuda_device import cubin_for, cubin_key, launch_format
from jitkernel.backends.cuda.render import render_program
from jitkernel.fusion import schedule

pytestmark = pytest.mark.skipif(nvcc.find_nvcc() is None, reason="nvcc is not on PATH (set NVCC=...)")


@pytest.fixture(scope="module")
def source() -> str:
    program = jk.jit(lambda x: np.tanh(x).sum(), backend="interpret").lower(np.ones(64, np.float32)).compiled.optimized
    return render_program(schedule(program)).source


def compiles(fn, *args) -> tuple[bytes, int, list]:
    seen: list = []
    unsubscribe = events.subscribe(seen.append)
    try:
        out = fn(*args)
    finally:
        unsubscribe()
    return out, sum(isinstance(e, events.CompileEvent) for e in seen), seen


def test_second_call_is_a_cache_hit(source: str) -> None:
    first, n_first, _ = compiles(cubin_for, source, "sm_90", "tanh_sum")
    assert first.startswith(b"\x7fELF") and n_first == 1
    second, n_second, seen = compiles(cubin_for, source, "sm_90", "tanh_sum")
    assert second == first and n_second == 0
    assert [(e.hit, e.level) for e in seen if isinstance(e, events.CacheEvent)] == [(True, "disk")]
    assert cubin_key(source, "sm_90") != cubin_key(source, "sm_80")  # the architecture is in the key
    assert cubin_key(source + " ", "sm_90") != cubin_key(source, "sm_90")


def test_a_corrupt_cache_entry_is_detected_and_rebuilt(source: str) -> None:
    good, _, _ = compiles(cubin_for, source, "sm_90", "tanh_sum")
    key = cubin_key(source, "sm_90")
    path = cache._path(key)
    blob = bytearray(path.read_bytes())
    blob[len(blob) // 2] ^= 0xFF  # one flipped byte in the middle of the cubin
    path.write_bytes(bytes(blob))
    rebuilt, n, _ = compiles(cubin_for, source, "sm_90", "tanh_sum")
    assert n == 1 and rebuilt == good
    assert cache.load(key) is not None  # stored again, intact


def test_nvcc_errors_are_compile_errors_with_its_message_and_the_source() -> None:
    bad = 'extern "C" __global__ void jk_broken(float* x) { x[0] = undeclared_name; }\n'
    with pytest.raises(jk.CompileError) as info:
        cubin_for(bad, "sm_90", "broken", disk_cache=False)
    text = str(info.value)
    assert "undeclared_name" in text and "nvcc rejected" in text
    saved = text.split("saved at ", 1)[1].split(")", 1)[0]
    with open(saved) as f:
        assert f.read() == bad


def test_launch_formats_follow_the_kernel_parameters() -> None:
    assert launch_format(["const double* __restrict__", "unsigned int* __restrict__", "long long"]) == "PPq"
    with pytest.raises(jk.CompileError, match="no launch format"):
        launch_format(["struct thing"])

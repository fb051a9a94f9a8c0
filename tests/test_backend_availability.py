"""Backends that cannot run on this machine: refused at jk.jit when named, at the first call when
the default; unknown names list the backends."""
from __future__ import annotations

import traceback

import numpy as np
import pytest

import jitkernel as jk
from jitkernel.tracebacks import is_engine_file


def test_explicit_unavailable_backend_fails_at_jit():
    with pytest.raises(jk.BackendUnavailableError, match="backend .cuda. is not available: it runs on an NVIDIA GPU through PyCUDA") as info:
        jk.jit(lambda x: x + 1, backend="cuda")
    assert isinstance(info.value, jk.JitError)
    assert "pycuda" in str(info.value) and "nvcc" in str(info.value) and "backend='cpu'" in str(info.value)
    assert not [f for f in traceback.extract_tb(info.value.__traceback__) if is_engine_file(f.filename)]
    with pytest.raises(jk.BackendUnavailableError):
        jk.jit(backend="gpu")  # the decorator form fails before it decorates
    with pytest.raises(jk.BackendUnavailableError):
        jk.Jitted(lambda x: x, backend="cuda")


def test_default_backend_that_cannot_run_fails_at_the_first_call():
    f = jk.jit(lambda x: x + 1)
    before = jk.config.default_backend
    jk.config.update("default_backend", "cuda")
    try:
        with pytest.raises(jk.BackendUnavailableError, match="backend .cuda. is not available: it runs on an NVIDIA GPU through PyCUDA") as info:
            f(np.ones(2))
        assert not [fr for fr in traceback.extract_tb(info.value.__traceback__) if is_engine_file(fr.filename)]
    finally:
        jk.config.update("default_backend", before)
    np.testing.assert_array_equal(f(np.ones(2)), np.full(2, 2.0))


def test_unknown_backend_is_a_value_error_listing_the_backends():
    for call in (lambda: jk.jit(lambda x: x, backend="npu"), lambda: jk.config.update("default_backend", "npu")):
        with pytest.raises(ValueError, match="unknown backend 'npu'; backends are 'cpu', 'interpret'"):
            call()
    assert jk.config.default_backend == "cpu"

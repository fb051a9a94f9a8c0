"""Shared fixtures: every numeric test runs once per backend (the NumPy reference interpreter and
the LLVM CPU backend; both must always be importable, so neither is ever skipped)."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # so tests can `import helpers`

BACKENDS = ["interpret", "cpu"]


def backend_params() -> list:
    return [pytest.param(b, id=b) for b in BACKENDS]


@pytest.fixture(params=backend_params())
def backend(request) -> str:
    """The backend name ("interpret" or "cpu") to pass as jk.jit(..., backend=backend)."""
    return request.param


@pytest.fixture
def no_static_int_fallback():
    """Integer arguments stay run-time values even where the trace needs them (the errors that
    jk.config "static_int_fallback" otherwise avoids by tracing again with them static)."""
    import jitkernel as jk
    jk.config.update("static_int_fallback", False)
    yield
    jk.config.update("static_int_fallback", True)

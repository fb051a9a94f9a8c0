"""The carried-writes generator (tests/carried_writes_programs.py: loops whose carry is an array
written in place through helpers, views and rebinding) on the real chip: the result and the
caller's array after the call, as Python leaves them. Runs where a TPU is present (`make
tpu-check`); tests/test_carried_writes.py runs the same generator on every host backend and on
tpu-interpret."""
from __future__ import annotations

import os
import sys

import pytest
from hypothesis import HealthCheck, given, settings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jitkernel as jk  # noqa: E402
from carried_writes_programs import assert_same_as_python, programs  # noqa: E402
from tpu_suite import have_jax  # noqa: E402


def _on_chip() -> bool:
    if not have_jax():
        return False
    try:
        jk.backends.check_backend("tpu")
        return True
    except jk.BackendUnavailableError:
        return False


pytestmark = pytest.mark.skipif(not _on_chip(), reason="no TPU here (tests/test_carried_writes.py runs tpu-interpret)")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(programs())
def test_generated_loops_write_the_callers_array_on_the_chip(tmp_path, program):
    assert_same_as_python(tmp_path, program, ["tpu"])

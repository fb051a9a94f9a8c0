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

from carried_writes_programs import assert_same_as_python, programs  # noqa: E402
from tpu_suite import tpu_backends  # noqa: E402


pytestmark = pytest.mark.skipif("tpu" not in tpu_backends(), reason="no TPU here (tests/test_carried_writes.py runs tpu-interpret)")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(programs())
def test_generated_loops_write_the_callers_array_on_the_chip(tmp_path, program):
    assert_same_as_python(tmp_path, program, ["tpu"])

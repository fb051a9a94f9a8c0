"""JITKERNEL_BACKEND picks the default backend (docs: "Backend choice")."""
from __future__ import annotations

import os
import subprocess
import sys


def _run(env_value: str, code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, JITKERNEL_BACKEND=env_value)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_the_environment_variable_sets_the_default_backend():
    code = ("import numpy as np, jitkernel as jk\n"
            "f = jk.jit(lambda x: x + 1)\n"
            "print(jk.config.default_backend, f(np.arange(3.0)).tolist(), f.last_compiled().backend)\n")
    out = _run("interpret", code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == "interpret" and out.stdout.strip().endswith("interpret")


def test_an_unknown_backend_name_fails_at_import_naming_the_variable():
    out = _run("npu", "import jitkernel")
    assert out.returncode != 0
    assert "environment variable JITKERNEL_BACKEND: unknown backend 'npu'" in out.stderr


def test_cuda_without_a_gpu_raises_the_unavailable_error_at_the_first_call():
    code = ("import numpy as np, jitkernel as jk\n"
            "try:\n    jk.jit(lambda x: x + 1)(np.ones(2))\n"
            "except jk.BackendUnavailableError as e:\n    print('unavailable:', e)\n")
    out = _run("cuda", code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("unavailable:")

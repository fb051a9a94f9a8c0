"""The NumPy-equivalence suite on backend="tpu-interpret": the TPU backend's lowering compiled by
XLA for JAX's CPU platform (docs/tpu.md), where JAX is installed (the test extra brings it).

A test module opts in with `TPU_SUITE = True`; its tests that take the `backend` fixture then
also run with backend="tpu-interpret" (tests/conftest.py). `JITKERNEL_TPU_SUITE=all` runs every
module's backend tests on it (how the opted-in list was chosen), `=none` none.
`JITKERNEL_TPU_SUITE_BACKEND=tpu` runs them on the chip instead (`make tpu-check`,
scripts/tpu_check.py `--suites`: the chip's compiler fails where interpret mode does not).
"""
from __future__ import annotations

import importlib.util
import os

TPU_INTERPRET = "tpu-interpret"
SWITCH = "TPU_SUITE"
TPU_BACKENDS = ("tpu", TPU_INTERPRET)  # never in HOST_BACKENDS: they need JAX (and "tpu" a TPU)


def suite_backend() -> str:
    """The backend the opted-in modules' tests add: tpu-interpret, or the chip itself."""
    return "tpu" if os.environ.get("JITKERNEL_TPU_SUITE_BACKEND") == "tpu" else TPU_INTERPRET


def tpu_backends() -> list[str]:
    """tpu-interpret, and the chip ("tpu") where one is present (JAX installed and a TPU found)."""
    names = [TPU_INTERPRET]
    if have_jax():
        import jitkernel as jk
        try:
            jk.backends.check_backend("tpu")
            names.append("tpu")
        except jk.BackendUnavailableError:
            pass
    return names


def have_jax() -> bool:
    return importlib.util.find_spec("jax") is not None


def module_opted_in(module) -> bool:
    mode = os.environ.get("JITKERNEL_TPU_SUITE", "")
    if mode == "none" or not have_jax():
        return False
    return mode == "all" or bool(getattr(module, SWITCH, False))

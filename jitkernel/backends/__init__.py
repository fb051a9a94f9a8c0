"""Backends: each is a renderer plus a runtime behind `compile(program, name=, fastmath=)`,
returning (executable, {stage: text thunk}). A backend never reaches back into tracing.

Whether a backend can run is decided here, once, for every entry point: `jk.jit(backend=...)`,
the first call of a function that uses `jk.config.default_backend`, and the notebook magics.
An unknown name is a `ValueError` listing the backends; a known backend that this build or
machine cannot run is a `jk.BackendUnavailableError` saying what is missing.

>>> check_backend("cpu")
>>> check_backend("tpu")
Traceback (most recent call last):
    ...
ValueError: unknown backend 'tpu'; backends are 'cpu', 'interpret', 'cuda-emulator' and 'cuda' (no runtime in this build yet)
"""
from __future__ import annotations

from typing import Any, Protocol

from ..errors import BackendUnavailableError
from ..ir import Program

AVAILABLE = ("cpu", "interpret", "cuda-emulator")
# Known names without an implementation in this build ("gpu" is an alias of "cuda").
UNAVAILABLE = {"cuda": "cuda", "gpu": "cuda"}
# Backends whose compiled kernels can become shape-generic (docs/recompilation.md).
SHAPE_GENERIC = ("cpu", "cuda-emulator")  # cuda: backends/cuda/dynamic_params.py


class Backend(Protocol):
    name: str

    def compile(self, program: Program, *, name: str, fastmath: bool, disk_cache: bool,
                previous: Any = None) -> tuple[Any, dict]: ...


def check_backend_name(name: Any) -> None:
    """ValueError unless `name` is a backend jitkernel knows (available or not)."""
    if not isinstance(name, str) or (name not in AVAILABLE and name not in UNAVAILABLE):
        raise ValueError(f"unknown backend {name!r}; backends are 'cpu', 'interpret', 'cuda-emulator' and 'cuda' "
                         "(no runtime in this build yet)")


def _cuda_environment() -> str:
    """What this machine lacks of a CUDA setup, for the error message (cheap checks only)."""
    from .cuda import missing_for_cuda
    from .cuda.nvcc import find_nvcc
    nvcc = find_nvcc()
    missing = missing_for_cuda()
    return ("; ".join(missing) if missing else "PyCUDA, the driver and a device are all present") + \
        f"; nvcc {'at ' + nvcc if nvcc else 'not on PATH'}"


def check_backend(name: Any) -> None:
    """Raise unless `name` is a backend that can run here: ValueError for an unknown name,
    `BackendUnavailableError` for a known one this build or machine lacks."""
    check_backend_name(name)
    if name in UNAVAILABLE:
        raise BackendUnavailableError(
            f"backend {name!r} is not available: this build of jitkernel has no CUDA backend runtime yet (the "
            f"PyCUDA launch path is not built; the CUDA renderer runs on backend='cuda-emulator'). On this "
            f"machine: {_cuda_environment()}. Use backend='cpu' (LLVM, the default), backend='interpret' or "
            "backend='cuda-emulator'")
    if name == "cuda-emulator":
        from .cuda.emulator import compiler
        compiler()  # BackendUnavailableError without a host C++ compiler


class _SizeProbe:
    """Stands in for an earlier compiled entry when a new compile looks for its size-dependent
    constants: the kernel program of the same function traced at other sizes (see
    `Jitted._dynamic_base`). The CPU backend compares `previous.executable.kp` only."""

    def __init__(self, kp: Any) -> None:
        self.executable = self
        self.kp = kp


def size_probe(program: Program, backend: str) -> Any:
    """A `_SizeProbe` for `program` (optimised and fused, no code generation, no events), or
    None for a backend without shape-generic kernels."""
    if backend not in SHAPE_GENERIC:
        return None
    from ..fusion import schedule
    from ..passes import optimize
    return _SizeProbe(schedule(optimize(program)))


def get_backend(name: str) -> Backend:
    check_backend(name)
    if name == "interpret":
        from .interpret import InterpretBackend
        return InterpretBackend()
    if name == "cuda-emulator":
        from .cuda.emulator import CudaEmulatorBackend
        return CudaEmulatorBackend()
    from .cpu import CpuBackend
    return CpuBackend()

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
ValueError: unknown backend 'tpu'; backends are 'cpu', 'interpret', 'cuda-emulator' and 'cuda' (a CUDA GPU through PyCUDA)
"""
from __future__ import annotations

from typing import Any, Protocol

from ..errors import BackendUnavailableError
from ..ir import Program

AVAILABLE = ("cpu", "interpret", "cuda-emulator")
# Backends that need something this machine may lack, by name ("gpu" is an alias of "cuda").
UNAVAILABLE = {"cuda": "cuda", "gpu": "cuda"}
# Backends whose compiled kernels can become shape-generic (docs/recompilation.md).
SHAPE_GENERIC = ("cpu", "cuda-emulator", "cuda")  # cuda: backends/cuda/dynamic_params.py


class Backend(Protocol):
    name: str

    def compile(self, program: Program, *, name: str, fastmath: bool, disk_cache: bool,
                previous: Any = None) -> tuple[Any, dict]: ...


def check_backend_name(name: Any) -> None:
    """ValueError unless `name` is a backend jitkernel knows (available or not)."""
    if not isinstance(name, str) or (name not in AVAILABLE and name not in UNAVAILABLE):
        raise ValueError(f"unknown backend {name!r}; backends are 'cpu', 'interpret', 'cuda-emulator' and 'cuda' "
                         "(a CUDA GPU through PyCUDA)")


def _cuda_environment(missing: list[str] | None = None) -> str:
    """What this machine lacks of a CUDA setup, for the error message (cheap checks only)."""
    from .cuda import missing_for_cuda
    from .cuda.nvcc import find_nvcc
    nvcc = find_nvcc()
    missing = missing_for_cuda() if missing is None else missing
    return ("; ".join(missing) if missing else "PyCUDA, the driver and a device are all present") + \
        f"; nvcc {'at ' + nvcc if nvcc else 'not on PATH'}"


def check_backend(name: Any) -> None:
    """Raise unless `name` is a backend that can run here: ValueError for an unknown name,
    `BackendUnavailableError` for a known one this build or machine lacks."""
    check_backend_name(name)
    if name in UNAVAILABLE:
        from ..device_array import gpu_devices
        if not gpu_devices():  # cheap checks first (missing_for_cuda); the driver only where they pass
            from .cuda import missing_for_cuda
            missing = missing_for_cuda() or ["the CUDA driver found no usable device (cuInit failed)"]
            raise BackendUnavailableError(
                f"backend {name!r} is not available: it runs on an NVIDIA GPU through PyCUDA, and on this machine "
                f"{_cuda_environment(missing)}. Use backend='cpu' (LLVM, the default), backend='interpret' or "
                "backend='cuda-emulator' (the same CUDA source run on the host); docs/gpu.md says how to install "
                "PyCUDA")
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
    return _SizeProbe(schedule(optimize(program, size_generic=True)))


def get_backend(name: str) -> Backend:
    check_backend(name)
    if name == "interpret":
        from .interpret import InterpretBackend
        return InterpretBackend()
    if name == "cuda-emulator":
        from .cuda.emulator import CudaEmulatorBackend
        return CudaEmulatorBackend()
    if name in UNAVAILABLE:
        from .cuda.runtime import CudaBackend
        return CudaBackend()
    from .cpu import CpuBackend
    return CpuBackend()

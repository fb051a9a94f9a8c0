"""The CUDA backend (docs/gpu.md): the kernel IR rendered as one CUDA C translation unit
(render.py), run on the host by `backend="cuda-emulator"` (emulator.py) and on a GPU by
`backend="cuda"` through PyCUDA (runtime.py, pycuda_device.py; both devices share the step
runner, executor.py). Where PyCUDA, the driver or a device is missing, asking for `cuda` raises
BackendUnavailableError saying which (`missing_for_cuda`).
"""
from __future__ import annotations

import ctypes
import importlib.util
import os

from .library_steps import BODY_LIBRARY_PRIMS, LIBRARY_STEPS
from .schedule import device_text, schedule_program

__all__ = ["BODY_LIBRARY_PRIMS", "LIBRARY_STEPS", "device_text", "missing_for_cuda", "schedule_program"]


def missing_for_cuda() -> list[str]:
    """What this machine lacks of PyCUDA, the CUDA driver and a device (cheap checks: nothing
    is imported or initialised)."""
    missing = []
    if importlib.util.find_spec("pycuda") is None:
        missing.append("PyCUDA (the pycuda package) is not installed")
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        missing.append("the CUDA driver (libcuda.so.1) is not found")
    if not any(os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/nvidia0")):
        missing.append("no NVIDIA GPU device (/dev/nvidia0) is present")
    return missing

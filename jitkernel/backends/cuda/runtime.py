"""`backend="cuda"`: rendered programs run on a GPU device, device arrays in and out.

`CudaBackend(device)` renders a program (render.py), loads its kernels on the device's
runtime (PyCUDA: one cached nvcc run and `module_from_buffer`), and returns a `DeviceProgram`:
called with NumPy arrays (copied in) or DeviceArrays of its device (used as they are), it
returns DeviceArrays without waiting for the launches. The device is a `GpuDevice`; its runtime
is any `executor.Device`, which is how the tests run all of this on the emulator device.

>>> from jitkernel.backends.cuda.runtime import CudaBackend
>>> CudaBackend.name
'cuda'
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ... import events
from ...device_array import DeviceArray, GpuDevice, default_gpu, gpu_devices
from ...errors import BackendUnavailableError
from ...fusion import KernelProgram
from ...ir import Program
from ...fusion.params import parameter_values
from ..base import Backend
from . import missing_for_cuda
from .nvcc import find_nvcc
from .device_complex import complex_outputs, packed_arguments
from .emulator import render_shape_generic, shape_generic, texts
from .executor import ProgramRunner
from .launch import CudaModule
from .library_steps import BODY_LIBRARY_PRIMS
from .schedule import schedule_program
from .shape_template import CudaTemplate


class DeviceProgram:
    """One rendered KernelProgram loaded on a GPU device (module docstring)."""

    def __init__(self, kp: KernelProgram, module: CudaModule, device: GpuDevice, params: Any = None) -> None:
        self.kp, self.module, self.device = kp, module, device
        self.template = None  # a CudaTemplate when shape-generic (dynamic_params.py)
        self.runner = ProgramRunner(kp, module, device.runtime(), params)
        self._outputs = [(tuple(int(n) for n in kp.buffers[bid].shape), np.dtype(kp.buffers[bid].dtype))
                         for bid in kp.outputs]

    def __call__(self, arrays: Sequence[Any]) -> list[DeviceArray]:
        if self.kp.complex_views:  # complex values are float (..., 2) views of their buffers
            arrays = packed_arguments(self.kp, arrays, self.device)
        buffers = self.runner.run(arrays)
        wrap, device, name = DeviceArray._wrap, self.device, self.kp.name
        outs = [wrap(b, shape, dtype, device, name) for b, (shape, dtype) in zip(buffers, self._outputs)]
        return complex_outputs(self.kp, outs) if self.kp.complex_views else outs


class CudaBackend(Backend):
    """Renders with the CUDA renderer and runs on a GPU device (the first GPU by default)."""

    name = "cuda"
    shape_generic = True  # dynamic_params.py
    device_arrays = True
    body_library_steps = BODY_LIBRARY_PRIMS
    device_stages = ("ptx",)

    @classmethod
    def check_available(cls, name: str) -> None:
        """It runs on an NVIDIA GPU through PyCUDA: raise saying what this machine lacks."""
        if gpu_devices():  # cheap checks first (missing_for_cuda); the driver only where they pass
            return
        missing = missing_for_cuda() or ["the CUDA driver found no usable device (cuInit failed)"]
        nvcc = find_nvcc()
        raise BackendUnavailableError(
            f"backend {name!r} is not available: it runs on an NVIDIA GPU through PyCUDA, and on this machine "
            f"{'; '.join(missing)}; nvcc {'at ' + nvcc if nvcc else 'not on PATH'}. Use backend='cpu' (LLVM, "
            "the default), backend='interpret' or backend='cuda-emulator' (the same CUDA source run on the "
            "host); docs/gpu.md says how to install PyCUDA")

    def __init__(self, device: GpuDevice | None = None) -> None:
        self.device = device or default_gpu()

    def compile(self, program: Program, *, name: str, fastmath: bool = False, disk_cache: bool = True,
                previous: Any = None) -> tuple[Any, dict]:
        kp = schedule_program(program, name)
        generic, positions, structure, values = shape_generic(kp, previous)  # dynamic_params.py
        t0 = events.clock()
        module, generic, positions = render_shape_generic(kp, generic, positions)
        if events.SUBSCRIBERS:
            events.publish(events.CodegenEvent(name, t0, events.clock() - t0, self.name))
        self.device.runtime().load(module, disk_cache)
        run = DeviceProgram(kp, module, self.device, parameter_values(values, positions) if positions else None)
        txt = texts(generic, module)
        if positions:
            run.template = CudaTemplate(structure, values, positions, module.source, None, txt)
        return run, txt

    def reuse(self, program: Program, template: CudaTemplate, *, name: str) -> tuple[Any, dict] | None:
        """Run `program` on a template's loaded module when its shape-generic rendering is the
        same source text (no nvcc run); None otherwise (the caller compiles)."""
        kp = schedule_program(program, name)
        fitted = template.fit(kp)
        if fitted is None:
            return None
        module, values = fitted
        self.device.runtime().load(module)  # loaded once per context: a dictionary hit
        run = DeviceProgram(kp, module, self.device, parameter_values(values, template.positions))
        run.template = template
        return run, template.texts

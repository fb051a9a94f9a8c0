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

from ... import events
from ...device_array import DeviceArray, GpuDevice, default_gpu
from ...errors import UnsupportedOperationError
from ...fusion import KernelProgram
from ...ir import Program
from .executor import ProgramRunner
from .render import CudaModule, render_program


class DeviceProgram:
    """One rendered KernelProgram loaded on a GPU device (module docstring)."""

    def __init__(self, kp: KernelProgram, module: CudaModule, device: GpuDevice) -> None:
        if kp.complex_views:  # complex buffers are float (..., 2) views: not packed on this path yet
            raise UnsupportedOperationError(
                f"{kp.name}: complex arguments or results are not supported by backend='cuda' yet; run it with "
                "backend='cpu' or backend='cuda-emulator'")
        self.kp, self.module, self.device = kp, module, device
        self.runner = ProgramRunner(kp, module, device.runtime())
        self._outputs = [(tuple(kp.buffers[bid].shape), kp.buffers[bid].dtype) for bid in kp.outputs]

    def __call__(self, arrays: Sequence[Any]) -> list[DeviceArray]:
        buffers = self.runner.run(arrays)
        return [DeviceArray(b, shape, dtype, self.device, self.kp.name)
                for b, (shape, dtype) in zip(buffers, self._outputs)]


class CudaBackend:
    """Renders with the CUDA renderer and runs on a GPU device (the first GPU by default)."""

    name = "cuda"

    def __init__(self, device: GpuDevice | None = None) -> None:
        self.device = device or default_gpu()

    def compile(self, program: Program, *, name: str, fastmath: bool = False, disk_cache: bool = True,
                previous: Any = None) -> tuple[Any, dict]:
        from . import schedule_program
        from .emulator import texts
        kp = schedule_program(program, name)
        t0 = events.clock()
        module = render_program(kp)
        if events.SUBSCRIBERS:
            events.publish(events.CodegenEvent(name, t0, events.clock() - t0, self.name))
        self.device.runtime().load(module, disk_cache)
        return DeviceProgram(kp, module, self.device), texts(kp, module)

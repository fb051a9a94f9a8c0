"""Complex DeviceArrays on `backend="cuda"` (docs/gpu.md, "Complex numbers on the GPU").

The kernels of a complex program read and write float (..., 2) buffers
(`KernelProgram.complex_views`, complex_ops.py). On the device path the arguments and results
stay on the device, so packing is a reinterpretation of the same device memory, never a copy:

- a complex DeviceArray argument of the program's complex dtype is handed to the runner as a
  float (..., 2) DeviceArray over the same buffer (`runtime.view`); a host complex argument is
  packed on the host (a view) and copied in as today; any other value goes through the host
  (NumPy's conversion, never a reinterpretation of other bytes);
- a packed result buffer becomes a complex DeviceArray of the complex shape over the same
  buffer.

`view(buffer, shape, dtype)` is the one device method this needs: the same memory seen with
another shape and dtype of the same byte size (a NumPy view on the emulator device, the same
pooled allocation on PyCUDA).

>>> import numpy as np, jitkernel as jk
>>> from jitkernel.device_array import emulate_gpu
>>> with emulate_gpu():
...     z = jk.jit(lambda z: z * 1j, backend="cuda")(np.array([1 + 2j, 3j]))
...     z.dtype, z.shape, np.asarray(z).tolist()
(dtype('complex128'), (2,), [(-2+1j), (-3+0j)])
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...device_array import DeviceArray, GpuDevice, is_device_array
from ...fusion import KernelProgram
from ...ir.complex_prims import as_packed, component_dtype


def packed_arguments(kp: KernelProgram, arrays: Sequence[Any], device: GpuDevice) -> list:
    """The arguments with every complex one as the float (..., 2) array the kernels read."""
    if not kp.complex_views:
        return list(arrays)
    out = list(arrays)
    for i, bid in enumerate(kp.inputs):
        dt = kp.complex_views.get(bid)
        if dt is None or i >= len(out):
            continue
        a = out[i]
        if is_device_array(a) and a.device.runtime() is device.runtime() and a.dtype == dt:
            out[i] = _reinterpret(a, a.shape + (2,), component_dtype(dt))
        else:  # a host value (packed as a view), or a device array of another device or dtype:
            out[i] = as_packed(np.asarray(a, dtype=dt))  # through the host, as put does for those
    return out


def complex_outputs(kp: KernelProgram, outputs: list[DeviceArray]) -> list[DeviceArray]:
    """The float (..., 2) result arrays of complex results as complex DeviceArrays (same buffer)."""
    if not kp.complex_views:
        return outputs
    return [_reinterpret(d, d.shape[:-1], kp.complex_views[bid]) if bid in kp.complex_views else d
            for bid, d in zip(kp.outputs, outputs)]


def _reinterpret(d: DeviceArray, shape: tuple[int, ...], dtype: np.dtype) -> DeviceArray:
    runtime = d.device.runtime()
    buffer = runtime.view(d._buffer, tuple(shape), np.dtype(dtype))
    return DeviceArray(buffer, shape, dtype, d.device, d._producer)

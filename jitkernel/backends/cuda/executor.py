"""The step runner of the CUDA backend, shared by every device that runs a rendered program.

`ProgramRunner(kp, module, device)` runs one rendered KernelProgram (`render.CudaModule`): it
makes a buffer of the device for every kernel-IR buffer (arguments copied in, constants
uploaded once, the rest allocated), then walks `module.launches` step by step, and hands back
the output buffers. What a buffer *is* belongs to the device: a NumPy array for the emulator
(emulator.EmulatorDevice), a pooled device allocation for PyCUDA (pycuda_device.PyCudaDevice).

The `Device` interface (duck-typed; see `step_runners.Device` for the exact signatures):

- `alloc(shape, dtype)`: an uninitialised buffer.
- `put(value, shape, dtype, function="")`: an argument as a buffer of this device: a host
  value is copied in (C order, `dtype`; an `events.TransferEvent` for `function` while anyone
  listens), a device array already on this device with that dtype and size is used as it is
  (any other value goes through the host: never a reinterpretation of its bytes).
- `upload(host, function="")`: a fresh buffer holding a copy of a C-contiguous host array
  (constants, `jk.device_put`).
- `download(buffer, shape, dtype, function="")`: a host copy (waits for the launches before it);
  `synchronize()`: waits for every launch so far (DeviceArray.block_until_ready).
- `copy(buffer)`: a fresh buffer with the same contents (an output that is an input or constant).
- `launch_shape(launch)`: the (grid, block) of one `render.Launch` on this device.
- `launch(kernel, grid, block, args, timed=False)`: launch the kernel named `kernel` (an
  `extern "C"` name of the module; asynchronous where the device is); `args` holds, per kernel
  parameter, a buffer of this device, the status word, or a NumPy scalar (passed by value).
  With `timed` it returns a timing handle, and `elapsed(handles)` gives their kernel times in
  seconds (waiting for them): the runner publishes one `events.KernelEvent` per launch while
  anyone listens to events (the profiler).
- `new_status()` / `check_status(word)`: the status word of one call (the error flags the
  kernels OR into it) and the check after the call, which raises NumPy's exception.

Step kinds: each entry of `module.launches` is one KernelProgram step. A plain list of
`Launch` is the step kind "kernels" (elementwise, rows, two-stage reductions: launched in
order, with their work and scratch buffers). Any other entry names its kind in a `step_kind`
attribute and is run by `STEP_RUNNERS[kind](call, step)` (step_runners.py), so a module of
another helper (matmul tiles, control flow) adds a kind with `@step_runner("kind")` without
editing the loop here.

>>> import numpy as np, jitkernel as jk
>>> f = jk.jit(lambda x: np.sin(x) + 1, backend="cuda-emulator")
>>> float(f(np.zeros(4, np.float32))[2])
1.0
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ... import events
from ...errors import UnsupportedOperationError
from ...fusion import KernelProgram
from . import checks, flow_steps, matmul_step, work_step  # noqa: F401 (they register their step kinds)
from .launch import CudaModule, Launch
from .step_runners import STEP_RUNNERS, Call, Device, step_kind, step_runner


@step_runner("kernels")
def run_kernels(call: Call, launches: list[Launch]) -> None:
    """One fused step: its launches in order. A two-stage reduction's "partial" launch sizes
    the per-block partials (`work`) that its "final" launch combines; a row kernel's scratch
    holds one row per block."""
    device = call.device
    call.work = {}
    parts = 1
    for launch in launches:
        grid, block = call.runner.launch_shape(launch)
        for bid, dt, per_row in launch.scratch:
            call.work[("scratch", bid)] = device.alloc((grid * per_row,), np.dtype(dt))
        if launch.kind == "partial":
            parts = grid
            for k, acc, has_pos in launch.work:
                call.work[(k, "val")] = device.alloc((grid,), np.dtype(acc))
                if has_pos:
                    call.work[(k, "pos")] = device.alloc((grid,), np.dtype(np.int64))
        call.launch(launch, grid, block, parts)


def sets_status(module: CudaModule) -> bool:
    """Whether a kernel of `module` may write the status word: `jk_status` appears in some
    kernel's body, not only as its parameter (kernels without the parameter cannot write it)."""
    return any(kernel.count("jk_status") > 1 for kernel in module.kernels.split('extern "C" __global__')[1:])


class ProgramRunner:
    """Runs a rendered KernelProgram on a device: `run(arrays)` -> the output buffers."""

    def __init__(self, kp: KernelProgram, module: CudaModule, device: Device, params: np.ndarray | None = None) -> None:
        self.kp, self.module, self.device = kp, module, device
        # The run-time parameters of a shape-generic program (kernels take them as jk_params).
        self.params = None if params is None else device.upload(np.ascontiguousarray(params, np.int64))
        for step in module.launches:
            if step_kind(step) not in STEP_RUNNERS:
                raise UnsupportedOperationError(
                    f"{kp.name}: no step runner for step kind {step_kind(step)!r} (executor.STEP_RUNNERS)")
        self._consts = {bid: device.upload(np.ascontiguousarray(np.asarray(c, kp.buffers[bid].dtype)), kp.name)
                        for bid, c in kp.consts}
        # Kernels that never touch the status word leave it zero: their calls need no check, so
        # an asynchronous device does not wait for them (module docstring of render.Launch).
        self.may_set_status = sets_status(module)
        # Outputs that are an input or constant buffer are copied: an output is always fresh.
        self._shared_outputs = {bid for bid in kp.outputs
                                if bid in kp.inputs or any(bid == c for c, _ in kp.consts)}
        # What every call does, decided once (the warm dispatch: docs/gpu.md, "Dispatch"): the
        # arguments' buffer shapes, the buffers allocated fresh, and each launch's grid and block.
        self._arguments = [(bid, tuple(kp.buffers[bid].shape), np.dtype(kp.buffers[bid].dtype.str)) for bid in kp.inputs]
        taken = set(self._consts) | set(kp.inputs)
        self._fresh = [(b.id, tuple(b.shape), b.dtype) for b in kp.buffers.values()
                       if b.id not in taken and b.role != "alias"]  # an alias: a loop carry's name (flow_steps.py)
        self._launch_shapes: dict[int, tuple[int, int]] = {}  # id(Launch) -> (grid, block)

    def launch_shape(self, launch: Launch) -> tuple[int, int]:
        """The device's (grid, block) for `launch`, asked once per launch of this program."""
        shape = self._launch_shapes.get(id(launch))
        if shape is None:
            shape = self._launch_shapes[id(launch)] = self.device.launch_shape(launch)
        return shape

    def buffers(self, arrays: Sequence[Any]) -> dict[int, Any]:
        """The buffer of every kernel-IR buffer for one call: arguments put on the device,
        constants, and fresh allocations for the rest."""
        device, name = self.device, self.kp.name
        bufs: dict[int, Any] = dict(self._consts)
        for (bid, shape, dtype), a in zip(self._arguments, arrays):
            bufs[bid] = device.put(a, shape, dtype, name)
        for bid, shape, dtype in self._fresh:
            bufs[bid] = device.alloc(shape, dtype)
        return bufs

    def run(self, arrays: Sequence[Any]) -> list[Any]:
        """Run every step; raises NumPy's exception when a kernel set the status word."""
        call = Call(self, self.buffers(arrays), self.device.new_status())
        if events.SUBSCRIBERS:
            call.timings = []
        for step in self.module.launches:
            STEP_RUNNERS[step_kind(step)](call, step)
        call.publish_kernel_times()
        if self.may_set_status:
            self.device.check_status(call.status)
        return [self.device.copy(call.bufs[bid]) if bid in self._shared_outputs else call.bufs[bid]
                for bid in self.kp.outputs]

    __call__ = run

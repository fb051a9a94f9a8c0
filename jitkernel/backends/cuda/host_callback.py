"""`debug_callback` library steps on the GPU (`jk.debug.print`, `jk.debug.callback`): the "host
callback" step kind of the executor.

The step's inputs are copied back to the host (one device-to-host transfer per value, which
waits for the launches before it, as a `raise_if` check's condition does) and the Python
callback runs with them, between the launches before and after it: the same program order as
on the CPU. Programs without a print have no such step and pay nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from ...fusion.kernel_ir import KernelProgram, LibraryCall
from .library_rules import library_rule
from .step_runners import Call, step_runner


@dataclass
class HostCallbackStep:
    """Copy `inputs` (buffer, shape, dtype) to the host, call `call` with them."""

    inputs: list[tuple[int, tuple, Any]]
    output: int
    call: Any
    step_kind: str = "host_callback"

    def __iter__(self) -> Iterator:
        return iter(())  # no kernels of its own

    def __len__(self) -> int:
        return 0


@library_rule("debug_callback")
def render_host_callback(kp: KernelProgram, step: LibraryCall, n: int, placeholder: str) -> tuple[str, HostCallbackStep]:
    (output,) = step.outputs
    inputs = [(b, tuple(kp.buffers[b].shape), kp.buffers[b].dtype) for b in step.inputs]
    text = f"\n/* {step.name}: debug_callback {step.params['call']!r} run on the host after its launches */"
    return text, HostCallbackStep(inputs, output, step.params["call"])


@step_runner("host_callback")
def run_host_callback(call: Call, step: HostCallbackStep) -> None:
    device = call.device
    values = [device.download(call.bufs[b], shape, dtype, call.runner.kp.name) for b, shape, dtype in step.inputs]
    device.write_scalar(call.bufs[step.output], False)
    step.call(values)

"""`raise_if` library steps on the GPU: the run-time checks NumPy makes on data (np.average's
"Weights sum to zero.", ...), the "check" step kind of the executor.

The step's value is copied on the device into its output (the step is functional), then the
0-d condition is read back and, when true, NumPy's exception is raised with its message. That
read waits for the launches before it, as a while loop's condition does (flow_steps.py): one
small device-to-host copy per call, only in programs that hold such a check. The message is
the step's own (a per-site text), which the status word's fixed bits could not carry.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from ...fusion.kernel_ir import KernelProgram, LibraryCall
from ...ir.arrayfn_prims import ERROR_CODE, NUMPY_STORE, check_error
from .library_rules import library_rule
from .step_runners import Call, step_runner


@dataclass
class CheckStep:
    """value -> output, then raise `exception(message)` when the bool 0-d `condition` is true."""

    value: int
    condition: int
    output: int
    exception: str
    message: str
    step_kind: str = "check"

    def __iter__(self) -> Iterator:
        return iter(())  # no kernels of its own

    def __len__(self) -> int:
        return 0


@library_rule("raise_if")
def render_raise_if(kp: KernelProgram, step: LibraryCall, n: int, placeholder: str) -> tuple[str, CheckStep]:
    """No kernel: the check step that copies the value and raises on the host."""
    value, condition = step.inputs
    (output,) = step.outputs
    text = f"\n/* {step.name}: raise_if ({step.params['exception']}) checked on the host after its launches */"
    return text, CheckStep(value, condition, output, step.params["exception"], step.params["message"])


@step_runner("check")
def run_check(call: Call, step: CheckStep) -> None:
    device = call.device
    device.copy_into(call.bufs[step.output], call.bufs[step.value])
    if device.read_scalar(call.bufs[step.condition]):
        value = device.read_scalar(call.bufs[step.value]) if step.exception in (NUMPY_STORE, ERROR_CODE) else None
        raise check_error(step.exception, step.message, np.asarray(value))  # ir/arrayfn_prims.py

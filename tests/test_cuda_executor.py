"""executor.ProgramRunner: the step loop shared by the CUDA devices, run here on the real
emulator device (a real host build of the rendered translation unit)."""
from __future__ import annotations

import shutil
from dataclasses import dataclass

import numpy as np
import pytest

import jitkernel as jk
from cuda_corpus import Case, kernel_program
from jitkernel.backends.cuda import emulator, executor
from jitkernel.backends.cuda.render import render_program

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="backend='cuda-emulator' needs a host C++20 compiler (g++)")


def sum_tanh(a, b):
    return np.tanh(a * b + 1).sum(), a * 2


X = np.linspace(-1, 1, 300, dtype=np.float32)
CASE = Case("sum-tanh", sum_tanh, (X, X[::-1].copy()))


class RecordingDevice(emulator.EmulatorDevice):
    """The emulator device, recording what the runner asks of it."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.calls: list[tuple] = []

    def alloc(self, shape, dtype):
        self.calls.append(("alloc", shape, np.dtype(dtype)))
        return super().alloc(shape, dtype)

    def launch(self, kernel, grid, block, args):
        self.calls.append(("launch", kernel, grid, block))
        super().launch(kernel, grid, block, args)


def runner_for(case: Case, device_class=emulator.EmulatorDevice, policy=emulator.LaunchPolicy()):
    kp = kernel_program(case)
    module = render_program(kp)
    device = device_class(emulator.library(module), policy)
    return kp, module, device


def test_runner_launches_every_step_in_order_with_its_work_buffers() -> None:
    kp, module, device = runner_for(CASE, RecordingDevice, emulator.LaunchPolicy(32, 4))
    outs = executor.ProgramRunner(kp, module, device).run(list(CASE.args))
    expected = sum_tanh(*CASE.args)
    np.testing.assert_allclose(outs[0][()], expected[0], rtol=1e-5)
    np.testing.assert_array_equal(outs[1], expected[1])
    launched = [c[1] for c in device.calls if c[0] == "launch"]
    assert launched == [launch.name for step in module.launches for launch in step]
    partial = next(launch for step in module.launches for launch in step if launch.kind == "partial")
    grid = device.launch_shape(partial)[0]
    assert grid == 4  # 300 items in blocks of 32, capped by the policy's grid
    assert ("alloc", (grid,), np.dtype(partial.work[0][1])) in device.calls  # the per-block partials


@dataclass
class NegateStep:
    """A step kind of the test's own: negates one buffer in place (on the emulator, buffers
    are NumPy arrays)."""

    buffer: int
    step_kind: str = "test-negate"


def test_a_registered_step_kind_runs_in_its_place() -> None:
    kp, module, device = runner_for(CASE)
    module.launches.append(NegateStep(kp.outputs[1]))

    @executor.step_runner("test-negate")
    def negate(call: executor.Call, step: NegateStep) -> None:
        np.negative(call.bufs[step.buffer], out=call.bufs[step.buffer])
    try:
        outs = executor.ProgramRunner(kp, module, device).run(list(CASE.args))
    finally:
        del executor.STEP_RUNNERS["test-negate"]
    np.testing.assert_array_equal(outs[1], -2 * CASE.args[0])


def test_an_unknown_step_kind_is_a_clear_error() -> None:
    kp, module, device = runner_for(CASE)
    module.launches.append(NegateStep(kp.outputs[1], step_kind="no-such-kind"))
    with pytest.raises(jk.UnsupportedOperationError, match="no step runner for step kind 'no-such-kind'"):
        executor.ProgramRunner(kp, module, device)


def test_an_output_that_is_an_input_is_a_fresh_buffer() -> None:
    case = Case("identity", lambda a: a, (X,))
    kp, module, device = runner_for(case)
    (out,) = executor.ProgramRunner(kp, module, device).run([X])
    np.testing.assert_array_equal(out, X)
    assert not np.shares_memory(out, X)


def test_status_checks_only_where_a_kernel_body_uses_the_status_word() -> None:
    plain = render_program(kernel_program(CASE))
    assert not executor.sets_status(plain)
    indexed = render_program(kernel_program(Case("pick", lambda x, i: x[i], (X, 3))))
    assert executor.sets_status(indexed)
    # a kernel without the parameter (another step kind's) does not hide one that uses it
    extra = 'extern "C" __global__ void jk_other(float* x) { x[0] = 1; }\n'
    indexed.kernels = extra + indexed.kernels + extra
    assert executor.sets_status(indexed)


def test_a_device_array_of_another_dtype_is_converted_not_reinterpreted() -> None:
    from jitkernel.device_array import GpuDevice, put
    case = Case("twice64", lambda a: a * 2, (np.arange(6.0),))
    kp, module, device = runner_for(case)
    gpu = GpuDevice(0, "gpu", "cuda-emulator", backing=device)
    same = put(np.arange(6.0), gpu)
    other = put(np.arange(6, dtype=np.float32), gpu)
    runner = executor.ProgramRunner(kp, module, device)
    np.testing.assert_array_equal(runner.run([same])[0], np.arange(6.0) * 2)
    np.testing.assert_array_equal(runner.run([other])[0], np.arange(6.0) * 2)

"""The step kinds of the executor (executor.py): `STEP_RUNNERS[kind](call, step)` runs one step
of a rendered module, `Call` is the state of one run it is handed, and `Device` what a device
offers (executor.py's docstring describes the interface).

A list of `Launch` is the step kind "kernels" (executor.py); any other step names its kind in a
`step_kind` attribute, and the module that defines that kind registers its runner with
`@step_runner("kind")` (work_step.py, matmul_step.py, checks.py, flow_steps.py); the executor
imports those modules, so every kind is registered before a program runs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from ... import events
from ...errors import UnsupportedOperationError
from ...fusion import KernelProgram
from .launch import Launch


class Device(Protocol):
    """What ProgramRunner needs of a device (module docstring)."""

    name: str

    def alloc(self, shape: tuple[int, ...], dtype: np.dtype) -> Any: ...

    def put(self, value: Any, shape: tuple[int, ...], dtype: np.dtype, function: str = "") -> Any: ...

    def upload(self, host: np.ndarray, function: str = "") -> Any: ...

    def download(self, buffer: Any, shape: tuple[int, ...], dtype: np.dtype, function: str = "") -> np.ndarray: ...

    def synchronize(self) -> None: ...

    def copy(self, buffer: Any) -> Any: ...

    def launch_shape(self, launch: Launch) -> tuple[int, int]: ...

    def launch(self, kernel: str, grid: int, block: int, args: Sequence[Any], timed: bool = False) -> Any: ...

    def elapsed(self, handles: Sequence[Any]) -> list[float]: ...

    def new_status(self) -> Any: ...

    def check_status(self, word: Any) -> None: ...


class Runner(Protocol):
    """What a step runner reads of the program runner (executor.ProgramRunner)."""

    kp: KernelProgram
    device: Device
    params: Any  # the run-time parameters of a shape-generic program (a device buffer), or None

    def launch_shape(self, launch: Launch) -> tuple[int, int]: ...


@dataclass
class Call:
    """The state of one run of a program, handed to every step runner: the device, the buffer
    of every kernel-IR buffer id (`bufs`), and the status word."""

    runner: Runner
    bufs: dict[int, Any]
    status: Any
    work: dict[tuple, Any] = field(default_factory=dict)  # the current step's work/scratch buffers
    # (timing handle, kernel, grid, block, host clock at launch) per launch, while events are on
    timings: list[tuple] | None = None

    @property
    def device(self) -> Device:
        return self.runner.device

    def launch(self, launch: Launch, grid: int, block: int, parts: int = 1) -> None:
        """Launch one `Launch` with its parameters resolved (module docstring of render.Launch)."""
        args: list[Any] = []
        for what in launch.params:
            tag = what[0]
            if tag == "buf":
                args.append(self.bufs[what[1]])
            elif tag == "work":
                args.append(self.work[(what[1], what[2])])
            elif tag == "scratch":
                args.append(self.work[what])
            elif tag == "parts":
                args.append(np.int64(parts))
            elif tag == "status":
                args.append(self.status)
            elif tag == "int":  # an integer by value (work_step.py: the stage of a sorting network)
                args.append(np.int64(what[1]))
            elif tag == "params":  # a shape-generic program's run-time parameters (dynamic_params.py)
                args.append(self.runner.params)
            else:
                raise UnsupportedOperationError(f"kernel {launch.name}: unknown kernel parameter {what!r}")
        if self.timings is None:
            self.runner.device.launch(launch.name, grid, block, args)
        else:
            t0 = events.clock()
            handle = self.runner.device.launch(launch.name, grid, block, args, timed=True)
            self.timings.append((handle, launch.name, grid, block, t0))

    def publish_kernel_times(self) -> None:
        """One KernelEvent per timed launch (waits for the launches on an asynchronous device)."""
        if not self.timings:
            return
        device = self.runner.device
        times = device.elapsed([t[0] for t in self.timings])
        for (_, kernel, grid, block, t0), duration in zip(self.timings, times):
            events.publish(events.KernelEvent(self.runner.kp.name, t0, duration, kernel=kernel, device=device.name,
                                              grid=grid, block=block))


StepRunner = Callable[[Call, Any], None]
STEP_RUNNERS: dict[str, StepRunner] = {}


def step_runner(kind: str) -> Callable[[StepRunner], StepRunner]:
    """Register the runner of a step kind (`STEP_RUNNERS[kind]`).

    >>> @step_runner("doctest-noop")
    ... def _noop(call, step): pass
    >>> STEP_RUNNERS["doctest-noop"] is _noop
    True
    >>> del STEP_RUNNERS["doctest-noop"]
    """
    def register(fn: StepRunner) -> StepRunner:
        STEP_RUNNERS[kind] = fn
        return fn
    return register


def step_kind(step: Any) -> str:
    """"kernels" for a list of launches, else the step's own `step_kind`."""
    if isinstance(step, list):
        return "kernels"
    return getattr(step, "step_kind", type(step).__name__)

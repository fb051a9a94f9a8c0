"""The "work" step kind of the executor (step_runners.STEP_RUNNERS): a library step rendered as a
fixed sequence of launches sharing work buffers whose sizes the renderer knows (accumulate.py's
chunk totals, sort.py's keys and positions), unlike the grid-sized partials of a two-stage
reduction. A launch reads work buffer k through its ("work", k, "val") parameter and may take
integer arguments by value (("int", value): one kernel serves every stage of a sorting network).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from .step_runners import Call, step_runner


@dataclass
class WorkStep:
    """A library step's launches in order and its work buffers: (k, dtype, elements) each."""

    launches: list
    work: list = field(default_factory=list)
    step_kind: str = "work"

    def __iter__(self) -> Iterator:
        return iter(self.launches)

    def __len__(self) -> int:
        return len(self.launches)


@step_runner("work")
def run_work_step(call: Call, step: WorkStep) -> None:
    call.work = {(k, "val"): call.device.alloc((size,), np.dtype(dt)) for k, dt, size in step.work}
    for launch in step.launches:
        grid, block = call.runner.launch_shape(launch)
        call.launch(launch, grid, block)

"""The "tiles" step kind of the executor (step_runners.STEP_RUNNERS): one dot_general's tile kernel
(render_matmul.py), launched with the block size it was written for.

The device picks the grid (`launch_shape` of the launch as a "rows" launch: one block per output
tile, capped by the device's policy; the kernel grid-strides over tiles, so any grid is
correct); the block is the kernel's own, `Launch.block_size`, whatever the device's default
block is, so devices need to know nothing of this step kind.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator

from .step_runners import Call, step_runner
from .launch import Launch


@dataclass
class TileStep:
    """A dot_general step of a rendered module: its one tile-kernel launch."""

    launch: Launch
    step_kind: str = "tiles"

    def __iter__(self) -> Iterator[Launch]:
        return iter([self.launch])

    def __len__(self) -> int:
        return 1


@step_runner("tiles")
def run_tiles(call: Call, step: TileStep) -> None:
    """The grid as the device sizes a "rows" launch (one block per item, capped by its policy:
    every device knows that kind), the block the kernel was written for."""
    launch = step.launch
    grid, _ = call.device.launch_shape(replace(launch, kind="rows"))
    call.launch(launch, grid, launch.block_size)

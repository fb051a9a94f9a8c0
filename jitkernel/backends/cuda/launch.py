"""What a rendered program is made of: `Launch` (one kernel launch of a step: what it iterates
over and what each kernel argument is) and `CudaModule` (the translation unit and, per step, its
launches). Every renderer builds them; the executor and the devices run them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Launch:
    """One kernel launch of a step. kind: elementwise | rows | warp_rows | partial | final | tiles
    (a matmul: one block per output tile, render_matmul.py). `items`: the points of the
    grid-stride loop (elementwise), kept points (rows: one block each; warp_rows: one warp
    each), or reduced points (partial). `params`: what each kernel argument is: ("buf", id), ("work", k, "val"|"pos")
    (the partials of reduce store k, one per stage-one block), ("parts",) (how many partials,
    a long long), ("scratch", id) (a row kernel's row scratch: one row per block), ("status",)."""

    name: str
    kind: str
    items: int
    params: list[tuple]
    work: list[tuple[int, np.dtype, bool]] = field(default_factory=list)  # (k, acc dtype, has pos)
    scratch: list[tuple[int, np.dtype, int]] = field(default_factory=list)  # row scratch: (buffer, dtype, per row)
    block_size: int = 0  # a kernel written for one block size (the matmul tiles); 0: the runtime's choice


@dataclass
class CudaModule:
    """The rendered program: the source (prelude + kernels), and per KernelProgram step the
    launches that run it, in order."""

    name: str
    prelude: str
    kernels: str
    launches: list  # per step: its launches (list[Launch]), a step object with a `step_kind` (executor.py), or a control plan (flow.py)
    tag: str = ""

    @property
    def source(self) -> str:
        return self.prelude + self.kernels

"""The compiled module of a shape-generic program, reused by later sizes (docs/gpu.md, "Dynamic
shapes on the GPU"; dynamic_params.py says how the run-time parameters are rendered): a program
runs on a template when its shape-generic rendering is the same source text.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...fusion.kernel_ir import KernelProgram
from ...fusion.params import compatible, constants, parametrize
from .render import render_program


@dataclass
class CudaTemplate:
    """The compiled module of a shape-generic program, reusable by every program with the same
    kernel structure whose re-rendered source is the same text."""

    structure: tuple
    values: list
    positions: list[int]
    source: str
    compiled: Any  # the backend's compiled module (the emulator's host library)
    texts: dict

    def generic_program(self, kp: KernelProgram) -> KernelProgram | None:
        """`kp` with this template's parameters, when its structure and fixed constants match."""
        structure, values = constants(kp)
        if not compatible(self.structure, self.values, self.positions, structure, values):
            return None
        return parametrize(kp, self.positions) if self.positions else kp

    def fit(self, kp: KernelProgram) -> tuple[Any, list] | None:
        """(the module `kp` renders to, `kp`'s parameter values) when `kp` runs on this template's
        compiled code: same structure and fixed constants, and its shape-generic rendering is the
        same source text; None otherwise (the caller compiles). Shared by both CUDA backends."""
        generic = self.generic_program(kp)
        if generic is None:
            return None
        module = render_program(generic)  # its launches carry this program's sizes
        if module.source != self.source:
            return None
        _, values = constants(kp)
        return module, values

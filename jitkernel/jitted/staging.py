"""Staging: `f.lower(...)` traces and compiles without running and returns a `Lowered`,
whose `as_text(stage)` prints one stage of the pipeline.
"""
from __future__ import annotations

from typing import Any

from ..backends import device_stages
from ..pipeline import Compiled
from ..tracebacks import hide_engine_frames
from .sequence_hint import add_sequence_hint


class Lowered:
    """A traced, optimised and compiled function for one signature; `as_text(stage)` shows it."""

    STAGES = ("ir", "optimized", "kernels", "llvm", "asm", "cuda")

    def __init__(self, compiled: Compiled) -> None:
        self.compiled = compiled

    def as_text(self, stage: str = "optimized") -> str:
        """Text of a stage: "ir" (traced), "optimized", "kernels" (fused), "llvm", "asm" (CPU
        backend), "cuda" (the CUDA translation unit, any backend), "ptx" (nvcc's PTX of it)."""
        # A backend's own stages (`Backend.device_stages`: "ptx" needs nvcc, docs/gpu.md) are
        # accepted too, though not among the stages every lowered function shows.
        if stage not in self.STAGES and stage not in device_stages():
            raise ValueError(f"unknown stage {stage!r}; stages are {', '.join(self.STAGES)}")
        return self.compiled.text(stage)

    def __str__(self) -> str:
        return self.as_text("kernels")


class StagingMixin:
    """`lower`: the compiled entry of a call, without running it."""

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """Trace and compile for these arguments (or reuse the cached entry) without running."""
        try:
            sig, compiled, _ = self._lookup(args, kwargs)
            if compiled.program.layout_guard:
                compiled = self._layout_variant(sig, compiled, args, kwargs, self._dynamic_leaves(args, kwargs))
        except BaseException as e:
            add_sequence_hint(e, self.fun, args, kwargs)
            hide_engine_frames(e)
            raise
        return Lowered(compiled)

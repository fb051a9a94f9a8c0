"""Backends: each is a renderer plus a runtime behind `compile(program, name=, fastmath=)`,
returning (executable, {stage: text thunk}). A backend never reaches back into tracing."""
from __future__ import annotations

from typing import Any, Protocol

from ..ir import Program


class Backend(Protocol):
    name: str

    def compile(self, program: Program, *, name: str, fastmath: bool, disk_cache: bool,
                previous: Any = None) -> tuple[Any, dict]: ...


def get_backend(name: str) -> Backend:
    if name == "interpret":
        from .interpret import InterpretBackend
        return InterpretBackend()
    if name == "cpu":
        from .cpu import CpuBackend
        return CpuBackend()
    if name in ("cuda", "gpu"):
        raise ValueError("the CUDA backend is not available in this build yet; use backend='cpu' or 'interpret'")
    raise ValueError(f"unknown backend {name!r}; backends are 'cpu' and 'interpret'")

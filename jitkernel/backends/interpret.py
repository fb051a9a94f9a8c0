"""The `interpret` backend: runs the optimised Program with the NumPy reference interpreter,
checking every value against its variable's type (it is the oracle: a primitive whose
implementation disagrees with its shape rule must fail here, not pass a converted value on)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..interpreter import eval_program
from ..ir import Program
from .base import Backend


class InterpretBackend(Backend):
    """Runs the optimised program with the NumPy reference interpreter (no code generation)."""

    name = "interpret"

    def compile(self, program: Program, *, name: str, fastmath: bool = False,
                disk_cache: bool = True, previous: Any = None) -> tuple[Any, dict]:
        def run(arrays: list[np.ndarray]) -> list[np.ndarray]:
            return [np.array(o, order="C", copy=True) for o in eval_program(program, arrays)]
        return run, {}

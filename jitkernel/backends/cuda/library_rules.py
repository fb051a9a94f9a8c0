"""The renderers of library steps on the GPU, one rule per primitive: `LIBRARY_RULES[prim](kp,
step, n, placeholder)` -> (the step's C text, its plan: a list of `Launch` or a step object of
the executor). Each rule module registers its own rules with `@library_rule(...)` (take.py,
sort.py, indexing.py, complex_ops.py, ...); render.py imports them all and dispatches; a
primitive without a rule raises `unsupported_step`, naming it.

>>> @library_rule("doctest-prim")
... def _rule(kp, step, n, placeholder): return "", []
>>> LIBRARY_RULES["doctest-prim"] is _rule
True
>>> del LIBRARY_RULES["doctest-prim"]
"""
from __future__ import annotations

from typing import Any, Callable

from ...errors import UnsupportedOperationError
from ...fusion.kernel_ir import KernelProgram, LibraryCall

LibraryRule = Callable[[KernelProgram, LibraryCall, int, str], tuple[str, Any]]
LIBRARY_RULES: dict[str, LibraryRule] = {}


def library_rule(*prims: str) -> Callable[[LibraryRule], LibraryRule]:
    """Register the renderer of the library steps of `prims` (`LIBRARY_RULES[prim]`)."""
    def register(fn: LibraryRule) -> LibraryRule:
        for prim in prims:
            registered = LIBRARY_RULES.setdefault(prim, fn)
            if registered is not fn:
                raise ValueError(f"library step {prim!r} has two CUDA rules: {registered.__module__} and "
                                 f"{fn.__module__}")
        return fn
    return register


def unsupported_step(kp: KernelProgram, step: LibraryCall, n: int, why: str = "") -> UnsupportedOperationError:
    """The error of library step `step` (step `n` of `kp`) that has no CUDA rendering (`why`:
    for which case, when the primitive has a rule but not for this one)."""
    what = repr(step.prim) + (f" running {step.params.get('prim')!r}" if step.prim == "complex_library" else "")
    return UnsupportedOperationError(
        f"library step {what} (step {n} of {kp.name}) has no CUDA implementation{why}; run it with "
        "backend='cpu' (jitkernel never round-trips a cuda program through the host)")

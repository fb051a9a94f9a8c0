"""Which control flow can run as a native loop or branch: a `fori_loop`, `while_loop` or `cond`
whose sub-programs (recursively) hold only primitives the scheduler turns into kernels, plus the
library primitives the backend being scheduled for runs inside loop bodies
(`library_steps_in_bodies`: the CUDA backend, whose loops are host-driven).

The graph passes that prepare loops for native lowering (`passes/loops.py`) and fusion's
scheduler (`fusion/loops.py`, which turns such equations into LoopStep/BranchStep) both ask
`native_ok`; it lives here, below both, because it reads only the IR and the primitive table.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

from ..ir import Eqn, primitives
from ..ir.control_flow import sub_programs

LOOP_PRIMS = ("fori_loop", "while_loop")
BRANCH_PRIMS = ("cond",)
CONTROL_FLOW = LOOP_PRIMS + BRANCH_PRIMS

def native_ok(eqn: Eqn, kernel_prims: set[str] | None = None) -> bool:
    """Does every sub-program (recursively) fuse into kernels? Library steps and primitives
    without a kernel lowering (scan, data-dependent shapes) keep lax's Python-driven loop."""
    if eqn.prim not in CONTROL_FLOW:
        return False
    if eqn.prim == "fori_loop" and any(v.aval.ndim for v in eqn.inputs[:2]):
        return False
    kernel_prims = _kernel_prims() if kernel_prims is None else kernel_prims
    for prog in sub_programs(eqn.params):
        for e in prog.eqns:
            if e.prim in CONTROL_FLOW:
                if not native_ok(e, kernel_prims):
                    return False
            elif e.prim not in kernel_prims and not kernel_gather(e):
                return False
    return True


def kernel_gather(eqn: Eqn) -> bool:
    """Is `eqn` a gather the scheduler turns into loads inside kernels (fusion/schedule.py)?
    `x[idx]` of a non-empty 1-D `x` by one integer index array of any shape, on a backend that
    does not run gathers as library steps in bodies: each element reads `x` at its index,
    checked as NumPy checks it (a negative index wraps once; one still outside the axis sets the
    IndexError flag of the status word). Indices are converted to int64 first, as NumPy converts
    them to intp: a uint64 index above 2**63 wraps to a negative one in both."""
    if eqn.prim != "gather" or eqn.params.get("index") != (("array", 0),) or len(eqn.inputs) != 2:
        return False
    x, idx = eqn.inputs
    return (x.aval.ndim == 1 and x.aval.shape[0] > 0 and idx.aval.dtype.kind in "iu"
            and "gather" not in _BODY_LIBRARY_PRIMS.get())


def _kernel_prims() -> set[str]:
    """Primitives the scheduler turns into kernels (elementwise, movement, reductions,
    concatenate, iota, update_slice: a copy and a region kernel, fusion/update.py), plus those the kernel lowering of dynamic indices handles,
    plus the library primitives the backend being scheduled for runs inside bodies."""
    kinds = ("elementwise", "movement", "reduce")
    names = {n for n, p in primitives.PRIMITIVES.items() if p.kind in kinds}
    return names | {"concatenate", "iota", "update_slice"} | set(_DYNAMIC_KERNEL_PRIMS) | _BODY_LIBRARY_PRIMS.get()


# Library primitives whose steps may sit inside a LoopStep/BranchStep body: none for the CPU
# (its native loops are LLVM loops over kernels); the CUDA backend drives its loops from the host
# and runs any step kind in a body, so it names the library steps it implements.
_BODY_LIBRARY_PRIMS: ContextVar[frozenset] = ContextVar("body_library_prims", default=frozenset())


def body_library_prims() -> frozenset:
    """The library primitives bodies may hold in the schedule under way (library_steps_in_bodies)."""
    return _BODY_LIBRARY_PRIMS.get()


@contextmanager
def library_steps_in_bodies(prims: frozenset) -> Iterator[None]:
    """Schedule with control-flow bodies that may hold library steps of `prims`.

    >>> with library_steps_in_bodies(frozenset({"dot_general"})):
    ...     "dot_general" in _kernel_prims()
    True
    >>> "dot_general" in _kernel_prims()
    False
    """
    token = _BODY_LIBRARY_PRIMS.set(frozenset(prims))
    try:
        yield
    finally:
        _BODY_LIBRARY_PRIMS.reset(token)


# Dynamic-offset primitives with a kernel lowering (fusion/dynamic.py).
_DYNAMIC_KERNEL_PRIMS = ("dynamic_slice", "dynamic_update_slice")

"""The run-time debugging primitive (jitkernel/debug.py: `jk.debug.print`, `jk.debug.callback`).

- `debug_callback(*values, call)`: calls `call.callback(*args, **kwargs)` with the values of
  this run, rebuilt from the flat `values` by `call.treedef` (the pytree of `(args, kwargs)`),
  when the program runs. Its one result is a bool 0-d *token* nobody reads: the
  equation is an effect (`Primitive.effect`), kept by dead-code elimination although unread
  (`unread="step"`, as `raise_if`), never folded at compile time, never hoisted out of a loop,
  never merged with an equal one by common-subexpression elimination. Being a library step it
  runs where the program runs, in program order, after its inputs exist; only the printed values
  are materialised for it, the operations around it fuse as before.
- `Printer(fmt)` is the callback of `jk.debug.print`: `fmt.format(*args, **kwargs)` printed to
  `sys.stdout` (read when it runs, so pytest's capsys and Jupyter see it). A frozen dataclass, so
  two prints of the same text compare equal (a cache key stays stable across traces) and the
  IR printer shows `print('x = {}')`.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from ..tree import TreeDef, tree_unflatten
from .primitives import PRIMITIVES, Primitive, register
from .program import WITH_SUB_PROGRAMS, Eqn, Program
from .types import AType


@dataclass(frozen=True)
class Printer:
    """`jk.debug.print`'s callback: formats its values with `fmt` (str.format fields)."""

    fmt: str

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        sys.stdout.write(self.fmt.format(*args, **kwargs) + "\n")

    def __repr__(self) -> str:
        return f"print({self.fmt!r})"


def _host_value(value: np.ndarray) -> Any:
    """What a callback receives for one value: an ndarray, or a NumPy scalar for a 0-d one (as
    a jitted function returns 0-d results), so that `"{:.3f}"` formats it."""
    value = np.asarray(value)
    return value[()] if value.ndim == 0 else np.array(value, copy=True)


@dataclass(frozen=True)
class HostCall:
    """The param of a `debug_callback` equation: the Python callable and the pytree of its
    `(args, kwargs)` (hashable, compared by the callable's equality: a Printer by its text)."""

    callback: Callable[..., Any]
    treedef: TreeDef

    def __call__(self, values: list[Any]) -> None:
        """Call the callback with the host `values` rebuilt into `(args, kwargs)`."""
        args, kwargs = tree_unflatten(self.treedef, [_host_value(v) for v in values])
        self.callback(*args, **kwargs)

    def __repr__(self) -> str:
        name = repr(self.callback) if isinstance(self.callback, Printer) else \
            f"callback({getattr(self.callback, '__qualname__', type(self.callback).__name__)})"
        return f"{name}{self.treedef}"


@dataclass(frozen=True)
class PackedComplex:
    """The param of a `debug_callback` whose complex values the complex lowering pass packed as
    float pairs (..., 2) (passes/complex_lower.py): unpacks them, then runs `call`. `dtypes`:
    per value, its complex dtype, or None for a value that was not packed."""

    call: HostCall
    dtypes: tuple

    def __call__(self, values: list[Any]) -> None:
        unpacked = []
        for v, dtype in zip(values, self.dtypes):
            if dtype is not None:
                pairs = np.asarray(v)
                out = np.empty(pairs.shape[:-1], dtype)
                out.real, out.imag = pairs[..., 0], pairs[..., 1]  # (inf * 1j would make a NaN)
                v = out
            unpacked.append(v)
        self.call(unpacked)

    def __repr__(self) -> str:
        return repr(self.call)


TOKEN = AType((), np.dtype(np.bool_))


def _debug_rule(in_avals: list[AType], *, call: HostCall | PackedComplex) -> list[AType]:
    return [TOKEN]


def _debug_impl(*values: np.ndarray, call: HostCall | PackedComplex) -> list[np.ndarray]:
    call(list(values))
    return [np.zeros((), np.bool_)]


register(Primitive("debug_callback", "library", _debug_rule, _debug_impl, unread="step", effect=True))


def without_effects(program: Program) -> Program:
    """`program` without its effects, in its sub-programs too: what reverse-mode differentiation
    runs again to recompute a loop's or branch's forward pass, which must not print a second time
    (the forward pass printed the primals already)."""
    def strip(value: Any) -> Any:
        if isinstance(value, Program):
            return without_effects(value)
        if isinstance(value, tuple) and any(isinstance(v, Program) for v in value):
            return tuple(strip(v) for v in value)
        return value

    if not any(PRIMITIVES[e.prim].effect or e.prim in WITH_SUB_PROGRAMS for e in program.eqns):
        return program
    eqns = [e if e.prim not in WITH_SUB_PROGRAMS else Eqn(e.prim, e.inputs, e.outputs, {k: strip(v) for k, v in e.params.items()})
            for e in program.eqns if not PRIMITIVES[e.prim].effect]
    return replace(program, eqns=eqns)

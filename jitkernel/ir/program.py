"""The graph IR: typed SSA programs of primitive applications (compare JAX's jaxpr).

A `Program` has input variables, constant variables bound to NumPy arrays, a list of equations
in dependency order and output variables. Equation params are hashable Python values; a
control-flow primitive may carry sub-Programs in its params, so transformations recurse.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .primitives import PRIMITIVES
from .types import AType

_var_ids = itertools.count()


class Var:
    """One SSA value. Identity is the object; `id` only orders and names it."""

    __slots__ = ("aval", "id")

    def __init__(self, aval: AType) -> None:
        self.aval = aval
        self.id = next(_var_ids)

    def __repr__(self) -> str:
        return f"Var({self.id}:{self.aval})"


@dataclass(eq=False)
class Eqn:
    """`outputs = prim(*inputs, **params)`."""

    prim: str
    inputs: list[Var]
    outputs: list[Var]
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class Program:
    """A typed SSA program. `consts[i]` is the value bound to `constvars[i]`."""

    invars: list[Var]
    constvars: list[Var]
    consts: list[np.ndarray]
    eqns: list[Eqn]
    outvars: list[Var]
    name: str = "program"
    # (input index, integer dtype): Python int arguments that NumPy would range-check.
    int_arg_bounds: list = field(default_factory=list)
    # (output index, input index): outputs that are an input, a copy or a view of one, which
    # NumPy returns in that input's byte order (trace/context.py _byteorder_sources).
    byteorder_sources: tuple = ()
    # (input index, output index): array arguments the function writes; that output is the
    # argument's final value, copied back into the caller's array (trace/views.py).
    written_args: tuple = ()
    written_names: tuple = ()  # the user's names of those arguments (api.Jitted._traced)
    # (output index, count output index): data-dependent outputs (numpy/_datadep.py), a padded
    # buffer returned as its first `count` rows (pipeline.Compiled.finish).
    trimmed_outputs: tuple = ()
    # (argument leaf index, byte strides): arguments whose layout decided whether a reshape or
    # ravel is a view (trace/views.py); the program is run only on arguments of these strides
    # (api.Jitted._layout_variant traces another for a different layout).
    layout_guard: tuple = ()
    # (output index, input index, movements): outputs that are an array argument or a view of
    # one, returned as that view of the caller's array (trace/views.py argument_view_chain).
    output_views: tuple = ()

    @property
    def in_avals(self) -> list[AType]:
        return [v.aval for v in self.invars]

    @property
    def out_avals(self) -> list[AType]:
        return [v.aval for v in self.outvars]

    def consumers(self) -> dict[Var, list[Eqn]]:
        """Map every variable to the equations that read it (outputs not included)."""
        users: dict[Var, list[Eqn]] = {}
        for eqn in self.eqns:
            for v in eqn.inputs:
                users.setdefault(v, []).append(eqn)
        return users

    def producers(self) -> dict[Var, Eqn]:
        return {o: eqn for eqn in self.eqns for o in eqn.outputs}

    def __str__(self) -> str:
        return _text_form(self)


def _no_text_form(program: Program) -> str:
    raise RuntimeError("ir/printer.py registers the text form of a Program when jitkernel.ir is imported")


_text_form: Callable[[Program], str] = _no_text_form


def register_text_form(format_program: Callable[[Program], str]) -> None:
    """Set what `str(program)` returns. ir/printer.py registers itself here: it reads Programs
    (their sub-Programs in params), so this module cannot import it."""
    global _text_form
    _text_form = format_program


# Primitives whose params hold sub-Programs (control flow, ir/control_flow.py).
WITH_SUB_PROGRAMS: set[str] = set()


def may_raise(eqn: Eqn) -> bool:
    """Whether `eqn` is a step kept when unread (`Primitive.unread == "step"`: NumPy's
    IndexError of a traced index, a run-time check), or a control-flow equation whose
    sub-programs hold one."""
    if PRIMITIVES[eqn.prim].unread == "step":
        return True
    if eqn.prim not in WITH_SUB_PROGRAMS:
        return False
    for value in eqn.params.values():
        subs = value if isinstance(value, tuple) else (value,)
        if any(isinstance(p, Program) and any(may_raise(e) for e in p.eqns) for p in subs):
            return True
    return False


def live_variables(eqns: list[Eqn], roots: list[Var]) -> set[Var]:
    """Every variable `roots` depend on through `eqns` (one reverse walk; the roots included).
    An equation is live when any of its outputs is, or when it may raise (may_raise)."""
    live = set(roots)
    for eqn in reversed(eqns):
        if any(o in live for o in eqn.outputs) or may_raise(eqn):
            live.update(eqn.outputs)
            live.update(eqn.inputs)
    return live

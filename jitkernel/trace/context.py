"""Trace contexts: record primitive applications on Tracers into a Program."""
from __future__ import annotations

import os
import sys
from typing import Any, Sequence

import numpy as np

from ..errors import UnsupportedOperationError
from ..ir import AType, Eqn, Program, Var, check_dtype, primitives

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_active: list["TraceContext"] = []


def current_context() -> "TraceContext | None":
    return _active[-1] if _active else None


def user_frame_location() -> str:
    """`file:line: source` of the innermost frame outside jitkernel (the user's code)."""
    import linecache
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep):
        frame = frame.f_back
    if frame is None:
        return "<unknown location>"
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return f"{frame.f_code.co_filename}:{frame.f_lineno}" + (f": {line}" if line else "")


class TraceContext:
    """Collects equations while a function runs on Tracers."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.eqns: list[Eqn] = []
        self.invars: list[Var] = []
        self.constvars: list[Var] = []
        self.consts: list[np.ndarray] = []
        self._const_ids: dict[int, Var] = {}
        self._keepalive: list[Any] = []
        self._input_index: dict[Var, int] = {}
        self.int_arg_bounds: list[tuple[int, np.dtype]] = []

    def __enter__(self) -> "TraceContext":
        _active.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _active.remove(self)

    def new_input(self, aval: AType, weak: type | None = None) -> "Tracer":
        from .tracer import Tracer
        v = Var(aval)
        self._input_index[v] = len(self.invars)
        self.invars.append(v)
        return Tracer(self, v, weak)

    def const(self, value: Any, dtype: np.dtype | None = None) -> "Tracer":
        """Lift a concrete value (NumPy array or scalar) into the program as a constant."""
        from .tracer import Tracer
        if isinstance(value, Tracer):
            raise TypeError("const() of a Tracer")
        arr = np.asarray(value) if dtype is None else np.asarray(value, dtype=dtype)
        if dtype is not None and isinstance(value, np.ndarray) and value.dtype != dtype:
            arr = value.astype(dtype)
        check_dtype(arr.dtype, "a constant")
        key = id(value) if isinstance(value, np.ndarray) and dtype is None else None
        if key is not None and key in self._const_ids:
            return Tracer(self, self._const_ids[key])
        # A private C-ordered copy: the program keeps the value it saw at trace time, and the
        # user's array is not touched (np.ascontiguousarray would also turn 0-d into 1-d).
        arr = np.array(arr, order="C", copy=True)
        arr.flags.writeable = False
        v = Var(AType(arr.shape, arr.dtype))
        self.constvars.append(v)
        self.consts.append(arr)
        if key is not None:
            self._const_ids[key] = v
            self._keepalive.append(value)  # ids stay unique while the trace runs
        return Tracer(self, v)

    def weak_int_cast(self, var: Var, dtype: np.dtype) -> None:
        """Record that input `var` (a Python int argument) is cast to integer `dtype`."""
        if var in self._input_index:  # a dict: this runs once per operation on such an input
            self.int_arg_bounds.append((self._input_index[var], dtype))

    def bind(self, prim: str, inputs: Sequence["Tracer"], **params: Any) -> list["Tracer"]:
        """Append `prim(*inputs, **params)`; the shape rule raises NumPy-style errors."""
        from .tracer import Tracer
        for t in inputs:
            if not isinstance(t, Tracer) or t._ctx is not self:
                raise UnsupportedOperationError(
                    f"{self.name}: a value traced by another jitted function leaked into this one")
        in_vars = [t.ir_var for t in inputs]
        out_avals = primitives.infer_avals(prim, [v.aval for v in in_vars], params)
        outs = [Var(a) for a in out_avals]
        self.eqns.append(Eqn(prim, in_vars, outs, dict(params)))
        return [Tracer(self, o) for o in outs]

    def bind1(self, prim: str, *inputs: "Tracer", **params: Any) -> "Tracer":
        return self.bind(prim, inputs, **params)[0]

    def program(self, outvars: list[Var]) -> Program:
        program = Program(list(self.invars), list(self.constvars), list(self.consts), list(self.eqns),
                          outvars, self.name)
        program.int_arg_bounds = sorted(set(self.int_arg_bounds), key=lambda t: (t[0], t[1].str))
        return program

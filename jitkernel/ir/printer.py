"""A stable, readable text form of a Program (names assigned in order of definition)."""
from __future__ import annotations

import numpy as np

from .program import Program, Var, register_text_form


def format_param(value: object) -> str:
    """The text of one equation param (a sub-Program as its indented text form)."""
    if isinstance(value, np.dtype):
        return str(value)
    if isinstance(value, tuple):
        return "(" + ",".join(format_param(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, Program):
        return "{ " + format_program(value).replace("\n", "\n    ") + " }"
    return repr(value)


def _format_const(value: np.ndarray) -> str:
    if value.ndim == 0:
        return repr(value.item())
    if value.size <= 4:
        return np.array2string(value, separator=",").replace("\n", "")
    return f"<{value.size} values>"


def format_program(program: Program) -> str:
    """Return the text form, e.g. ``{ lambda a:f32[3] ; b:f32[3] = sin a ; out (b) }``.

    >>> from jitkernel.ir import AType, Program, Var, Eqn
    >>> x = Var(AType((3,), 'float32')); y = Var(AType((3,), 'float32'))
    >>> print(format_program(Program([x], [], [], [Eqn('sin', [x], [y])], [y], 'f')))
    program f(a: f32[3]) {
      b: f32[3] = sin a
      return (b)
    }
    """
    names: dict[Var, str] = {}

    def name(v: Var) -> str:
        if v not in names:
            n, s = len(names), ""
            while True:
                s = chr(ord("a") + n % 26) + s
                n = n // 26 - 1
                if n < 0:
                    break
            names[v] = s
        return names[v]

    def typed(v: Var) -> str:
        return f"{name(v)}: {v.aval}"

    lines = [f"program {program.name}({', '.join(typed(v) for v in program.invars)}) {{"]
    for v, c in zip(program.constvars, program.consts):
        lines.append(f"  const {typed(v)} = {_format_const(c)}")
    for eqn in program.eqns:
        outs = ", ".join(typed(o) for o in eqn.outputs)
        params = " ".join(f"{k}={format_param(p)}" for k, p in sorted(eqn.params.items()))
        args = " ".join(name(v) for v in eqn.inputs)
        lines.append(f"  {outs} = {eqn.prim}" + (f"[{params}]" if params else "") + (f" {args}" if args else ""))
    lines.append(f"  return ({', '.join(name(v) for v in program.outvars)})")
    lines.append("}")
    return "\n".join(lines)


register_text_form(format_program)

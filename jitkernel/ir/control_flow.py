"""Control-flow primitives: `cond`, `while_loop`, `fori_loop`, `scan`, each carrying its
sub-Programs in its params (docs/architecture.md, "Control flow, traced indices and symbolic
dimensions").

IR format (every helper builds and reads exactly this):

- `cond`: inputs `[index, *operands]`, index an int32 0-d clamped to `[0, len(branches) - 1]`
  as `lax.switch` does; params `branches: tuple[Program, ...]`; every branch takes the operands
  (closed-over values are passed explicitly as operands) and returns outputs of equal types.
- `while_loop`: inputs `[*cond_consts, *body_consts, *init]`; params `cond: Program`
  (cond_consts + carry -> bool 0-d), `body: Program` (body_consts + carry -> carry),
  `cond_nconsts`, `body_nconsts`; outputs the final carry.
- `fori_loop`: inputs `[lower, upper, *consts, *init]` (0-d integers of one dtype); params
  `body: Program` (i, *consts, *carry -> carry; i has the bounds' dtype), `nconsts`; outputs the
  final carry. The trip count is `max(upper - lower, 0)`.
- `scan`: inputs `[*consts, *init, *xs]`; params `body: Program` (consts, carry, x slices ->
  carry, y slices), `nconsts`, `ncarry`, `length`, `reverse`; outputs `[*carry, *ys]`, each y
  stacked along a new leading axis of `length`.

Types are checked as JAX checks them, exactly: a carry's shape and dtype are the same at the
loop's input and at the body's output (weak Python-scalar types do not exist in the IR; the
tracer resolves them first, jitkernel/lax.py). The kind is "library": every backend runs an
equation as one step. Its reference implementation evaluates the sub-programs with the
interpreter; the CPU backend compiles each sub-program once and drives the loop from Python
(backends/cpu/control_flow.py).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .evaluate import eval_program
from .primitives import Primitive, register
from .program import WITH_SUB_PROGRAMS, Program
from .types import AType

CONTROL_FLOW_PRIMITIVES = ("cond", "while_loop", "fori_loop", "scan")
WITH_SUB_PROGRAMS.update(CONTROL_FLOW_PRIMITIVES)


def sub_programs(params: dict) -> list[Program]:
    """Every sub-Program held by an equation's params (for passes and the verifier)."""
    found: list[Program] = []
    for value in params.values():
        if isinstance(value, Program):
            found.append(value)
        elif isinstance(value, tuple):
            found.extend(v for v in value if isinstance(v, Program))
    return found


def _types(avals: Sequence[AType]) -> str:
    return "(" + ", ".join(str(a) for a in avals) + ")"


def _expect(what: str, got: Sequence[AType], expected: Sequence[AType]) -> None:
    if list(got) != list(expected):
        raise TypeError(f"{what}: expected types {_types(expected)}, got {_types(got)}")


def _check_scalar_int(what: str, aval: AType) -> None:
    if aval.shape != () or aval.dtype.kind not in "iu":
        raise TypeError(f"{what} must be a 0-d integer, got {aval}")


# ----------------------------------------------------------------------------- cond


def _cond_rule(in_avals: list[AType], *, branches: tuple[Program, ...]) -> list[AType]:
    if not branches:
        raise ValueError("cond needs at least one branch")
    index, operands = in_avals[0], in_avals[1:]
    if index.shape != () or index.dtype != np.int32:
        raise TypeError(f"cond: the branch index must be an int32 0-d, got {index}")
    outs = branches[0].out_avals
    for k, branch in enumerate(branches):
        _expect(f"cond: branch {k} inputs", branch.in_avals, operands)
        _expect(f"cond: branch {k} outputs (must equal branch 0's)", branch.out_avals, outs)
    return list(outs)


def branch_index(index: np.ndarray, n: int) -> int:
    """lax.switch's rule: the index is clamped to the branch range."""
    return int(min(max(int(index), 0), n - 1))


def _cond_impl(index: np.ndarray, *operands: np.ndarray, branches: tuple[Program, ...]) -> list[np.ndarray]:
    return eval_program(branches[branch_index(index, len(branches))], operands)


register(Primitive("cond", "library", _cond_rule, _cond_impl))

# ----------------------------------------------------------------------------- while_loop


def _while_rule(in_avals: list[AType], *, cond: Program, body: Program, cond_nconsts: int,
                body_nconsts: int) -> list[AType]:
    cconsts = in_avals[:cond_nconsts]
    bconsts = in_avals[cond_nconsts:cond_nconsts + body_nconsts]
    carry = in_avals[cond_nconsts + body_nconsts:]
    _expect("while_loop: cond inputs", cond.in_avals, cconsts + carry)
    _expect("while_loop: cond output", cond.out_avals, [AType((), np.bool_)])
    _expect("while_loop: body inputs", body.in_avals, bconsts + carry)
    _expect("while_loop: body output (the carry)", body.out_avals, carry)
    return list(carry)


def _while_impl(*args: np.ndarray, cond: Program, body: Program, cond_nconsts: int,
                body_nconsts: int) -> list[np.ndarray]:
    cconsts = list(args[:cond_nconsts])
    bconsts = list(args[cond_nconsts:cond_nconsts + body_nconsts])
    carry = list(args[cond_nconsts + body_nconsts:])
    while bool(eval_program(cond, cconsts + carry)[0]):
        carry = eval_program(body, bconsts + carry)
    return carry


register(Primitive("while_loop", "library", _while_rule, _while_impl))

# ----------------------------------------------------------------------------- fori_loop


def _fori_rule(in_avals: list[AType], *, body: Program, nconsts: int) -> list[AType]:
    lower, upper = in_avals[:2]
    _check_scalar_int("fori_loop: lower", lower)
    _check_scalar_int("fori_loop: upper", upper)
    if lower.dtype != upper.dtype:
        raise TypeError(f"fori_loop: lower and upper must share a dtype, got {lower} and {upper}")
    consts, carry = in_avals[2:2 + nconsts], in_avals[2 + nconsts:]
    _expect("fori_loop: body inputs", body.in_avals, [lower] + consts + carry)
    _expect("fori_loop: body output (the carry)", body.out_avals, carry)
    return list(carry)


def _fori_impl(lower: np.ndarray, upper: np.ndarray, *args: np.ndarray, body: Program, nconsts: int) -> list[np.ndarray]:
    consts, carry = list(args[:nconsts]), list(args[nconsts:])
    for i in range(int(lower), int(upper)):
        carry = eval_program(body, [np.asarray(i, lower.dtype)] + consts + carry)
    return carry


register(Primitive("fori_loop", "library", _fori_rule, _fori_impl))

# ----------------------------------------------------------------------------- scan


def _scan_rule(in_avals: list[AType], *, body: Program, nconsts: int, ncarry: int, length: int,
               reverse: bool) -> list[AType]:
    consts = in_avals[:nconsts]
    carry = in_avals[nconsts:nconsts + ncarry]
    xs = in_avals[nconsts + ncarry:]
    for k, x in enumerate(xs):
        if not x.shape or x.shape[0] != length:
            raise ValueError(f"scan: xs leaf {k} has type {x}, its leading axis must have the length {length}")
    slices = [AType(x.shape[1:], x.dtype) for x in xs]
    _expect("scan: body inputs", body.in_avals, consts + carry + slices)
    outs = body.out_avals
    _expect("scan: body output carry", outs[:ncarry], carry)
    return list(carry) + [AType((length,) + y.shape, y.dtype) for y in outs[ncarry:]]


def _scan_impl(*args: np.ndarray, body: Program, nconsts: int, ncarry: int, length: int,
               reverse: bool) -> list[np.ndarray]:
    consts = list(args[:nconsts])
    carry = list(args[nconsts:nconsts + ncarry])
    xs = args[nconsts + ncarry:]
    y_avals = body.out_avals[ncarry:]
    ys = [np.empty((length,) + y.shape, y.dtype) for y in y_avals]
    for t in (range(length - 1, -1, -1) if reverse else range(length)):
        outs = eval_program(body, consts + carry + [x[t] for x in xs])
        carry = outs[:ncarry]
        for y, value in zip(ys, outs[ncarry:]):
            y[t] = value
    return carry + ys


register(Primitive("scan", "library", _scan_rule, _scan_impl))

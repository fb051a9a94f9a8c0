"""Control flow on the CPU, correctness first: a `cond` / `while_loop` / `fori_loop` / `scan`
step is driven from Python, and each of its sub-programs is compiled once, by the normal CPU
pipeline (fusion, LLVM), when the enclosing program is compiled. One iteration costs one native
call of the body (plus the condition's, for `while_loop`): a few microseconds of Python.

This module is the one place that lowers control flow on the CPU: `runtime.py` asks
`library_impl` for the function of every library step, with the backend's compiler of
sub-programs (`compile_sub_program`, passed in by the backend, which imports this module). A native
lowering (LLVM loops and branches: helper `loopcpu`) replaces it per primitive, and may fall back
to it.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...ir import Program, primitives
from ...ir.control_flow import CONTROL_FLOW_PRIMITIVES, branch_index

Run = Callable[[list], list]
# Machine code for one sub-program (already optimised with its enclosing program): a function
# from the input arrays to the output arrays.
CompileSubProgram = Callable[[Program], Run]


def library_impl(prim: str, params: dict[str, Any], compile_sub_program: CompileSubProgram) -> Callable[..., list[np.ndarray]]:
    """The function a library step of `prim` calls as `impl(*inputs, **params)`: the reference
    implementation, or for control flow a driver over sub-programs `compile_sub_program` built."""
    if prim in CONTROL_FLOW_PRIMITIVES:
        return _DRIVERS[prim](params, compile_sub_program)
    return primitives.get(prim).impl


def _arrays(values: tuple) -> list[np.ndarray]:
    """The step's inputs as ndarrays: native segments read the data pointer of an ndarray
    object, which a NumPy scalar (a 0-d input handed through) is not."""
    return [v if type(v) is np.ndarray else np.asarray(v) for v in values]


def _cond_driver(params: dict, compile_sub_program: CompileSubProgram) -> Callable[..., list[np.ndarray]]:
    runs = [compile_sub_program(b) for b in params["branches"]]

    def run_cond(index: np.ndarray, *operands: np.ndarray, **_: Any) -> list[np.ndarray]:
        return runs[branch_index(index, len(runs))](_arrays(operands))
    return run_cond


def _while_driver(params: dict, compile_sub_program: CompileSubProgram) -> Callable[..., list[np.ndarray]]:
    cond, body = compile_sub_program(params["cond"]), compile_sub_program(params["body"])
    nc, nb = params["cond_nconsts"], params["body_nconsts"]

    def run_while(*args: np.ndarray, **_: Any) -> list[np.ndarray]:
        args = _arrays(args)
        cconsts, bconsts, carry = args[:nc], args[nc:nc + nb], args[nc + nb:]
        while cond(cconsts + carry)[0]:
            carry = body(bconsts + carry)
        return carry
    return run_while


def _fori_driver(params: dict, compile_sub_program: CompileSubProgram) -> Callable[..., list[np.ndarray]]:
    body, nconsts = compile_sub_program(params["body"]), params["nconsts"]

    def run_fori(lower: np.ndarray, upper: np.ndarray, *args: np.ndarray, **_: Any) -> list[np.ndarray]:
        args = _arrays(args)
        consts, carry = args[:nconsts], args[nconsts:]
        dtype = lower.dtype
        for i in range(int(lower), int(upper)):
            carry = body([np.asarray(i, dtype)] + consts + carry)
        return carry
    return run_fori


def _scan_driver(params: dict, compile_sub_program: CompileSubProgram) -> Callable[..., list[np.ndarray]]:
    program = params["body"]
    body = compile_sub_program(program)
    nconsts, ncarry, length, reverse = params["nconsts"], params["ncarry"], params["length"], params["reverse"]
    y_avals = program.out_avals[ncarry:]

    def run_scan(*args: np.ndarray, **_: Any) -> list[np.ndarray]:
        args = _arrays(args)
        consts, carry, xs = args[:nconsts], args[nconsts:nconsts + ncarry], args[nconsts + ncarry:]
        ys = [np.empty((length,) + y.shape, y.dtype) for y in y_avals]
        for t in (range(length - 1, -1, -1) if reverse else range(length)):
            outs = body(consts + carry + [x[t, ...] for x in xs])  # 0-d arrays, never scalars
            carry = outs[:ncarry]
            for y, value in zip(ys, outs[ncarry:]):
                y[t] = value
        return carry + ys
    return run_scan


_DRIVERS = {"cond": _cond_driver, "while_loop": _while_driver, "fori_loop": _fori_driver, "scan": _scan_driver}

"""The control-flow primitives at the IR level (ir/control_flow.py): hand-built programs in
the format of docs/architecture.md "Control flow, traced indices and symbolic dimensions",
checked by the verifier, run by the interpreter and by the CPU backend, against plain Python."""
from __future__ import annotations

import numpy as np
import pytest

from jitkernel.backends.cpu import CpuBackend
from jitkernel.errors import IRVerificationError
from jitkernel.interpreter import eval_program
from jitkernel.ir import AType, Eqn, Program, Var, format_program, verify_program
from jitkernel.passes import optimize

F64 = np.dtype(np.float64)
I64 = np.dtype(np.int64)


def _v(shape, dtype):
    return Var(AType(shape, dtype))


def _add_index_body() -> Program:
    """(i, c: f64[3]) -> c + i"""
    i, c, ic, b, o = _v((), I64), _v((3,), F64), _v((), F64), _v((3,), F64), _v((3,), F64)
    return Program([i, c], [], [], [Eqn("convert", [i], [ic], {"dtype": F64}),
                                     Eqn("broadcast_in_dim", [ic], [b], {"shape": (3,), "broadcast_dimensions": ()}),
                                     Eqn("add", [c, b], [o])], [o], "body")


def _fori_program() -> Program:
    lo, hi, x, y = _v((), I64), _v((), I64), _v((3,), F64), _v((3,), F64)
    return Program([lo, hi, x], [], [], [Eqn("fori_loop", [lo, hi, x], [y], {"body": _add_index_body(), "nconsts": 0})],
                   [y], "f")


def _run_both(program: Program, args: list) -> tuple[list, list]:
    program = verify_program(optimize(program))
    ref = eval_program(program, args)
    executable, _ = CpuBackend().compile(program, name=program.name, disk_cache=False)
    return ref, executable(args)


@pytest.mark.parametrize("lower,upper", [(0, 5), (3, 3), (5, 2), (-2, 4)])
def test_fori_loop_matches_python(lower, upper):
    x = np.arange(3.0)
    expected = x.copy()
    for i in range(lower, upper):
        expected = expected + i
    for got in _run_both(_fori_program(), [np.int64(lower), np.int64(upper), x]):
        np.testing.assert_array_equal(got[0], expected)


def test_printer_shows_the_body_inline():
    text = format_program(_fori_program())
    assert "fori_loop[body={ program body(a: i64[], b: f64[3]) {" in text
    assert "nconsts=0" in text


def test_verifier_checks_the_carry_type():
    lo, hi, x, y = _v((), I64), _v((), I64), _v((4,), F64), _v((4,), F64)
    bad = Program([lo, hi, x], [], [], [Eqn("fori_loop", [lo, hi, x], [y], {"body": _add_index_body(), "nconsts": 0})],
                  [y], "bad")
    with pytest.raises(IRVerificationError, match=r"body inputs: expected types \(i64\[\], f64\[4\]\), got \(i64\[\], f64\[3\]\)"):
        verify_program(bad)


def test_verifier_checks_sub_programs():
    i, c, o = _v((), I64), _v((3,), F64), _v((3,), F64)
    body = Program([i, c], [], [], [Eqn("sin", [c], [o])], [c], "body")  # fine
    broken = Program([i, c], [], [], [Eqn("sin", [o], [c])], [c], "broken")  # reads o before it exists
    lo, hi, x, y = _v((), I64), _v((), I64), _v((3,), F64), _v((3,), F64)
    for sub, ok in ((body, True), (broken, False)):
        prog = Program([lo, hi, x], [], [], [Eqn("fori_loop", [lo, hi, x], [y], {"body": sub, "nconsts": 0})], [y])
        if ok:
            verify_program(prog)
        else:
            with pytest.raises(IRVerificationError, match="broken"):
                verify_program(prog)


def test_while_loop_collatz_steps():
    # carry (n, steps); cond n != 1; body n = n // 2 if even else 3n + 1
    n, s = _v((), I64), _v((), I64)
    one, two, three = (np.asarray(k, I64) for k in (1, 2, 3))
    cv = [_v((), I64) for _ in range(3)]
    ne = _v((), np.bool_)
    cond = Program([n, s], [cv[0]], [one], [Eqn("not_equal", [n, cv[0]], [ne])], [ne], "cond")
    n2, s2 = _v((), I64), _v((), I64)
    k = [_v((), I64) for _ in range(3)]
    r, even, half, tri, tri1, nn, ss = _v((), I64), _v((), np.bool_), _v((), I64), _v((), I64), _v((), I64), _v((), I64), _v((), I64)
    zero = _v((), I64)
    body = Program([n2, s2], k + [zero], [one, two, three, np.asarray(0, I64)], [
        Eqn("remainder", [n2, k[1]], [r]), Eqn("equal", [r, zero], [even]),
        Eqn("floor_divide", [n2, k[1]], [half]), Eqn("multiply", [n2, k[2]], [tri]), Eqn("add", [tri, k[0]], [tri1]),
        Eqn("select", [even, half, tri1], [nn]), Eqn("add", [s2, k[0]], [ss])], [nn, ss], "body")
    a, b, oa, ob = _v((), I64), _v((), I64), _v((), I64), _v((), I64)
    prog = Program([a, b], [], [], [Eqn("while_loop", [a, b], [oa, ob], {"cond": cond, "body": body, "cond_nconsts": 0,
                                                                          "body_nconsts": 0})], [oa, ob], "collatz")
    for got in _run_both(prog, [np.asarray(27), np.asarray(0)]):
        assert (int(got[0]), int(got[1])) == (1, 111)


def test_cond_clamps_the_index_and_scan_stacks():
    x = _v((2,), F64)
    branches = []
    for k, prim in enumerate(("sin", "cos", "negative")):
        xi, yi = _v((2,), F64), _v((2,), F64)
        branches.append(Program([xi], [], [], [Eqn(prim, [xi], [yi])], [yi], f"branch{k}"))
    idx, y = _v((), np.int32), _v((2,), F64)
    prog = Program([idx, x], [], [], [Eqn("cond", [idx, x], [y], {"branches": tuple(branches)})], [y], "switch")
    value = np.array([0.5, -1.0])
    for index, fn in ((-3, np.sin), (1, np.cos), (2, np.negative), (99, np.negative)):
        for got in _run_both(prog, [np.int32(index), value]):
            np.testing.assert_allclose(got[0], fn(value), rtol=1e-15)  # libm vs vector math: 1 ulp
    # scan: carry c, x slice -> (c + x, c * x), reversed
    c, xs_, c2, yv = _v((), F64), _v((), F64), _v((), F64), _v((), F64)
    body = Program([c, xs_], [], [], [Eqn("add", [c, xs_], [c2]), Eqn("multiply", [c, xs_], [yv])], [c2, yv], "scan_body")
    init, xs, cf, ys = _v((), F64), _v((4,), F64), _v((), F64), _v((4,), F64)
    scan = Program([init, xs], [], [], [Eqn("scan", [init, xs], [cf, ys], {"body": body, "nconsts": 0, "ncarry": 1,
                                                                          "length": 4, "reverse": True})], [cf, ys], "scan")
    data = np.array([1.0, 2.0, 3.0, 4.0])
    carry, expected = 0.5, np.empty(4)
    for t in range(3, -1, -1):
        carry, expected[t] = carry + data[t], carry * data[t]
    for got in _run_both(scan, [np.float64(0.5), data]):
        assert float(got[0]) == carry
        np.testing.assert_array_equal(got[1], expected)

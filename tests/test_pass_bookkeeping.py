"""Every graph pass keeps a program's bookkeeping: the fields that describe its inputs and
outputs (`written_args`, `trimmed_outputs`, `byteorder_sources`, ...) stay valid because the
passes keep the inputs and the outputs' order. Fusion reads `written_args` from the optimised
program to write an argument in place; a pass that rebuilt the Program without it once
relied on the pipeline putting it back by hand."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import jitkernel as jk
from jitkernel.ir import Program
from jitkernel.passes import PIPELINE, optimize

_BOOKKEEPING = [f.name for f in dataclasses.fields(Program)
                if f.name not in ("invars", "constvars", "consts", "eqns", "outvars", "name")]


def _writes_argument(a):
    a[0] = 2.0 * 3.0  # a folded constant, stored into the argument
    a *= 1.0
    return a.sum() + 0.0


def _selection(x):
    return x[x > 0] * 1.0


def _loop_writes(a, n):
    for i in range(n):
        a[i] += a[i - 1] if i > 0 else 0.0
    return a[::-1]


def _big_endian(x):
    return x, x.sum()


CASES = [
    (_writes_argument, lambda: (np.arange(4.0),)),
    (_selection, lambda: (np.array([1.0, -2.0, 3.0]),)),
    (_loop_writes, lambda: (np.arange(6.0), 6)),
    (_big_endian, lambda: (np.arange(3.0).astype(">f8"),)),
]


@pytest.mark.parametrize("fun,args", CASES, ids=[f.__name__ for f, _ in CASES])
def test_every_pass_keeps_the_bookkeeping(fun, args):
    program = jk.make_ir(fun)(*args())
    assert any(getattr(program, f) for f in _BOOKKEEPING), "the case must exercise some bookkeeping"
    for p in PIPELINE:
        out = p(program)
        for f in _BOOKKEEPING:
            assert getattr(out, f) == getattr(program, f), f"{p.__name__} dropped {f}"
    for size_generic in (False, True):
        out = optimize(program, size_generic=size_generic)
        for f in _BOOKKEEPING:
            assert getattr(out, f) == getattr(program, f), f"optimize dropped {f}"


def test_an_argument_written_after_folding_is_written_back():
    a = np.arange(4.0)
    want = a.copy()
    want_sum = _writes_argument(want)
    got_sum = jk.jit(_writes_argument)(a)
    np.testing.assert_array_equal(a, want)
    assert got_sum == want_sum

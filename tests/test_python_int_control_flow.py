"""Python-int arithmetic through builtins and compiled control flow keeps its overflow check.

A Python int argument is traced as an int64 whose arithmetic raises OverflowError where
Python's exact result leaves int64 (trace/python_int.py). Two ways lost that check and wrapped
silently: a builtin that passes a Python int through (`min`, `max`, `int`, `round`,
`math.floor`...) returned a strong int64, and a loop body or branch compiled to jk.lax control
flow was not checked at all. A check there is now an error code the loop carries
(trace/pending_checks.py); the loop stays native on the CPU backend.
"""
from __future__ import annotations

import itertools
import linecache
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import jitkernel as jk
import tpu_suite
from emulator_suite import emulator_backends
from jitkernel.backends.cpu import CpuBackend
from jitkernel.fusion.loops import LoopStep, all_steps
from jitkernel.passes import optimize

MIN, MAX = -2**63, 2**63 - 1
HOST = ["interpret", "cpu"]
# The error code's raise step is read differently by the CUDA check step and the TPU lowering.
ALL = HOST + emulator_backends() + ([tpu_suite.TPU_INTERPRET] if tpu_suite.have_jax() else [])


@pytest.fixture(autouse=True)
def _traced_ints_only():
    """Integer arguments stay traced (no retrace with them static), so the checks are what runs."""
    jk.config.update("static_int_fallback", False)
    yield
    jk.config.update("static_int_fallback", True)


# ----------------------------------------------------------------------------- hand-written cases
def min_times(v):
    return min(v, 3) * 2**61


def max_times(v):
    return max(v, -3) * 2**62


def builtins_times(v):
    return int(v) * 2**61 + round(v) * 2**61 + math.floor(v) + math.ceil(v) + math.trunc(v)


def powers_of_three(x, n):
    s = 1
    for i in range(n):
        s = s * 3
    return x + s


@pytest.mark.parametrize("backend", HOST)
def test_builtins_keep_the_python_int_check(backend):
    assert jk.jit(min_times, backend=backend)(2) == 2**62
    with pytest.raises(OverflowError, match=r"went past int64.*min\(v, 3\) \* 2\*\*61"):
        jk.jit(min_times, backend=backend)(-7)
    with pytest.raises(OverflowError, match="went past int64"):
        jk.jit(max_times, backend=backend)(2)
    assert jk.jit(builtins_times, backend=backend)(1) == builtins_times(1)
    with pytest.raises(OverflowError, match="went past int64"):
        jk.jit(builtins_times, backend=backend)(2)


def checked_branches(v, k):
    if k > 0:
        v = v * 4
    else:
        v = v // k
    return v


def scan_powers(xs, v):
    return jk.lax.scan(lambda c, x: (c * v, x + c), 1, xs)


@pytest.mark.parametrize("backend", ALL)
def test_loop_carried_python_int_raises_past_int64(backend):
    f = jk.jit(powers_of_three, backend=backend)
    x = np.zeros(2)
    assert f(x, 39).tolist() == [3.0**39] * 2
    with pytest.raises(OverflowError, match=r"went past int64.*s = s \* 3"):
        f(x, 50)
    g = jk.jit(checked_branches, backend=backend)
    assert (g(2**60, 1), g(5, -2)) == (2**62, -3)
    with pytest.raises(OverflowError, match=r"v = v \* 4"):
        g(2**61, 1)
    with pytest.raises(ZeroDivisionError, match=r"v = v // k"):
        g(5, 0)
    h = jk.jit(scan_powers, backend=backend)
    carry, ys = h(np.zeros(4, np.int64), 3)
    assert (int(carry), ys.tolist()) == (81, [1, 3, 9, 27])
    with pytest.raises(OverflowError, match=r"c \* v"):
        h(np.zeros(4, np.int64), 2**20)


def test_a_checked_loop_body_stays_a_native_loop():
    program = optimize(jk.make_ir(powers_of_three)(np.zeros(2), 5))
    (loop,) = [e for e in program.eqns if e.prim == "fori_loop"]
    assert "raise_if" not in str(loop.params["body"])
    executable, _ = CpuBackend().compile(program, name="checked_loop", disk_cache=False)
    assert any(isinstance(s, LoopStep) for s in all_steps(executable.kp.steps))


def test_a_constant_python_int_result_past_uint64_raises_overflow():
    jk.config.update("static_int_fallback", True)  # the lambda's min() retraces with v static
    with pytest.raises(OverflowError, match="past int64"):
        jk.jit(lambda v: min(v, 3) * 2**61)(-7)


# ----------------------------------------------------------------------------- generator
EDGES = [0, 1, 2, 3, -1, -2, 7, 2**31, -2**31, 2**32, 2**62, -2**62, MAX, MAX - 1, MIN, MIN + 1,
         3037000499, 3037000500, -3037000500, 2**21]
values = st.one_of(st.sampled_from(EDGES), st.integers(-100, 100), st.integers(MIN, MAX),
                   st.integers(2, 62).map(lambda k: 2**k), st.integers(2, 62).map(lambda k: -2**k + 1))
CONSTANTS = [0, 1, 2, 3, -1, -3, 2**31, 2**61, -2**62]


class Overflow(Exception):
    """An intermediate Python int left int64 (the oracle's verdict; jit raises OverflowError)."""


def _checked(value: int) -> int:
    if not MIN <= value <= MAX:
        raise Overflow
    return value


# An expression is a tuple: ("name", n) | ("const", c) | (op, *operands) | ("pow", e, k) ...
def _expressions(names: list[str], depth: int):
    leaf = st.one_of(st.sampled_from(names).map(lambda n: ("name", n)),
                     st.sampled_from(CONSTANTS).map(lambda c: ("const", c)))
    if depth == 0:
        return leaf
    sub = _expressions(names, depth - 1)
    return st.one_of(  # an operation at every level above the leaves: more arithmetic per draw
        st.tuples(st.sampled_from(["+", "-", "*", "//", "%", "min", "max", "divmod0", "divmod1"]), sub, sub),
        st.tuples(st.sampled_from(["neg", "abs", "int", "round"]), sub),
        st.tuples(st.sampled_from(["**", "pow"]), sub, st.integers(0, 3)),
        st.tuples(st.just("sum"), sub, sub, sub),
    )


def _source(e) -> str:
    kind = e[0]
    if kind == "name":
        return e[1]
    if kind == "const":
        return f"({e[1]})"
    if kind in ("+", "-", "*", "//", "%"):
        return f"({_source(e[1])} {kind} {_source(e[2])})"
    if kind in ("min", "max"):
        return f"{kind}({_source(e[1])}, {_source(e[2])})"
    if kind.startswith("divmod"):
        return f"divmod({_source(e[1])}, {_source(e[2])})[{kind[-1]}]"
    if kind == "neg":
        return f"(-{_source(e[1])})"
    if kind in ("abs", "int", "round"):
        return f"{kind}({_source(e[1])})"
    if kind == "**":
        return f"({_source(e[1])} ** {e[2]})"
    if kind == "pow":
        return f"pow({_source(e[1])}, {e[2]})"
    return f"sum([{', '.join(_source(x) for x in e[1:])}])"


def _value(e, env: dict) -> int:
    """Python's value of `e`, each arithmetic result checked against int64 as jit checks it."""
    kind = e[0]
    if kind == "name":
        return env[e[1]]
    if kind == "const":
        return e[1]
    ops = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
           "//": lambda a, b: a // b, "%": lambda a, b: a % b}
    if kind in ops:
        a, b = _value(e[1], env), _value(e[2], env)
        return _checked(ops[kind](a, b))
    if kind in ("min", "max"):
        return (min if kind == "min" else max)(_value(e[1], env), _value(e[2], env))
    if kind.startswith("divmod"):
        a, b = _value(e[1], env), _value(e[2], env)
        q, r = _checked(a // b), _checked(a % b)
        return (q, r)[int(kind[-1])]
    if kind in ("neg", "abs"):
        a = _value(e[1], env)
        return _checked(-a if kind == "neg" else abs(a))
    if kind in ("int", "round"):
        return _value(e[1], env)
    if kind in ("**", "pow"):
        return _checked(_value(e[1], env) ** e[2])
    total = 0
    for x in e[1:]:
        total = _checked(total + _value(x, env))
    return total


def _names(e) -> bool:
    return e[0] == "name" or any(isinstance(x, tuple) and _names(x) for x in e[1:])


def _constants_fit(e) -> bool:
    """Whether every part of `e` made of constants only has a value in int64: Python computes
    those while tracing (a loop body is traced even when it runs no trip), not the program."""
    if e[0] in ("name", "const"):
        return True
    if not _names(e):
        try:
            _value(e, {})
        except (Overflow, ZeroDivisionError):
            return False
    return all(_constants_fit(x) for x in e[1:] if isinstance(x, tuple))


@st.composite
def programs(draw):
    loop = draw(st.sampled_from(["for", "while", "for_if"]))
    init = draw(_expressions(["v", "w"], 1))
    body = draw(_expressions(["s", "v", "w", "i"], 2))
    then, other = draw(_expressions(["s", "v"], 1)), draw(_expressions(["s", "w"], 1))
    for e in (init, body, then, other):
        assume(_constants_fit(e))
    return loop, init, body, then, other


def _render(loop: str, init, body, then, other) -> str:
    step = {"for": f"    for i in range(n):\n        s = {_source(body)}\n",
            "while": f"    i = 0\n    while i < n:\n        s = {_source(body)}\n        i = i + 1\n",
            "for_if": f"    for i in range(n):\n        if s > c:\n            s = {_source(body)}\n"
                      f"        else:\n            s = {_source(then)}\n"}[loop]
    return (f"def prog(x, v, w, n, c):\n    s = {_source(init)}\n{step}"
            f"    if c > 0:\n        s = {_source(then)}\n    else:\n        s = {_source(other)}\n"
            "    return s, x + s\n")


def _oracle(loop: str, init, body, then, other, v: int, w: int, n: int, c: int):
    """(s, None) or (None, exception type) as Python computes it, int64 overflow -> OverflowError."""
    try:
        env = {"v": v, "w": w}
        env["s"] = _value(init, env)
        for i in range(n):
            env["i"] = i
            env["s"] = _value(then if loop == "for_if" and not env["s"] > c else body, env)
        return _value(then if c > 0 else other, env), None
    except Overflow:
        return None, OverflowError
    except ZeroDivisionError:
        return None, ZeroDivisionError


_COUNTER = itertools.count()


@pytest.mark.parametrize("backend", HOST)
@settings(max_examples=30, deadline=None, database=None, print_blob=False)
@given(program=programs(),
       arguments=st.lists(st.tuples(values, values, st.integers(0, 4), st.integers(-1, 1)), min_size=12, max_size=12))
def test_python_int_programs_with_loops_and_branches_match_python(backend, program, arguments):
    """Random Python-int programs (+ - * // % ** unary -, abs, min, max, int, round, sum,
    divmod, pow) through a loop of a run-time trip count (`for` over range(n), `while`, an `if`
    in the body) and an `if` on a traced value, many argument tuples per compile: jit returns Python's value (as a
    Python int, and in an int64 array) or raises its exception, OverflowError exactly where an
    exact intermediate leaves int64."""
    source = _render(*program)
    filename = f"<python int program {next(_COUNTER)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {}
    exec(compile(source, filename, "exec"), namespace)
    jitted = jk.jit(namespace["prog"], backend=backend)
    x = np.zeros(1, np.int64)
    for v, w, n, c in arguments:
        want, error = _oracle(*program, v, w, n, c)
        if error is not None:
            with pytest.raises(error):
                jitted(x, v, w, n, c)
            continue
        s, total = jitted(x, v, w, n, c)
        assert (int(s), np.asarray(s).dtype, total.tolist()) == (want, np.dtype(np.int64), [want]), source

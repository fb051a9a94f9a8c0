"""Named expressions (`:=`) in converted control flow (jitkernel/autograph/walrus.py): in a
`while` test, in an `if` test, inside `a if c else b`, `and`/`or` and comparison chains, and in
comprehensions, on traced and static values; the name is the function's, seen in the loop body
and after the statement, exactly as plain Python leaves it."""
from __future__ import annotations

import numpy as np
import pytest

import jitkernel as jk
from jitkernel.autograph import convert
from tests.helpers import check

CUDA_EMULATOR_SUITE = True  # the `backend` fixture also runs cuda-emulator (tests/emulator_suite.py)
TPU_SUITE = True  # and on tpu-interpret (tests/tpu_suite.py)


def while_test(x):
    i = 0
    s = 0.0
    while (v := x[i]) > 0:
        s += v
        i += 1
    return s, v, i


def while_test_with_else(x):
    i = 0
    s = 0.0
    while (v := x[i]) > 0:
        s += v
        i += 1
        if s > 100.0:
            break
    else:
        s = -s
    return s, v, i


def while_bounded_scan(x):
    """`and` in the test: `v` is bound only when `i < n`; it is bound before the loop here."""
    n = x.shape[0]
    i = 0
    v = -1.0
    while i < n and (v := x[i]) > 0:
        i += 1
    return i, v


def while_continue(x):
    i = -1
    s = 0.0
    while (i := i + 1) < x.shape[0]:
        if x[i] < 0:
            continue
        s += x[i]
    return s, i


def while_static_int(n):
    steps = 0
    while (n := n // 2) > 0:
        steps += 1
    return steps, n


def if_test(x):
    if (m := x.max()) > 1:
        y = m * 2
    else:
        y = m - 1
    return y, m


def conditional_expression(x):
    w = 5.0
    y = (w := x[0] * 2) if x[1] > 0 else x[2] - 1
    return y, w


def conditional_expression_both_sides(x):
    y = (a := x[0] + 1) if x[1] > 0 else (a := x[2] - 1)
    return y, a


def conditional_expression_on_arrays(x, t):
    y = (w := x * 2) if t > 0 else x - 1  # noqa: F841 (the unused name is what the test traces)
    return y


def and_operands(x):
    b = 0.0
    r = (a := x[0]) > 0 and (b := x[1]) > a
    return r, a, b


def or_operands(x):
    b = 7.0
    r = (a := x[0]) > 0 or (b := x[1] * 3) > 0
    return r, a, b


def and_returned(x):
    return (a := x[0]) > 0 and (b := x[1]) > 0  # noqa: F841 (the unused name is what the test traces)


def comparison_chain(x):
    b = 0.0
    r = 0 < (a := x[0]) < (b := x[1] + a)
    return r, a, b


def nested_lazy(x):
    c = 1.0
    y = ((c := x[0]) if x[1] > 0 else x[2]) if x[2] > 0 and (c := x[1] + c) > 0 else -1.0
    return y, c


def in_loop_body(x):
    s = 0.0
    last = 0.0
    for i in range(x.shape[0]):
        s += (last := x[i]) if x[i] > 0 else 0.0
    return s, last


def comprehension(x):
    ys = [y := x[k] * 2 for k in range(3)]
    return ys[0] + ys[1] + ys[2], y


ARRAYS = [np.array([1.0, 2.0, 3.0, -1.0, 5.0]), np.array([-1.0, 2.0, 3.0, -1.0, 5.0]),
          np.array([0.5, -2.0, 3.0, 4.0, -5.0]), np.array([2.0, 0.5, -3.0, -1.0, 0.0])]
CASES = [while_test, while_test_with_else, while_bounded_scan, while_continue, if_test, conditional_expression,
         conditional_expression_both_sides, and_operands, or_operands, and_returned, comparison_chain,
         nested_lazy, in_loop_body, comprehension]


@pytest.mark.parametrize("k", range(len(ARRAYS)))
@pytest.mark.parametrize("fn", CASES, ids=[f.__name__ for f in CASES])
def test_named_expressions_on_traced_values_match_python(fn, k, backend):
    check(fn, ARRAYS[k], backend=backend)


def test_while_bounded_scan_past_the_end(backend):
    check(while_bounded_scan, np.array([1.0, 2.0, 3.0]), backend=backend)


@pytest.mark.parametrize("t", [1.0, -1.0])
def test_conditional_expression_on_arrays(t, backend):
    check(conditional_expression_on_arrays, np.arange(3.0), t, backend=backend)


@pytest.mark.parametrize("n", [0, 1, 7, 64])
def test_named_expressions_on_static_values(n, backend):
    assert jk.jit(while_static_int, backend=backend, static_argnames=("n",))(n) == while_static_int(n)
    x = np.arange(3.0)
    got = jk.jit(conditional_expression_on_arrays, backend=backend, static_argnames=("t",))(x, n - 1)
    np.testing.assert_array_equal(got, conditional_expression_on_arrays(x, n - 1))


def test_every_case_is_converted():
    """The converted functions are compiled, not run as Python (a traced test raises then)."""
    for fn in [f for f in CASES if f is not comprehension] + [while_static_int, conditional_expression_on_arrays]:
        assert convert(fn) is not None, fn.__name__


# ----------------------------------------------------------------------------- generator

from hypothesis import given, settings, strategies as st  # noqa: E402

import linecache  # noqa: E402

import emulator_suite  # noqa: E402
from tests.helpers import assert_matches_numpy  # noqa: E402

_K = st.integers(0, 5)
_C = st.sampled_from(["-0.5", "0.0", "0.5"])


@st.composite
def _statement(draw) -> list[str]:
    k1, k2, k3, c1, c2 = draw(_K), draw(_K), draw(_K), draw(_C), draw(_C)
    form = draw(st.sampled_from(["if", "ifexp", "and", "or", "chain", "while", "nested"]))
    if form == "if":
        return [f"if (a := x[{k1}]) > {c1}:", "    s = s + a", "else:", f"    s = s - (b := x[{k2}])"]
    if form == "ifexp":
        return [f"s = s + ((b := x[{k1}] * 2.0) if x[{k2}] > {c1} else x[{k3}])"]
    if form == "and":
        return [f"if (a := x[{k1}]) > {c1} and (b := x[{k2}]) < {c2}:", "    s = s + a * b"]
    if form == "or":
        return [f"r = (a := x[{k1}]) > {c1} or (b := x[{k2}] + a) > {c2}", "s = s + (1.0 if r else -1.0)"]
    if form == "chain":
        return [f"if {c1} < (a := x[{k1}]) < (b := x[{k2}] + {c2}):", "    s = s + b"]
    if form == "while":
        return ["i = 0", f"while i < x.shape[0] and (v := x[i]) > {c1}:", "    s = s + v", "    i = i + 1"]
    return [f"s = s + ((a := x[{k1}]) if (v := x[{k2}]) > {c1} and (b := x[{k3}] - v) > {c2} else -a)"]


@st.composite
def walrus_programs(draw) -> str:
    body = ["s = 0.0", "a = 0.25", "b = -0.25", "v = 0.125", "i = 7", "r = False"]
    for _ in range(draw(st.integers(1, 3))):
        body += draw(_statement())
    body.append("return s, a, b, v, i")
    return "def prog(x):\n" + "\n".join("    " + line for line in body) + "\n"


_COUNTER = iter(range(10**9))


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(walrus_programs(), st.lists(st.sampled_from([-1.0, -0.75, -0.25, 0.0, 0.25, 0.75, 1.0]), min_size=6, max_size=6),
       st.sampled_from(emulator_suite.DRAWN_BACKENDS))
def test_random_walrus_programs_match_python(source, values, backend):
    """Named expressions in `if`/`while` tests, conditional expressions, `and`/`or` and chains,
    on traced values: the jitted program returns what Python does, names included."""
    filename = f"<walrus program {next(_COUNTER)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {"np": np}
    exec(compile(source, filename, "exec"), namespace)
    prog = namespace["prog"]
    x = np.array(values)
    expected = prog(x)
    assert_matches_numpy(jk.jit(prog, backend=backend)(x), expected, rtol=1e-12, atol=1e-12)

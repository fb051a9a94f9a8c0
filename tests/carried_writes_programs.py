"""Generated programs whose loops carry arrays written in place (a regression: in-place updates through
a name rebound in a loop were lost): a helper that writes its argument and returns it, called
in a loop that stays a loop; the write reached the loop's carry but not the caller's array.

`programs()` draws one program: a loop kind (Python `for` over a run-time range, `while`,
`jk.lax.fori_loop`, `jk.lax.while_loop`), a route into the write (a helper rebinding the name,
a helper called as a statement, a helper reached through a dict or a method, which no reading
of the source sees, the write inline, a conditional rebinding), a write (whole array, slice,
augmented, one element) and the array written (the argument, a view of it made before the
loop, another name for it). `assert_same_as_python` runs it as Python on NumPy arrays and
jitted, and compares the result and every argument after the call. Used by
tests/test_carried_writes.py on every host backend and by tests/tpu on the chip.
"""
from __future__ import annotations

import warnings

import numpy as np
from hypothesis import strategies as st

import jitkernel as jk
from helpers import assert_matches_numpy, load, on_host

PRELUDE = '''
import jitkernel as jk

def step(a, i):
    {write}
    return a

def step_only(a, i):
    {write}

class Stepper:
    def step(self, a, i):
        {write}
        return a

HELPERS = {{"step": step}}
OBJ = Stepper()
'''

WRITES = {
    "whole": "a[...] = a * 2 + i",
    "slice": "a[1:] += 1",
    "augmented": "a *= 1.5",
    "element": "a[0] = a[-1] + i",
}

# the loop body's statement(s), in terms of the carried name `a` and the index `i`
ROUTES = {
    "helper": "a = step(a, i)",
    "statement": "step_only(a, i)",
    "dict": 'a = HELPERS["step"](a, i)',
    "method": "a = OBJ.step(a, i)",
    "inline": None,  # the write itself
    "conditional": "if i % 2 == 0:\n    a = step(a, i)",
}

# how the carried name relates to the argument `x`; the function returns what NumPy code would
TARGETS = {
    "argument": ("a = x", "return a"),
    "view": ("a = x[1:]", "return x.sum() + a.sum()"),
    "alias": ("a = x\nb = x", "return b"),
}

LOOPS = ("for", "while", "fori_loop", "while_loop")


def _indent(text: str, n: int) -> str:
    return "\n".join(" " * n + line for line in text.splitlines())


def source(loop: str, route: str, write: str, target: str) -> str:
    """The program's source: a module defining the helpers and `f(x, n)`."""
    w = WRITES[write]
    stmt = ROUTES[route] if ROUTES[route] is not None else w
    before, after = TARGETS[target]
    if loop == "for":
        body = f"for i in range(n):\n{_indent(stmt, 4)}"
    elif loop == "while":
        body = f"i = 0\nwhile i < n:\n{_indent(stmt, 4)}\n    i += 1"
    elif loop == "fori_loop":
        body = f"def body(i, a):\n{_indent(stmt, 4)}\n    return a\na = jk.lax.fori_loop(0, n, body, a)"
    else:
        body = (f"def body(c):\n    i, a = c\n{_indent(stmt, 4)}\n    return i + 1, a\n"
                "_, a = jk.lax.while_loop(lambda c: c[0] < n, body, (0, a))")
    fn = f"def f(x, n):\n{_indent(before, 4)}\n{_indent(body, 4)}\n{_indent(after, 4)}\n"
    return PRELUDE.format(write=_indent(w, 4).strip()) + "\n" + fn


@st.composite
def programs(draw) -> tuple[str, int, str]:
    """(source, trip count, a label) of one generated program."""
    loop = draw(st.sampled_from(LOOPS))
    route = draw(st.sampled_from(sorted(ROUTES)))
    if loop in ("fori_loop", "while_loop") and route == "statement":
        route = "helper"  # a jk.lax body returns its carry: the statement form is the helper's
    write = draw(st.sampled_from(sorted(WRITES)))
    target = draw(st.sampled_from(sorted(TARGETS)))
    trips = draw(st.integers(8, 12))  # 8 or more: the loop stays a loop (fewer may be unrolled)
    return source(loop, route, write, target), trips, f"{loop}/{route}/{write}/{target}"


def assert_same_as_python(tmp_path, program: tuple[str, int, str], backends: list[str]) -> None:
    """Run the program as Python on NumPy arrays and jitted on each backend: the same result, and
    the same contents of the argument after the call."""
    text, trips, label = program
    x0 = np.arange(1.0, 7.0)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want_x = x0.copy()
        want = load(tmp_path, text)(want_x, trips)
        for backend in backends:
            got_x = x0.copy()
            got = on_host(jk.jit(load(tmp_path, text), backend=backend)(got_x, trips))
            assert_matches_numpy(got, want, _path=f"{label} on {backend}: result")
            np.testing.assert_allclose(got_x, want_x, rtol=1e-12,
                                       err_msg=f"{label} on {backend}: the argument after the call")

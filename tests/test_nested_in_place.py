"""Copies inside loop bodies and branches (fusion/coalesce.py on nested step lists) and loop
state updated in place behind readers that are loops of their own (fusion/dynamic.py).

A body's temporary copied into another (a loop's initial value into its carry, a kernel copy)
becomes one buffer with it when their lifetimes meet only at the copy within one trip, and a
branch's temporary copied into the branch's output becomes that output. A loop carry whose
new value is an in-place update of the old one (a scatter loop) stays in place when a loop
before the update reads the old value (the scatter's index checks): that loop runs first.

The generated programs are the straight-line programs of test_straight_line_in_place.py put
inside a loop over a traced count and inside an `if` on a traced value, each checked against
NumPy (results and the written argument) on every backend; the structural tests check that the
copies are gone in the pattern that motivated the change (NPBench mandelbrot2's shrinking loop).
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from helpers import load
from test_inplace import same_as_numpy
from test_straight_line_in_place import ALL_BACKENDS, _K, straight_line_programs


def _body_lines(src: str) -> tuple[list[str], str]:
    """The statements of a generated `def f(a)` and its returned expression."""
    lines = src.splitlines()[1:]
    return [ln[4:] for ln in lines[:-1]], lines[-1].strip()[len("return "):]


def _indent(lines: list[str], by: str) -> str:
    return "".join(f"{by}{ln}\n" for ln in lines)


@st.composite
def nested_programs(draw) -> str:
    """A straight-line program as a loop body (carrying `a` and a sum of its results) or as a
    branch of an `if` on a value of `a`."""
    lines, returned = _body_lines(draw(straight_line_programs()))
    results = [r.strip() for r in returned.split(",")]
    total = " + ".join(f"{r}.sum()" for r in results)
    if draw(st.booleans()):
        trips = draw(st.integers(1, 3))
        head = f"def f(a, n={trips}):\n    acc = 0.0\n    for r in range(n):\n"
        tail = f"        acc = acc + {total}\n        a = a * 0.5 + 0.25\n    return acc, c\n"
        return head + _indent(lines, "        ") + tail
    other = draw(st.sampled_from(["c = a * 2.0", "c = a.copy()", "c = a"]))
    head = "def f(a):\n    if a[0, 0, 0] > 0.9:\n"
    tail = f"        acc = {total}\n    else:\n        {other}\n        acc = c.sum()\n    return acc, c\n"
    return head + _indent(lines, "        ") + tail


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(src=nested_programs(), backend=st.sampled_from(ALL_BACKENDS), first=st.sampled_from([0.5, 1.2]))
def test_random_nested_updates_match_numpy(tmp_path_factory, src, backend, first):
    f = load(tmp_path_factory.mktemp("nested"), src)
    a = np.random.default_rng(5).random((4, 3, _K)) + 0.5
    a[0, 0, 0] = first  # both branches
    try:
        same_as_numpy(f, a, backend=backend)
    except AssertionError as e:
        raise AssertionError(f"{src}\n{e}") from None


# -- the shrinking loop: state compacted by a mask each trip, results scattered ---------------

SHRINKING = """
def f(c0, n):
    idx = np.arange(c0.size)
    z = np.zeros_like(c0)
    c = c0.copy()
    steps = np.zeros(c0.size, dtype=np.int64)
    last = np.zeros_like(c0)
    for i in range(n):
        z = z * z + c
        out = np.abs(z) > 2.0
        steps[idx[out]] = i + 1
        last[idx[out]] = z[out]
        keep = ~out
        z = z[keep]
        idx = idx[keep]
        c = c[keep]
    return steps, last
"""


def _grid(n: int) -> np.ndarray:
    x = np.linspace(-2.0, 0.5, n)
    y = np.linspace(-1.25, 1.25, n)
    return (x[:, None] + 1j * y[None, :]).ravel()


def _copied_carries(text: str) -> list[str]:
    """Carries of loops nested in other steps whose initial buffer is not their own (the
    renderer copies it before the first trip)."""
    found = []
    for line in text.splitlines():
        if not line.startswith("      ") or "carries:" not in line:
            continue
        for carry in line.split("carries:")[1].split("),"):
            m = re.match(r"\s*(%\d+) <- (%\d+) \(.*(in place|swapped)", carry)
            if m and m.group(1) != m.group(2):
                found.append(carry.strip())
    return found


# not on the CUDA backend, which runs no data-dependent selection (a clear refusal)
@pytest.mark.parametrize("backend", [b for b in ALL_BACKENDS if b != "cuda-emulator"])
def test_shrinking_loop_matches_numpy(tmp_path, backend):
    f = load(tmp_path, SHRINKING)
    same_as_numpy(f, _grid(24), 12, backend=backend)


def test_shrinking_loop_copies_no_state(tmp_path):
    """Before: every trip copied the compacted arrays' initial values into their compaction
    loops and the scatters' targets into their scatter loops (state the size of the grid)."""
    f = load(tmp_path, SHRINKING)
    text = jk.jit(f, backend="cpu").lower(_grid(24), 12).as_text("kernels")
    assert "while" in text or "fori" in text, text  # one native loop
    assert _copied_carries(text) == [], text


def test_scatter_after_check_loop_updates_in_place(tmp_path):
    """A loop carry scattered into each trip (`steps[idx[out]] = i + 1`: a check loop reads the
    carry, then the scatter loop writes it) is one buffer for the old and the new value."""
    f = load(tmp_path, SHRINKING)
    text = jk.jit(f, backend="cpu").lower(_grid(24), 12).as_text("kernels")
    # the loop over the trips: the one with the most state (its first trip runs before it)
    outer = max((line for line in text.splitlines() if line.strip().startswith("carries:")), key=len)
    carries = re.findall(r"(%\d+) <- (%\d+) \(reads (%\d+), writes (%\d+)", outer)
    in_place = [c for c in carries if c[2] == c[3]]
    # steps and last (its real and imaginary parts), c (two parts) and idx: everything but z,
    # whose new value is computed from the old one elementwise before it is compacted
    assert len(in_place) == 6, outer


# -- a state array written in place, then bound to a new array ------------------------------
# In Python the write reaches the array from before the statement (the caller's argument) on a
# loop's first iteration only, or on the branch taken; a compiled loop or `if` carries the new
# array. Before, the write was dropped silently; now a static range runs its first iteration as
# Python (an integer argument is made static for that), and the rest raises a clear error.

WRITE_THEN_REBIND = {
    "loop": """
def f(a, n):
    for r in range(n):
        a[:, 0] = a[:, 1] + r
        a = a * 2
    return a
""",
    "alias": """
def f(a, n):
    b = a
    for r in range(n):
        b[:, 0] = 1.0
        b = b * 2
    return b
""",
    "branch, static test": """
def f(a, n):
    if n > 2:
        a[:, 0] = 1.0
        a = a * 2
    return a
""",
}


@pytest.mark.parametrize("case", sorted(WRITE_THEN_REBIND))
@pytest.mark.parametrize("backend", ["cpu", "interpret"])
def test_write_then_rebind_matches_numpy(tmp_path, case, backend):
    f = load(tmp_path, WRITE_THEN_REBIND[case])
    for n in (0, 1, 3):
        same_as_numpy(f, np.arange(12.0).reshape(4, 3), n, backend=backend)


def test_write_then_rebind_under_traced_control_flow_raises(tmp_path):
    f = load(tmp_path, """
def f(a):
    if a[0, 0] > 0:
        a[:, 0] = 1.0
        a = a * 2
    return a
""")
    g = load(tmp_path, """
def g(a):
    while a[0, 0] < 100:
        a[:, 1] = 1.0
        a = a * 2
    return a
""", name="g")
    for fn, what in ((f, "`if`"), (g, "loop")):
        a = np.arange(1.0, 13.0).reshape(4, 3)
        with pytest.raises(jk.UnsupportedOperationError, match=f"{what} .*writes into `a` in place and then binds"):
            jk.jit(fn)(a)
        np.testing.assert_array_equal(a, np.arange(1.0, 13.0).reshape(4, 3))


def test_fresh_array_written_then_rebound_compiles(tmp_path):
    """An array the function made, which nothing else sees: the lost write is lost in Python too."""
    f = load(tmp_path, """
def f(a, n):
    c = a * 1.0
    for r in range(n):
        c[:, 0] = r
        c = c * 2
    return c
""")
    same_as_numpy(f, np.arange(12.0).reshape(4, 3), 3, backend="cpu")
    assert "fori_loop" in jk.jit(f).lower(np.ones((4, 3)), 3).as_text("ir")  # n stays a run-time value


@pytest.mark.parametrize("backend", ["cpu", "interpret"])
def test_copy_of_an_outer_array_written_in_a_branch(tmp_path, backend):
    """`c = a.copy()` inside a traced `if` is the branch's own array: writing it raised "an array
    of the enclosing trace is written inside a nested trace"."""
    f = load(tmp_path, """
def f(a):
    if a[0, 0] > 0.9:
        c = a.copy()
        c[:, 0] = c[:, 0] * 0.5
    else:
        c = a * 2.0
    return c
""")
    for first in (0.5, 1.2):
        a = np.arange(12.0).reshape(4, 3)
        a[0, 0] = first
        same_as_numpy(f, a, backend=backend)

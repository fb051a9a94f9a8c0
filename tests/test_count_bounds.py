"""Elementwise work bounded by the count of the selections it feeds (passes/count_bounds.py).

A loop whose state shrinks by a mask each trip (`x = x[keep]`) computes its elementwise values
on the padded buffers; only the rows below the count are read, so the kernels computing them
stop at the count. The generated loops mix elementwise chains of several dtypes, scatters
through the selections, reductions, results returned after the loop (trimmed by the count) and
values of a trip carried to the next one (read whole: no bound): each against NumPy on the CPU,
whose loops are native, and on the reference interpreter.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from helpers import load
from test_inplace import same_as_numpy

_FLOAT_STEPS = ["x * 0.5 + c", "x * x - c * 0.25", "np.sqrt(np.abs(x)) + c", "np.where(x > 0, x, c)",
                "np.maximum(x, c) * 0.9", "1.0 / (np.abs(x) + 2.5) + c", "np.sin(x) + c * 0.5"]
_INT_STEPS = ["x // 2 + c", "(x * 3) % 7 + c", "np.maximum(x - 1, c)", "np.abs(x - c) + 1", "x ^ c"]
_MASKS = ["x > {t}", "np.abs(x) > {t}", "(x > {t}) | (c < {u})", "x * c > {t}"]


@st.composite
def shrinking_loops(draw) -> tuple[str, str]:
    kind = draw(st.sampled_from(["float64", "float32", "int64"]))
    steps = _INT_STEPS if kind == "int64" else _FLOAT_STEPS
    step = draw(st.sampled_from(steps))
    mask = draw(st.sampled_from(_MASKS)).format(t=draw(st.sampled_from(["1", "3", "6"])), u=draw(st.sampled_from(["0", "2"])))
    lines = ["idx = np.arange(x.size)", "out = np.zeros(x.size, x.dtype)", "total = x.sum() * 0", "last = x + 1",
             "for i in range(n):", f"    x = {step}", f"    m = {mask}"]
    if draw(st.booleans()):  # a reduction of a value of the trip: its rows below the count
        lines.append("    total = total + (x * 2).sum()")
    if draw(st.booleans()):  # a reduction of a selection: NumPy's own sum of the exact prefix,
        lines.append("    total = total + x[m].sum()")  # its padding read by nobody
    if draw(st.booleans()):  # a value of the trip carried to the next one and returned: every row
        lines.append("    last = x + 1")
    if draw(st.booleans()):
        lines.append("    out[idx[m]] = x[m] + i")
    lines += ["    keep = ~m", "    x = x[keep]", "    idx = idx[keep]", "    c = c[keep]"]
    body = "".join(f"    {ln}\n" for ln in lines)
    return kind, f"def f(x, c, n):\n{body}    return out, x, c, total, last\n"


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(program=shrinking_loops(), backend=st.sampled_from(["cpu", "interpret"]), n=st.sampled_from([0, 1, 4, 9]),
       size=st.sampled_from([1, 7, 40]))
def test_shrinking_loops_match_numpy(tmp_path_factory, program, backend, n, size):
    kind, src = program
    f = load(tmp_path_factory.mktemp("cb"), src)
    rng = np.random.default_rng(size + n)
    if kind == "int64":
        x, c = rng.integers(-5, 9, size), rng.integers(-3, 4, size)
    else:
        x, c = rng.standard_normal(size).astype(kind) * 3, rng.standard_normal(size).astype(kind)
    try:
        same_as_numpy(f, x, c, n, backend=backend)
    except AssertionError as e:
        raise AssertionError(f"{src}\n{e}") from None


SHRINKING = """
def f(z0, c, n):
    idx = np.arange(z0.size)
    z = z0.copy()
    out = np.zeros(z0.size, dtype=np.int64)
    for i in range(n):
        z = z * z + c
        m = np.abs(z) > 2.0
        out[idx[m]] = i + 1
        keep = ~m
        z = z[keep]
        idx = idx[keep]
        c = c[keep]
    return out
"""


def test_elementwise_results_of_a_shrinking_loop_are_bounded_by_the_count(tmp_path):
    """The kernel computing `z * z + c` and `abs(z) > 2` stores values marked as padding past the
    count (`where_valid`), which the CPU turns into the loop's bound."""
    f = load(tmp_path, SHRINKING)
    z = np.linspace(-2, 0.5, 50) + 0.3j
    text = jk.jit(f, backend="cpu").lower(z, z * 0.5, 10).as_text("kernels")
    stores = [line for line in text.splitlines() if "store" in line]
    bounded = [line for line in text.splitlines() if "= where_valid(" in line]
    assert bounded and stores, text
    for backend in ("cpu", "interpret"):
        same_as_numpy(f, z, z * 0.5, 10, backend=backend)


@pytest.mark.parametrize("backend", ["cpu", "interpret"])
def test_value_read_whole_keeps_its_rows(tmp_path, backend):
    """`y` feeds a selection (its rows below the count) and is returned whole: no bound."""
    f = load(tmp_path, """
def f(x, n):
    y = x * 0
    for i in range(n):
        y = x * 2.0 + i
        x = x[y > 3.0]
    return y
""")
    same_as_numpy(f, np.arange(10.0), 1, backend=backend)


def test_selections_read_only_by_data_dependent_steps_leave_their_padding_unzeroed():
    """A selection whose every reader is a data-dependent step (which trims it to its count)
    is marked `unread_padding`: no zeroed buffer per trip. A selection a kernel reads, or one
    that is returned (even when a step also reads it trimmed), keeps its zeros."""
    def means(data, radius, npt):  # NPBench's azimint_naive
        rmax = radius.max()
        res = np.zeros(npt, dtype=np.float64)
        for i in range(npt):
            r1 = rmax * i / npt
            r2 = rmax * (i + 1) / npt
            values = data[np.logical_and(r1 <= radius, radius < r2)]
            res[i] = values.mean()
        return res

    def sorted_then_scaled(x):  # the sort's result is read by a kernel; the selection by the sort
        return np.sort(x[x > 0.5]) * 2.0

    def returned(x):
        return x[x > 0.5]

    def returned_and_sorted(x):  # one selection read trimmed (the sort) and whole (returned)
        y = x[x > 0.5]
        return y, np.sort(y)

    def step_lines(text, what):
        return [ln for ln in text.splitlines() if what in ln]

    def top_level_marks(f, *args):
        """(fn or the NumPy function's name, unread_padding) of each top-level data-dependent step."""
        kp = jk.jit(f, backend="cpu").lower(*args).compiled.executable.kp
        return [(s.params["fn"] if s.params["fn"] != "call" else dict(s.params["kw"])["name"],
                 s.params.get("unread_padding", ())) for s in kp.steps if getattr(s, "prim", None) == "datadep_pure"]

    rng = np.random.default_rng(0)
    data, radius = rng.random(2000), rng.random(2000)
    text = jk.jit(means, backend="cpu").lower(data, radius, 10).as_text("kernels")
    (select,) = step_lines(text, "fn='mask_select'")
    assert "unread_padding=(0,)" in select, text
    np.testing.assert_allclose(jk.jit(means)(data, radius, 10), means(data, radius, 10), rtol=1e-15)

    assert top_level_marks(sorted_then_scaled, data) == [("mask_select", (0,)), ("sort", ())]
    np.testing.assert_array_equal(jk.jit(sorted_then_scaled)(data), sorted_then_scaled(data))
    assert top_level_marks(returned, data) == [("mask_select", ())]
    np.testing.assert_array_equal(jk.jit(returned)(data), returned(data))
    assert top_level_marks(returned_and_sorted, data) == [("mask_select", ()), ("sort", ())]
    for got, expected in zip(jk.jit(returned_and_sorted)(data), returned_and_sorted(data)):
        np.testing.assert_array_equal(got, expected)

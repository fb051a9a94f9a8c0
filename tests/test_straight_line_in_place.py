"""Straight-line updates of an array that is also read elsewhere (`c[:, :, k] = f(c[:, :, k])`,
`b = d - c[:, :, k]` before the write) write in place once the old array's last reader has
run (fusion/coalesce.py): the copy of the whole array before the write is dropped, and so is a
loop's copy of its initial value into its carry. A reader of the old value that runs after the
write (a view, an overlapping window, a value returned) must keep the copy: each program runs
against NumPy and the reference interpreter on every backend."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from helpers import HOST_BACKENDS, load
from test_inplace import same_as_numpy

ALL_BACKENDS = [*HOST_BACKENDS, "cuda-emulator", "tpu-interpret"]

# vadv's pattern (NPBench): columns of arrays made inside the function, each written and then
# read again and rewritten, a loop over the middle columns, a last column after it.
THOMAS = """
def f(w, d):
    I, J, K = w.shape
    ccol = np.zeros((I, J, K), dtype=w.dtype)  # its last column is never written
    dcol = np.ndarray((I, J, K), dtype=w.dtype)
    for k in range(1):
        ccol[:, :, k] = w[:, :, k] * 0.5
        bcol = d - ccol[:, :, k]
        dcol[:, :, k] = w[:, :, k] + 1.0
        divided = 1.0 / bcol
        ccol[:, :, k] = ccol[:, :, k] * divided
        dcol[:, :, k] = dcol[:, :, k] * divided
    for k in range(1, K - 1):
        ccol[:, :, k] = w[:, :, k] * 0.25
        divided = 1.0 / (d - ccol[:, :, k - 1] * w[:, :, k])
        ccol[:, :, k] = ccol[:, :, k] * divided
        dcol[:, :, k] = (w[:, :, k] - dcol[:, :, k - 1]) * divided
    for k in range(K - 1, K):
        dcol[:, :, k] = w[:, :, k] * 2.0
        divided = 1.0 / (d - ccol[:, :, k - 1])
        dcol[:, :, k] = (dcol[:, :, k] - dcol[:, :, k - 1]) * divided
    return ccol, dcol
"""


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_thomas_sweep_matches_numpy(tmp_path, backend):
    f = load(tmp_path, THOMAS)
    rng = np.random.default_rng(0)
    same_as_numpy(f, rng.random((5, 4, 6)) + 1.0, 3.0 + rng.random((5, 4)), backend=backend)


def test_thomas_sweep_copies_no_whole_array(tmp_path):
    """Before: a copy kernel per write of a column read elsewhere (four), and the loop's copies
    of its initial values into its carries. Left: the two fills of the arrays made inside."""
    f = load(tmp_path, THOMAS)
    text = jk.jit(f).lower(np.ones((5, 4, 16)), np.ones((5, 4))).as_text("kernels")  # a native loop of 14 trips
    assert text.count("update_copy") == 2, text
    assert text.count("in place)") == 2, text
    for line in text.splitlines():
        if line.strip().startswith("carries:"):
            for carry in line.split("carries:")[1].split("),"):
                out, init = carry.split("(")[0].split("<-")
                if "in place" in carry:
                    assert out.strip() == init.strip(), line  # no copy of the initial value


# -- generated straight-line programs -----------------------------------------------------
# Every statement reads or writes `c` (made inside the function from `a`), so the in-place
# question comes up at each write: windows read before and after, overlapping and apart, views
# through transpose and reshape that see later writes (NumPy's view semantics), copies of the
# old array, old values returned, `c` rebound to a written copy while the old array is read,
# a loop carrying `c`, and writes into the argument `a`.

_K = 12  # c has shape (4, 3, _K): a loop over its columns runs natively (short ones are unrolled)


def _window() -> st.SearchStrategy[str]:
    return st.sampled_from([f"c[:, :, {k}]" for k in range(5)] + ["c[1:, :, 2]", "c[:-1, :, 2]", "c[:, 1:, 0]",
                                                                      "c[:, :-1, 0]", "c[::2, :, 3]"])


_SAME_SHAPE = {"c[1:, :, 2]": "c[:-1, :, 2]", "c[:-1, :, 2]": "c[1:, :, 2]", "c[:, 1:, 0]": "c[:, :-1, 0]",
               "c[:, :-1, 0]": "c[:, 1:, 0]"}


def _use(draw, temps: list[str], k: int) -> str:
    """A term reading an earlier temporary, as a (4, 3) array (so it fuses into the write that
    reads it, possibly after c changed) or through its sum; "" for none."""
    if not temps or not draw(st.integers(0, 3)):
        return ""
    i = draw(st.integers(0, len(temps) - 1))
    shape = temps[i]
    if shape == "column":
        return f" + t{i}"
    if shape == "array":
        return f" + t{i}[:, :, {k}]"
    if shape == "pair":
        return f" + t{i}[:, :, {draw(st.integers(0, 1))}]"
    return f" + t{i}.sum()"


@st.composite
def _statement(draw, temps: list[str]) -> tuple[str, str | None]:
    """One line of the program body, and the shape kind of the temporary `t{len(temps)}` it
    defines (None when it defines none)."""
    kind = draw(st.sampled_from(["write", "write", "write", "write", "shifted", "temp", "temp", "pair", "pair", "view",
                                 "transposed", "reshaped", "copy", "loop", "argument", "fork", "fork"]))
    # Few columns, so that reads of the old array and writes meet often.
    k, k2 = draw(st.integers(0, 1)), draw(st.integers(0, 2))
    scale = draw(st.sampled_from(["0.5", "2.0", "-1.0"]))
    n = len(temps)
    if kind == "write":
        rhs = draw(st.sampled_from([f"c[:, :, {k}] * {scale}", f"c[:, :, {k2}] * {scale} + c[:, :, {k}]",
                                    f"a[:, :, {k}] - c[:, :, {k2}]", f"{scale} / (c[:, :, {k2}] + 3.0)",
                                    f"c[:, :, {k2}] - c[:, :, {k}] * a[:, :, {k2}]"]))
        return f"c[:, :, {k}] = {rhs}{_use(draw, temps, k2)}", None
    if kind == "shifted":  # the value reads the array it writes at overlapping, other elements
        w = draw(st.sampled_from(sorted(_SAME_SHAPE)))
        temp = _use(draw, temps, k)
        return f"{w} = {_SAME_SHAPE[w]} * {scale} + {w}{temp if 'sum' in temp else ''}", None
    if kind == "temp":  # a value computed from the old array, used after later writes
        w = draw(_window())
        return f"t{n} = {w} * {scale}", "column" if w.startswith("c[:, :, ") else "other"
    if kind == "pair":  # two columns: the optimiser cannot forward a write's value into it
        return f"t{n} = c[:, :, {k}:{k + 2}] * {scale}", "pair"
    if kind == "view":  # a NumPy view: it sees every later write of c
        w = draw(_window())
        return f"t{n} = {w}", "column" if w.startswith("c[:, :, ") else "other"
    if kind == "transposed":
        return f"t{n} = c.transpose(2, 0, 1)[{k}]", "column"
    if kind == "reshaped":
        return f"t{n} = c.reshape(12, {_K})[:, {k}].reshape(4, 3)", "column"
    if kind == "fork":
        # c becomes a written copy and the old array is read after the write, at the elements it
        # wrote: a reader fused into the write's kernel (merge_siblings) must still see the old
        # values when the copy is coalesced (the old array and the copy one buffer).
        rhs = draw(st.sampled_from([scale, f"a[:, :, {k}] * {scale}", f"c[:, :, {k2}] + 1.0"]))
        return (f"old{n} = c\n    c = c.copy()\n    c[:, :, {k}] = {rhs}\n"
                f"    t{n} = old{n}[:, :, {k}] * {scale}{_use(draw, temps, k)}"), "column"
    if kind == "copy":  # the old array itself, kept
        return f"t{n} = c.copy()", "array"
    if kind == "loop":  # a native loop carrying c
        lo = draw(st.integers(1, 3))
        rhs = draw(st.sampled_from(["c[:, :, k - 1] * 0.5 + c[:, :, k]", "c[:, :, k] * a[:, :, k]",
                                    "c[:, :, k - 1] - c[:, :, k] * 0.25"]))
        return f"for k in range({lo}, {_K}):\n        c[:, :, k] = {rhs}", None
    return f"a[:, :, {k}] = c[:, :, {k2}] + {scale}{_use(draw, temps, k)}", None  # a written argument


@st.composite
def straight_line_programs(draw) -> str:
    start = draw(st.sampled_from(["np.zeros_like(a)", "a + 0.5", "np.sqrt(a)", "a.copy()", "np.ndarray(a.shape, dtype=a.dtype)"]))
    lines = [f"c = {start}"]
    # np.ndarray is uninitialised in NumPy: filled before any read. The fill makes c an
    # update's result, a buffer of its own that later writes may reuse.
    if "ndarray" in start or draw(st.booleans()):
        lines.append("c[...] = a + 1.0")
    temps: list[str] = []
    for _ in range(draw(st.integers(2, 9))):
        line, defines = draw(_statement(temps))
        lines.append(line)
        if defines is not None:
            temps.append(defines)
    if temps:  # every temporary read once more, after every write (column 2: none wrote it)
        terms = {"column": "t{}", "array": "t{}[:, :, 0]", "pair": "t{}[:, :, 0] + t{}[:, :, 1]"}
        reads = "".join(" + " + terms.get(kind, "t{}.sum()").format(i, i) for i, kind in enumerate(temps))
        lines.append(f"c[:, :, 2] = c[:, :, 2]{reads}")
    # A returned temporary is computed where it is defined; one that is not may be computed
    # inside the kernel that reads it, after c changed: both kinds.
    returned = ", ".join(["c"] + [f"t{i}" for i in range(len(temps)) if draw(st.integers(0, 2)) == 0])
    return "def f(a):\n" + "".join(f"    {line}\n" for line in lines) + f"    return {returned}\n"


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(src=straight_line_programs(), backend=st.sampled_from(ALL_BACKENDS))
def test_random_straight_line_updates_match_numpy(tmp_path_factory, src, backend):
    f = load(tmp_path_factory.mktemp("sl"), src)
    a = np.random.default_rng(3).random((4, 3, _K)) + 0.5
    try:
        same_as_numpy(f, a, backend=backend)
    except AssertionError as e:
        raise AssertionError(f"{src}\n{e}") from None

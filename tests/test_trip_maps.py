"""Library work of a loop that no trip's state feeds, batched before the loop
(passes/trip_maps.py), and stacks of matrices split across the worker threads
(backends/cpu/library_batches.py).

Generated loops solve, invert or take determinants of a matrix made from the trip's index or
its element of an array, and accumulate the results; some also read the accumulator in the
linalg step (nothing to hoist) or hold a step that can raise (nothing hoisted either). Each runs
against NumPy on the CPU and the interpreter, singular matrices included (NumPy's LinAlgError
for the first failing trip)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import jitkernel as jk
from helpers import load
from jitkernel.backends.cpu.library_batches import split_stacks
from jitkernel.ir import primitives
from test_inplace import same_as_numpy

_MATRIX = {
    "scaled": "a * z + np.eye(n) * 3.0",
    "power": "a * z ** 2 - a.T * z + np.eye(n)",
    "index": "a + np.eye(n) * (i + 1.0)",
    "singular at 3": "a * (z - 3.0)",
}
_STEP = {
    "solve": "np.linalg.solve(m, b)",
    "solve vector": "np.linalg.solve(m, b[:, 0])[:, None] * np.ones((1, b.shape[1]))",
    "inv": "np.linalg.inv(m) @ b",
    "det": "np.linalg.det(m) * b",
}


@st.composite
def trip_loops(draw) -> str:
    matrix = draw(st.sampled_from(sorted(_MATRIX)))
    step = draw(st.sampled_from(sorted(_STEP)))
    start = draw(st.sampled_from([0, 2]))
    dependent = draw(st.integers(0, 3)) == 0  # the step reads the accumulator: nothing to hoist
    raising = draw(st.integers(0, 3)) == 0  # a step of the body that may raise: nothing hoisted
    lines = ["n = a.shape[0]", "acc = np.zeros(b.shape, dtype=a.dtype)",
             f"for i in range({start}, pts.size):", "    z = pts[i]", f"    m = {_MATRIX[matrix]}"]
    if dependent:
        lines.append("    m = m + acc[:, :n] * 1e-3")
    lines.append(f"    x = {_STEP[step]}")
    if raising:
        lines.append("    x = x + b[idx[i] - 1]")  # an index read from data: may raise (9 is out of bounds)
    lines.append("    acc = acc + x * (z if abs(z) < 5 else -z)")
    body = "".join(f"    {ln}\n" for ln in lines)
    return f"def f(a, b, pts, idx):\n{body}    return acc\n"


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(src=trip_loops(), backend=st.sampled_from(["cpu", "interpret"]), n=st.sampled_from([3, 20]),
       complex_=st.booleans(), trips=st.sampled_from([2, 5, 12]))
def test_loops_with_independent_linalg_match_numpy(tmp_path_factory, src, backend, n, complex_, trips):
    f = load(tmp_path_factory.mktemp("tm"), src)
    rng = np.random.default_rng(n + trips)
    a = rng.standard_normal((n, n))
    b = rng.standard_normal((n, 7))
    pts = np.arange(trips, dtype=np.float64) + 0.5
    if complex_:
        a = a + 1j * rng.standard_normal((n, n))
        pts = pts * np.exp(0.3j)
    pts[trips // 2] = 3.0  # "singular at 3": the matrix of that trip is zero
    idx = rng.integers(0, n + 1, trips)
    idx[-1] = 9 if trips == 12 else idx[-1]
    try:
        same_as_numpy(f, a, b, pts, idx, backend=backend)
    except AssertionError as e:
        raise AssertionError(f"{src}\n{e}") from None


CONTOUR = """
def f(ham, pts, y):
    p0 = np.zeros(y.shape, dtype=np.complex128)
    p1 = np.zeros(y.shape, dtype=np.complex128)
    for z in pts:
        tz = np.zeros(ham.shape[1:], dtype=np.complex128)
        for k in range(ham.shape[0]):
            tz += np.power(z, 1.0 - k) * ham[k]
        x = np.linalg.solve(tz, y)
        if abs(z) < 1.0:
            x = -x
        p0 += x
        p1 += z * x
    return p0, p1
"""


def _contour_args(n=30, m=40, points=16):
    rng = np.random.default_rng(0)
    ham = rng.standard_normal((3, n, n)) + 1j * rng.standard_normal((3, n, n))
    pts = np.exp(2j * np.pi * np.arange(points) / points) * 1.3
    return ham, pts, rng.standard_normal((n, m)) + 0j


def test_contour_loop_solves_every_trip_in_one_stack(tmp_path):
    """NPBench's contour_integral shape: the solves become one library step on a stack of 16
    matrices before the loop, which is then native."""
    f = load(tmp_path, CONTOUR)
    args = _contour_args()
    text = jk.jit(f, backend="cpu").lower(*args).as_text("kernels")
    solves = [line for line in text.splitlines() if "linalg_solve" in line and line.strip().startswith("library")]
    assert len(solves) == 1 and "[native]" in text, text
    for backend in ("cpu", "interpret"):
        same_as_numpy(f, *args, backend=backend)


@pytest.mark.parametrize("prim, make, params", [
    ("linalg_inv", lambda r: (r.standard_normal((9, 40, 40)),), {}),
    ("linalg_solve", lambda r: (r.standard_normal((9, 40, 40)), r.standard_normal((40, 3))), {}),
    ("linalg_solve", lambda r: (r.standard_normal((9, 40, 40)), r.standard_normal((9, 40, 3))), {}),
    ("linalg_det", lambda r: (r.standard_normal((9, 40, 40)),), {}),
    ("linalg_eigh", lambda r: (r.standard_normal((9, 40, 40)),), {"UPLO": "L"}),
])
def test_split_stacks_give_numpys_results_bit_for_bit(prim, make, params):
    from concurrent.futures import ThreadPoolExecutor
    pool = ThreadPoolExecutor(3)
    impl = primitives.get(prim).impl
    args = make(np.random.default_rng(0))
    for threads in (2, 3, 4):
        split = split_stacks(prim, params, impl, lambda t=threads: t, lambda n: pool)
        for got, expected in zip(split(*args, **params), impl(*args, **params)):
            assert got.dtype == expected.dtype and got.shape == expected.shape
            np.testing.assert_array_equal(got, expected)
    singular = args[0].copy()
    singular[5] = 0.0
    split = split_stacks(prim, params, impl, lambda: 3, lambda n: pool)
    if prim in ("linalg_inv", "linalg_solve"):
        with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
            split(singular, *args[1:])
